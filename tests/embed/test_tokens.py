"""The compact Unigram splitter gives the ids `tokenizers` gives, on real and odd text."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from tokenizers import AddedToken, Tokenizer, models, normalizers, pre_tokenizers, processors

from somnid.embed.tokens import LibraryIds, UnigramIds, read_token_ids

SENTENCES = [
    "Caroline went to the LGBTQ support group on 7 May 2023 and said it was powerful.",
    "Melanie is planning a camping trip with her kids in the mountains next summer!",
    "What did you think of the book? I've been reading a lot lately... How about you?",
    "部署窗口定在周五晚上八点，记得提前通知运维团队。",
    "我上周去了杭州，西湖边的龙井茶特别好喝。",
    "Der Zug nach München fährt um 14:32 von Gleis 5 ab.",
    "東京で寿司を食べました。とても美味しかったです。",
    "서울에서 친구를 만났어요. 날씨가 좋았어요.",
    "Ce matin, j'ai pris un café crème à la terrasse.",
    "Встреча перенесена на следующий вторник.",
    "deploy: `kubectl rollout restart deploy/api -n prod` then check p95 < 200ms",
    "emoji 🙂🙂 and symbols ∑∫√ and math x² + y² = z²",
    "full-width ＡＢＣ１２３～ and odd spaces\u00a0\u2009\u3000here",
    "controls\x00\x01\x7f and tabs\tand\nnewlines\r\n",
    "<s> special </s> in the middle <mask> of text <pad><unk>",
    "a" * 600,
    "",
    " ",
    "\u2581already\u2581metaspaced",
    "e\u0301 decomposed and é composed",
]


def _random_texts(count: int) -> list[str]:
    rnd = random.Random(20261203)
    ranges = [(0x20, 0x7E), (0xA0, 0x2FFF), (0x3000, 0x9FFF), (0xAC00, 0xD7A3), (0x1F300, 0x1FAFF)]
    out = []
    for _ in range(count):
        chars = []
        for _ in range(rnd.randint(1, 40)):
            low, high = rnd.choice(ranges)
            chars.append(chr(rnd.randint(low, high)))
        out.append("".join(chars))
    return out


def test_the_shipped_model_splits_as_the_library_does(e5_int8_dir: Path) -> None:
    raw = (e5_int8_dir / "tokenizer.json").read_text(encoding="utf-8")
    compact = read_token_ids(raw, 512)
    library = LibraryIds(Tokenizer.from_str(raw), 512)
    assert isinstance(compact, UnigramIds)
    texts = [prefix + s for s in SENTENCES for prefix in ("", "passage: ", "query: ")]
    texts += _random_texts(1500)
    assert compact.ids(texts) == library.ids(texts)
    assert compact.ids(texts) == library.ids(texts)  # and again, from the word cache
    assert len(compact.ids(["a " * 2000])[0]) == 512
    assert compact.pad_id == library.pad_id == 1
    for piece in ("<s>", "</s>", "<pad>", "<mask>", "\u2581the", "not-a-piece"):
        assert compact.token_id(piece) == library.token_id(piece)


def _unigram(vocab: list[tuple[str, float]], **added: bool) -> Tokenizer:
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=0, byte_fallback=False))
    tokenizer.normalizer = normalizers.NFKC()
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", 1), ("</s>", 2)]
    )
    tokenizer.add_special_tokens([AddedToken(t, special=True, **added) for t in ("<s>", "</s>")])
    return tokenizer


# Ties between paths ("ab"+"c" against "a"+"bc"), pieces missing for some characters (a run
# of them is one <unk>), a multi-character piece over characters that have none.
TOY_VOCAB = [
    ("<unk>", 0.0),
    ("<s>", 0.0),
    ("</s>", 0.0),
    ("\u2581", -1.0),
    ("a", -2.0),
    ("b", -2.0),
    ("c", -2.0),
    ("ab", -3.0),
    ("bc", -3.0),
    ("\u2581a", -1.5),
    ("\u2581ab", -2.5),
    ("xy", -1.0),
    ("abc", -6.0),
]


@pytest.mark.parametrize(
    "text",
    ["abc", "a bc", "abcabc", "zzz", "azzb", "xy", "x", "xyx", "ab<s>c</s>", "  ", "q\u00e9z", ""],
)
def test_a_toy_unigram_splits_as_the_library_does(text: str) -> None:
    library = _unigram(TOY_VOCAB)
    compact = read_token_ids(library.to_str(), 8)
    assert isinstance(compact, UnigramIds)
    assert compact.ids([text]) == LibraryIds(Tokenizer.from_str(library.to_str()), 8).ids([text])


def test_truncation_keeps_the_specials() -> None:
    library = _unigram(TOY_VOCAB)
    compact = read_token_ids(library.to_str(), 5)
    ids = compact.ids(["a b c a b c"])[0]
    assert ids == LibraryIds(Tokenizer.from_str(library.to_str()), 5).ids(["a b c a b c"])[0]
    assert len(ids) == 5 and ids[0] == 1 and ids[-1] == 2


def test_what_it_does_not_follow_goes_through_the_library() -> None:
    wordpiece = Tokenizer(models.WordPiece({"[UNK]": 0, "a": 1}, unk_token="[UNK]"))
    assert isinstance(read_token_ids(wordpiece.to_str(), 8), LibraryIds)
    stripped = _unigram(TOY_VOCAB, lstrip=True)
    assert isinstance(read_token_ids(stripped.to_str(), 8), LibraryIds)
    spec = json.loads(_unigram(TOY_VOCAB).to_str())
    spec["model"]["byte_fallback"] = True
    assert isinstance(read_token_ids(json.dumps(spec), 8), LibraryIds)
    spec = json.loads(_unigram(TOY_VOCAB).to_str())
    spec["post_processor"] = {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 1]}
    assert isinstance(read_token_ids(json.dumps(spec), 8), LibraryIds)


def test_a_lone_surrogate_is_a_question_mark_not_an_error(e5_int8_dir: Path) -> None:
    # "\ud800" is valid JSON: in a recall query it made the tokenizer raise (a 500).
    raw = (e5_int8_dir / "tokenizer.json").read_text(encoding="utf-8")
    for ids in (read_token_ids(raw, 512), LibraryIds(Tokenizer.from_str(raw), 512)):
        assert ids.ids(["deploy \ud800 to prod"]) == ids.ids(["deploy ? to prod"])
