"""The hostile campaign's full-size runs (the acceptance of issue 42, "Nothing lost, nothing
unbounded"), each against a fresh ``mlxcel-server`` it starts itself, on the fixture model or
on ``--model``:

- ``unread``: 4 ``/completion`` streams with ``n_probs: 2048`` whose clients never read, for
  ``--window`` seconds, while ``/health`` is probed on fresh connections: the server's RSS
  growth (its peak over the window), ``/health`` p99, and how long the slots stay busy after
  the clients close. Bounds: < 256 MB, < 100 ms, <= 1 s.
- ``trickle``: 4,200 request bodies trickled one byte every 10 s against a server whose
  open-file limit is 4,096 (the campaign's numbers), while ``/health`` is probed: every probe
  must be answered.
- ``sigterm``: 30 streams of 4,000 tokens over the five generation families, then SIGTERM: the
  process must exit 0 within ``--shutdown-grace`` plus 5 s, and every stream must end with its
  family's final event.
- ``store``: 1,100 maximal stored Responses (metadata at OpenAI's documented limits, the
  identifiers at their length bounds, 4-byte characters throughout) with ``--store-bytes``
  set below what they total: RSS growth within 1.5x the budget, and the store file too;
  ``store_memory`` the same with ``--store-path :memory:``.
- ``seeded``: 32 concurrent seeded streams (temperature 0.9) over the four families that take
  a ``seed`` (Anthropic's Messages has none), five rounds: each equal to the same request sent
  alone.

``python -m benchmarks.hostile_campaign --out docs/limits-measured`` (``nox -s hostile``) writes
``<out>.json`` and ``<out>.md``; a server log per scenario goes to a temporary directory that
the report names. Slow: about ten minutes on the fixture with 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from mlxcel_conformance.health_probe import HealthProbe, idle_latency, server_rss_bytes
from mlxcel_conformance.slow_readers import Trickler, close_sockets, open_unread_streams
from mlxcel_conformance.target import wait_healthy

from .run import free_port

MB = 1024 * 1024


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    log: Path


@contextmanager
def mlxcel_server(model: str | None, flags: list[str], logdir: Path, name: str,
                  nofile: int | None = None) -> Iterator[Server]:
    """``mlxcel-server`` on a free port with ``flags``, until the block ends (or the scenario
    ended it itself)."""
    port = free_port()
    cmd = ["mlxcel-server", "--port", str(port), *(["--model", model] if model else []), *flags]
    log = logdir / f"{name}.log"

    def limit_files() -> None:
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                preexec_fn=limit_files if nofile else None)
    url = f"http://127.0.0.1:{port}"
    try:
        if not wait_healthy(url, proc, 300, name, lambda: log.read_text()[-3000:]):
            raise RuntimeError(f"{name}: the server was not ready in 300 s; see {log}")
        yield Server(url, proc, log)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _busy_slots(url: str) -> int:
    slots = httpx.get(f"{url}/slots", timeout=10).json()
    return sum(1 for slot in slots if isinstance(slot, dict) and slot.get("is_processing"))


def _peak_rss(pid: int, stop: threading.Event, into: list[int]) -> None:
    while not stop.wait(0.25):
        rss = server_rss_bytes(pid)
        if rss is not None:
            into.append(rss)


def unread(model: str | None, logdir: Path, window_s: float) -> dict[str, Any]:
    body = {"prompt": "Write a very long story.", "n_predict": 4096, "stream": True,
            "n_probs": 2048, "ignore_eos": True}
    with mlxcel_server(model, [], logdir, "unread") as server:
        idle = idle_latency(server.url)
        before = server_rss_bytes(server.process.pid) or 0
        samples: list[int] = []
        stop = threading.Event()
        sampler = threading.Thread(target=_peak_rss, args=(server.process.pid, stop, samples))
        sampler.start()
        socks = open_unread_streams(server.url, {}, "/completion", body, 4)
        try:
            with HealthProbe(server.url) as probe:
                time.sleep(window_s)
        finally:
            close_sockets(socks)
            closed = time.monotonic()
            stop.set()
            sampler.join()
        busy = _busy_slots(server.url)
        while busy and time.monotonic() - closed < 5.0:
            time.sleep(0.05)
            busy = _busy_slots(server.url)
        freed_s = time.monotonic() - closed
        health = probe.stats()
        grown = max(samples, default=before) - before
        return {
            "streams": 4, "route": "/completion", "n_probs": 2048, "window_s": window_s,
            "rss_before_mb": round(before / MB), "rss_growth_mb": round(grown / MB, 1),
            "health": health.to_evidence(), "idle_health": idle.to_evidence(),
            "slowest_probes_ms": [round(ms, 1) for _, ms in probe.slowest(5)],
            "slots_free_after_close_s": round(freed_s, 2) if not busy else None,
            "pass": grown < 256 * MB and health.p99_ms < 100 and health.failures == 0
            and not busy and freed_s <= 1.0,
        }


def trickle(model: str | None, logdir: Path, count: int, window_s: float) -> dict[str, Any]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, count + 1024)), hard))
    with mlxcel_server(model, [], logdir, "trickle", nofile=4096) as server:
        idle = idle_latency(server.url)
        began = time.monotonic()
        with Trickler(server.url, {}, count, interval_s=10.0) as trickler:
            opened_s = time.monotonic() - began
            with HealthProbe(server.url) as probe:
                time.sleep(window_s)
            ended = trickler.ended
        health = probe.stats()
        after = httpx.get(f"{server.url}/health", timeout=10).status_code
        return {
            "bodies": count, "byte_every_s": 10, "server_open_file_limit": 4096,
            "opened_in_s": round(opened_s, 1), "window_s": window_s,
            "ended_by_server_in_window": ended, "health": health.to_evidence(),
            "idle_health": idle.to_evidence(), "health_after": after,
            "pass": health.failures == 0 and after == 200,
        }


# One long request per family: (path, body, how its stream ends).
def _long_requests(tokens: int, seed: int | None = None) -> list[tuple[str, dict[str, Any]]]:
    extra: dict[str, Any] = {"ignore_eos": True}
    if seed is not None:
        extra = {"temperature": 0.9, "seed": seed}
    story = "Write a very long story about a lighthouse keeper."
    return [
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": story}],
                                  "max_tokens": tokens, "stream": True, **extra}),
        ("/v1/completions", {"prompt": story, "max_tokens": tokens, "stream": True, **extra}),
        ("/v1/responses", {"input": story, "max_output_tokens": tokens, "stream": True,
                           **extra}),
        # Anthropic's Messages has neither ``seed`` nor ``ignore_eos`` (the server refuses
        # both there): its streams are long only when the model does not stop.
        ("/v1/messages", {"messages": [{"role": "user", "content": story}],
                          "max_tokens": tokens, "stream": True,
                          **({} if seed is None else {"temperature": 0.9})}),
        ("/completion", {"prompt": story, "n_predict": tokens, "stream": True, **extra}),
    ]


def _final_event(path: str, events: list[str]) -> bool:
    """Whether a stream's data lines end as its family ends a stream (done or cancelled)."""
    datas = [e for e in events if e]
    if path in ("/v1/chat/completions", "/v1/completions"):
        if not datas or datas[-1] != "[DONE]":
            return False
        chunks = [json.loads(d) for d in datas[:-1]]
        return any(c.get("choices") and c["choices"][0].get("finish_reason")
                   for c in chunks if isinstance(c, dict))
    parsed = [json.loads(d) for d in datas if d != "[DONE]"]
    if path == "/v1/responses":
        return bool(parsed) and parsed[-1].get("type") in (
            "response.completed", "response.incomplete", "response.failed")
    if path == "/v1/messages":
        return bool(parsed) and parsed[-1].get("type") == "message_stop"
    stops = [p for p in parsed if isinstance(p, dict) and p.get("stop") is True]
    return bool(stops)


