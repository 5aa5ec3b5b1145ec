"""Request sampling fields resolved against server defaults."""

from __future__ import annotations

import pytest

from mlxcel.engine.sampling import check_logit_bias
from mlxcel.errors import InvalidRequestError
from mlxcel.generation import SamplingParams
from mlxcel.protocol.sampling_fields import SEED_SPACE, normalize_seed


@pytest.mark.parametrize(
    ("seed", "expected"),
    [(None, None), (-1, None), (0, 0), (42, 42), (-2, SEED_SPACE - 2), (SEED_SPACE + 5, 5)],
)
def test_normalize_seed(seed: int | None, expected: int | None) -> None:
    assert normalize_seed(seed) == expected


@pytest.mark.parametrize("token_id", [-1, 2048, 5000])
def test_logit_bias_outside_vocabulary_is_rejected(token_id: int) -> None:
    with pytest.raises(InvalidRequestError) as err:
        check_logit_bias(SamplingParams(logit_bias={token_id: 1.0}), vocab_size=2048)
    assert err.value.param == "logit_bias"


def test_logit_bias_inside_vocabulary_passes() -> None:
    check_logit_bias(SamplingParams(logit_bias={0: 1.0, 2047: -5.0}), vocab_size=2048)
