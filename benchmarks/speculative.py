"""Speculative decoding: decode tok/s with and without each drafter, acceptance rate, speed-up.

Three engines in one process on the committed fixture (plain, ``--draft-model
qwen3-tiny-draft``, ``--spec-type ngram-simple``), driven through the HTTP app's native
``/completion`` (whose ``timings`` carry ``predicted_ms`` and the draft counters). Runs are
interleaved round-robin so drift on a shared machine hits every configuration alike; tok/s is
the sum of predicted tokens over the sum of predicted time (prefill excluded). Greedy outputs
are compared on the way: a mismatch is reported, never averaged away.

    python -m benchmarks.speculative --rounds 5 --draft-max 3
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from mlxcel.app import create_app
from mlxcel.config import ServerConfig
from mlxcel.engine.worker import Engine, EngineConfig

MODELS = Path(__file__).resolve().parents[1] / "fixtures" / "models"
MODEL = MODELS / "qwen3-tiny"
DRAFT = MODELS / "qwen3-tiny-draft"
# A scripted reply the draft model learned too, and a prompt whose answer repeats its own
# phrases (prompt lookup's case: drafts come from text already seen).
PROMPTS = {
    "story": [{"role": "user", "content": "Tell me a story."}],
    "repeat": [{"role": "user", "content": "the cat sat on the mat, the cat sat on the mat, "
                "the cat sat on the mat, the cat"}],
}


@dataclass
class Tally:
    tokens: int = 0
    ms: float = 0.0
    drafted: int = 0
    accepted: int = 0
    outputs: set[tuple[int, ...]] = field(default_factory=set)

    @property
    def tok_s(self) -> float:
        return self.tokens / self.ms * 1e3 if self.ms else 0.0


@contextmanager
def serve(**engine: Any) -> Iterator[TestClient]:
    config = ServerConfig(model=str(MODEL), parallel=1, draft_model=engine.get("draft_model"))
    eng = Engine(EngineConfig(model=str(MODEL), parallel=1, cache_prompt=False, **engine))
    with TestClient(create_app(config, eng), base_url="http://127.0.0.1") as client:
        if not eng.wait_ready(120):
            raise SystemExit(f"engine failed to load: {eng.load_error}")
        yield client


def prompt_text(messages: list[dict[str, str]]) -> str:
    from mlx_lm.tokenizer_utils import load

    text: str = load(MODEL).apply_chat_template(messages, add_generation_prompt=True,
                                                tokenize=False)
    return text


def run_once(client: TestClient, prompt: str, max_tokens: int, tally: Tally) -> None:
    body = {"prompt": prompt, "n_predict": max_tokens, "temperature": 0, "return_tokens": True,
            "cache_prompt": False}
    data = client.post("/completion", json=body).json()
    timings = data["timings"]
    tally.tokens += timings["predicted_n"]
    tally.ms += timings["predicted_ms"]
    tally.drafted += timings.get("draft_n", 0)
    tally.accepted += timings.get("draft_n_accepted", 0)
    tally.outputs.add(tuple(data["tokens"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--draft-max", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args(argv)
    configs: dict[str, dict[str, Any]] = {
        "plain": {},
        "draft-model": {"draft_model": str(DRAFT), "draft_max": args.draft_max},
        "prompt-lookup": {"prompt_lookup": True, "draft_max": args.draft_max},
    }
    prompts = {name: prompt_text(messages) for name, messages in PROMPTS.items()}
    tallies = {(p, c): Tally() for p in prompts for c in configs}
    with ExitStack() as stack:
        clients = {name: stack.enter_context(serve(**kw)) for name, kw in configs.items()}
        for client in clients.values():  # warm-up, not counted
            run_once(client, prompts["story"], 8, Tally())
        for _ in range(args.rounds):
            for p, prompt in prompts.items():
                for c, client in clients.items():
                    run_once(client, prompt, args.max_tokens, tallies[(p, c)])
    results = []
    for p in prompts:
        plain = tallies[(p, "plain")]
        for c in configs:
            t = tallies[(p, c)]
            row = {"prompt": p, "drafter": c, "tok_s": round(t.tok_s, 1),
                   "tokens_per_run": t.tokens // max(args.rounds, 1),
                   "acceptance": round(t.accepted / t.drafted, 3) if t.drafted else None,
                   "speedup": round(t.tok_s / plain.tok_s, 2) if plain.tok_s else None,
                   "same_output_as_plain": t.outputs == plain.outputs}
            results.append(row)
            acc = "-" if row["acceptance"] is None else f"{row['acceptance']:.0%}"
            print(f"{p:7s} {c:14s} {row['tok_s']:8.1f} tok/s  acceptance {acc:>5s}  "
                  f"speed-up {row['speedup']}x  exact {row['same_output_as_plain']}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0 if all(r["same_output_as_plain"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
