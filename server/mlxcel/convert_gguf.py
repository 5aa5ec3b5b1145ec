"""``mlxcel-convert FILE.gguf OUT_DIR``: a GGUF file as an mlx-lm directory
(engine/gguf/export.py), so other MLX servers can be compared with ``mlxcel-server --model
FILE.gguf`` on identical weights."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

from .engine.gguf import UnsupportedGGUF
from .engine.gguf.export import export_mlx_lm


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="mlxcel-convert",
        description="Write a GGUF file (llama, qwen2, qwen3, gemma) as an mlx-lm model directory: "
        "config.json, model.safetensors, tokenizer.json, tokenizer_config.json.")
    parser.add_argument("gguf", help="the GGUF file")
    parser.add_argument("out_dir", help="the directory to write (new or empty)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        out = export_mlx_lm(args.gguf, args.out_dir)
    except UnsupportedGGUF as exc:
        raise SystemExit(f"mlxcel-convert: cannot convert {exc}") from None
    print(out)


if __name__ == "__main__":
    main()
