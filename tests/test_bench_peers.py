"""The side-by-side benchmark's tooling (``benchmarks.peers``): the streaming client's counting
against a scripted server, the per-round ratios, the targets, the published page and plot,
and the server commands. No benchmark runs here."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks import peers, peers_report
from benchmarks.bench_servers import public_command, spec_for
from benchmarks.stream_client import EventParser, StreamResult, stream_post


def _chunk(text: str | None = None, usage: int | None = None, reasoning: str | None = None
           ) -> bytes:
    delta: dict[str, Any] = {}
    if text is not None:
        delta["content"] = text
    if reasoning is not None:
        delta["reasoning_content"] = reasoning
    event: dict[str, Any] = {"choices": [{"index": 0, "delta": delta}] if usage is None else []}
    if usage is not None:
        event["usage"] = {"completion_tokens": usage}
    return b"data: " + json.dumps(event).encode() + b"\n\n"


async def _serve(pieces: list[bytes], *, status: int = 200, chunked: bool = True
                 ) -> tuple[asyncio.AbstractServer, int]:
    """A one-shot HTTP server that answers every request with ``pieces`` as the body."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length")))
        await reader.readexactly(length)
        proto = b"HTTP/1.1" if chunked else b"HTTP/1.0"
        writer.write(proto + b" %d X\r\nContent-Type: text/event-stream\r\n" % status
                     + (b"Transfer-Encoding: chunked\r\n" if chunked else b"") + b"\r\n")
        for piece in pieces:
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
            await writer.drain()
            await asyncio.sleep(0.002)
        if chunked:
            writer.write(b"0\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def _fetch(pieces: list[bytes], **kwargs: Any) -> StreamResult:
    async def go() -> StreamResult:
        server, port = await _serve(pieces, **kwargs)
        async with server:
            return await stream_post("127.0.0.1", port, "/v1/chat/completions", {"x": 1})

    return asyncio.run(go())


def test_usage_counts_the_tokens_and_deltas_time_them() -> None:
    # An empty delta (a token with no visible text) is not a token event; usage says 4.
    pieces = [_chunk(""), _chunk("a"), _chunk(reasoning="b") + _chunk("c"), _chunk(usage=4),
              b"data: [DONE]\n\n"]
    result = _fetch(pieces)
    assert result.ok and result.status == 200
    assert (result.tokens, result.counted_by, result.token_events) == (4, "usage", 3)
    assert result.ttft is not None and len(result.gaps) == 2
    assert result.gaps[1] == 0.0  # two events in one read arrive together


def test_without_usage_the_token_events_are_counted_on_a_close_delimited_body() -> None:
    result = _fetch([_chunk("a"), _chunk("b"), _chunk("c")], chunked=False)
    assert result.ok and (result.tokens, result.counted_by) == (3, "deltas")


def test_an_event_split_across_reads_is_parsed_once() -> None:
    parser = EventParser()
    event = _chunk("hello")
    assert parser.feed(event[:7]) == []
    assert parser.feed(event[7:].replace(b"\n", b"\r\n")) == [event[6:-2]]


@pytest.mark.parametrize(("pieces", "status", "error"), [
    ([b'{"error": {"message": "no"}}'], 503, "HTTP 503"),
    ([b'data: {"error": {"message": "generation failed"}}\n\n'], 200, "error event"),
    ([b"data: {not json\n\n"], 200, "JSONDecodeError"),
])
def test_failures_are_errors_not_tokens(pieces: list[bytes], status: int, error: str) -> None:
    result = _fetch(pieces, status=status)
    assert not result.ok and result.error is not None and error in result.error


def test_a_refused_connection_is_an_error() -> None:
    async def go() -> StreamResult:
        server, port = await _serve([])
        server.close()
        await server.wait_closed()
        return await stream_post("127.0.0.1", port, "/v1/chat/completions", {})

    result = asyncio.run(go())
    assert not result.ok and result.error and "Error" in result.error


def _run(server: str, level: int, round_: int, tok: float, ttft: float,
         errors: int = 0) -> dict[str, Any]:
    return {"server": server, "level": level, "round": round_, "tok_per_s": tok,
            "ttft_p50": ttft, "ttft_p95": ttft * 2, "itl_p50": 0.001, "itl_p95": 0.002,
            "errors": errors, "requests": 8, "tokens_per_request": 256.0,
            "counted_by": ["usage"], "server_cpu_ms_per_token": 0.5}


def _entry(levels: list[int], runs: list[dict[str, Any]]) -> dict[str, Any]:
    entry = {"model": "m", "parameters": 10, "levels": levels, "max_tokens": 256,
             "min_tokens": 1024, "blas_preload": None, "loadavg_before": [1.0],
             "loadavg_after": [1.0], "runs": runs,
             "servers": {name: {"command": ["python", "-m", name], "version": "v",
                                "request_fields": {}}
                         for name in {r["server"] for r in runs}}}
    entry["summary"] = peers_report.summarize(entry)
    return entry


def test_ratios_are_taken_within_a_round_then_the_median() -> None:
    # Round 0: the machine is fast for both; round 1: slow for both. Ratio 2.0 in each round,
    # while the ratio of the medians of tok/s would be 1.5.
    runs = [_run("mlxcel", 1, 0, 400.0, 0.01), _run("llama-server", 1, 0, 200.0, 0.02),
            _run("mlxcel", 1, 1, 200.0, 0.04), _run("llama-server", 1, 1, 100.0, 0.02),
            _run("mlxcel", 1, 2, 100.0, 0.04), _run("llama-server", 1, 2, 200.0, 0.02)]
    (ours, theirs) = _entry([1], runs)["summary"]
    assert ours["server"] == "mlxcel" and ours["mlxcel_tok_ratio"] is None
    assert theirs["mlxcel_tok_ratio"] == {"median": 2.0, "min": 0.5, "max": 2.0}
    assert theirs["mlxcel_ttft_ratio"] == {"median": 2.0, "min": 0.5, "max": 2.0}
    assert theirs["tok_per_s"] == {"median": 200.0, "min": 100.0, "max": 200.0}


def _results() -> dict[str, Any]:
    tiny = _entry([1, 8], [_run("mlxcel", 1, 0, 900.0, 0.010),
                           _run("mlx-limit", 1, 0, 800.0, 0.008),
                           _run("mlx-lm", 1, 0, 1000.0, 0.02),
                           _run("llama-server", 1, 0, 1800.0, 0.005),
                           _run("mlxcel", 8, 0, 2000.0, 0.02, errors=1),
                           _run("mlx-limit", 8, 0, 2500.0, 0.01),
                           _run("mlx-lm", 8, 0, 900.0, 0.04),
                           _run("llama-server", 8, 0, 1900.0, 0.04)])
    bench = _entry([32], [_run("mlxcel", 32, 0, 800.0, 0.1), _run("mlx-lm", 32, 0, 500.0, 0.5),
                          _run("llama-server", 32, 0, 1000.0, 0.1)])
    results = {"started": "now", "machine": "test", "command": "python -m benchmarks.peers",
               "rounds": 1, "fixtures": {"tiny": tiny, "bench": bench}}
    results["targets"] = peers_report.targets(results)
    return results


def test_targets_follow_the_issue() -> None:
    got = {(t["fixture"], t["target"]): (t["value"]["median"] if t["value"] else None, t["met"])
           for t in _results()["targets"]}
    assert got[("tiny", "tok/s ÷ MLX limit (in process), 1 stream")] == (1.125, True)
    assert got[("tiny", "tok/s ÷ MLX limit (in process), 8 streams")] == (0.8, False)
    assert got[("tiny", "tok/s ÷ mlx_lm.server, 1 stream")] == (0.9, False)  # goal ≥ 1.0
    assert got[("tiny", "tok/s ÷ mlx_lm.server, 8 streams")] == (
        pytest.approx(2.222, 1e-3), True)  # goal ≥ 2.0
    assert got[("tiny", "mlxcel errors, all levels")] == (1, False)
    assert got[("bench", "tok/s ÷ mlx_lm.server, 32 streams")] == (1.6, False)
    assert got[("bench", "tok/s ÷ MLX limit (in process), 32 streams")] == (None, None)
    # llama-server is context: no target names it
    assert not any("llama-server" in target for _, target in got)


def test_targets_take_the_best_variant_in_each_round() -> None:
    runs = [_run("mlxcel", 1, 0, 900.0, 0.010), _run("mlx-lm", 1, 0, 300.0, 0.050),
            _run("mlx-lm@b", 1, 0, 1800.0, 0.005),
            _run("mlxcel", 1, 1, 900.0, 0.010), _run("mlx-lm", 1, 1, 600.0, 0.004),
            _run("mlx-lm@b", 1, 1, 450.0, 0.020)]
    results = {"fixtures": {"tiny": _entry([1], runs)}}
    got = {t["target"]: t["value"] for t in peers_report.targets(results)}
    assert got["tok/s ÷ mlx_lm.server, 1 stream"] == {"median": 1.0, "min": 0.5, "max": 1.5}


def test_the_default_servers_run_llama_server_with_one_thread_too() -> None:
    assert peers.default_servers({"llama-server": "/x/llama-server", "vllm-mlx": None}) == [
        "mlxcel", "mlx-lm", "mlx-limit", "llama-server", "llama-server@t1"]
    assert peers.default_servers({}) == ["mlxcel", "mlx-lm", "mlx-limit"]


@pytest.mark.parametrize(("name", "flags"), [
    ("mlxcel", []), ("mlxcel@base", []), ("llama-server", []),
    ("llama-server@t1", ["-t", "1"])])
def test_a_variant_is_its_server_started_with_its_flags(
        name: str, flags: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("benchmarks.bench_servers.gguf_for", lambda model, cache: cache / "m.gguf")
    spec = spec_for(name, tmp_path, 1234, 4, blas=None, executable="/x/llama",
                    gguf_cache=tmp_path, extra_args=["--x"])
    assert spec.command[-len(flags) - 1:] == [*flags, "--x"]
    assert spec.fields == {"ignore_eos": True}


def test_targets_and_tables_are_mlxcel_s() -> None:
    runs = [_run("mlxcel", 1, 0, 2700.0, 0.005), _run("mlx-limit", 1, 0, 1800.0, 0.010)]
    results = {"fixtures": {"tiny": _entry([1], runs)}}
    rows = {t["target"]: t for t in peers_report.targets(results)}
    tok = rows["tok/s ÷ MLX limit (in process), 1 stream"]
    assert (tok["value"]["median"], tok["met"]) == (1.5, True)
    entry = results["fixtures"]["tiny"]
    assert [r["server"] for r in entry["summary"]] == ["mlxcel", "mlx-limit"]
    page = peers_report.fixture_table(entry)
    assert "| 1 | mlx-limit | 1,800.0 (1,800.0–1,800.0) | **1.50** (1.50–1.50) | 10.0" in page
    assert peers_report.peer_wins(entry) == []
    page = peers_report.markdown({**results, "started": "t", "machine": "m", "command": "c",
                                  "rounds": 1, "targets": list(rows.values())})
    assert "Where a peer is ahead" not in page and "nowhere" not in page
    assert "No peer's median tok/s or TTFT p50 beat mlxcel's at the levels measured" in page
    assert "## Targets (issue 38)" in page


def test_a_target_without_its_peer_is_not_run() -> None:
    results = {"fixtures": {"bench": _entry([1], [_run("mlxcel", 1, 0, 80.0, 0.1)])}}
    (first, second, errors) = peers_report.targets(results)
    assert first["met"] is None and second["met"] is None and errors["met"] is True
    assert "not run" in peers_report.target_table([first])


def test_the_mlx_limit_worker_generates_exactly_max_tokens_in_process(tmp_path: Path) -> None:
    """The in-process limit on the committed tiny model: one stream and a batch of 3 over 5
    requests, each exactly ``max_tokens`` tokens, timed per request."""
    from benchmarks.fixture import fixture_path
    from benchmarks.mlx_limit import start_worker, summarize_run

    worker = start_worker(Path(fixture_path("tiny")), dict(os.environ), tmp_path)
    try:
        one = summarize_run(worker.run(1, ["a", "b"], 12), 1, 2)
        many = worker.run(3, [f"p{i}" for i in range(5)], 7)
    finally:
        worker.stop()
    assert (one["tokens"], one["tokens_per_request"], one["errors"]) == (24, 12.0, 0)
    assert one["tok_per_s"] > 0 and one["ttft_p50"] is not None and one["itl_p50"] is not None
    assert many["tokens"] == 35 and len(many["ttfts"]) == 5 and len(many["gaps"]) == 30
    assert not worker.alive()


def test_the_page_names_where_a_peer_wins_and_the_plot_is_a_png(tmp_path: Path) -> None:
    results = _results()
    page = peers_report.markdown(results)
    assert "llama-server at 1 stream: 2.00× mlxcel's tok/s" in page
    assert "TTFT p50 2.00× shorter than mlxcel's" in page
    assert "| 1 | llama-server | 1,800.0 (1,800.0–1,800.0) | **0.50** (0.50–0.50) |" in page
    peers_report.plot(results, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (tmp_path / "peers.json").write_text(json.dumps(results))
    again = peers_report.rerender(tmp_path / "peers.json")
    assert again["targets"] == results["targets"]
    assert (tmp_path / "peers.md").read_text() == page


def test_a_level_lasts_at_least_min_tokens_and_two_requests_per_client() -> None:
    assert peers.requests_per_client(1, 256, 8192) == 32
    assert peers.requests_per_client(32, 256, 8192) == 2
    assert peers.requests_per_client(64, 256, 8192) == 2


def test_only_failed_requests_are_errors_and_their_tokens_do_not_count() -> None:
    good = StreamResult(ok=True, status=200, token_events=4, usage_tokens=5, ttft=0.1,
                        gaps=[0.01, 0.02])
    bad = StreamResult(ok=False, status=503, token_events=0, error="HTTP 503: busy")
    row = peers.summarize_level([good, bad], wall=1.0, level=2)
    assert (row["tokens"], row["errors"], row["tok_per_s"]) == (5, 1, 5.0)
    assert row["error_samples"] == ["HTTP 503: busy"] and row["counted_by"] == ["usage"]


@pytest.mark.parametrize(("name", "flag", "fields"), [
    ("mlxcel", "--parallel", {"ignore_eos": True}),
    ("llama-server", "-np", {"ignore_eos": True}),
    ("mlx-lm", "--decode-concurrency", {}),
])
def test_each_server_gets_a_slot_per_stream_and_a_fixed_length_where_it_can(
        name: str, flag: str, fields: dict[str, Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("benchmarks.bench_servers.gguf_for", lambda model, cache: cache / "m.gguf")
    spec = spec_for(name, tmp_path, 1234, 64, blas="/usr/lib/blas.so", executable="/x/llama",
                    gguf_cache=tmp_path, extra_args=[])
    assert spec.command[spec.command.index(flag) + 1] == "64"
    assert spec.fields == fields
    assert (spec.env.get("LD_PRELOAD") == "/usr/lib/blas.so") == (name != "llama-server")


def test_published_commands_name_no_machine_paths() -> None:
    repo = str(Path(peers.__file__).resolve().parents[1])
    command = [sys.executable, "-m", "mlxcel", "--model", f"{repo}/fixtures/models/qwen3-tiny",
               "--gguf", str(Path.home() / ".cache" / "x.gguf"), "/opt/build/bin/llama-server",
               "/usr/lib/x86_64-linux-gnu/libopenblas.so.0"]
    assert public_command(command) == [
        "python", "-m", "mlxcel", "--model", "fixtures/models/qwen3-tiny", "--gguf",
        "~/.cache/x.gguf", "llama-server", "/usr/lib/x86_64-linux-gnu/libopenblas.so.0"]


def test_per_server_flags_and_environment_reach_only_that_server() -> None:
    args = peers.parse_args(["--args", "llama-server@t1=-t 1", "--pythonpath",
                             "mlxcel@base=/x/server", "--env",
                             "mlxcel@one=MLXCEL_STREAM_INTERVAL_MS=0"])
    assert peers._environments(args) == {"mlxcel@base": {"PYTHONPATH": "/x/server"},
                                         "mlxcel@one": {"MLXCEL_STREAM_INTERVAL_MS": "0"}}
    spec = spec_for("mlxcel@one", Path("m"), 1, 2, blas=None, executable=None,
                    gguf_cache=Path("."), extra_args=["--foo"],
                    extra_env=peers._environments(args)["mlxcel@one"])
    assert spec.name == "mlxcel@one" and spec.command[-1] == "--foo"
    assert spec.env["MLXCEL_STREAM_INTERVAL_MS"] == "0" and spec.fields == {"ignore_eos": True}


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads Linux /proc")
def test_a_server_s_cpu_counts_its_running_worker_processes() -> None:
    """A server's worker processes are the server: their CPU is the server's (a parent stat's
    ``cutime`` counts only children that have ended)."""
    import subprocess
    import time

    from benchmarks.cpu_time import stat_cpu_s, tree_cpu_s

    # The child spins for 0.8 s of its own CPU time (however busy the machine), then sleeps.
    spin = ("import time\nwhile time.process_time() < 0.8: pass\ntime.sleep(60)")
    parent = subprocess.Popen([sys.executable, "-c",
                               f"import subprocess, sys; subprocess.run([sys.executable, '-c', "
                               f"{spin!r}])"])
    try:
        deadline = time.monotonic() + 60
        while tree_cpu_s(parent.pid) < 0.5 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert tree_cpu_s(parent.pid) >= 0.5
        assert stat_cpu_s(f"/proc/{parent.pid}/stat", children=True) < 0.5
    finally:
        parent.kill()
        parent.wait()