def _stream(url: str, path: str, body: dict[str, Any], into: list[str],
            timeout_s: float = 600) -> str:
    """Read one SSE stream's data lines into ``into``; how it ended."""
    try:
        with httpx.stream("POST", f"{url}{path}", json=body,
                          timeout=httpx.Timeout(timeout_s, connect=10)) as response:
            if response.status_code != 200:
                return f"HTTP {response.status_code}"
            for line in response.iter_lines():
                if line.startswith("data:"):
                    into.append(line[5:].strip())
        return "closed"
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}"


def sigterm(model: str | None, logdir: Path, streams: int, grace_s: float) -> dict[str, Any]:
    requests = _long_requests(4000)
    with mlxcel_server(model, ["--parallel", str(streams), "--shutdown-grace", str(grace_s)],
                       logdir, "sigterm") as server:
        events: list[list[str]] = [[] for _ in range(streams)]
        plan = [requests[i % len(requests)] for i in range(streams)]
        with ThreadPoolExecutor(streams) as pool:
            futures = [pool.submit(_stream, server.url, path, body, events[i])
                       for i, (path, body) in enumerate(plan)]
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and sum(1 for e in events if e) < streams:
                time.sleep(0.2)
            time.sleep(2.0)
            running = sum(1 for f in futures if not f.done())
            signalled = time.monotonic()
            server.process.send_signal(signal.SIGTERM)
            try:
                rc = server.process.wait(grace_s + 60)
            except subprocess.TimeoutExpired:
                rc = None
            exit_s = time.monotonic() - signalled
            endings = [f.result() for f in futures]
        finals = [_final_event(path, events[i]) for i, (path, _) in enumerate(plan)]
        by_family: dict[str, int] = {}
        for (path, _), final in zip(plan, finals, strict=True):
            by_family[path] = by_family.get(path, 0) + (1 if final else 0)
        return {
            "streams": streams, "running_at_sigterm": running, "grace_s": grace_s,
            "exit_code": rc, "exit_after_s": round(exit_s, 1),
            "streams_with_final_event": sum(finals), "final_events_by_route": by_family,
            "stream_endings": sorted(set(endings)),
            "pass": rc == 0 and exit_s <= grace_s + 5 and all(finals),
        }


