"""``engine/detokenizer.py`` with the fixture's byte-level BPE tokenizer: streamed chunks add up to
the tokenizer's own decode and never carry half a character."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mlxcel.engine.detokenizer import IncrementalDetokenizer

REPLACEMENT = "\ufffd"

# CJK, emoji (with skin tones, ZWJ sequences, flags) and combining marks, mixed with anything
# encodable, so byte-level tokens split multi-byte characters often.
SPECIAL_CHARS = list("中文日本語한국어é̀ñ́😀👍🏽👨‍👩‍👧🇯🇵\u0301\u0308\u200d") + [" ", "\n"]
unicode_text = st.text(
    alphabet=st.one_of(
        st.sampled_from(SPECIAL_CHARS),
        st.characters(codec="utf-8"),
    ),
    max_size=40,
)


@lru_cache(maxsize=1)
def byte_to_unicode() -> dict[int, str]:
    """GPT-2's byte-level alphabet: the printable character that stands for each raw byte."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def byte_token_ids(tokenizer: Any, raw: bytes) -> list[int]:
    """One single-byte token per byte of ``raw``."""
    pieces = [byte_to_unicode()[b] for b in raw]
    ids = [tokenizer.convert_tokens_to_ids(piece) for piece in pieces]
    assert [tokenizer.convert_ids_to_tokens(i) for i in ids] == pieces
    return ids


def stream(tokenizer: Any, ids: list[int]) -> tuple[list[str], str]:
    detok = IncrementalDetokenizer(tokenizer)
    return [detok.add(i) for i in ids], detok.flush()


@settings(max_examples=150, deadline=None)
@given(unicode_text)
def test_chunks_add_up_to_decode_without_partial_characters(tokenizer: Any, text: str) -> None:
    ids = tokenizer.encode(text, add_special_tokens=False)
    chunks, tail = stream(tokenizer, ids)
    decoded = tokenizer.decode(ids)
    assert "".join(chunks) + tail == decoded
    if REPLACEMENT not in decoded:
        assert all(REPLACEMENT not in chunk for chunk in [*chunks, tail])


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_arbitrary_token_sequences_add_up_to_decode(tokenizer: Any, data: st.DataObject) -> None:
    # Ids straight from the vocabulary (stray continuation bytes, cut-off characters, special
    # tokens): released text is never revised, so it always equals the decode of all the ids.
    vocab = sorted(tokenizer.get_vocab().values())
    ids = data.draw(st.lists(st.sampled_from(vocab), max_size=30))
    detok = IncrementalDetokenizer(tokenizer)
    released = ""
    for n, token_id in enumerate(ids, start=1):
        released += detok.add(token_id)
        assert tokenizer.decode(ids[:n]).startswith(released)
    assert released + detok.flush() == tokenizer.decode(ids)


def test_two_byte_character_split_across_byte_tokens(tokenizer: Any) -> None:
    ids = byte_token_ids(tokenizer, "é".encode())
    assert len(ids) == 2
    assert stream(tokenizer, ids) == (["", "é"], "")


def test_emoji_split_into_four_byte_tokens(tokenizer: Any) -> None:
    ids = byte_token_ids(tokenizer, "a😀b".encode())
    assert len(ids) == 6
    assert stream(tokenizer, ids) == (["a", "", "", "", "😀", "b"], "")


def test_cjk_character_split_across_byte_tokens(tokenizer: Any) -> None:
    ids = byte_token_ids(tokenizer, "中文".encode())
    chunks, tail = stream(tokenizer, ids)
    assert [c for c in chunks if c] == ["中", "文"]
    assert tail == ""


def test_character_cut_off_at_the_end_is_flushed_as_replacement(tokenizer: Any) -> None:
    ids = byte_token_ids(tokenizer, "😀".encode()[:2])
    chunks, tail = stream(tokenizer, ids)
    assert chunks == ["", ""]
    assert tail == tokenizer.decode(ids) == REPLACEMENT


def test_flush_twice_releases_nothing_more(tokenizer: Any) -> None:
    detok = IncrementalDetokenizer(tokenizer)
    for token_id in tokenizer.encode("hello", add_special_tokens=False):
        detok.add(token_id)
    detok.flush()
    assert detok.flush() == ""


class CountingDecoder:
    def __init__(self, decoder: Any) -> None:
        self._decoder = decoder
        self.calls = 0

    def decode(self, token_ids: list[int]) -> str:
        self.calls += 1
        text: str = self._decoder.decode(token_ids)
        return text


def test_one_decode_per_token_or_close(tokenizer: Any) -> None:
    # The window's released text is kept, not decoded again: 1 + 1/(WINDOW - 1) decodes per
    # token on plain text, where the old pipeline made two.
    ids = tokenizer.encode("The quick brown fox, Ünïcödé 中文 🙂. " * 40, add_special_tokens=False)
    counting = CountingDecoder(tokenizer)
    detok = IncrementalDetokenizer(counting)
    text = "".join(detok.add(i) for i in ids) + detok.flush()
    assert text == tokenizer.decode(ids)
    assert counting.calls <= 1.5 * len(ids)


@lru_cache(maxsize=1)
def metaspace_tokenizer() -> Any:
    """A SentencePiece-style tokenizer (``▁`` for spaces, the first one dropped on decode), so
    a window that starts mid-text must keep a word's leading space."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    corpus = ["the cat sat on the mat", "a dog and a cat", "où est le café", "中文 and more"]
    tok.train_from_iterator(corpus * 20, trainers.BpeTrainer(vocab_size=120,
                                                              special_tokens=["<unk>"]))
    return tok


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(["the", "cat", "sat", "café", "où", "dog", "中文", "a"]),
                max_size=30))
def test_metaspace_words_keep_their_spaces(words: list[str]) -> None:
    tok = metaspace_tokenizer()
    ids = tok.encode(" ".join(words)).ids
    detok = IncrementalDetokenizer(tok)
    assert "".join(detok.add(i) for i in ids) + detok.flush() == tok.decode(ids)
