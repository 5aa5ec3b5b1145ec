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