def _maximal_response(i: int) -> dict[str, Any]:
    wide = "\U0001F600"  # 4 bytes in UTF-8: the most bytes a character limit admits
    metadata = {f"{i:05d}{j:02d}" + wide * 57: wide * 512 for j in range(16)}
    return {"input": "Say hello.", "max_output_tokens": 4, "store": True, "metadata": metadata,
            "user": wide * 512, "prompt_cache_key": wide * 512, "safety_identifier": wide * 64}


def store(model: str | None, logdir: Path, count: int, budget: int,
          in_memory: bool = False) -> dict[str, Any]:
    path = ":memory:" if in_memory else str(logdir / "store.sqlite")
    with mlxcel_server(model, ["--store-bytes", str(budget), "--store-path", path],
                       logdir, "store-memory" if in_memory else "store") as server:
        pid = server.process.pid
        with httpx.Client(timeout=120) as client:
            client.post(f"{server.url}/v1/responses", json={"input": "Warm up.",
                                                             "max_output_tokens": 4})
            before = server_rss_bytes(pid) or 0
            statuses: dict[int, int] = {}
            sent_bytes = 0
            ids = []
            for i in range(count):
                body = _maximal_response(i)
                sent_bytes += len(json.dumps(body, ensure_ascii=False).encode())
                answer = client.post(f"{server.url}/v1/responses", json=body)
                statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
                if answer.status_code == 200:
                    ids.append(answer.json()["id"])
            after = server_rss_bytes(pid) or 0
            newest = client.get(f"{server.url}/v1/responses/{ids[-1]}").status_code if ids else None
            oldest = client.get(f"{server.url}/v1/responses/{ids[0]}").status_code if ids else None
        files = 0 if in_memory else sum(p.stat().st_size for p in logdir.glob("store.sqlite*"))
        grown = after - before
        return {
            "requests": count, "store_path": path if in_memory else "a file",
            "statuses": statuses, "store_bytes": budget,
            "request_bytes_total_mb": round(sent_bytes / MB, 1),
            "rss_before_mb": round(before / MB), "rss_growth_mb": round(grown / MB, 1),
            "store_files_mb": round(files / MB, 1),
            "newest_readable": newest, "oldest_readable": oldest,
            "pass": statuses.get(200, 0) == count and grown <= 1.5 * budget
            and files <= 1.5 * budget and newest == 200,
        }


