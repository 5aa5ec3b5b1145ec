"""Unit tests of the llama-server native adapter: stop types, prompt forms (DRY: test_dry.py)."""

from __future__ import annotations

import pytest

from mlxcel.families.llama.native_completion import stop_type_of
from mlxcel.generation import Finished


@pytest.mark.parametrize(
    ("finished", "expected"),
    [
        (Finished("length", 3, 8), "limit"),
        (Finished("stop", 3, 2), "eos"),
        (Finished("stop", 3, 2, stop_string="."), "word"),
        (Finished("cancelled", 3, 1), "none"),
    ],
)
def test_stop_type(finished: Finished, expected: str) -> None:
    assert stop_type_of(finished) == expected
