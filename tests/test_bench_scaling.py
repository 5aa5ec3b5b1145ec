"""The scaling benchmark's tooling (``benchmarks.scaling``): prompts of a requested length
from the fixture's own words, unique per seed, and the published tables and plot. No benchmark
runs here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks import scaling
from benchmarks.fixture import TINY


def test_prompts_are_fixture_words_of_about_the_asked_length_and_unique() -> None:
    words = scaling.vocabulary_words(TINY)
    assert len(words) > 100 and all(w.isalpha() and w.islower() for w in words)
    first, again, other = (scaling.prompt_of(words, 64, s) for s in (1, 1, 2))
    assert first == again and first != other
    assert 60 <= len(first.split()) <= 64


def _row(server: str, **values: Any) -> dict[str, Any]:
    return {"server": server, "errors": 0, **values}


def test_the_tables_and_plot_cover_every_server_and_level(tmp_path: Path) -> None:
    streams = [_row(s, round=r, level=lv, tok_per_s=100.0 * lv + r, ttft_p50=0.01,
                    ttft_p95=0.02, itl_p50=0.001, itl_p95=0.002)
               for s in ("mlxcel", "llama-server@t1") for r in (0, 1) for lv in (1, 2)]
    prompts = [_row(s, round=0, length=n, prompt_tokens=n + 10, ttft_p50=0.001 * n,
                    decode_tok_s=500.0) for s in ("mlxcel",) for n in (16, 64)]
    result = {"started": "now", "machine": "test", "command": "c", "fixture": "tiny",
              "rounds": 2, "max_tokens": 8, "prompt_max_tokens": 64, "loadavg_before": [],
              "loadavg_after": [], "commands": {"mlxcel": ["python", "-m", "mlxcel"]},
              "streams_summary": scaling.summarize(
                  streams, "level", ["tok_per_s", "ttft_p50", "ttft_p95", "itl_p50", "itl_p95"]),
              "prompts_summary": scaling.summarize(prompts, "length",
                                                   ["prompt_tokens", "ttft_p50", "decode_tok_s"])}
    page = scaling.markdown(result)
    assert "| 2 | mlxcel | 200.5 | 10.0 ms |" in page  # the median of rounds 0 and 1
    assert "| 64 | mlxcel | 74 | 64.0 ms | 500.0 | 0 |" in page
    scaling.plot(result, tmp_path / "s.png")
    assert (tmp_path / "s.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_prefill_ratios_are_mlxcel_over_the_in_process_limit_per_round() -> None:
    # Round 0: mlxcel 2x the limit at 16 words; round 1: 1x. At 4096 words, 1.05x and 1.2x.
    runs = [_row("mlxcel", round=0, length=16, prompt_tokens=26, ttft_p50=0.02),
            _row("mlx-limit", round=0, length=16, prompt_tokens=26, ttft_p50=0.01),
            _row("mlxcel", round=1, length=16, prompt_tokens=26, ttft_p50=0.03),
            _row("mlx-limit", round=1, length=16, prompt_tokens=26, ttft_p50=0.03),
            _row("mlxcel", round=0, length=4096, prompt_tokens=4100, ttft_p50=2.1),
            _row("mlx-limit", round=0, length=4096, prompt_tokens=4100, ttft_p50=2.0),
            _row("mlxcel", round=1, length=4096, prompt_tokens=4100, ttft_p50=2.4),
            _row("mlx-limit", round=1, length=4096, prompt_tokens=4100, ttft_p50=2.0),
            _row("llama-server", round=1, length=4096, prompt_tokens=4100, ttft_p50=0.5)]
    assert scaling.prefill_ratios(runs) == [
        {"length": 16, "prompt_tokens": 26, "median": 1.5, "min": 1.0, "max": 2.0},
        {"length": 4096, "prompt_tokens": 4100, "median": 1.125, "min": 1.05, "max": 1.2}]
    assert scaling.prefill_ratios([r for r in runs if r["server"] != "mlx-limit"]) == []


def test_the_limit_worker_times_the_first_token_of_each_prompt(tmp_path: Path) -> None:
    import os

    from benchmarks.mlx_limit import start_worker

    worker = start_worker(TINY, dict(os.environ), tmp_path)
    try:
        words = scaling.vocabulary_words(TINY)
        answer = worker.prefill([scaling.prompt_of(words, n, 7) for n in (16, 256)])
    finally:
        worker.stop()
    short, long = answer["prompt_tokens"]
    assert 16 <= short < 64 and 256 <= long < 320
    assert len(answer["ttfts"]) == 2 and all(t > 0 for t in answer["ttfts"])
