"""The secret-shape corpus: each case, in English or Chinese, is scrubbed or kept on purpose.

A scrubbed case names the secret that must be gone (and the mark is there instead); a kept
case comes back unchanged. Every token here is made up, built from a seeded alphabet so no
real credential is ever in the repository.
"""

from __future__ import annotations

import random
import string

import pytest

from somnid.memory.scrub import MARK, is_secret_name, redact_fields, redact_query, scrub

_ALNUM = string.ascii_letters + string.digits


def fake(length: int, alphabet: str = _ALNUM, seed: int = 0) -> str:
    rng = random.Random(f"{length}-{alphabet}-{seed}")
    return "".join(rng.choice(alphabet) for _ in range(length))


UPPER = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
URLSAFE = _ALNUM + "_-"

GHP = "ghp_" + fake(36)
AKIA = "AKIA" + fake(16, UPPER)
ASIA = "ASIA" + fake(16, UPPER, 1)
AWS_SECRET = fake(40, _ALNUM + "/+", 2)
GLPAT = "glpat-" + fake(20, URLSAFE)
HF = "hf_" + fake(34, string.ascii_letters)
NPM = "npm_" + fake(36)
SK = "sk-proj-" + fake(48, URLSAFE)
ANT = "sk-ant-api03-" + fake(80, URLSAFE)
JWT = "eyJ" + fake(30, URLSAFE) + ".eyJ" + fake(40, URLSAFE) + "." + fake(43, URLSAFE)
SLACK = "xoxb-" + fake(12, string.digits) + "-" + fake(24)
STRIPE = "sk_live_" + fake(24)
GOOGLE = "AIza" + fake(35, URLSAFE)
PAT = "github_pat_" + fake(82, _ALNUM + "_")
PYPI = "pypi-AgEIcHlwaS5vcmc" + fake(60, URLSAFE)
SENDGRID = "SG." + fake(22, URLSAFE) + "." + fake(43, URLSAFE)
SHOPIFY = "shpat_" + fake(32, HEX)
DIGITALOCEAN = "dop_v1_" + fake(64, HEX)
DATABRICKS = "dapi" + fake(32, HEX)
LINEAR = "lin_api_" + fake(40)
TELEGRAM = "123456789:AA" + fake(33, URLSAFE)
AGE = "AGE-SECRET-KEY-1" + fake(58, UPPER)
YA29 = "ya29." + fake(60, URLSAFE)
BEARER = fake(40, _ALNUM + "._-")
PGP = (
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQOYBF" + fake(60) + "\n=" + fake(4) + "\n"
    "-----END PGP PRIVATE KEY BLOCK-----"
)
RSA = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow" + fake(64) + "\n-----END RSA PRIVATE KEY-----"
OPENSSH = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk" + fake(64) + "\n"
    "-----END OPENSSH PRIVATE KEY-----"
)
EC = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE" + fake(50) + "\n-----END EC PRIVATE KEY-----"
TRUNCATED_KEY = "-----BEGIN PRIVATE KEY-----\nMIIEvQ" + fake(80)

