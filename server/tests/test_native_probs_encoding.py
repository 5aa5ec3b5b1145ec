"""``encode_final``: the final /completion answer encoded one token at a time is the same JSON
as the whole answer encoded at once."""

from __future__ import annotations

import json

from mlxcel.families.llama.probs import completion_probabilities, encode_final
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
    assert encoded == json.dumps(whole, ensure_ascii=False, separators=(",", ":"))


def test_without_probabilities_and_with_none() -> None:
    assert encode_final({"a": 1}, None) == '{"a":1}'
    assert json.loads(encode_final({"a": 1}, [])) == {"a": 1, "completion_probabilities": []}
    assert json.loads(encode_final({}, [])) == {"completion_probabilities": []}
