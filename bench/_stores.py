"""Generated multilingual memory stores and cues for the latency benchmark.

Everything is drawn from a seeded ``random.Random``: the same ``(count, seed)`` gives the same
entries byte for byte. Entries are English, Chinese or mixed (about 45 / 45 / 10 %), kinds
knowledge / episode / skill (about 50 / 40 / 10 %), each a one-line description and a body
of one to four sentences, 40 to 400 characters in all. Texts are composed from topic, tool,
people and number pools, so well over 100k distinct texts exist; a duplicate is redrawn.

Cues are questions and remarks an agent's user might type, never copies of an entry: about
half name a topic the store holds, the rest are unrelated small talk. A :class:`CueSource`
never hands out the same cue twice, because the daemon caches query vectors and a repeated
cue would be measured at cache speed.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from somnid.memory.entry import Entry
from somnid.memory.kinds import Kind
from somnid.recall.text import indexed_text
from somnid.store import frontmatter
from somnid.store.layout import Layout

MIN_CHARS = 40
MAX_CHARS = 400
MIN_CUE_CHARS = 12  # the hint gate stays silent below 8 characters; keep every cue above
LANGS = ("en", "zh", "mixed")
BASE_DAY = dt.date(2024, 1, 1)
SPAN_DAYS = 3 * 365

# (English, Chinese) names of the things memories are about.
TOPICS: tuple[tuple[str, str], ...] = (
    ("billing service", "计费服务"),
    ("staging database", "预发布数据库"),
    ("nginx reverse proxy", "nginx 反向代理"),
    ("CI pipeline", "CI 流水线"),
    ("release checklist", "发布清单"),
    ("nightly backup job", "夜间备份任务"),
    ("search index", "搜索索引"),
    ("payment gateway", "支付网关"),
    ("login flow", "登录流程"),
    ("mobile app build", "移动端构建"),
    ("Kafka consumer group", "Kafka 消费组"),
    ("Redis cache", "Redis 缓存"),
    ("Postgres replica", "Postgres 从库"),
    ("Kubernetes cluster", "Kubernetes 集群"),
    ("Terraform state", "Terraform 状态文件"),
    ("monitoring dashboard", "监控面板"),
    ("alerting rules", "告警规则"),
    ("log rotation", "日志轮转"),
    ("TLS certificates", "TLS 证书"),
    ("DNS records", "DNS 记录"),
    ("weekly report", "周报"),
    ("team standup", "团队站会"),
    ("code review queue", "代码评审队列"),
    ("onboarding docs", "入职文档"),
    ("feature flags", "功能开关"),
    ("data migration", "数据迁移"),
    ("API rate limits", "API 限流"),
    ("email templates", "邮件模板"),
    ("invoice export", "发票导出"),
    ("support ticket queue", "客服工单队列"),
    ("GPU training job", "GPU 训练任务"),
    ("model evaluation suite", "模型评测集"),
    ("vector index", "向量索引"),
    ("frontend bundle", "前端打包"),
    ("design system", "设计系统"),
    ("translation files", "翻译文件"),
    ("Docker images", "Docker 镜像"),
    ("SSH keys", "SSH 密钥"),
    ("VPN access", "VPN 访问"),
    ("on-call rotation", "值班轮换"),
    ("incident postmortem", "故障复盘"),
    ("quarterly budget", "季度预算"),
    ("travel plans", "出差计划"),
    ("home network", "家庭网络"),
    ("dentist appointment", "牙医预约"),
    ("reading list", "读书清单"),
    ("running plan", "跑步计划"),
    ("grocery list", "购物清单"),
    ("school pickup", "孩子放学接送"),
    ("tax filing", "报税材料"),
    ("apartment lease", "房屋租约"),
    ("car maintenance", "汽车保养"),
    ("cloud bill", "云服务账单"),
    ("laptop setup", "笔记本环境配置"),
    ("Python virtualenv", "Python 虚拟环境"),
    ("Rust toolchain", "Rust 工具链"),
    ("Git hooks", "Git 钩子"),
    ("cron jobs", "定时任务"),
    ("object storage bucket", "对象存储桶"),
    ("message queue", "消息队列"),
    ("load balancer", "负载均衡器"),
    ("web crawler", "网页爬虫"),
    ("analytics pipeline", "数据分析管道"),
    ("chat bot", "聊天机器人"),
)
TOOLS = (
    "kubectl", "psql", "pytest", "docker compose", "terraform", "ansible", "make", "npm",
    "cargo", "uv", "pip", "git bisect", "curl", "jq", "ripgrep", "rsync", "systemctl",
    "journalctl", "htop", "tmux", "ffmpeg", "gh", "aws cli", "gcloud", "helm", "redis-cli",
    "sqlite3", "poetry", "ruff", "strace",
)  # fmt: skip
PEOPLE_EN = (
    "Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy",
    "Mallory", "Niaj", "Olivia", "Peggy", "Rupert", "Sybil", "Trent", "Victor", "Walter", "Yuki",
)  # fmt: skip
PEOPLE_ZH = (
    "小王", "老李", "张伟", "刘洋", "陈静", "王芳", "赵磊", "孙丽", "周杰", "吴敏",
    "郑强", "冯雪", "何军", "高原", "林峰", "罗琳", "梁晨", "宋佳", "唐亮", "许诺",
)  # fmt: skip
DAYS_EN = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
DAYS_ZH = ("周一", "周二", "周三", "周四", "周五", "周六", "周日")
KNOWLEDGE_TYPES = ("fact", "fact", "user", "experience", "preference")

# Sentence templates. Slots: {topic} {topic2} {tool} {person} {num} {port} {ver} {day}
# {hour} {pct} {size} {date}.
KNOWLEDGE_EN = (
    "The {topic} listens on port {port} in every environment.",
    "{person} owns the {topic}; ask before changing its config.",
    "Deploys of the {topic} are only allowed on {day} before {hour}:00.",
    "Use {tool} to inspect the {topic}, never the web console.",
    "The {topic} was upgraded to version {ver} last month.",
    "Its error rate stays below {pct}% on a normal day.",
    "Restarting the {topic} takes about {num} seconds.",
    "The {topic} keeps {num} days of history.",
    "Credentials for the {topic} live in the team vault, not in the repo.",
    "The user prefers short answers about the {topic}.",
    "Disk usage of the {topic} grows by roughly {size} GB a week.",
    "The {topic} breaks when the timezone is not UTC.",
    "{person} said the {topic} will be retired after release {ver}.",
    "Run {tool} with --dry-run first when touching the {topic}.",
    "The {topic} depends on the {topic2}.",
    "Latency of the {topic} doubled after the {topic2} moved regions.",
    "A typo in the {topic} config once took down the {topic2}.",
    "Every change to the {topic} goes into the changelog.",
    "The {topic} needs at least {size} GB of free memory to start.",
    "Since {date} the {topic} runs in {num} replicas.",
)
KNOWLEDGE_ZH = (
    "{topic}在所有环境里都监听 {port} 端口。",
    "{person}负责{topic}，改配置前先问一下。",
    "{topic}只能在{day} {hour} 点之前发布。",
    "排查{topic}时用 {tool}，不要用网页控制台。",
    "{topic}上个月升级到了 {ver} 版本。",
    "平时{topic}的错误率低于 {pct}%。",
    "重启{topic}大约需要 {num} 秒。",
    "{topic}保留 {num} 天的历史数据。",
    "{topic}的凭据放在团队密码库里，不在代码仓库中。",
    "用户问到{topic}时喜欢简短的回答。",
    "{topic}的磁盘占用每周增长约 {size} GB。",
    "时区不是 UTC 的时候{topic}会出错。",
    "{person}说{topic}会在 {ver} 版本之后下线。",
    "动{topic}之前先用 {tool} 加 --dry-run 跑一遍。",
    "{topic}依赖{topic2}。",
    "{topic2}迁移机房之后，{topic}的延迟翻了一倍。",
    "{topic}配置里的一个笔误曾经把{topic2}搞挂了。",
    "{topic}的每次改动都要写进变更日志。",
    "{topic}启动至少需要 {size} GB 空闲内存。",
    "从 {date} 起{topic}跑 {num} 个副本。",
)
EPISODE_EN = (
    "On {date} we debugged the {topic} with {person} for {num} minutes.",
    "The fix was to pin {tool} to version {ver}.",
    "{person} reported that the {topic} was timing out again.",
    "We rolled back the {topic} after {num} failed requests.",
    "The user asked me to summarise the {topic} logs from {day}.",
    "After the change the {topic} answered in {num} ms.",
    "We agreed to look at the {topic} again on {day}.",
    "Running {tool} showed {num} stale rows in the {topic}.",
    "The user was happy with the result and closed ticket #{num}.",
    "It turned out the {topic2} had filled its disk at {hour}:00.",
    "{person} and I rewrote the {topic} runbook together.",
    "The user was annoyed that the {topic} alert fired {num} times overnight.",
)
EPISODE_ZH = (
    "{date} 和{person}一起排查了{topic}，花了 {num} 分钟。",
    "解决办法是把 {tool} 固定在 {ver} 版本。",
    "{person}反馈{topic}又超时了。",
    "失败了 {num} 次请求之后我们回滚了{topic}。",
    "用户让我总结{day}的{topic}日志。",
    "改完之后{topic}的响应时间是 {num} 毫秒。",
    "我们约好{day}再看一下{topic}。",
    "运行 {tool} 发现{topic}里有 {num} 条过期记录。",
    "用户对结果很满意，关闭了 #{num} 号工单。",
    "原来是{topic2}在 {hour} 点把磁盘写满了。",
    "我和{person}一起重写了{topic}的操作手册。",
    "{topic}的告警一晚上响了 {num} 次，用户很不满意。",
)
SKILL_EN = (
    "To rotate the {topic} credentials, run {tool} and restart the pods.",
    "First check the {topic} health page, then run {tool}.",
    "Export the {topic} data with {tool} before any migration.",
    "When the {topic} stalls, clear its cache and retry after {num} seconds.",
    "Tag release {ver} and push it before updating the {topic}.",
    "Keep the {topic} batch size under {num} or the {topic2} falls behind.",
    "Ask {person} for a review before merging changes to the {topic}.",
    "Compare the {topic} metrics with last {day} before declaring it fixed.",
)
SKILL_ZH = (
    "轮换{topic}的凭据：先运行 {tool}，再重启 pod。",
    "先看{topic}的健康检查页面，再运行 {tool}。",
    "迁移之前先用 {tool} 导出{topic}的数据。",
    "{topic}卡住时清掉缓存，{num} 秒后重试。",
    "先打 {ver} 的标签并推送，再更新{topic}。",
    "{topic}的批大小要小于 {num}，否则{topic2}会跟不上。",
    "改{topic}的代码合并前请{person}评审。",
    "宣布修好之前，把{topic}的指标和上个{day}对比一下。",
)
DESCRIPTION = {
    (Kind.KNOWLEDGE, "en"): (
        "The {topic} runs on port {port}",
        "Who owns the {topic} ({person})",
        "Deploy window of the {topic}",
        "How to inspect the {topic} with {tool}",
        "{topic} limits: {num} days, {pct}% errors",
        "Why the {topic} needs UTC",
        "The {topic} after upgrade {ver}",
    ),
    (Kind.KNOWLEDGE, "zh"): (
        "{topic}的端口是 {port}",
        "{topic}由{person}负责",
        "{topic}的发布时间窗口",
        "用 {tool} 检查{topic}",
        "{topic}的限制：{num} 天，错误率 {pct}%",
        "{topic}为什么必须用 UTC",
        "{topic}升级到 {ver} 之后",
    ),
    (Kind.EPISODE, "en"): (
        "Debugged the {topic} with {person}",
        "Rolled back the {topic} on {date}",
        "Summarised {day}'s {topic} logs",
        "Fixed the {topic} timeout (ticket #{num})",
        "Cleaned {num} stale rows from the {topic}",
    ),
    (Kind.EPISODE, "zh"): (
        "和{person}排查{topic}",
        "{date} 回滚了{topic}",
        "总结了{day}的{topic}日志",
        "修复{topic}超时（工单 #{num}）",
        "清理了{topic}里 {num} 条过期记录",
    ),
    (Kind.SKILL, "en"): (
        "Rotate the {topic} credentials",
        "Safe restart of the {topic}",
        "Migrate the {topic} data with {tool}",
        "Release {ver} of the {topic}",
    ),
    (Kind.SKILL, "zh"): (
        "轮换{topic}的凭据",
        "安全重启{topic}",
        "用 {tool} 迁移{topic}的数据",
        "发布{topic}的 {ver} 版本",
    ),
}
SENTENCES = {
    (Kind.KNOWLEDGE, "en"): KNOWLEDGE_EN,
    (Kind.KNOWLEDGE, "zh"): KNOWLEDGE_ZH,
    (Kind.EPISODE, "en"): EPISODE_EN,
    (Kind.EPISODE, "zh"): EPISODE_ZH,
    (Kind.SKILL, "en"): SKILL_EN,
    (Kind.SKILL, "zh"): SKILL_ZH,
}

# Cues. "near" ones name a topic of the store; "far" ones are about something else entirely.
NEAR_CUES_EN = (
    "What port does the {topic} use?",
    "Who should I ask about the {topic}?",
    "When are we allowed to deploy the {topic}?",
    "How do I restart the {topic} safely?",
    "Anything I should know before touching the {topic}?",
    "Why has the {topic} been slow since {day}?",
    "Remind me what happened with the {topic} last time.",
    "Which tool do we use to look at the {topic}?",
    "The {topic} is timing out again, any idea why?",
    "Does {person} still own the {topic}?",
    "How much disk does the {topic} use these days?",
    "I need to migrate the {topic} this week, where do I start?",
    "Can you check the {topic} before my {hour}:00 meeting?",
    "Is it safe to upgrade the {topic} to {ver}?",
    "{person} says the {topic} is broken, can you take a look?",
)
NEAR_CUES_ZH = (
    "{topic}用的是哪个端口？",
    "{topic}的问题应该找谁？",
    "{topic}什么时候可以发布？",
    "怎么安全地重启{topic}？",
    "动{topic}之前有什么要注意的？",
    "为什么从{day}开始{topic}就变慢了？",
    "提醒我一下上次{topic}出了什么事。",
    "我们平时用什么工具查看{topic}？",
    "{topic}又超时了，知道是什么原因吗？",
    "{person}现在还负责{topic}吗？",
    "{topic}现在大概占多少磁盘？",
    "这周要迁移{topic}，应该从哪里开始？",
    "能在 {hour} 点开会前帮我看看{topic}吗？",
    "把{topic}升级到 {ver} 安全吗？",
    "{person}说{topic}坏了，你能看一下吗？",
)
FAR_CUES_EN = (
    "What's a good weeknight recipe with {food}?",
    "How long is the flight from {city} to {city2}?",
    "Tell me a fun fact about {animal}.",
    "What is the weather usually like in {city} in {month}?",
    "How do I fix a squeaky {thing}?",
    "Can you suggest a name for a {animal} called after {city}?",
    "Is {food} healthy to eat every day?",
    "What should I pack for {num} days in {city}?",
    "Write a short poem about {animal} in {month}.",
    "How do you clean a {thing} without scratching it?",
)
FAR_CUES_ZH = (
    "用{food}做什么家常菜比较好吃？",
    "从{city}飞到{city2}要多长时间？",
    "给我讲一个关于{animal}的冷知识。",
    "{city}{month}的天气一般怎么样？",
    "家里的{thing}吱吱响怎么修？",
    "帮我给一只{animal}起个和{city}有关的名字。",
    "每天吃{food}健康吗？",
    "去{city}玩 {num} 天应该带些什么？",
    "写一首关于{month}的{animal}的小诗。",
    "怎么清洁{thing}才不会刮花？",
)
FOODS = (
    ("tofu", "豆腐"), ("eggplant", "茄子"), ("salmon", "三文鱼"), ("mushrooms", "蘑菇"),
    ("potatoes", "土豆"), ("spinach", "菠菜"), ("shrimp", "虾"), ("noodles", "面条"),
    ("pumpkin", "南瓜"), ("lamb", "羊肉"), ("broccoli", "西兰花"), ("rice cakes", "年糕"),
)  # fmt: skip
CITIES = (
    ("Beijing", "北京"), ("Shanghai", "上海"), ("Chengdu", "成都"), ("Tokyo", "东京"),
    ("Paris", "巴黎"), ("Berlin", "柏林"), ("Lisbon", "里斯本"), ("Seattle", "西雅图"),
    ("Sydney", "悉尼"), ("Cairo", "开罗"), ("Hangzhou", "杭州"), ("Xi'an", "西安"),
)  # fmt: skip
ANIMALS = (
    ("otters", "水獭"), ("pandas", "熊猫"), ("octopuses", "章鱼"), ("crows", "乌鸦"),
    ("cats", "猫"), ("penguins", "企鹅"), ("foxes", "狐狸"), ("whales", "鲸鱼"),
    ("owls", "猫头鹰"), ("goldfish", "金鱼"),
)  # fmt: skip
THINGS = (
    ("door hinge", "门铰链"), ("office chair", "办公椅"), ("bike chain", "自行车链条"),
    ("wooden floor", "木地板"), ("bed frame", "床架"), ("ceiling fan", "吊扇"),
    ("glass table", "玻璃桌"), ("cast-iron pan", "铸铁锅"),
)  # fmt: skip
MONTHS_EN = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
MONTHS_ZH = tuple(f"{m}月" for m in range(1, 13))


@dataclass(frozen=True, slots=True)
class GeneratedEntry:
    kind: Kind
    name: str
    lang: str  # en | zh | mixed
    topic: int  # index into TOPICS
    description: str
    body: str
    meta: tuple[tuple[str, str], ...]  # front-matter keys and their YAML values, in order

    @property
    def relpath(self) -> PurePosixPath:
        folder = Layout(Path(".")).kind_dir(self.kind).as_posix()
        return PurePosixPath(folder) / self.name / "SKILL.md"

    @property
    def chars(self) -> int:
        """Length of the text (description and body) in characters."""
        return len(self.description) + len(self.body)

    def render(self) -> str:
        lines = ["---", *(f"{key}: {value}" for key, value in self.meta), "---", "", self.body]
        return "\n".join(lines) + "\n"


def _q(text: str) -> str:
    """A YAML double-quoted scalar (JSON strings are valid YAML)."""
    return json.dumps(text, ensure_ascii=False)


def _pick_kind(rng: random.Random) -> Kind:
    roll = rng.random()
    return Kind.KNOWLEDGE if roll < 0.5 else Kind.EPISODE if roll < 0.9 else Kind.SKILL


def _pick_lang(rng: random.Random) -> str:
    roll = rng.random()
    return "en" if roll < 0.45 else "zh" if roll < 0.9 else "mixed"


class _Slots:
    """Fills template slots; topic names follow the sentence's language (or, in mixed
    entries, sometimes the other one: code-switching is how such notes are written)."""

    def __init__(self, rng: random.Random, topic: int, mixed: bool) -> None:
        self.rng = rng
        self.topic = topic
        self.topic2 = rng.randrange(len(TOPICS) - 1)
        if self.topic2 >= topic:
            self.topic2 += 1
        self.mixed = mixed

    def fill(self, template: str, lang: str) -> str:
        rng = self.rng
        zh = lang == "zh"
        topic_lang = 1 if zh else 0
        if self.mixed and rng.random() < 0.5:
            topic_lang = 1 - topic_lang
        day = rng.randrange(7)
        date = BASE_DAY + dt.timedelta(days=rng.randrange(SPAN_DAYS))
        values = {
            "topic": TOPICS[self.topic][topic_lang],
            "topic2": TOPICS[self.topic2][topic_lang],
            "tool": rng.choice(TOOLS),
            "person": rng.choice(PEOPLE_ZH if zh else PEOPLE_EN),
            "num": str(rng.randint(2, 999)),
            "port": str(rng.randint(1024, 65535)),
            "ver": f"{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 20)}",
            "day": DAYS_ZH[day] if zh else DAYS_EN[day],
            "hour": str(rng.randint(7, 22)),
            "pct": f"{rng.randint(1, 99) / 10:.1f}",
            "size": str(rng.randint(2, 64)),
            "date": date.isoformat(),
        }
        text = template.format(**values)
        if not zh:
            text = text[0].upper() + text[1:]
        return text


def _sentence_lang(lang: str, rng: random.Random) -> str:
    if lang != "mixed":
        return lang
    return "en" if rng.random() < 0.5 else "zh"


def _join(sentences: Sequence[tuple[str, str]]) -> str:
    """Sentences joined the way they are written: a space after an English one, none after
    a Chinese one."""
    out = ""
    for text, _lang in sentences:
        if out and out[-1] not in "。？！":
            out += " "
        out += text
    return out


def _draw(rng: random.Random, kind: Kind, lang: str) -> tuple[int, str, str]:
    topic = rng.randrange(len(TOPICS))
    slots = _Slots(rng, topic, lang == "mixed")
    desc_lang = _sentence_lang(lang, rng)
    description = slots.fill(rng.choice(DESCRIPTION[kind, desc_lang]), desc_lang)
    wanted = rng.randint(1, 4)
    sentences: list[tuple[str, str]] = []
    while len(sentences) < 4 and (
        len(sentences) < wanted or len(description) + len(_join(sentences)) < MIN_CHARS
    ):
        sentence_lang = _sentence_lang(lang, rng)
        # A mixed entry has at least one sentence in the language its description is not in.
        if lang == "mixed" and len(sentences) == 0:
            sentence_lang = "zh" if desc_lang == "en" else "en"
        template = rng.choice(SENTENCES[kind, sentence_lang])
        sentences.append((slots.fill(template, sentence_lang), sentence_lang))
    while len(sentences) > 1 and len(description) + len(_join(sentences)) > MAX_CHARS:
        sentences.pop()
    return topic, description, _join(sentences)


def _name(kind: Kind, lang: str, topic: int, index: int, day: dt.date) -> str:
    if kind is Kind.EPISODE:
        return f"ep-{day:%Y%m%d}-{index:06d}"
    en, zh = TOPICS[topic]
    words = zh if lang == "zh" else en.lower()
    slug = "-".join(words.replace("'", "").split())
    return f"{slug}-{index:06d}"


def generate_entries(count: int, seed: int = 0) -> list[GeneratedEntry]:
    """``count`` distinct entries, the same for the same ``(count, seed)``."""
    rng = random.Random(f"somnid-latency-store-{seed}")
    entries: list[GeneratedEntry] = []
    seen: set[str] = set()
    for index in range(count):
        kind = _pick_kind(rng)
        lang = _pick_lang(rng)
        for _attempt in range(100):
            topic, description, body = _draw(rng, kind, lang)
            key = f"{description}\n{body}"
            if key not in seen and MIN_CHARS <= len(description) + len(body) <= MAX_CHARS:
                break
        else:  # pragma: no cover - the pools make this practically impossible
            raise RuntimeError(f"could not draw a distinct entry #{index}")
        seen.add(key)
        created = BASE_DAY + dt.timedelta(days=rng.randrange(SPAN_DAYS))
        used = created + dt.timedelta(days=rng.randrange(60))
        meta: list[tuple[str, str]] = [
            ("name", _name(kind, lang, topic, index, created)),
            ("description", _q(description)),
        ]
        if kind is Kind.KNOWLEDGE:
            meta.append(("type", rng.choice(KNOWLEDGE_TYPES)))
        elif kind is Kind.EPISODE:
            meta.append(("type", "episode"))
        meta += [
            ("stability", str(rng.choice((0, 0, 0, 1, 1, 2, 3)))),
            ("score", f"{rng.randint(20, 95) / 100:.2f}"),
            ("created", created.isoformat()),
            ("last_used", used.isoformat()),
            ("last_decay", used.isoformat()),
        ]
        if kind is Kind.EPISODE:
            when = f"{created.isoformat()}T{rng.randint(7, 22):02d}:{rng.randrange(60):02d}:00"
            meta.append(("when", _q(when)))
        elif rng.random() < 0.3:
            meta.append(("tags", _q(", ".join(rng.sample(TOOLS, 2)))))
        entries.append(
            GeneratedEntry(
                kind=kind,
                name=meta[0][1],
                lang=lang,
                topic=topic,
                description=description,
                body=body,
                meta=tuple(meta),
            )
        )
    return entries


@dataclass(frozen=True, slots=True)
class StoreFiles:
    files: int
    text_bytes: int


def write_store(root: Path, entries: Iterable[GeneratedEntry]) -> StoreFiles:
    """Write every entry's file under the data dir ``root`` (which may not exist yet),
    modified a day ago as a store's files are (upkeep leaves a file someone else modified a
    moment ago alone: a person may still be writing it)."""
    files = size = 0
    made: set[Path] = set()
    settled = time.time() - 86_400
    for entry in entries:
        path = root / entry.relpath
        parent = path.parent.parent
        if parent not in made:
            parent.mkdir(parents=True, exist_ok=True)
            made.add(parent)
        os.mkdir(path.parent)
        data = entry.render().encode("utf-8")
        path.write_bytes(data)
        os.utime(path, (settled, settled))
        files += 1
        size += len(data)
    return StoreFiles(files, size)


def parse_entry(entry: GeneratedEntry) -> Entry:
    """The entry as somnid reads it from its file (raises BrokenFile if it could not)."""
    doc = frontmatter.parse(entry.render())
    return Entry(
        kind=entry.kind,
        name=entry.name,
        archived=False,
        meta=doc.meta,
        body=doc.body,
        path=entry.relpath,
        etag="",
        mtime=0.0,
    )


def embed_text(entry: GeneratedEntry) -> str:
    """The text the daemon embeds for this entry (its passage, without the model prefix)."""
    return indexed_text(parse_entry(entry)).embed_text


@dataclass(frozen=True, slots=True)
class Cue:
    text: str
    lang: str  # en | zh | mixed
    near: bool  # names a topic the store holds


class CueSource:
    """Distinct cues, never the same one twice from one source."""

    def __init__(self, seed: int = 0, near_share: float = 0.5) -> None:
        self.rng = random.Random(f"somnid-latency-cues-{seed}")
        self.near_share = near_share
        self.used: set[str] = set()

    def take(self, count: int) -> list[Cue]:
        return [self.next() for _ in range(count)]

    def next(self) -> Cue:
        for _attempt in range(1000):
            cue = self._draw()
            if cue.text not in self.used and len(cue.text) >= MIN_CUE_CHARS:
                self.used.add(cue.text)
                return cue
        raise RuntimeError(f"no new cue after {len(self.used)} distinct ones")

    def _draw(self) -> Cue:
        rng = self.rng
        lang = _pick_lang(rng)
        template_lang = _sentence_lang(lang, rng)
        zh = template_lang == "zh"
        # Mixed cues name things in the other language: "billing service 又超时了".
        name_lang = 1 - int(zh) if lang == "mixed" else int(zh)
        near = rng.random() < self.near_share
        day = rng.randrange(7)
        month = rng.randrange(12)
        city, city2 = rng.sample(CITIES, 2)
        values = {
            "topic": rng.choice(TOPICS)[name_lang],
            "person": rng.choice(PEOPLE_ZH if zh else PEOPLE_EN),
            "day": DAYS_ZH[day] if zh else DAYS_EN[day],
            "hour": str(rng.randint(7, 22)),
            "ver": f"{rng.randint(1, 9)}.{rng.randint(0, 30)}",
            "num": str(rng.randint(2, 30)),
            "food": rng.choice(FOODS)[name_lang],
            "city": city[name_lang],
            "city2": city2[name_lang],
            "animal": rng.choice(ANIMALS)[name_lang],
            "thing": rng.choice(THINGS)[name_lang],
            "month": MONTHS_ZH[month] if zh else MONTHS_EN[month],
        }
        if near:
            template = rng.choice(NEAR_CUES_ZH if zh else NEAR_CUES_EN)
        else:
            template = rng.choice(FAR_CUES_ZH if zh else FAR_CUES_EN)
        text = template.format(**values)
        if not zh:
            text = text[0].upper() + text[1:]
        return Cue(text, lang, near)


def cjk_share(text: str) -> float:
    """Share of the letters in ``text`` that are CJK ideographs."""
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return 0.0
    return sum(1 for ch in letters if "\u3400" <= ch <= "\u9fff") / len(letters)
