"""A session log as the pipeline reads it: numbered lines with speaker and time, in windows.

Line ids (``L1``, ``L2``, …) number the log's turns in file order; the model sees and names
them by their number (``7`` for ``L7``) as evidence, and somnid maps them back to who said
it and when. A window holds whole lines, about ``budget`` estimated tokens of them (a
longer line is cut, visibly).
"""

from __future__ import annotations

import datetime as dt
import math
import re
from dataclasses import dataclass, replace

from somnid.dream.similarity import content_words
from somnid.recall.assoc import estimate_tokens
from somnid.sessions.transcript import Transcript, Turn

MAX_LINE_TOKENS = 400
AGENT = "agent"
LINE_OVERHEAD = 12
"""Estimated tokens of a line's id, time and speaker."""
MIN_WORDS = 3
"""Content words (names aside) a line needs to be shown in a one-person window."""
SLACK = 1.25
"""A log up to this many times the window budget is read in one window, not two."""

_SENTENCES = re.compile(r"(?<=[.!?。！？])\s+|(?<=[。！？])")
_FIRST_PERSON = re.compile(
    r"(?<![\w'])(?:i|i'm|i've|i'd|i'll|im|ive|me|my|mine|myself|we|we're|we've|we'd|we'll|"
    r"us|our|ours|ourselves|let's|let’s)(?![\w'])|我|咱",
    re.IGNORECASE,
)
_SECOND_PERSON = re.compile(
    r"(?<![\w'])(?:you|you're|you've|you'd|you'll|your|yours|yourself|u|ur)(?![\w'])|你|您",
    re.IGNORECASE,
)
_TOGETHER = re.compile(
    r"(?<![\w'])(?:let's|let’s|let us|we|we're|we'll|we've|we'd|us|our)(?![\w'])|咱们|我们",
    re.IGNORECASE,
)
_GOES_ON = re.compile(
    r"^(?:it|it's|that|that's|this|these|those|they|they're|they've|there|he|she|his|her|"
    r"which|so|and|but|also|plus|especially|because|它|这|那|他|她|而且|所以|但|也)(?![\w'])",
    re.IGNORECASE,
)
_NO_SUBJECT = re.compile(
    r"^(?:(?:yeah|yep|yes|well|oh|wow|so|also|actually|lately|haha)\W+)*"
    r"(?:just|been|gonna|got|finally|recently|currently|still|went|had|did|made|took|saw|"
    r"ran|won|lost|bought|began|[a-z]{3,}ed)(?![\w'])",
    re.IGNORECASE,
)
"""A sentence of casual English that leaves its subject out, the speaker's own ("Just got
back from a road trip", "Been busy volunteering", "Started aerial yoga")."""
_QUESTION = re.compile(r"[?？]\s*[\"'”’)\]]*$|吗[。！]?$")


@dataclass(frozen=True, slots=True)
class Line:
    id: str
    role: str
    speaker: str
    """Who spoke: the named speaker, else the log's user for ``user`` lines, else the role."""
    when: dt.datetime | None
    text: str
    own_user: bool
    """Said by the log's own user (profile facts may go to that user's profile)."""


@dataclass(frozen=True, slots=True)
class Window:
    log: str
    number: int
    lines: tuple[Line, ...]
    speaker: str | None = None
    """Set for a window of one speaker's lines (see :func:`by_speaker`)."""
    others: tuple[str, ...] = ()
    """Who else speaks in the window these lines come from (their names are no evidence)."""
    context: tuple[Line, ...] = ()
    """For a one-speaker window: every line of the window it was cut from, in order."""

    @property
    def ids(self) -> list[str]:
        return [line.id for line in self.lines]

    def line(self, line_id: str) -> Line | None:
        return next((line for line in self.lines if line.id == line_id), None)


def speakers_of(window: Window) -> list[str]:
    """Who speaks in ``window`` (or in the window a one-speaker window was cut from), in
    order of first line; tools are not speakers."""
    spoken = [line.speaker for line in window.lines if line.role != "tool"]
    return list(dict.fromkeys([*spoken, *window.others]))


def by_speaker(window: Window) -> list[Window]:
    """``window`` as one window per person, each holding only what that person said, for
    a log where people talk among themselves (no agent speaks): what a memory says of
    someone then comes from their own lines by construction. A log with an agent is read
    whole: what its user wants and how the work went lives in the exchange."""
    if any(line.role == "agent" for line in window.lines):
        return [window]
    speakers = speakers_of(window)
    if len(speakers) < 2:
        return [window]
    names = {word for speaker in speakers for word in content_words(speaker)}
    windows = []
    for speaker in speakers:
        # Of each line, the sentences in which the person speaks of themselves; a line
        # left with fewer than three words besides names ("Hey Bo! How are you?") holds
        # nothing to remember of anyone: not shown (each line shown is paid for).
        lines = tuple(
            replace(line, text=own)
            for line in window.lines
            if line.speaker == speaker
            and len(content_words(own := own_sentences(line.text)) - names) >= MIN_WORDS
        )
        if lines:
            others = tuple(other for other in speakers if other != speaker)
            windows.append(Window(window.log, window.number, lines, speaker, others, window.lines))
    return windows


