"""A Chinese personal-assistant retrieval set, generated from templates with a fixed seed.

Each user tells an assistant things over a few weeks: facts about the people around them
(where a cousin works, when a colleague's birthday is, what the boss drinks), appointments,
and things that happened (some said with "昨天", "上周五", "三天前"). Questions ask about
them in other words: a single fact, a fact reached through another ("教中文的那个人生日是哪
天?" needs "我表哥在杭州教中文" and "我表哥的生日是6月23日"), a day ("我10月3日做了什么?"),
and a count over several messages; two questions in three are paraphrases that share few
words with their message. Every user's store also holds distractors: other users' messages
about people and things this user never mentions (so none can hold a conflicting answer), in
the same style; and, among the user's own messages, two near misses for every fact asked (the
same person with the question's topic but not the answer, and with the paraphrase's very
words in another sense), like the held-out MemDaily set's distractors.

No LLM wrote any of it; run ``python bench/zh_assistant_data.py`` to print a sample. The
benchmark (``bench/zh_assistant.py``) builds the same set from the same seed.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field

SEED = 20261201
USERS = 40
DISTRACTORS = 100

# People: (key, the way a user names them).
PEOPLE = [
    ("cousin_m", "我表哥"), ("cousin_f", "我表姐"), ("boss", "我老板"), ("roommate", "我室友"),
    ("colleague_wang", "同事小王"), ("colleague_li", "同事老李"), ("aunt", "我小姨"),
    ("uncle", "我舅舅"), ("neighbour", "楼下的邻居张阿姨"), ("classmate", "我大学同学阿杰"),
    ("brother", "我弟弟"), ("sister", "我姐姐"), ("mentor", "我的导师陈老师"),
    ("friend_lin", "我朋友林琳"), ("grandma", "我外婆"),
]  # fmt: skip
JOBS = [
    ("教中文", "中文老师", "教书"), ("做程序员", "程序员", "写代码"), ("当护士", "护士", "在医院工作"),  # noqa: E501
    ("开出租车", "出租车司机", "开车"), ("做会计", "会计", "管账"), ("当律师", "律师", "打官司"),
    ("做设计师", "设计师", "做设计"), ("卖保险", "保险销售", "卖保险"), ("当厨师", "厨师", "做菜"),
]  # fmt: skip
CITIES = [
    "杭州",
    "成都",
    "西安",
    "青岛",
    "厦门",
    "长沙",
    "南京",
    "昆明",
    "大连",
    "苏州",
    "武汉",
    "重庆",
]
DRINKS = ["美式咖啡", "乌龙茶", "拿铁", "柠檬水", "豆浆", "普洱茶", "冰可乐", "燕麦奶"]
ALLERGIES = ["花生", "海鲜", "芒果", "猫毛", "青霉素", "鸡蛋", "花粉", "牛奶"]
HOBBIES = ["钓鱼", "打羽毛球", "弹吉他", "下围棋", "爬山", "跳广场舞", "拍照", "养多肉"]
PETS = [("一只橘猫", "猫"), ("两只仓鼠", "仓鼠"), ("一条金毛", "狗"), ("一只鹦鹉", "鹦鹉")]
PLACES = [
    "牙科诊所",
    "健身房",
    "图书馆",
    "宜家",
    "银行",
    "游泳馆",
    "菜市场",
    "电影院",
    "理发店",
    "医院",
]
ACTIVITIES = [
    ("去{place}", "去了{place}"), ("和{person}吃火锅", "和{person}吃了火锅"),
    ("陪{person}去{place}", "陪{person}去了{place}"), ("在{place}办事", "在{place}办了点事"),
]  # fmt: skip
RELATIVE = [  # (how it is said, days before the message)
    ("昨天", 1), ("前天", 2), ("三天前", 3), ("今天", 0),
]  # fmt: skip

# Each fact is asked in the words of its message or, two times in three, in a paraphrase that
# shares few of them (靠什么谋生 for 教中文), as people ask.
ASK_JOB = ["{who}是做什么工作的？", "{who}的职业是什么？", "{who}靠什么谋生？", "{who}干哪一行？",
           "说到上班，{who}每天忙些啥？"]  # fmt: skip
ASK_BIRTHDAY = ["{who}的生日是哪天？", "{who}什么时候过生日？", "{who}是哪天出生的？",
                "{who}又长一岁是几号？"]  # fmt: skip
ASK_DRINK = ["{who}平时爱喝什么？", "{who}喜欢喝什么？", "给{who}买饮料该买什么？",
             "{who}早上离不开哪种饮品？", "请{who}去店里坐坐，点哪样东西最稳妥？"]  # fmt: skip
ASK_ALLERGY = ["{who}对什么过敏？", "{who}过敏的东西是什么？", "{who}有什么不能吃或不能碰的？",
               "哪些东西{who}一碰就出问题？", "做饭请{who}的时候，哪样食材千万别放？"]  # fmt: skip
ASK_HOBBY = ["{who}周末喜欢干什么？", "{who}有什么爱好？", "{who}闲下来都玩些什么？",
             "有空的时候{who}一般怎么打发时间？",
             "想约{who}出去玩，找什么由头最合适？"]  # fmt: skip
PARAPHRASED = 2  # the first two of each list use the message's words
# A paraphrased question names the person in other words half the time (室友 → 合租的那位), as
# people do: then it shares no rare character with its message at all.
ALIASES = {
    "cousin_m": "我姨妈家的儿子", "cousin_f": "我姨妈家的女儿", "boss": "我领导",
    "roommate": "跟我合租的那位", "aunt": "我妈妈的妹妹", "uncle": "我妈妈的弟弟",
    "brother": "我家老二", "sister": "我家老大", "grandma": "我姥姥",
    "mentor": "带我读研的陈老师", "neighbour": "住我楼下的张阿姨",
}  # fmt: skip
# Near misses (MemDaily's distractors are like these), each about the person asked of: the
# question's topic without the answer; and, for the very question asked, its words in another
# sense (一碰就出问题 said of a computer). The keyword half matches them as well as the
# evidence, or better; the meaning does not.
NEAR_TOPIC = {
    "job": ["{who}最近工作特别忙，周末都在加班。", "{who}问我工作顺不顺利，职业规划想好了没有。"],
    "birthday": ["{who}说今年生日不想办了，太麻烦。", "{who}的生日聚会我可能去不了。"],
    "drink": ["{who}问我平时爱喝什么，我说白开水。", "{who}送了我一箱饮料。"],
    "allergy": ["{who}说春天过敏的人特别多，让我出门戴口罩。", "{who}问我能不能吃辣。"],
    "hobby": ["{who}问我周末有什么爱好，我说睡觉。", "{who}说周末想找人一起玩。"],
}
NEAR_WORDS = {
    "{who}是做什么工作的？": "{who}问我是做什么工作的，我说还在找。",
    "{who}的职业是什么？": "{who}说职业资格考试是什么时候都没搞清楚。",
    "{who}靠什么谋生？": "{who}说靠死工资谋生太难，劝我多学一行手艺。",
    "{who}干哪一行？": "{who}说干一行爱一行，哪一行都不容易。",
    "说到上班，{who}每天忙些啥？": "说到上班，{who}每天都要挤一个小时地铁，忙得没空吃早饭。",
    "{who}的生日是哪天？": "{who}问我的生日是哪天，说要给我寄礼物。",
    "{who}什么时候过生日？": "{who}什么时候都记得给别人过生日，就是忘了自己的。",
    "{who}是哪天出生的？": "{who}出生的那家医院要拆了，说起来还挺伤感的。",
    "{who}又长一岁是几号？": "{who}家的小狗又长大了一岁，几号打疫苗还没定。",
    "{who}平时爱喝什么？": "{who}平时爱喝酒，被医生说了好几次。",
    "{who}喜欢喝什么？": "{who}问我喜欢喝什么汤，周末给我炖。",
    "给{who}买饮料该买什么？": "{who}让我去超市买饮料，顺便买点水果。",
    "{who}早上离不开哪种饮品？": "{who}早上起不来，离不开三个闹钟。",
    "请{who}去店里坐坐，点哪样东西最稳妥？": "{who}开的店里坐满了人，点单的系统最稳妥。",
    "{who}对什么过敏？": "{who}对什么事都很敏感，一句话能想半天。",
    "{who}过敏的东西是什么？": "{who}说过敏的东西太多了，是什么都记不住。",
    "{who}有什么不能吃或不能碰的？": "{who}说减肥期间晚饭不能吃，甜的也不能碰。",
    "哪些东西{who}一碰就出问题？": "{who}的电脑一碰就出问题，又拿去修了。",
    "做饭请{who}的时候，哪样食材千万别放？": "{who}请客做饭的时候，千万别放那么多盐，太咸了。",
    "{who}周末喜欢干什么？": "{who}问我周末喜欢干什么，要不要一起去逛街。",
    "{who}有什么爱好？": "{who}说他儿子没有什么爱好，只知道打游戏。",
    "{who}闲下来都玩些什么？": "{who}家的孩子闲下来就玩手机。",
    "有空的时候{who}一般怎么打发时间？": "{who}说有空的时候一般去看看父母，打发时间就算了。",
    "想约{who}出去玩，找什么由头最合适？": "{who}想约我出去玩，我找了个由头推掉了。",
}
# A second person of the circle with a fact of the same kind (the boss's allergy beside the
# roommate's): a user tells several of each kind.
OTHER_VALUE = {
    "birthday": "{who}的生日是{value}，到时候要记得祝福。",
    "drink": "{who}每次开会都要点一杯{value}。",
    "allergy": "{who}碰了{value}就浑身起疹子。",
    "hobby": "{who}这阵子天天{value}，说是减压。",
}
ASKS = {"birthday": ASK_BIRTHDAY, "drink": ASK_DRINK, "allergy": ASK_ALLERGY, "hobby": ASK_HOBBY}


def _value(rng: random.Random, fact: str, unlike: str | None = None) -> str:
    """A birthday, a drink, an allergy or a hobby, other than ``unlike``."""
    while True:
        if fact == "birthday":
            value = f"{rng.randint(1, 12)}月{rng.randint(1, 28)}日"
        else:
            value = rng.choice({"drink": DRINKS, "allergy": ALLERGIES, "hobby": HOBBIES}[fact])
        if value != unlike:
            return value


def _ask(rng: random.Random, templates: list[str], key: str, who: str) -> tuple[str, str]:
    """The question and its template: two times in three a paraphrase (naming the person in
    other words half of those times), else the message's own words."""
    if rng.random() < 2 / 3:
        template = rng.choice(templates[PARAPHRASED:])
        if key in ALIASES and rng.random() < 0.5:
            who = ALIASES[key]
    else:
        template = rng.choice(templates[:PARAPHRASED])
    return template.format(who=who), template


