"""CPU per generated token of the engine thread's text pipeline: streaming detokenization
(``engine/detokenizer.py``) and stop-string matching (``engine/stops.py``), fed one token at a
time as the worker feeds them, on generations of N tokens (issue 38: both must cost the same per
token at 8,000 tokens as at 500, and little next to a decode step).

    python -m benchmarks.detok_stream                         # the qwen3-tiny fixture's tokenizer
    python -m benchmarks.detok_stream --gguf /path/to/SmolLM2-135M-Instruct.Q4_1.gguf
    python -m benchmarks.detok_stream --transformers          # through transformers' decode

The tokens are a mixed text (prose, code, accents, CJK, emoji) encoded and repeated to N tokens.
Decoding goes straight to the ``tokenizers`` backend (``decode(ids, skip_special_tokens=False)``),
as ``engine/loaded_model.py`` does for a tokenizer with no space clean-up. Reported per token: CPU
microseconds (``time.process_time``, best of ``--repeats``) of the detokenizer alone, of the stop
matcher alone (three stop strings) and of both, and the decode calls made per token.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, cast

import tokenizers

from mlxcel.engine.detokenizer import IncrementalDetokenizer
from mlxcel.engine.stops import StopMatcher

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "models" / "qwen3-tiny"
TEXT = ("The quick brown fox jumps over the lazy dog. def main(): return [x * 2 for x in range(10)]"
        "\nCafé, naïve, Ünïcödé; 中文日本語 한국어 🙂👍🏽 and then some more prose, "
        "numbers 3.14159 and 2026-12-06.\n\n")
STOPS = ("</answer>", "\n\nUser:", "STOP")


class CountingDecoder:
    """The backend's decode, counting its calls."""

    def __init__(self, decode: Callable[[list[int]], str]) -> None:
        self._decode = decode
        self.calls = 0

    def decode(self, token_ids: list[int]) -> str:
        self.calls += 1
        return self._decode(token_ids)


def fixture_backend() -> tokenizers.Tokenizer:
    return tokenizers.Tokenizer.from_file(str(FIXTURE / "tokenizer.json"))


def gguf_backend(path: str) -> tokenizers.Tokenizer:
    """The GGUF's own tokenizer, built without torch (transformers' GGUF converter)."""
    import mlx.core as mx
    from transformers.integrations.gguf import GGUF_TOKENIZER_MAPPING, convert_gguf_tokenizer

    loaded: Any = mx.load(path, return_metadata=True)
    meta: dict[str, Any] = loaded[1]
    fields: dict[str, Any] = {}
    for key, name in GGUF_TOKENIZER_MAPPING["tokenizer"].items():
        value = meta.get(f"tokenizer.{key}")
        if value is not None:
            fields[name] = value.tolist() if isinstance(value, mx.array) else value
    backend, _ = convert_gguf_tokenizer(str(meta["general.architecture"]), fields)
    return backend


def token_ids(backend: tokenizers.Tokenizer, n: int) -> list[int]:
    unit = backend.encode(TEXT, add_special_tokens=False).ids
    return (unit * (n // len(unit) + 1))[:n]


def run_once(decode: Callable[[list[int]], str], ids: list[int], part: str) -> tuple[float, int]:
    decoder = CountingDecoder(decode)
    detok = IncrementalDetokenizer(decoder)
    stops = StopMatcher(STOPS)
    pieces = [decode([i]) for i in ids] if part == "stops" else []
    start = time.process_time()
    if part == "detok":
        for token in ids:
            detok.add(token)
        detok.flush()
    elif part == "stops":
        for piece in pieces:
            stops.feed(piece)
        stops.flush()
    else:  # as engine/worker.py feeds them
        for token in ids:
            stops.feed(detok.add(token))
        stops.feed(detok.flush())
        stops.flush()
    return time.process_time() - start, decoder.calls


def measure(decode: Callable[[list[int]], str], ids: list[int], part: str,
            repeats: int) -> tuple[float, float]:
    """Microseconds of CPU per token (best of ``repeats``) and decode calls per token."""
    runs = [run_once(decode, ids, part) for _ in range(repeats)]
    best = min(spent for spent, _ in runs)
    return best / len(ids) * 1e6, runs[0][1] / len(ids)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gguf", help="a GGUF file whose tokenizer to use instead of the fixture's")
    ap.add_argument("--transformers", action="store_true",
                    help="decode through transformers' tokenizer (what engine/loaded_model.py "
                         "uses for a tokenizer that cleans up spaces) instead of the backend")
    ap.add_argument("--tokens", default="500,8000")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    backend = gguf_backend(args.gguf) if args.gguf else fixture_backend()
    decode: Callable[[list[int]], str] = partial(backend.decode, skip_special_tokens=False)
    if args.transformers:
        from transformers import AutoTokenizer

        wrapper = AutoTokenizer.from_pretrained(str(FIXTURE))
        decode = cast(Callable[[list[int]], str], wrapper.decode)
    sizes = [int(n) for n in args.tokens.split(",")]
    print(f"tokenizer: {args.gguf or FIXTURE.name} (vocabulary {backend.get_vocab_size()}"
          f"{', through transformers' if args.transformers else ''})")
    print(f"{'part':<16}" + "".join(f"{f'{n} tok':>12}" for n in sizes)
          + f"{'ratio':>8}{'decodes/tok':>13}")
    for part in ("detok", "stops", "detok+stops"):
        costs = [measure(decode, token_ids(backend, n), part, args.repeats) for n in sizes]
        ratio = costs[-1][0] / costs[0][0]
        print(f"{part:<16}" + "".join(f"{c:>9.2f} us" for c, _ in costs)
              + f"{ratio:>8.2f}{costs[-1][1]:>13.2f}")


if __name__ == "__main__":
    main()
