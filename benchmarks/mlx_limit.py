"""The MLX limit: mlx-lm in process, no HTTP, on the same weights and backend as the servers.

A benchmark "server" named ``mlx-limit`` that ``benchmarks.peers`` runs in the same interleaved
rounds as the real servers. It is a worker process (``python -m benchmarks.mlx_limit --worker
MODEL``) that loads the model once with ``mlx_lm.load`` and answers one JSON line per level on
stdin with the same work a level sends a server:

- **1 stream**: ``mlx_lm.generate.generate_step``, the requests one after another;
- **N streams**: ``mlx_lm.generate.BatchGenerator`` with ``completion_batch_size`` N, N
  sequences in flight, each finished sequence replaced by the next request at once (N clients
  sending back to back, as ``peers.run_level`` does).

Every request renders the same chat prompt through the model's chat template and generates
exactly ``max_tokens`` greedy tokens (no end-of-sequence stop, as ``ignore_eos`` on the servers).
TTFT runs from the moment a request enters (``generate_step`` is called, or the sequence is
inserted) to its first token; gaps are between consecutive tokens of one sequence. This is the
ceiling a server built on MLX can reach: served tok/s ÷ this is the issue 38 ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .cpu_time import tree_cpu_s
from .load import percentile

NAME = "mlx-limit"


def _prompt_ids(tokenizer: Any, text: str) -> list[int]:
    rendered = tokenizer.apply_chat_template(
        [{"role": "user", "content": text}], add_generation_prompt=True, tokenize=False
    )
    return list(tokenizer.encode(rendered, add_special_tokens=False))


def _one_stream(model: Any, prompts: list[list[int]], max_tokens: int) -> dict[str, Any]:
    import mlx.core as mx
    from mlx_lm.generate import generate_step

    ttfts: list[float] = []
    gaps: list[float] = []
    tokens = 0
    started = time.perf_counter()
    for ids in prompts:
        sent = last = time.perf_counter()
        for index, _ in enumerate(generate_step(mx.array(ids), model, max_tokens=max_tokens)):
            now = time.perf_counter()
            if index == 0:
                ttfts.append(now - sent)
            else:
                gaps.append(now - last)
            last = now
            tokens += 1
    return {"tokens": tokens, "wall_s": time.perf_counter() - started, "ttfts": ttfts, "gaps": gaps}


def _batched(model: Any, prompts: list[list[int]], level: int, max_tokens: int) -> dict[str, Any]:
    from mlx_lm.generate import BatchGenerator

    generator = BatchGenerator(
        model, max_tokens=max_tokens, completion_batch_size=level, prefill_batch_size=min(level, 8)
    )
    pending = list(prompts)
    entered: dict[int, float] = {}
    last: dict[int, float] = {}
    ttfts: list[float] = []
    gaps: list[float] = []
    tokens = 0

    def admit(count: int) -> None:
        batch = [pending.pop(0) for _ in range(min(count, len(pending)))]
        if batch:
            now = time.perf_counter()
            for uid in generator.insert(batch, [max_tokens] * len(batch)):
                entered[uid] = now

    started = time.perf_counter()
    admit(level)
    try:
        while entered:
            finished = 0
            for response in generator.next_generated():
                now = time.perf_counter()
                uid = response.uid
                if uid in last:
                    gaps.append(now - last[uid])
                else:
                    ttfts.append(now - entered[uid])
                last[uid] = now
                tokens += 1
                if response.finish_reason is not None:
                    del entered[uid]
                    finished += 1
            admit(finished)
    finally:
        generator.close()
    return {"tokens": tokens, "wall_s": time.perf_counter() - started, "ttfts": ttfts, "gaps": gaps}


def run_level(model: Any, prompts: list[list[int]], level: int, max_tokens: int) -> dict[str, Any]:
    """The limit at ``level`` streams: ``prompts`` (token ids) each generating exactly
    ``max_tokens`` greedy tokens, ``generate_step`` at one stream, ``BatchGenerator`` at more."""
    if level == 1:
        return _one_stream(model, prompts, max_tokens)
    return _batched(model, prompts, level, max_tokens)


def _prefill(model: Any, prompts: list[list[int]]) -> dict[str, Any]:
    """Time to the first token of each prompt, one after another: the prompt's forward pass
    and one sampled token, as a server's TTFT less HTTP, templating and tokenizing."""
    import mlx.core as mx
    from mlx_lm.generate import generate_step

    ttfts = []
    for ids in prompts:
        sent = time.perf_counter()
        for _ in generate_step(mx.array(ids), model, max_tokens=1):
            ttfts.append(time.perf_counter() - sent)
    return {"ttfts": ttfts, "prompt_tokens": [len(ids) for ids in prompts]}


