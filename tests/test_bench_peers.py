"""The side-by-side benchmark (``benchmarks.peers``): ratios against the reference server, the
published table and plot, slot flags per peer, and a peer that will not start."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks import peers as bench
from mlxcel_conformance.peers.launchers import Peer


def _level(concurrency: int, tok_per_s: float, ttft: float | None) -> dict[str, Any]:
    return {"concurrency": concurrency, "requests": 2, "errors": 0, "tokens": 64,
            "wall_s": 1.0, "tok_per_s": tok_per_s, "ttft_p50": ttft, "ttft_p95": ttft,
            "itl_p50": 0.01, "itl_p95": 0.02, "stream_decode_tok_s": 90.0}


RESULTS: dict[str, Any] = {
    "model": "qwen3-tiny", "max_tokens": 32, "machine": "x86_64, 2 cores, Linux",
    "peers": [
        {"name": "mlxcel", "levels": [_level(1, 100.0, 0.05), _level(4, 200.0, 0.1)]},
        {"name": "llama-server", "levels": [_level(1, 400.0, 0.01), _level(4, 300.0, None)]},
        {"name": "mlx-lm", "levels": [], "error": "did not start: boom"},
    ],
}


def test_ratios_are_against_the_reference_server_at_the_same_level() -> None:
    rows = {(r["peer"], r["concurrency"]): r for r in bench.ratio_rows(RESULTS)}
    assert rows[("mlxcel", 4)]["tok_per_s_vs_mlxcel"] == 1.0
    assert rows[("llama-server", 1)]["tok_per_s_vs_mlxcel"] == 4.0
    assert rows[("llama-server", 1)]["ttft_vs_mlxcel"] == 0.2
    assert rows[("llama-server", 4)]["ttft_vs_mlxcel"] is None  # no first token measured
    assert rows[("llama-server", 4)]["tok_per_s_vs_mlxcel"] == 1.5


def test_ratio_table_names_a_peer_that_failed(tmp_path: Path) -> None:
    table = bench.ratio_markdown(RESULTS)
    assert "| llama-server | 1 | 400.0 | 10.0 ms | 0/2 | 4.0× | 0.2× |" in table
    assert "| llama-server | 4 | 300.0 | — | 0/2 | 1.5× | — |" in table
    assert "mlx-lm: did not start: boom" in table
    bench.plot(RESULTS, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(("name", "flag"), [("mlxcel", "--parallel"), ("llama-server", "-np")])
def test_servers_get_a_slot_per_stream(name: str, flag: str) -> None:
    args = bench.slots_args(name, 8)
    assert args[args.index(flag) + 1] == "8"


def test_a_peer_that_does_not_start_is_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    peer = Peer("broken", "mlx-lm", "exits at once",
                lambda _peer, _port, _model: [sys.executable, "-c", "print('no model'); exit(2)"],
                model_dir=tmp_path, startup_timeout=20.0)
    entry = bench.bench_peer(peer, tmp_path, [1], 4, 1)
    assert entry["levels"] == [] and "did not start" in entry["error"]
    assert "no model" in entry["log_tail"]
    json.dumps(entry)  # publishable as is


@pytest.mark.parametrize(("name", "fields"), [("vllm-mlx", {"model": "qwen3-tiny"}),
                                              ("mlx-lm", {}), ("mlxcel", {}),
                                              ("llama-server", {})])
def test_only_vllm_mlx_requests_name_the_model(name: str, fields: dict[str, Any],
                                               monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    """vllm-mlx answers 422 without ``model``; mlx_lm.server would load any other name."""
    model = tmp_path / "qwen3-tiny"
    assert bench.request_fields(name, model) == fields

    class Started:
        base_url = "http://127.0.0.1:1"
        command = ["server"]

        def __init__(self, *_args: Any) -> None: ...
        def start(self) -> None: ...
        def stop(self) -> None: ...
        def alive(self) -> bool:
            return True

    calls: list[dict[str, Any] | None] = []

    def fake_sweep(_url: str, levels: list[int], _max_tokens: int, _per_worker: int = 2,
                   extra: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        calls.append(extra)
        return [_level(level, 1.0, 0.1) for level in levels]

    monkeypatch.setattr(bench, "PeerProcess", Started)
    monkeypatch.setattr(bench, "sweep", fake_sweep)
    peer = Peer(name, "mlx-lm", "fake", lambda *_: [], model_dir=model)
    monkeypatch.setattr(Peer, "version", lambda _self: "test")
    entry = bench.bench_peer(peer, tmp_path, [1, 4], 8, 1)
    assert calls == [fields, fields]  # the warm-up and the sweep
    assert [lv["concurrency"] for lv in entry["levels"]] == [1, 4]
    assert entry.get("request_fields", {}) == fields
