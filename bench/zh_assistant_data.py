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
ASK_JOB = ["{who}是做什么工作的？", "{who}的职业是什么？", "{who}靠什么谋生？", "{who}干哪一行？"]
ASK_CITY = ["{who}在哪个城市？", "{who}现在住在哪里？"]
ASK_BIRTHDAY = ["{who}的生日是哪天？", "{who}什么时候过生日？", "{who}是哪天出生的？"]
ASK_DRINK = ["{who}平时爱喝什么？", "给{who}买饮料该买什么？", "{who}早上离不开哪种饮品？"]
ASK_ALLERGY = ["{who}对什么过敏？", "{who}有什么不能吃或不能碰的？", "哪些东西{who}一碰就出问题？"]
ASK_HOBBY = ["{who}周末喜欢干什么？", "{who}有什么爱好？", "{who}闲下来都玩些什么？"]
PARAPHRASED = 2  # the first two of each list use the message's words
# Near misses (MemDaily's distractors are like these): the person and the question's topic,
# not the answer; and the person and the paraphrase's very words, in another sense (一碰就出问题
# said of a computer). The keyword half matches both as well as the evidence.
NEAR_TOPIC = {
    "job": ["{who}最近工作特别忙，周末都在加班。", "{who}问我工作顺不顺利，职业规划想好了没有。"],
    "birthday": ["{who}说今年生日不想办了，太麻烦。", "{who}的生日聚会我可能去不了。"],
    "drink": ["{who}问我平时爱喝什么，我说白开水。", "{who}送了我一箱饮料。"],
    "allergy": ["{who}说春天过敏的人特别多，让我出门戴口罩。", "{who}问我能不能吃辣。"],
    "hobby": ["{who}问我周末有什么爱好，我说睡觉。", "{who}说周末想找人一起玩。"],
}
NEAR_WORDS = {
    "job": ["{who}说靠死工资谋生太难，劝我多学一行手艺。"],
    "birthday": ["{who}出生的那家医院要拆了，他还挺伤感的。"],
    "drink": ["{who}早上起不来，离不开三个闹钟。"],
    "allergy": ["{who}的电脑一碰就出问题，又拿去修了。"],
    "hobby": ["{who}家的孩子闲下来就玩手机。"],
}


def _ask(rng: random.Random, templates: list[str], who: str) -> str:
    """Two times in three a paraphrase, else the message's own words."""
    pool = templates[PARAPHRASED:] if rng.random() < 2 / 3 else templates[:PARAPHRASED]
    return rng.choice(pool).format(who=who)


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


def _bare(who: str) -> str:
    """How a question names a person: "我表哥" stays, "同事小王" stays."""
    return who


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

    people = rng.sample(PEOPLE, 4)
    job_of = rng.sample(JOBS, len(people))
    cities = rng.sample(CITIES, len(people))
    near: list[tuple[tuple[str, str], list[str]]] = []
    for (key, who), job, city in zip(people, job_of, cities, strict=True):
        facts = rng.sample(["job", "birthday", "drink", "allergy", "hobby"], 2)
        if "job" not in facts:
            facts[0] = "job"
        near.append(((key, who), facts))
        job_message = say(
            f"{who}在{city}{job[0]}，{rng.choice(['挺辛苦的', '干了好几年了', '最近刚升职'])}。",
            key,
        )
        ask = _ask(rng, ASK_JOB, _bare(who))
        user.questions.append(
            Query(f"{user.key}-q{len(user.questions)}", ask, "single", (job_message.key,))
        )
        for fact in facts[1:]:
            if fact == "birthday":
                month, day = rng.randint(1, 12), rng.randint(1, 28)
                wish = rng.choice(["别忘了买蛋糕", "到时候发个红包", "今年想送本书"])
                m = say(f"提醒一下，{who}的生日是{month}月{day}日，{wish}。", key)
                if rng.random() < 0.6:  # reached only through the job: a bridge
                    ask = rng.choice([f"{job[1]}的生日是哪天？", f"{job[2]}的那位什么时候过生日？"])
                    evidence: tuple[str, ...] = (job_message.key, m.key)
                    kind = "bridge"
                else:
                    ask, evidence, kind = (
                        _ask(rng, ASK_BIRTHDAY, who),
                        (m.key,),
                        "single",
                    )
                user.questions.append(
                    Query(f"{user.key}-q{len(user.questions)}", ask, kind, evidence)
                )
            elif fact == "drink":
                drink = rng.choice(DRINKS)
                m = say(
                    f"{who}{rng.choice(['每天早上都要一杯', '只喝', '特别爱喝'])}{drink}。", key
                )
                user.questions.append(
                    Query(
                        f"{user.key}-q{len(user.questions)}",
                        _ask(rng, ASK_DRINK, who),
                        "single",
                        (m.key,),
                    )
                )
            elif fact == "allergy":
                allergy = rng.choice(ALLERGIES)
                m = say(
                    f"记住：{who}对{allergy}过敏，{rng.choice(['上次差点进医院', '聚餐时要注意', '一点都不能碰'])}。",  # noqa: E501
                    key,
                )
                user.questions.append(
                    Query(
                        f"{user.key}-q{len(user.questions)}",
                        _ask(rng, ASK_ALLERGY, who),
                        "single",
                        (m.key,),
                    )
                )
            else:
                hobby = rng.choice(HOBBIES)
                m = say(
                    f"{who}最近迷上了{hobby}，{rng.choice(['每个周末都去', '还报了个班', '天天在群里发'])}。",  # noqa: E501
                    key,
                )
                user.questions.append(
                    Query(
                        f"{user.key}-q{len(user.questions)}",
                        _ask(rng, ASK_HOBBY, who),
                        "single",
                        (m.key,),
                    )
                )
    # Near misses: for every fact asked about a person, a message with the person and the
    # question's words that does not answer it.
    for (key, who), asked in near:
        for fact in asked:
            say(rng.choice(NEAR_TOPIC[fact]).format(who=who), f"{key}-near")
            say(rng.choice(NEAR_WORDS[fact]).format(who=who), f"{key}-near")
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
        ask = f"我{event_day.month}月{event_day.day}日{rng.choice(['做了什么', '去了哪里', '干嘛了'])}？"  # noqa: E501
        user.questions.append(Query(f"{user.key}-q{len(user.questions)}", ask, "date", (m.key,)))
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
    user.questions.append(
        Query(
            f"{user.key}-q{len(user.questions)}",
            "我家一共养了哪些宠物？",
            "count",
            tuple(pet_keys),
        )
    )
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
