"""Secret shapes: the one ruleset for captured text, log lines and the addresses somnid shows.

Pure: text in, text out, nothing held between calls (a caller with a secret of its own, such
as the daemon's token, passes it in ``known``). Every match becomes :data:`MARK`, keeping what
names the secret (``password=``, the URL's user, ``Bearer``).

The rules follow the shape of the well-known secret scanners' rulesets (gitleaks,
detect-secrets): a list of providers' token prefixes, whose tokens are recognisable by
themselves, then generic assignments, where a name that says "secret" is followed by a value.
Written here in our own words:

- private key blocks: PEM, OpenSSH and PGP (``-----BEGIN … PRIVATE KEY[ BLOCK]-----``);
- provider tokens: AWS key ids (``AKIA``, ``ASIA`` and the other four-letter kinds), GitHub
  (``ghp_``…, ``github_pat_``), GitLab (``glpat-``…), Hugging Face (``hf_``), npm (``npm_``),
  PyPI, Slack (``xox?-`` and webhooks), OpenAI and Anthropic (``sk-``), Stripe (``sk_live_``…),
  Google (``AIza``, ``ya29.``, ``GOCSPX-``), SendGrid, Shopify, DigitalOcean, Databricks,
  Linear, Postman, Doppler, age, Telegram bots, and JSON web tokens;
- bearer and basic credentials after ``Bearer`` / ``Authorization: Basic``;
- passwords in URLs (``scheme://user:pass@host``; a password may hold ``@``);
- assignments to a secret-naming identifier (any identifier with a part ``password``,
  ``passwd``, ``pwd``, ``passphrase``, ``secret``, ``token``, ``api_key``, ``access_key``,
  ``credentials``… as in ``AWS_SECRET_ACCESS_KEY``, ``DB_PASSWORD``, ``MYSQL_PWD``,
  ``clientSecret``), with ``=``, ``:``, ``:=``, ``=>`` or full-width ``＝`` / ``：``; a quoted
  value goes whole (several words too), a bare one up to a space or punctuation; and the
  Chinese names (``密码``, ``口令``, ``密钥``, ``令牌``, ``私钥``, ``验证码``), also with
  ``是`` / ``为`` or no sign at all;
- query parameters that name a secret (``access_token=``, ``key=``, ``sig=``…), their names
  percent-decoded as the guard decodes them (``access%5Ftoken``).

Boundaries are ASCII ones: a token right after Chinese text or an underscore is found
(``\\b`` is not a boundary between two word characters, and CJK letters are word characters).

Kept on purpose: hashes, UUIDs and other ids in prose (a commit or an order number is worth
remembering and is no credential; scanners that flag every high-entropy string flag these),
placeholders (``${TOKEN}``, ``<password>``, ``none``, ``xxxx``), and names without a value
("the token ring", "my password manager"). Which shapes are scrubbed and which are kept is
pinned by a corpus of cases in English and Chinese (``tests/memory/test_secret_shapes.py``).

``capture.scrub_patterns`` adds regular expressions of one's own (the whole match goes).

A URL somnid shows (the sync remote in status, doctor and errors) keeps its shape instead:
:func:`mask_url_credentials` writes its password, or an http(s) user that is a token, as
:data:`URL_MARK`. Which fields of a structured address (a PostgreSQL DSN's ``password``) are
secrets is :func:`is_secret_name`'s answer.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import unquote_plus

MARK = "[REDACTED]"
"""What a secret in text becomes (captured text, log lines, a purge's scrub of the logs)."""
URL_MARK = "***"
"""What a credential in a URL somnid shows becomes: ``https://me:***@host/x``."""

_B = r"(?<![A-Za-z0-9])"  # an ASCII boundary: CJK text or "_" may stand right before
_E = r"(?![A-Za-z0-9])"

_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    r".*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.S,
)

# Providers whose tokens say what they are: a prefix, then the token's own alphabet.
_PROVIDERS = (
    r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}" + _E,
    r"gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub
    r"github_pat_[A-Za-z0-9_]{30,}",
    r"gl(?:pat|dt|rt|ptt|cbt|soat|ft|imt|agent)-[A-Za-z0-9_-]{20,}",  # GitLab
    r"hf_[A-Za-z0-9]{30,}",  # Hugging Face
    r"npm_[A-Za-z0-9]{36}" + _E,
    r"pypi-AgE[A-Za-z0-9_-]{50,}",
    r"xox[abposre]-[A-Za-z0-9-]{10,}",  # Slack
    r"hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]{20,}",
    r"sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",  # OpenAI, Anthropic
    r"[rs]k_(?:live|test)_[0-9A-Za-z]{16,}",  # Stripe (the publishable pk_ is public)
    r"AIza[0-9A-Za-z_-]{35}" + _E,  # Google
    r"ya29\.[0-9A-Za-z_-]{20,}",
    r"GOCSPX-[0-9A-Za-z_-]{20,}",
    r"SG\.[0-9A-Za-z_-]{16,}\.[0-9A-Za-z_-]{16,}",  # SendGrid
    r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _E,  # Shopify
    r"do[opr]_v1_[a-f0-9]{64}" + _E,  # DigitalOcean
    r"dapi[a-f0-9]{32}" + _E,  # Databricks
    r"lin_api_[A-Za-z0-9]{40}" + _E,  # Linear
    r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}" + _E,  # Postman
    r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}",  # Doppler
    r"AGE-SECRET-KEY-1[0-9A-Z]{58}" + _E,  # age
    r"[0-9]{8,10}:AA[0-9A-Za-z_-]{33}" + _E,  # Telegram bot
    r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",  # JSON web token
)
# Shapes distinctive enough to be found glued to a word ("tokenghp_…"); bounded, since
# each occurrence of the prefix is a start.
_GLUED = (
    r"gh[pousr]_[A-Za-z0-9]{36}" + _E,
    r"github_pat_[A-Za-z0-9_]{30,255}",
    r"glpat-[A-Za-z0-9_-]{20,255}",
)
_PROVIDER = re.compile("(?:" + _B + "(?:" + "|".join(_PROVIDERS) + ")|" + "|".join(_GLUED) + ")")