# (text, the secret that must be gone)
SCRUBBED: list[tuple[str, str]] = [
    # provider tokens, in English prose and code
    (f"my token is {GHP}", GHP),
    (f"export GITHUB_TOKEN={GHP}", GHP),
    (f"use {PAT} for the org", PAT),
    (f"AWS key id {AKIA} in us-east-1", AKIA),
    (f"temporary credentials {ASIA} expire at noon", ASIA),
    (f"key_{AKIA}", AKIA),
    (f"aws_access_key_id = {ASIA}", ASIA),
    (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET),
    (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
    (f"gitlab token {GLPAT}", GLPAT),
    (f"CI_JOB: {GLPAT}", GLPAT),
    (f"huggingface-cli login --token {HF}", HF),
    (f"HF_TOKEN={HF}", HF),
    (f"//registry.npmjs.org/:_authToken={NPM}", NPM),
    (f"npm token {NPM} (publish)", NPM),
    (f"OPENAI_API_KEY={SK}", SK),
    (f"the anthropic key {ANT}", ANT),
    (f"Authorization: Bearer {JWT}", JWT),
    (f"session cookie {JWT}", JWT),
    (f"slack bot {SLACK}", SLACK),
    (f"stripe.api_key = '{STRIPE}'", STRIPE),
    (f"maps key {GOOGLE}", GOOGLE),
    (f"https://maps.googleapis.com/maps/api/geocode/json?key={GOOGLE}", GOOGLE),
    (f"twine upload -p {PYPI}", PYPI),
    (f"SENDGRID={SENDGRID}", SENDGRID),
    (f"shopify admin {SHOPIFY}", SHOPIFY),
    (f"doctl auth init -t {DIGITALOCEAN}", DIGITALOCEAN),
    (f"databricks {DATABRICKS}", DATABRICKS),
    (f"linear {LINEAR}", LINEAR),
    (f"bot token {TELEGRAM}", TELEGRAM),
    (f"age key {AGE}", AGE),
    (f"oauth access {YA29}", YA29),
    (f"curl -H 'Authorization: Bearer {BEARER}' http://x", BEARER),
    (f"Authorization: Basic {fake(24, _ALNUM + '+/', 3)}==", fake(24, _ALNUM + "+/", 3)),
    # private keys
    (f"here is my key:\n{RSA}\nthanks", "MIIEow"),
    (f"{OPENSSH}", "b3BlbnNzaC1rZXk"),
    (f"{EC}", "MHcCAQEE"),
    (f"pgp:\n{PGP}", "lQOYBF"),
    (f"pasted half a key {TRUNCATED_KEY}", "MIIEvQ"),
    # generic assignments
    ("password=opensesame1", "opensesame1"),
    ("DB_PASSWORD=hunter2hunter2", "hunter2hunter2"),
    ("MYSQL_PWD=Tr0ub4dor", "Tr0ub4dor"),
    ("PGPASSWORD=pg-secret-77", "pg-secret-77"),
    ("passphrase: correct-horse-battery", "correct-horse-battery"),
    ('password: "correct horse battery staple"', "horse battery staple"),
    ("password = 'two words'", "two words"),
    ('"api_key": "zzzzzzzzzzzz"', "zzzzzzzzzzzz"),
    ('{"client_secret":"' + fake(30) + '"}', fake(30)),
    ("clientSecret: " + fake(24, _ALNUM, 4), fake(24, _ALNUM, 4)),
    ("dbPassword: s3cr3t!", "s3cr3t!"),
    ("redis_password := sup3r", "sup3r"),
    ("'secret_key' => 'django-insecure-" + fake(20) + "'", fake(20)),
    ("--password hunter22", "hunter22"),
    ("mysql --password=hunter22 -u root", "hunter22"),
    ("Server=db;User Id=sa;Password=Pa55word;", "Pa55word"),
    ("password＝abc123xyz", "abc123xyz"),
    ("token：xyz987654", "xyz987654"),
    ("api_key：sk9f8e7d6c", "sk9f8e7d6c"),
    ("my password is hunter2", "hunter2"),
    ("The passphrase is m00nl1ght", "m00nl1ght"),
    ("SECRET_TOKEN=abcdefghij", "abcdefghij"),
    ("private_key: " + fake(44, _ALNUM + "+/", 5), fake(44, _ALNUM + "+/", 5)),
    ("credentials = " + fake(20, _ALNUM, 6), fake(20, _ALNUM, 6)),
    # URL passwords
    ("db postgres://bob:s3cretpass@db/x", "s3cretpass"),
    ("postgres://bob:p@ss@db.example.com:5432/x", "p@ss"),
    ("redis://:r3dis-pass@cache:6379/0", "r3dis-pass"),
    ("git clone https://alice:" + GHP + "@github.com/a/b", GHP),
    ("amqp://guest:gu3st!@mq.local/", "gu3st!"),
    ("GET /v1/bridge?access_token=" + BEARER + " 101", BEARER),
    ("GET /v1/bridge?access%5Ftoken=" + BEARER + " 101", BEARER),
    ("https://example.org/cb?code=" + fake(20) + "&state=ok", fake(20)),
    ("https://blob.example/x?sv=2022&sig=" + fake(30), fake(30)),
    # Chinese: next to CJK, full-width punctuation, Chinese names
    (f"我的令牌{GHP}，别告诉别人", GHP),
    (f"令牌是{GHP}", GHP),
    (f"这是我的AWS密钥{AKIA}和{AWS_SECRET}", AKIA),
    (f"用这个令牌{JWT}登录", JWT),
    (f"tokenghp{GHP}", GHP),
    ("数据库地址postgres://bob:s3cretpass@db/x你看一下", "s3cretpass"),
    (f"我的OpenAI密钥：{SK}", SK),
    ("密码：abc123456", "abc123456"),
    ("密码:Hunter2024", "Hunter2024"),
    ("我的密码是Passw0rd!。", "Passw0rd!"),
    ("数据库密码为 qwe123asd", "qwe123asd"),
    ("口令：correct-horse", "correct-horse"),
    ("管理员密码＝admin@2024", "admin@2024"),
    ("Wi-Fi 密码：“家里 的 网 123”", "家里 的 网 123"),
    ("登录口令「tiger 99」", "tiger 99"),
    ("验证码：839201", "839201"),
    (f"私钥：{fake(40, _ALNUM, 7)}", fake(40, _ALNUM, 7)),
    (f"密钥是{fake(32, HEX, 8)}", fake(32, HEX, 8)),
    (f"这是我的GitLab令牌{GLPAT}请保管好", GLPAT),
    (f"HF令牌：{HF}", HF),
    (f"npm令牌{NPM}", NPM),
    ("环境变量 DB_PASSWORD=hunter2hunter2 已经设置", "hunter2hunter2"),
    (f"临时凭证{ASIA}明天过期", ASIA),
    (f"私钥如下：\n{PGP}", "lQOYBF"),
    (f"token_{GHP}", GHP),
]

# Kept exactly as written.
KEPT: list[str] = [
    "The token ring network and my password manager; see https://example.org/a:b@c",
    "I forgot my password again, can you remind me how to reset it?",
    "the password is required for the admin page",
    "The secret: everyone loves the cake",
    "Use a tokenizer: bert-base-uncased handles it",
    "token_count: 123456",
    "password: <your password here>",
    "PASSWORD=${DB_PASSWORD}",
    "api_key: none",
    "secret: null",
    "token = ********",
    "password: xxxxxxxx",
    "Order 7c9e6679-7425-40de-944b-e07fc1f90ae7 shipped on Monday.",
    "The request id was 550e8400-e29b-41d4-a716-446655440000, please check.",
    "Fixed in commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 last night.",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 of the empty file",
    "http://localhost:7373/v1/health answered 200",
    "exit code=1 after 3 tries",
    "GET /v1/memories?limit=5&kind=knowledge",
    "see https://user@example.com/path for details",
    "skills: python, sql, and bash",
    "The key is to sleep early.",
    "pk_live_" + fake(24, _ALNUM, 9) + " is the publishable key (public by design)",
    "The AWS region is us-east-1 and the bucket is my-bucket",
    "I bought a skeleton key for the old door",
    "sk-8 size skates",
    "Bearer bonds were popular in the 1980s",
    "ghp_short is not a token",
    "-----BEGIN PUBLIC KEY-----\nMIIBIjAN\n-----END PUBLIC KEY-----",
    "version: 1.2.3",
    "credentials: see the vault",
    "我忘记密码了，怎么重置？",
    "密码学是一门有趣的学科。",
    "令牌桶算法用于限流。",
    "他的订单号是7c9e6679-7425-40de-944b-e07fc1f90ae7。",
    "提交3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39修复了这个问题。",
    "密码：无",
    "我们明天下午三点在咖啡馆见面。",
    "服务地址是http://localhost:7373/v1/health",
    "密钥管理很重要，不要把密钥写进代码里。",
]


@pytest.mark.parametrize(("text", "secret"), SCRUBBED)
def test_scrubbed(text: str, secret: str) -> None:
    out = scrub(text)
    assert secret not in out, out
    assert MARK in out, out


@pytest.mark.parametrize("text", KEPT)
def test_kept(text: str) -> None:
    assert scrub(text) == text


def test_the_corpus_is_large_and_bilingual() -> None:
    cases = [text for text, _ in SCRUBBED] + KEPT
    assert len(cases) >= 100
    chinese = [text for text in cases if any("\u4e00" <= ch <= "\u9fff" for ch in text)]
    assert len(chinese) >= 30


def test_what_names_the_secret_stays() -> None:
    assert scrub("DB_PASSWORD=hunter2hunter2") == f"DB_PASSWORD={MARK}"
    assert scrub('password: "a b c d"') == f'password: "{MARK}"'
    assert scrub("postgres://bob:p@ss@db:5432/x") == f"postgres://bob:{MARK}@db:5432/x"
    assert scrub(f"我的令牌{GHP}，别告诉别人") == f"我的令牌{MARK}，别告诉别人"
    assert scrub("密码：abc123456。") == f"密码：{MARK}。"


def test_known_secrets_and_extra_patterns() -> None:
    token = "s0mn1d-" + fake(30)
    assert scrub(f"the token {token} leaked", known=[token]) == f"the token {MARK} leaked"
    assert scrub("short", known=["short"]) == "short"  # under eight characters: never
    assert scrub("order ACME-123456", extra=[r"ACME-\d{6}"]) == f"order {MARK}"


def test_secret_names_are_decoded_like_the_guard_decodes_them() -> None:
    for name in ("access_token", "access%5Ftoken", "ACCESS-TOKEN", "PGPASSWORD", "authToken"):
        assert is_secret_name(name), name
    # "access+token" is "access token" to the guard too: not its token parameter
    for name in ("limit", "kind", "tokenizer", "token_count", "monkey", "access+token"):
        assert not is_secret_name(name), name
    assert is_secret_name("key") and not is_secret_name("key", in_query=False)
    assert redact_query("limit=5&access%5Ftoken=abc&x=1") == f"limit=5&access%5Ftoken={MARK}&x=1"
    assert redact_query("project=web&limit=3") == "project=web&limit=3"
    fields = redact_fields({"password": "p", "path": f"/x?token={GHP}", "n": 3, "token": None})
    assert fields == {"password": MARK, "path": f"/x?token={MARK}", "n": 3, "token": None}
