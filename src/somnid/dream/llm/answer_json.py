"""JSON a model wrote (a stage's answer, a tool call's arguments), read as somnid keeps text.

``json.loads`` alone lets through what no file should hold and raises what no caller
expected: ``"\\ud800"`` decodes to a lone surrogate (no UTF-8 carries it: the entry it went
into could not be written, and the event naming it broke every event stream), control
characters decode to themselves, and a number of more than 4,300 digits raises a plain
``ValueError``. Here every string (keys too) is :func:`~somnid.memory.text.model_text`, and
every failure is one :class:`BadJson` saying what is wrong.
"""

from __future__ import annotations

import json
from typing import Any

from somnid.memory.text import model_text


class BadJson(ValueError):
    """Text that is no JSON a model's answer can be read from; the message says why.
    ``syntax``: it is not JSON at all (rather than JSON nested too deep or a number too
    long), so a JSON text may still be inside it."""

    def __init__(self, why: str, *, syntax: bool = False) -> None:
        super().__init__(why)
        self.syntax = syntax


def loads(text: str) -> Any:
    """The JSON value in ``text``, its strings cleaned; raises :class:`BadJson`."""
    try:
        return cleaned(json.loads(text))
    except json.JSONDecodeError as exc:
        raise BadJson(f"{exc.msg} at line {exc.lineno} column {exc.colno}", syntax=True) from None
    except RecursionError:  # nested past Python's stack
        raise BadJson("it is nested too deep") from None
    except ValueError:  # a number of more than 4,300 digits
        raise BadJson("it holds a number too long to read") from None


def cleaned(value: Any) -> Any:
    """``value`` (JSON-like: strings, lists, tuples, dicts) with every string, keys too,
    :func:`~somnid.memory.text.model_text`; other values as they are."""
    if isinstance(value, str):
        return model_text(value)
    if isinstance(value, list | tuple):
        return [cleaned(item) for item in value]
    if isinstance(value, dict):
        return {model_text(str(key)): cleaned(item) for key, item in value.items()}
    return value