def _text_of(path: str, events: list[str]) -> str:
    """The generated text of one stream, from its deltas."""
    parts = []
    for data in events:
        if data == "[DONE]" or not data:
            continue
        chunk = json.loads(data)
        if path == "/v1/chat/completions":
            for choice in chunk.get("choices", []):
                parts.append(choice.get("delta", {}).get("content") or "")
        elif path == "/v1/completions":
            parts.extend(c.get("text", "") for c in chunk.get("choices", []))
        elif path == "/v1/responses":
            if chunk.get("type") == "response.output_text.delta":
                parts.append(chunk.get("delta", ""))
        elif path == "/v1/messages":
            if chunk.get("type") == "content_block_delta":
                parts.append(chunk.get("delta", {}).get("text", ""))
        else:
            parts.append(chunk.get("content", ""))
    return "".join(parts)


def seeded(model: str | None, logdir: Path, streams: int, rounds: int,
           tokens: int) -> dict[str, Any]:
    with mlxcel_server(model, ["--parallel", str(streams)], logdir, "seeded") as server:
        def run(path: str, body: dict[str, Any]) -> str:
            events: list[str] = []
            _stream(server.url, path, body, events)
            return _text_of(path, events)

        # Messages has no seed: the other four families take turns.
        plan = []
        for i in range(streams):
            seeded_routes = [r for r in _long_requests(tokens, seed=1000 + i)
                             if r[0] != "/v1/messages"]
            plan.append(seeded_routes[i % len(seeded_routes)])
        alone = [run(path, body) for path, body in plan]
        equal = 0
        differing: list[dict[str, Any]] = []
        for round_ in range(rounds):
            with ThreadPoolExecutor(streams) as pool:
                together = list(pool.map(lambda pb: run(*pb), plan))
            for i, (text, solo) in enumerate(zip(together, alone, strict=True)):
                if text == solo and text:
                    equal += 1
                else:
                    differing.append({"round": round_, "stream": i, "route": plan[i][0]})
        return {"streams": streams, "rounds": rounds, "max_tokens": tokens,
                "equal_to_alone": equal, "of": streams * rounds,
                "differing": differing[:10], "pass": equal == streams * rounds}


SCENARIOS: dict[str, Callable[[argparse.Namespace, Path], dict[str, Any]]] = {
    "unread": lambda a, d: unread(a.model, d, a.window),
    "trickle": lambda a, d: trickle(a.model, d, a.trickled, a.window),
    "sigterm": lambda a, d: sigterm(a.model, d, 30, a.shutdown_grace),
    "store": lambda a, d: store(a.model, d, a.stored, a.store_bytes),
    "store_memory": lambda a, d: store(a.model, d, a.stored, a.store_bytes, in_memory=True),
    "seeded": lambda a, d: seeded(a.model, d, 32, 5, a.seed_tokens),
}


# What each scenario is held to, as the page states it.
BOUNDS = {
    "unread": "RSS growth < 256 MB, /health p99 < 100 ms, slots free <= 1 s after close",
    "trickle": "every /health probe answered (any status) while the bodies trickle",
    "sigterm": "exit 0 within the grace period + 5 s; every stream ends with its final event",
    "store": "RSS growth and store file within 1.5x --store-bytes; newest readable",
    "store_memory": "RSS growth within 1.5x --store-bytes; newest readable",
    "seeded": "each stream equal to the same request alone",
}