_BEARER = re.compile(r"(?i)" + _B + r"(bearer\s+)[A-Za-z0-9._~+/=-]{16,}")
_BASIC = re.compile(r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?basic\s+)[A-Za-z0-9+/=]{8,}")
_URL_PASSWORD = re.compile(
    r"(?i)(?<![a-z0-9+.-])([a-z][a-z0-9+.-]*://[^\s:/@]*:)([^\s/]+)(@[^\s@/]+)"
)
_URL_USERINFO = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<info>[^/@\s]*)@")

# A secret-naming identifier: parts joined by _ . - (or camelCase), one of them a word below.
_WORDS = (
    r"password|passwd|passphrase|passcode|pwd|secret|token|apikey|api[_-]?key"
    r"|access[_-]?key|private[_-]?key|secret[_-]?key|auth[_-]?key|signing[_-]?key"
    r"|encryption[_-]?key|master[_-]?key|session[_-]?key|credentials?"
)
_PASSWORD_WORDS = re.compile(r"(?i)pass|pwd|密码|口令")
_TAIL = r"(?:[_.-](?i:access|key|secret|token|value|string|b64|base64)){0,4}"
_PART = r"(?:[A-Za-z0-9]{1,40}[_.-]|[a-z0-9]{1,40}(?=[A-Z]))"  # bounded: no slow backtracking
_GLUED_TO = r"(?:[A-Za-z0-9]{1,20}(?i:password|passwd|passphrase|secret|token|apikey))"
_NAME = rf"{_B}{_PART}{{0,6}}(?:{_GLUED_TO}|(?i:{_WORDS})){_TAIL}{_E}"  # PGPASSWORD, authToken
_ZH_NAME = r"(?:密码|口令|密钥|秘钥|令牌|私钥|验证码)"
_QUOTED = (
    r"\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|`[^`\n]{1,200}`"
    r"|“[^”\n]{1,200}”|‘[^’\n]{1,200}’|「[^」\n]{1,200}」|『[^』\n]{1,200}』"
)
_BARE = r"[!#$%&*+\-./0-9:=?@A-Z\\^_a-z|~]+"  # printable ASCII but quotes, brackets, , ;
# An identifier is read whole from where its run of name characters starts (one try per run,
# not one per character: linear on any text), then checked against _NAME.
_ASSIGNED = re.compile(
    r"(?P<name>(?<![A-Za-z0-9_.-])(?P<ident>[A-Za-z0-9_.-]{1,120})"
    r"[\"']?\s*(?:=>|:=|==?|:|＝|：)[ \t]*"
    rf"|--(?i:{_WORDS})[ \t]+"
    rf"|{_ZH_NAME}\s*(?:[:：=＝]|是|为|為)?\s*"
    rf"|{_B}(?i:password|passphrase|passcode)\s+is\s+)"
    rf"(?P<value>{_QUOTED}|{_BARE})"
)
_PLACEHOLDER = re.compile(
    r"(?i)(?:none|null|nil|true|false|undefined|empty|redacted|required|optional|tbd|todo"
    r"|n/a|example|placeholder|your[_-]?\w*|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|[x*.#-]+|无|空)"
)
_PLAIN_WORD = re.compile(r"[A-Za-z][a-z]{0,15}")

# Query parameters whose value is a secret (besides every secret-naming identifier).
_PARAMS = frozenset(
    {"key", "auth", "authorization", "sig", "signature", "code", "client_secret", "apikey"}
)
_NAME_ONLY = re.compile(rf"{_NAME}|{_ZH_NAME}")
_PARAM = re.compile(
    r"(?P<lead>[?&;]|(?<![^\s\"'(]))(?P<key>[A-Za-z0-9_.%+-]{1,80})=(?P<value>[^&\s\"'#]*)"
)


@functools.lru_cache(maxsize=8)
def _extra(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(pattern) for pattern in patterns)


