"""``encode_final``: the final /completion answer encoded one token at a time is the same JSON
as the whole answer encoded at once."""

from __future__ import annotations

import json

from mlxcel.families.llama.probs import (
    completion_probabilities,
    encode_final,
    encode_with_probabilities,
)
from mlxcel.generation import TokenLogprob, TopLogprob


def _token(i: int) -> TokenLogprob:
    top = tuple(TopLogprob(token=f"t{j}é", logprob=-j / 3, bytes=(116, j), token_id=j)
                for j in range(3))
    return TokenLogprob(token_id=i, token=f"w{i}", logprob=-0.5, bytes=(119,), top=top)


def test_encoded_one_token_at_a_time_equals_the_whole() -> None:
    body = {"content": "héllo", "stop": True, "timings": {"prompt_n": 1}}
    probabilities = [_token(i) for i in range(4)]
    whole = {**body, "completion_probabilities": completion_probabilities(tuple(probabilities))}
    encoded = encode_final(body, probabilities)
    assert json.loads(encoded) == whole
    assert encoded == json.dumps(whole, ensure_ascii=False, separators=(",", ":")).encode()


def test_without_probabilities_and_with_none() -> None:
    assert encode_final({"a": 1}, None) == b'{"a":1}'
    assert json.loads(encode_final({"a": 1}, [])) == {"a": 1, "completion_probabilities": []}
    assert json.loads(encode_final({}, [])) == {"completion_probabilities": []}


def test_cached_entry_pieces_encode_as_the_dictionaries_do() -> None:
    """The fast path (entry JSON built from cached per-token pieces) against json.dumps of
    the dictionaries, with text that needs escapes and floats at their edges."""
    texts = ['"quoted"', "back\\slash", "tab\tnew\nline", "\x01ctl", "é😀", "</s>", ""]
    values = [-9999.0, -0.0, 0.0, -1e-20, -123.456789012345, -2.5e-7]
    top = tuple(TopLogprob(token=t, logprob=v, bytes=tuple(t.encode()), token_id=k)
                for k, (t, v) in enumerate(zip(texts, values * 2, strict=False)))
    probabilities = [TokenLogprob(token_id=k, token=t, logprob=values[k % len(values)],
                                  bytes=tuple(t.encode()), top=top)
                     for k, t in enumerate(texts)] * 2  # the second pass hits the cache
    whole = {"completion_probabilities": completion_probabilities(tuple(probabilities))}
    assert encode_final({}, probabilities) == json.dumps(
        whole, ensure_ascii=False, separators=(",", ":")).encode()


def test_streamed_partial_encodes_as_its_dictionary() -> None:
    """``encode_with_probabilities`` (a streamed partial) is the JSON of the partial's
    dictionary, with and without probabilities, in both forms."""
    body = {"index": 0, "content": "hé\n", "tokens": [5], "stop": False}
    probabilities = (_token(5),)
    for post_sampling in (False, True):
        whole = {**body, "completion_probabilities": completion_probabilities(
            probabilities, post_sampling)}
        assert encode_with_probabilities(body, probabilities, post_sampling) == json.dumps(
            whole, ensure_ascii=False, separators=(",", ":"))
    assert encode_with_probabilities(body, None) == json.dumps(
        body, ensure_ascii=False, separators=(",", ":"))
