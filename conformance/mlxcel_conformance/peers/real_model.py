"""The peers run on a real model (``--real-model``, ``--gguf FILE``), judged as the real-model
lane of ``nox -s tests`` judges the reference (``fixtures/real_model_lane.py``).

Identical weights for every peer: mlxcel and llama-server serve the GGUF file itself, mlx-lm's
server (and vllm-mlx) the mlx-lm directory that ``mlxcel-convert FILE.gguf OUT_DIR`` writes from
it. The judging is the lane's:

- the contract tier: the reference runs under ``mlxcel-contract`` (no mlxcel extension), each
  peer under its own profile, which claims no extension either;
- the lane's families only (``GROUPS``), each group in its own suite process against the same
  server at once, since an MLX server on a CPU decodes a real model at a few tokens a second;
- shape goldens, and no ``--request-timeout``: the suite measures the server's pace and sizes
  its waits and answer lengths from it (``mlxcel_conformance/pace.py``).

The default model is the lane's, SmolLM2-135M-Instruct Q4_1 (``fixtures/real_model.py`` in a
checkout fetches and checks it); its pages go to ``OUT/real/``.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from ..errors import SetupError
from ..target import ReferenceServer
from .launchers import Peer, make_peer

# fixtures/real_model_lane.py's GROUPS: the contract families an instruct model answers through.
GROUPS: tuple[str, ...] = ("chat", "responses", "anthropic", "completions,llama-native,tokenize")
# Every group at once, at a few tokens a second: the lane's own run took about 9 minutes.
DEADLINE_S = 1500.0
# The reference's contract tier; the peers' own profiles claim no mlxcel extension.
CONTRACT_PROFILES = {"mlxcel": "mlxcel-contract"}
FETCH_TIMEOUT_S = 1200.0


def group_families() -> frozenset[str]:
    return frozenset(name for group in GROUPS for name in group.split(","))


def checkout_fetcher() -> Path:
    """``fixtures/real_model.py`` of the source checkout this suite runs from."""
    return Path(__file__).resolve().parents[3] / "fixtures" / "real_model.py"


def fetch_real_model(fetcher: Path | None = None) -> Path:
    """The real model's GGUF, fetched and checked by the checkout's ``fixtures/real_model.py``
    (which prints its path); a ``SetupError`` saying why where it cannot be had."""
    script = fetcher or checkout_fetcher()
    if not script.is_file():
        raise SetupError(f"{script} not found: --real-model needs a source checkout; "
                         "give --gguf FILE instead")
    try:
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              timeout=FETCH_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise SetupError(f"{script.name} took over {FETCH_TIMEOUT_S:.0f} s") from None
    lines = done.stdout.strip().splitlines()
    path = Path(lines[-1]) if lines else None
    if done.returncode != 0 or path is None or not path.is_file():
        why = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SetupError(f"the real model is unavailable: {why}")
    return path


def to_mlx_lm(gguf: Path, workdir: Path) -> Path:
    """``mlxcel-convert gguf DIR`` (the reference's converter, run as a command: the suite
    imports nothing from the server), once per work directory."""
    out = workdir.parent / f"{gguf.stem}-mlx"
    if (out / "config.json").is_file():
        return out
    command = [sys.executable, "-m", "mlxcel.convert_gguf", str(gguf), str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S,
                          check=False)
    if done.returncode != 0 or not (out / "config.json").is_file():
        why = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SetupError(f"mlxcel-convert {gguf.name} failed: {why}")
    return out


def _mlxcel_plain(peer: Peer, port: int, model: Path) -> list[str]:
    # As the lane starts it: the GGUF and nothing else (no encoder fixtures, no --metrics).
    return ReferenceServer(model=str(model), api_key=peer.api_key, port=port, extra_args=(),
                           encoders=False).command()


def real_peer(name: str, gguf: Path, executable: str | None = None) -> Peer:
    """Peer ``name`` on ``gguf``: the file itself, or its mlx-lm directory for the servers
    that read only those."""
    peer = make_peer(name, gguf, executable)
    peer = replace(peer, profile=CONTRACT_PROFILES.get(name, peer.profile),
                   description=f"{peer.description}, on {gguf.name}")
    if name == "mlxcel":
        return replace(peer, build_command=_mlxcel_plain, startup_timeout=300.0)
    if name == "llama-server":
        return replace(peer, convert_model=None)
    return replace(peer, convert_model=to_mlx_lm, startup_timeout=max(peer.startup_timeout,
                                                                      300.0))