def serve(model_path: str, stdin: IO[str], stdout: IO[str]) -> None:
    """The worker: load once, then one JSON answer per JSON command line."""
    from mlx_lm import load

    loaded = load(model_path)
    model, tokenizer = loaded[0], loaded[1]
    stdout.write(json.dumps({"ready": True}) + "\n")
    stdout.flush()
    for line in stdin:
        command = json.loads(line)
        prompts = [_prompt_ids(tokenizer, text) for text in command["prompts"]]
        level, max_tokens = int(command.get("level", 1)), int(command.get("max_tokens", 1))
        if command.get("mode") == "prefill":
            run = _prefill(model, prompts)
        else:
            run = run_level(model, prompts, level, max_tokens)
        stdout.write(json.dumps(run) + "\n")
        stdout.flush()


@dataclass
class LimitWorker:
    """The worker process, driven from ``benchmarks.peers`` like a server."""

    process: subprocess.Popen[str]
    model: Path
    log_path: Path

    @property
    def name(self) -> str:
        return NAME

    def alive(self) -> bool:
        return self.process.poll() is None

    def cpu_s(self) -> float:
        try:
            return tree_cpu_s(self.process.pid)
        except (OSError, ValueError, IndexError):
            return float("nan")

    def run(self, level: int, prompts: list[str], max_tokens: int) -> dict[str, Any]:
        return self._ask({"level": level, "max_tokens": max_tokens, "prompts": prompts})

    def prefill(self, prompts: list[str]) -> dict[str, Any]:
        """Each chat prompt's time to its first token, in process."""
        return self._ask({"mode": "prefill", "prompts": prompts})

    def _ask(self, command: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise RuntimeError(f"{NAME} worker exited: {self.log_tail()}")
        result: dict[str, Any] = json.loads(answer)
        return result

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


def start_worker(model: Path, env: dict[str, str], logdir: Path) -> LimitWorker:
    """Start the worker on an mlx-lm model directory and wait until it has loaded."""
    logdir.mkdir(parents=True, exist_ok=True)
    log_path = logdir / f"{NAME}.log"
    root = str(Path(__file__).resolve().parents[1])
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.mlx_limit", "--worker", str(model)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            cwd=root,
            env=dict(env, PYTHONUNBUFFERED="1"),
        )
    worker = LimitWorker(process, model, log_path)
    assert process.stdout is not None
    if not json.loads(process.stdout.readline() or "{}").get("ready"):
        worker.stop()
        raise RuntimeError(f"{NAME} worker did not start: {worker.log_tail()}")
    return worker


def summarize_run(run: dict[str, Any], level: int, requests: int) -> dict[str, Any]:
    """The worker's answer as one row of ``benchmarks.peers`` (the same keys a server gets)."""
    wall = float(run["wall_s"])
    tokens = int(run["tokens"])
    return {
        "level": level,
        "requests": requests,
        "errors": 0,
        "error_samples": [],
        "tokens": tokens,
        "tokens_per_request": round(tokens / max(requests, 1), 1),
        "counted_by": ["in-process"],
        "wall_s": round(wall, 3),
        "tok_per_s": round(tokens / wall, 2) if wall else 0.0,
        "ttft_p50": percentile(run["ttfts"], 0.5),
        "ttft_p95": percentile(run["ttfts"], 0.95),
        "itl_p50": percentile(run["gaps"], 0.5),
        "itl_p95": percentile(run["gaps"], 0.95),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.mlx_limit", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument(
        "--worker",
        required=True,
        metavar="MODEL_DIR",
        help="serve JSON commands on stdin for this mlx-lm model directory",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    serve(args.worker, sys.stdin, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