def own_sentences(text: str) -> str:
    """The sentences of ``text`` in which its speaker speaks of themselves: in the first
    person ("I", "my", "we", 我, or its subject left out: "Just got back from …"), not a
    question, and not addressed to the other ("I'm so proud of you", "I'll give you a
    shout") unless it is something to do together ("Let's watch your film on Saturday");
    and a sentence that refers back to one of them ("It's special to me. It's a great way
    to relax."). What else a person says in a talk among people is about the other one (a
    question, praise, thanks, a reply to their news), and a small model shown it writes
    the other's news as the speaker's, or fills its places with it."""
    kept: list[str] = []
    going_on = False
    for sentence in (part.strip() for part in _SENTENCES.split(text)):
        if not sentence or _QUESTION.search(sentence):
            going_on = False
            continue
        addressed = _SECOND_PERSON.search(sentence) and not _TOGETHER.search(sentence)
        if (_FIRST_PERSON.search(sentence) or _NO_SUBJECT.match(sentence)) and not addressed:
            keep = True
        else:
            keep = going_on and not addressed and bool(_GOES_ON.match(sentence))
        if keep:
            kept.append(sentence)
        going_on = keep
    return " ".join(kept)


def log_user(transcript: Transcript) -> str:
    value = transcript.meta.get("user")
    text = str(value).strip() if value is not None else ""
    return text or "default"


def _speaker(turn: Turn, user: str) -> tuple[str, bool]:
    if turn.role == "user":
        if not turn.speaker:
            return user, True
        return turn.speaker, turn.speaker.casefold() == user.casefold()
    if turn.role == "tool":
        return "tool", False
    return turn.speaker or AGENT, False


def _text(turn: Turn) -> str:
    if turn.tool is not None:
        parts = [f"called {turn.tool.call}"]
        if turn.tool.error:
            parts.append(f"error: {turn.tool.error}")
        elif turn.tool.result:
            parts.append(f"result: {turn.tool.result}")
        return "; ".join(parts)
    return " ".join(turn.text.split())


def lines_of(transcript: Transcript) -> list[Line]:
    user = log_user(transcript)
    lines = []
    for number, turn in enumerate(transcript.turns, start=1):
        speaker, own = _speaker(turn, user)
        text = _text(turn)
        if estimate_tokens(text) > MAX_LINE_TOKENS:
            text = text[: MAX_LINE_TOKENS * 4].rstrip() + " …(cut)"
        lines.append(Line(f"L{number}", turn.role, speaker, turn.timestamp, text, own))
    return lines


def windows_of(log: str, lines: list[Line], budget: int) -> list[Window]:
    """``lines`` in windows of about ``budget`` tokens, in order, never splitting a line.

    Every window pays the instructions again, so a log cut in two leaves no small tail: a
    log of up to :data:`SLACK` times the budget is one window, and a longer one is cut in
    ``n`` windows of even size (``total / n`` each, give or take a line)."""
    costs = [estimate_tokens(line.text) + LINE_OVERHEAD for line in lines]
    total = sum(costs)
    if total <= budget * SLACK:
        return [Window(log, 1, tuple(lines))] if lines else []
    count = math.ceil(total / budget)
    target = total / count
    groups: list[list[Line]] = [[] for _ in range(count)]
    before = 0
    for line, cost in zip(lines, costs, strict=True):
        # The window a line's middle falls in: windows of even size, in order.
        groups[min(count - 1, int((before + cost / 2) // target))].append(line)
        before += cost
    numbered = [group for group in groups if group]
    return [Window(log, number, tuple(group)) for number, group in enumerate(numbered, start=1)]


def render(window: Window, tz: dt.tzinfo) -> str:
    """The window as the model sees it: one line each, ``7 [2023-05-08 13:56] Ann: …``,
    the time only where it changed (``[14:02]`` within the same day): a conversation's
    lines mostly share it, and every repeat costs tokens. Line text is data: it is shown
    after the speaker, never as a header of its own."""
    rows = []
    day = minute = None
    for line in window.lines:
        when = ""
        if line.when is not None:
            local = line.when.astimezone(tz)
            if local.date() != day:
                when = f" [{local:%Y-%m-%d %H:%M}]"
            elif (local.hour, local.minute) != minute:
                when = f" [{local:%H:%M}]"
            day, minute = local.date(), (local.hour, local.minute)
        rows.append(f"{line.id.removeprefix('L')}{when} {line.speaker}: {line.text}")
    return "\n".join(rows)