@dataclass(frozen=True, slots=True)
class Message:
    key: str  # unique within the whole set: u03-m05
    text: str
    when: dt.datetime
    about: str  # the person key or the event key it is about (distractors never share it)


@dataclass(frozen=True, slots=True)
class Query:
    key: str
    text: str
    kind: str  # single | bridge | date | count
    evidence: tuple[str, ...]


@dataclass(slots=True)
class User:
    key: str
    messages: list[Message] = field(default_factory=list)
    questions: list[Query] = field(default_factory=list)

    @property
    def topics(self) -> set[str]:
        return {message.about for message in self.messages}


def build(seed: int = SEED, users: int = USERS) -> list[User]:
    rng = random.Random(seed)
    built: list[User] = []
    for number in range(users):
        built.append(_user(number, rng))
    return built


def _user(number: int, rng: random.Random) -> User:
    user = User(f"u{number:02d}")
    start = dt.datetime(2026, rng.randint(3, 9), rng.randint(1, 20), 9, 0, tzinfo=dt.UTC)
    clock = [start]

    def say(text: str, about: str, gap_days: int | None = None) -> Message:
        clock[0] += dt.timedelta(days=gap_days if gap_days is not None else rng.randint(0, 3),
                                 hours=rng.randint(0, 9), minutes=rng.randint(0, 59))  # fmt: skip
        message = Message(f"{user.key}-m{len(user.messages):02d}", text, clock[0], about)
        user.messages.append(message)
        return message

    def ask(text: str, kind: str, evidence: tuple[str, ...]) -> None:
        user.questions.append(Query(f"{user.key}-q{len(user.questions)}", text, kind, evidence))

    people = rng.sample(PEOPLE, 4)
    job_of = rng.sample(JOBS, len(people))
    cities = rng.sample(CITIES, len(people))
    later: list[tuple[str, str]] = []  # near misses and other people's facts: (text, about)
    for (key, who), job, city in zip(people, job_of, cities, strict=True):
        facts = ["job", rng.choice(["birthday", "drink", "allergy", "hobby"])]
        job_message = say(
            f"{who}在{city}{job[0]}，{rng.choice(['挺辛苦的', '干了好几年了', '最近刚升职'])}。",
            key,
        )
        text, template = _ask(rng, ASK_JOB, key, who)
        ask(text, "single", (job_message.key,))
        asked = [("job", template)]
        for fact in facts[1:]:
            value = _value(rng, fact)
            if fact == "birthday":
                wish = rng.choice(["别忘了买蛋糕", "到时候发个红包", "今年想送本书"])
                m = say(f"提醒一下，{who}的生日是{value}，{wish}。", key)
            elif fact == "drink":
                how = rng.choice(["每天早上都要一杯", "只喝", "特别爱喝"])
                m = say(f"{who}{how}{value}。", key)
            elif fact == "allergy":
                then = rng.choice(["上次差点进医院", "聚餐时要注意", "一点都不能碰"])
                m = say(f"记住：{who}对{value}过敏，{then}。", key)
            else:
                then = rng.choice(["每个周末都去", "还报了个班", "天天在群里发"])
                m = say(f"{who}最近迷上了{value}，{then}。", key)
            if fact == "birthday" and rng.random() < 0.6:  # reached only through the job
                ask(
                    rng.choice([f"{job[1]}的生日是哪天？", f"{job[2]}的那位什么时候过生日？"]),
                    "bridge",
                    (job_message.key, m.key),
                )
                template = rng.choice(ASKS[fact])
            else:
                text, template = _ask(rng, ASKS[fact], key, who)
                ask(text, "single", (m.key,))
            asked.append((fact, template))
            # Someone else of the circle with a fact of the same kind, another value.
            other_key, other = rng.choice([p for p in people if p[0] != key])
            if fact != "job":
                other_value = _value(rng, fact, value)
                later.append((OTHER_VALUE[fact].format(who=other, value=other_value), other_key))
        for fact, template in asked:
            later.append((rng.choice(NEAR_TOPIC[fact]).format(who=who), f"{key}-near"))
            later.append((NEAR_WORDS[template].format(who=who), f"{key}-near"))
    rng.shuffle(later)
    for text, about in later:
        say(text, about)
    # Things that happened, some said relative to the day they were told.
    for _ in range(2):
        place = rng.choice(PLACES)
        person = rng.choice(people)[1].removeprefix("我")
        _plan, done = rng.choice(ACTIVITIES)
        said, back = rng.choice(RELATIVE)
        gap = rng.randint(2, 6)
        key = "event"  # never a distractor: another user's day could answer a date question
        m = say(
            f"{said}{done.format(place=place, person=person)}，{rng.choice(['挺顺利的', '排了好久的队', '花了一下午'])}。",  # noqa: E501
            key,
            gap_days=gap,
        )
        event_day = m.when.date() - dt.timedelta(days=back)
        did = rng.choice(["做了什么", "去了哪里", "干嘛了"])
        ask(f"我{event_day.month}月{event_day.day}日{did}？", "date", (m.key,))
    # A count over several messages.
    pets = rng.sample(PETS, 2)
    pet_keys = []
    for pet, _kind in pets:
        pet_keys.append(
            say(
                f"我家又添了{pet}，{rng.choice(['太可爱了', '家里更热闹了', '每天都要遛'])}。",
                "pets",
            ).key
        )
    ask("我家一共养了哪些宠物？", "count", tuple(pet_keys))
    return user


def distractors_for(
    user: User, everyone: list[User], count: int, seed: int = SEED
) -> list[Message]:
    """Other users' messages about people and things this user never mentions."""
    rng = random.Random(f"{seed}-{user.key}")
    topics = user.topics
    pool = [
        m
        for other in everyone
        if other is not user
        for m in other.messages
        if m.about not in topics
    ]
    return rng.sample(pool, min(count, len(pool)))


if __name__ == "__main__":
    sample = build()
    first = sample[0]
    for message in first.messages:
        print(message.key, message.when.date(), message.text)
    for question in first.questions:
        print(question.key, question.kind, question.text, question.evidence)
    print(
        sum(len(u.questions) for u in sample),
        "questions,",
        sum(len(u.messages) for u in sample),
        "messages",
    )
