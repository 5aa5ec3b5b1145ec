"""``mlxcel-conformance`` from the ``mlxcel`` distribution (``launcher.py``): without the
``conformance`` extra it says in one line what to install; with it, it is the suite's CLI."""

from __future__ import annotations

import subprocess
import sys


def _launch(prelude: str, *args: str) -> subprocess.CompletedProcess[str]:
    code = f"{prelude}\nimport sys\nsys.argv = ['mlxcel-conformance', *{list(args)!r}]\n" \
           "from mlxcel_conformance.launcher import main\nmain()"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)


def test_without_the_extra_it_names_the_extra() -> None:
    done = _launch("import sys; sys.modules['schemathesis'] = None; "
                   "sys.modules['anthropic'] = None", "--base-url", "http://127.0.0.1:1")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "mlxcel-conformance: error: the suite's dependencies are not installed (schemathesis, "
        "anthropic): pip install 'mlxcel[conformance]' (or the suite alone, from a checkout: "
        "pip install ./conformance)"]


def test_with_the_extra_it_is_the_suite() -> None:
    done = _launch("", "--help")
    assert done.returncode == 0, done.stderr
    assert "--base-url" in done.stdout
