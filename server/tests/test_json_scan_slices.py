"""The body scans of ``json_shape`` run in slices (``SCAN_BYTES``); whatever the slice size,
they count what one scan over the whole body counts (strings cut across slices, escapes cut
between a backslash and its byte, surrogate escapes across two slices)."""

from __future__ import annotations

import json
import random
import re

import pytest

from mlxcel.protocol import json_shape

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


def _whole(raw: bytes) -> tuple[int, int]:
    outside = _STRING.sub(b"", raw)
    containers = outside.count(b"[") + outside.count(b"{")
    return containers + outside.count(b","), containers


def _bodies() -> list[bytes]:
    rng = random.Random(1)
    alphabet = ["a", ",", "[", "{", '\\"', "\\\\", "é", " ", "\ud800"]
    out = []
    for trial in range(60):
        texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
                 for _ in range(rng.randint(1, 12))]
        body = {"m": texts, "n": [[1, 2], {"a": [3]}]}
        out.append(json.dumps(body, ensure_ascii=bool(trial % 2),
                              ).encode("utf-8", "surrogatepass"))
    return out


@pytest.mark.parametrize("slice_bytes", [1, 2, 3, 7, 64])
def test_sliced_scans_count_as_one_scan(monkeypatch: pytest.MonkeyPatch,
                                        slice_bytes: int) -> None:
    monkeypatch.setattr(json_shape, "SCAN_BYTES", slice_bytes)
    for raw in _bodies():
        assert json_shape._count_outside_strings(raw, 10**9, 10**9) == _whole(raw)
        assert json_shape.count_bytes(raw, b",") == raw.count(b",")
        assert json_shape._has_surrogate_escape(raw) == (_SURROGATE.search(raw) is not None)


def test_the_count_stops_past_the_limit() -> None:
    raw = json.dumps([["a"]] * 1000).encode()
    values, containers = json_shape._count_outside_strings(raw, 10, 10**9)
    assert 10 < values < 1000
