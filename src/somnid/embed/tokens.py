"""Turning texts into model token ids, for `OnnxEmbedder`.

``tokenizer.json`` is read by `tokenizers`. For a Unigram model (XLM-R and the multilingual
E5 models somnid ships) that library keeps its pieces in a byte trie with a hash map in every
node: 254 MB resident for XLM-R's 250k pieces, a third of the daemon's memory. `UnigramIds`
splits the same way from a plain dict (about 25 MB): the file's own normaliser and
pre-tokeniser (run by `tokenizers`), special tokens cut out first, then the Viterbi search over
the pieces, with the same scores, the same tie-break (the shorter piece, seen first, keeps a
tie), the same unknown-character penalty and the same fusing of unknown runs. Any other model,
or a Unigram file using options this does not follow, goes through `tokenizers` whole
(`LibraryIds`). The two agree id for id; the tests hold them to it on real text.
"""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from tokenizers import Tokenizer

from somnid.memory.text import valid_text

__all__ = ["LibraryIds", "TokenIds", "UnigramIds", "read_token_ids"]

UNKNOWN_PENALTY = 10.0  # below the lowest piece score, as in `tokenizers` and SentencePiece
WORDS_KEPT = 50_000  # split words remembered; cleared whole when full
_PAD_PIECES = ("<pad>", "[PAD]")


class TokenIds(Protocol):
    """Texts to model ids, specials added and truncated to the model's limit."""

    def ids(self, texts: Sequence[str]) -> list[list[int]]: ...

    def token_id(self, piece: str) -> int | None: ...

    @property
    def pad_id(self) -> int: ...


def read_token_ids(raw: str, max_length: int) -> TokenIds:
    """The splitter for a ``tokenizer.json`` text; raises what `tokenizers` raises on bad files."""
    spec = json.loads(raw)
    compact = UnigramIds.from_spec(spec, max_length) if isinstance(spec, dict) else None
    if compact is not None:
        return compact
    return LibraryIds(Tokenizer.from_str(raw), max_length)


def valid(texts: Sequence[str]) -> list[str]:
    """``texts`` as a tokenizer takes them: a lone surrogate, which the library refuses, a
    ``?`` (:func:`~somnid.memory.text.valid_text`)."""
    return [valid_text(text) for text in texts]


class LibraryIds:
    """Any tokenizer, through `tokenizers` itself."""

    def __init__(self, tokenizer: Tokenizer, max_length: int) -> None:
        self._pad = _library_pad_id(tokenizer)
        tokenizer.no_padding()  # batches are padded by the embedder, after sorting by length
        tokenizer.enable_truncation(max_length=max_length)
        self._tokenizer = tokenizer

    def ids(self, texts: Sequence[str]) -> list[list[int]]:
        return [encoding.ids for encoding in self._tokenizer.encode_batch(valid(texts))]

    def token_id(self, piece: str) -> int | None:
        return self._tokenizer.token_to_id(piece)

    @property
    def pad_id(self) -> int:
        return self._pad