def _measured(name: str, r: dict[str, Any]) -> str:
    if "error" in r:
        return str(r["error"])
    if name == "unread":
        h = r["health"]
        return (f"RSS {r['rss_before_mb']} MB +{r['rss_growth_mb']} MB; /health p50 "
                f"{h['p50_ms']} ms, p99 {h['p99_ms']} ms, max {h['max_ms']} ms over "
                f"{h['probes']} probes (idle p99 {r['idle_health']['p99_ms']} ms); slots free "
                f"{r['slots_free_after_close_s']} s after close")
    if name == "trickle":
        h = r["health"]
        return (f"{r['bodies']} bodies open in {r['opened_in_s']} s; {h['probes']} probes, "
                f"{h['failed_probes']} unanswered, p99 {h['p99_ms']} ms, max {h['max_ms']} "
                f"ms; {r['ended_by_server_in_window']} bodies closed by the server in "
                f"{r['window_s']:g} s; /health after: {r['health_after']}")
    if name == "sigterm":
        return (f"{r['running_at_sigterm']} of {r['streams']} streams running at SIGTERM; "
                f"exit {r['exit_code']} after {r['exit_after_s']} s (grace {r['grace_s']:g} "
                f"s); {r['streams_with_final_event']} of {r['streams']} with a final event")
    if name.startswith("store"):
        return (f"{r['requests']} requests ({r['request_bytes_total_mb']} MB sent), "
                f"statuses {r['statuses']}; budget {r['store_bytes'] / MB:g} MB; RSS "
                f"+{r['rss_growth_mb']} MB; store files {r['store_files_mb']} MB; newest "
                f"{r['newest_readable']}, oldest {r['oldest_readable']} (evicted)")
    if name == "seeded":
        return (f"{r['equal_to_alone']} of {r['of']} equal ({r['streams']} streams x "
                f"{r['rounds']} rounds, {r['max_tokens']} tokens, temperature 0.9)")
    return json.dumps(r, ensure_ascii=False)


def _markdown(report: dict[str, Any]) -> str:
    lines = ["# The hostile campaign at full size", "",
             "The full-size runs behind issue 42's acceptance (\"Nothing lost, nothing "
             "unbounded\"), each against a fresh `mlxcel-server` that "
             "`benchmarks/hostile_campaign.py` starts itself; its docstring says what each "
             "scenario sends. The suite's `robustness` family runs the same hostile clients "
             "at small sizes against any server ([limits](limits.md)).", "",
             f"Command: `{report['command']}`. Machine: {report['machine']}, {report['when']}; "
             f"model: {report['model']}.", "",
             "| scenario | held to | measured | verdict |", "|---|---|---|---|"]
    for name, result in report["scenarios"].items():
        verdict = "PASS" if result.get("pass") else "FAIL"
        lines.append(f"| {name} | {BOUNDS.get(name, '')} | {_measured(name, result)} | "
                     f"{verdict} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=None, help="default: the bundled fixture")
    parser.add_argument("--only", default=",".join(SCENARIOS), help="comma list of scenarios")
    parser.add_argument("--window", type=float, default=30.0)
    parser.add_argument("--trickled", type=int, default=4200)
    parser.add_argument("--stored", type=int, default=1100)
    parser.add_argument("--store-bytes", type=int, default=32 * MB)
    parser.add_argument("--shutdown-grace", type=float, default=30.0)
    parser.add_argument("--seed-tokens", type=int, default=48)
    parser.add_argument("--out", type=Path, default=None, help="writes OUT.json and OUT.md")
    args = parser.parse_args(argv)
    logdir = Path(tempfile.mkdtemp(prefix="hostile-campaign-"))
    results: dict[str, Any] = {}
    for name in args.only.split(","):
        began = time.monotonic()
        try:
            results[name] = SCENARIOS[name](args, logdir)
        except Exception as exc:  # noqa: BLE001 - a scenario's failure is its result
            results[name] = {"error": f"{type(exc).__name__}: {exc}", "pass": False}
        results[name]["seconds"] = round(time.monotonic() - began)
        print(name, json.dumps(results[name], ensure_ascii=False), flush=True)
    report = {
        "command": "python -m benchmarks.hostile_campaign " + " ".join(argv or sys.argv[1:]),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "model": args.model or "bundled fixture (qwen3-tiny)", "logs": str(logdir),
        "scenarios": results}
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(report, indent=2,
                                                            ensure_ascii=False) + "\n")
        args.out.with_suffix(".md").write_text(_markdown(report))
    return 0 if all(r.get("pass") for r in results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
