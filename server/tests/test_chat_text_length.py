"""Messages whose text alone is longer than one tokenizer call may take are refused before the
template renders them (rendering 24 MiB costs string operations that each hold the
interpreter lock for all of it); an assistant turn, which a template may leave out, does not
count."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from mlxcel import limits
from mlxcel.chat.template import check_text_length
from mlxcel.errors import ContextLengthExceeded


@pytest.fixture
def small_limit() -> Iterator[None]:
    before = limits.active()
    limits.install(dataclasses.replace(before, max_tokenize_chars=100))
    try:
        yield
    finally:
        limits.install(before)


def test_user_and_system_text_over_the_limit_is_refused(small_limit: None) -> None:
    messages = [{"role": "system", "content": "s" * 60},
                {"role": "user", "content": [{"type": "text", "text": "u" * 41}]}]
    with pytest.raises(ContextLengthExceeded, match="101 characters"):
        check_text_length(messages)


def test_text_within_the_limit_passes(small_limit: None) -> None:
    check_text_length([{"role": "system", "content": "s" * 60},
                       {"role": "user", "content": "u" * 40}])


def test_assistant_text_is_not_counted(small_limit: None) -> None:
    check_text_length([{"role": "user", "content": "u" * 10},
                       {"role": "assistant", "content": "a" * 1000},
                       {"role": "user", "content": "u" * 10}])