class UnigramIds:
    """A Unigram model's splits from a dict of pieces; see the module docstring."""

    def __init__(
        self,
        front: Tokenizer,
        pieces: dict[str, int],
        scores: array[float],
        unk_id: int,
        specials: dict[str, int],
        template: tuple[list[int], list[int]],
        max_length: int,
        pad_id: int,
    ) -> None:
        self._normalizer = front.normalizer  # the file's own, read over an empty model
        self._pre_tokenizer = front.pre_tokenizer
        self._pieces = pieces  # piece -> id; a dict of ints, not of tuples: half the memory
        self._scores = scores
        self._unk_id = unk_id
        self._unk_score = min(scores) - UNKNOWN_PENALTY
        self._longest = max(len(piece) for piece in pieces)
        self._specials = specials
        self._special_re = (
            re.compile("|".join(re.escape(s) for s in sorted(specials, key=len, reverse=True)))
            if specials
            else None
        )
        self._head, self._tail = template
        self._body = max(0, max_length - len(self._head) - len(self._tail))
        self._pad = pad_id
        self._words: dict[str, tuple[int, ...]] = {}

    @classmethod
    def from_spec(cls, spec: dict[str, Any], max_length: int) -> UnigramIds | None:
        """Built from a parsed ``tokenizer.json``, or None where `tokenizers` must do it."""
        model = spec.get("model")
        if not isinstance(model, dict) or model.get("type") != "Unigram":
            return None
        vocab, unk_id = model.get("vocab"), model.get("unk_id")
        if model.get("byte_fallback") or not isinstance(unk_id, int) or not vocab:
            return None
        pieces: dict[str, int] = {}
        scores = array("d")
        for index, (piece, score) in enumerate(vocab):
            pieces.setdefault(str(piece), index)
            scores.append(float(score))
        specials = _specials(spec.get("added_tokens") or [])
        known = specials or {}
        template = _template(spec.get("post_processor"), lambda p: known.get(p, pieces.get(p)))
        if specials is None or template is None or not 0 <= unk_id < len(vocab):
            return None
        front = dict(spec, model={"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0]]})
        front.update(added_tokens=[], post_processor=None, truncation=None, padding=None)
        tokenizer = Tokenizer.from_str(json.dumps(front))
        pad = next((pieces[p] for p in _PAD_PIECES if p in pieces), None)
        padding = spec.get("padding")
        if isinstance(padding, dict) and isinstance(padding.get("pad_id"), int):
            pad = padding["pad_id"]
        return cls(tokenizer, pieces, scores, unk_id, specials, template, max_length, pad or 0)

    @property
    def pad_id(self) -> int:
        return self._pad

    def token_id(self, piece: str) -> int | None:
        if piece in self._specials:
            return self._specials[piece]
        return self._pieces.get(piece)

    def ids(self, texts: Sequence[str]) -> list[list[int]]:
        return [self._one(text) for text in valid(texts)]

    def _one(self, text: str) -> list[int]:
        body: list[int] = []
        for segment, special in self._segments(text):
            if special is not None:
                body.append(special)
                continue
            normalizer, pre = self._normalizer, self._pre_tokenizer
            normal = normalizer.normalize_str(segment) if normalizer is not None else segment
            words = [w for w, _ in pre.pre_tokenize_str(normal)] if pre is not None else [normal]
            for word in words:
                body.extend(self._word(word))
        return [*self._head, *body[: self._body], *self._tail]

    def _segments(self, text: str) -> list[tuple[str, int | None]]:
        if self._special_re is None:
            return [(text, None)] if text else []
        out: list[tuple[str, int | None]] = []
        start = 0
        for match in self._special_re.finditer(text):
            if match.start() > start:
                out.append((text[start : match.start()], None))
            out.append((match.group(), self._specials[match.group()]))
            start = match.end()
        if start < len(text):
            out.append((text[start:], None))
        return out

    def _word(self, word: str) -> tuple[int, ...]:
        known = self._words.get(word)
        if known is None:
            known = self._viterbi(word)
            if len(self._words) >= WORDS_KEPT:
                self._words.clear()
            self._words[word] = known
        return known

    def _viterbi(self, word: str) -> tuple[int, ...]:
        size = len(word)
        if size == 0:
            return ()
        pieces, scores, unk_id = self._pieces, self._scores, self._unk_id
        best = [0.0] * (size + 1)
        begins = [-1] * (size + 1)  # where the best piece ending here begins; -1: none yet
        chosen = [unk_id] * (size + 1)
        for start in range(size):
            base = best[start]
            single = False
            for end in range(start + 1, min(size, start + self._longest) + 1):
                hit = pieces.get(word[start:end])
                if hit is None:
                    continue
                score = base + scores[hit]
                if begins[end] < 0 or score > best[end]:
                    best[end], begins[end], chosen[end] = score, start, hit
                if end == start + 1:
                    single = True
            if not single:
                score = base + self._unk_score
                end = start + 1
                if begins[end] < 0 or score > best[end]:
                    best[end], begins[end], chosen[end] = score, start, unk_id
        out: list[int] = []
        unknown_end = -1  # a run of unknown pieces becomes one, looked up whole
        end = size
        while end > 0:
            start = begins[end]
            if chosen[end] == unk_id:
                if unknown_end < 0:
                    unknown_end = end
            else:
                if unknown_end >= 0:
                    out.append(self._fused(word[end:unknown_end]))
                    unknown_end = -1
                out.append(chosen[end])
            end = start
        if unknown_end >= 0:
            out.append(self._fused(word[:unknown_end]))
        out.reverse()
        return tuple(out)

    def _fused(self, run: str) -> int:
        return self._pieces.get(run, self._unk_id)


def _specials(added: list[Any]) -> dict[str, int] | None:
    """Added tokens cut from the raw text first; None for options this does not follow."""
    out: dict[str, int] = {}
    for token in added:
        if not isinstance(token, dict):
            return None
        if token.get("normalized") or token.get("lstrip") or token.get("rstrip"):
            return None
        if token.get("single_word") or not token.get("content"):
            return None
        out[str(token["content"])] = int(token["id"])
    return out


def _template(post: Any, id_of: Callable[[str], int | None]) -> tuple[list[int], list[int]] | None:
    """The ids a single sequence gets before and after its own, or None if unfollowable."""
    if post is None:
        return [], []
    if not isinstance(post, dict) or post.get("type") != "TemplateProcessing":
        return None
    head: list[int] = []
    tail: list[int] = []
    seen_sequence = False
    for part in post.get("single") or []:
        if "Sequence" in part:
            if seen_sequence:
                return None
            seen_sequence = True
            continue
        name = part.get("SpecialToken", {}).get("id")
        declared = (post.get("special_tokens") or {}).get(name, {}).get("ids")
        if isinstance(declared, list) and all(isinstance(i, int) for i in declared):
            token_ids = list(declared)
        elif isinstance(name, str) and id_of(name) is not None:
            token_ids = [id_of(name) or 0]
        else:
            return None
        (tail if seen_sequence else head).extend(token_ids)
    return (head, tail) if seen_sequence else None


def _library_pad_id(tokenizer: Tokenizer) -> int:
    padding = tokenizer.padding
    if padding and isinstance(padding.get("pad_id"), int):
        return int(padding["pad_id"])
    for piece in _PAD_PIECES:
        token_id = tokenizer.token_to_id(piece)
        if token_id is not None:
            return token_id
    return 0  # masked out anyway