_EMPTY_PROBE = "a Z 1 _-.:/\n中"


def check_patterns(patterns: Sequence[str]) -> None:
    """Raise ``re.error`` naming the first pattern that does not compile, or that matches
    an empty string (``""``, ``x*``, ``\\b``: a mark would go between every two
    characters)."""
    for pattern, compiled in zip(patterns, _extra(tuple(patterns)), strict=True):
        if compiled.fullmatch("") or any(
            m.start() == m.end() for m in compiled.finditer(_EMPTY_PROBE)
        ):
            raise re.error(f"{pattern!r} matches an empty string; it must match some text")


def scrub(text: str, extra: Sequence[str] = (), known: Iterable[str] = ()) -> str:
    """``text`` with every secret of a known shape, every string of ``known`` (eight
    characters or more) and every match of ``extra`` replaced by :data:`MARK`."""
    for secret in known:
        if len(secret) >= 8 and secret in text:
            text = text.replace(secret, MARK)
    text = _PRIVATE_KEY.sub(MARK, text)
    text = _PROVIDER.sub(MARK, text)
    text = _BEARER.sub(lambda m: m.group(1) + MARK, text)
    text = _BASIC.sub(lambda m: m.group(1) + MARK, text)
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + MARK + m.group(3), text)
    text = _ASSIGNED.sub(_assigned, text)
    text = _PARAM.sub(_param, text)
    for pattern in _extra(tuple(extra)):
        text = pattern.sub(MARK, text)
    return text


def is_secret_name(name: str, *, in_query: bool = True) -> bool:
    """Whether a field or query parameter of this name holds a secret; ``name`` is decoded
    as a query's names are (``access%5Ftoken`` and ``access+token`` are ``access_token``).
    Short names such as ``key``, ``sig`` or ``code`` count only ``in_query``."""
    decoded = unquote_plus(name).strip()
    if in_query and decoded.lower().replace("-", "_") in _PARAMS:
        return True
    return _NAME_ONLY.fullmatch(decoded) is not None


def redact_query(query: str) -> str:
    """A query string with the value of every secret-naming parameter replaced."""
    if not query:
        return query
    parts = []
    for part in query.split("&"):
        key = part.partition("=")[0]
        parts.append(f"{key}={MARK}" if is_secret_name(key) else part)
    return "&".join(parts)


def mask_url_credentials(text: str) -> str:
    """``https://me:secret@host/x`` -> ``https://me:***@host/x`` wherever it appears; an
    http(s) user without a password is a token (``https://ghp_x@host``): ``***@host``."""

    def mask(found: re.Match[str]) -> str:
        scheme, info = found["scheme"], found["info"]
        user, colon, _secret = info.partition(":")
        if colon:
            return f"{scheme}{user}:{URL_MARK}@"
        return f"{scheme}{URL_MARK}@" if scheme.lower().startswith("http") else found[0]

    return _URL_USERINFO.sub(mask, text)


def redact_fields(fields: Mapping[str, object], known: Iterable[str] = ()) -> dict[str, object]:
    """Structured fields (a log record's, say) with secret-named ones and secrets in
    strings replaced, before anything serialises them."""
    known = tuple(known)
    redacted: dict[str, object] = {}
    for key, value in fields.items():
        if is_secret_name(key) and value not in (None, ""):
            redacted[key] = MARK
        elif isinstance(value, str):
            redacted[key] = scrub(value, known=known)
        else:
            redacted[key] = value
    return redacted


def _assigned(match: re.Match[str]) -> str:
    name, value, ident = match.group("name"), match.group("value"), match.group("ident")
    if ident is not None and not _NAME_ONLY.fullmatch(ident.lstrip("-")):
        return match.group(0)
    quoted = value[0] in "\"'`“‘「『"
    inner = value[1:-1] if quoted else value
    if _placeholder(inner):
        return match.group(0)
    if not quoted:
        inner = inner.rstrip(".:")  # a sentence's end is not the password's
        rest = value[len(inner) :]
        if len(inner) < 4:
            return match.group(0)
        password = _PASSWORD_WORDS.search(name) is not None
        if name.rstrip().endswith("is") and not (
            re.search(r"[0-9]", inner) and re.search(r"[A-Za-z]", inner)
        ):
            return match.group(0)  # "the password is required"
        if not password and _PLAIN_WORD.fullmatch(inner):
            return match.group(0)  # "the secret: everyone", not a credential
        return name + MARK + rest
    return name + value[0] + MARK + value[-1]


def _placeholder(value: str) -> bool:
    return (
        not value
        or _PLACEHOLDER.fullmatch(value) is not None
        or value.startswith(("<", "{{", "%(", MARK))
    )


def _param(match: re.Match[str]) -> str:
    lead, key, value = match.group("lead"), match.group("key"), match.group("value")
    if _placeholder(value) or not is_secret_name(key, in_query=bool(lead)):
        return match.group(0)
    return f"{lead}{key}={MARK}"
