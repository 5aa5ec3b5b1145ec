"""docs/quickstart.md's commands, as written (issue 40, item 6).

Every command in its ``bash`` blocks parses (``bash -n``) and names only what exists: a program
this test knows, a nox session of ``noxfile.py``, flags ``mlxcel-server`` accepts. The
server-side commands run: the server starts as the quickstart starts it (on a free port rather
than 8080, which another process on the machine may hold; the curl is pointed at that port) and
answers the quickstart's curl, and ``mlxcel-server --version`` prints the version.

Not run here, because they download from PyPI: ``pip install .``, ``pip install nox && nox -s
tests`` and ``pip install build && python -m build``. ``nox -s package`` (tests/test_packaging.py,
``slow``) builds and installs the wheel; the README's commands are what CI runs.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mlxcel import __version__
from mlxcel.cli import build_parser
from mlxcel_conformance.target import free_port

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "docs" / "quickstart.md"
# what a quickstart command may start with (after `&&`): the programs a reader runs
PROGRAMS = {"python3", "python", ".", "pip", "mlxcel-server", "curl", "nox"}
# pip targets that need PyPI (see the module docstring)
PIP_TARGETS = {".", "nox", "build", "$(ls dist/mlxcel-*.whl)[conformance]"}


def quickstart_commands() -> list[str]:
    """Each command of the ``bash`` blocks: continuation lines joined, comments kept."""
    blocks = re.findall(r"```bash\n(.*?)```", QUICKSTART.read_text(), re.S)
    assert blocks, QUICKSTART
    commands: list[str] = []
    for block in blocks:
        for command in block.replace("\\\n", " ").splitlines():
            if command.strip() and not command.lstrip().startswith("#"):
                commands.append(command)
    return commands


def segments(command: str) -> list[list[str]]:
    """The words of each ``&&``-joined part of ``command``, comments dropped."""
    words = shlex.split(command, comments=True)
    parts: list[list[str]] = [[]]
    for word in words:
        if word == "&&":
            parts.append([])
        else:
            parts[-1].append(word)
    return [part for part in parts if part]


def nox_sessions() -> set[str]:
    text = (ROOT / "noxfile.py").read_text()
    return set(re.findall(r"@nox\.session[^\n]*\ndef (\w+)\(", text))


@pytest.mark.parametrize("command", quickstart_commands())
def test_each_command_parses_and_names_what_exists(command: str) -> None:
    checked = subprocess.run(["bash", "-n", "-c", command], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    for words in segments(command):
        program, args = words[0], words[1:]
        assert program in PROGRAMS, f"{program!r} in {command!r}"
        if program == "pip":
            assert args[0] == "install" and set(args[1:]) <= PIP_TARGETS, command
        elif program == "nox":
            assert args[0] == "-s" and args[1] in nox_sessions(), command
        elif program == "mlxcel-server" and args != ["--version"]:
            build_parser().parse_args(args)  # exits (a test failure) on a flag it lacks
        elif program in ("python", "python3"):
            assert args[:2] in (["-m", "venv"], ["-m", "build"]), command


def test_the_wheel_section_installs_build_before_using_it() -> None:
    """``build`` is only in the ``dev`` extra: the quickstart installs it itself."""
    command = next(c for c in quickstart_commands() if "python -m build" in c)
    steps = [words[:3] for words in segments(command)]
    assert steps.index(["pip", "install", "build"]) < steps.index(["python", "-m", "build"])


def _healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture(scope="module")
def quickstart_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """``mlxcel-server`` as step 1 runs it (the bundled fixture), on a free port."""
    port = free_port()
    log = tmp_path_factory.mktemp("quickstart") / "server.log"
    with log.open("w") as sink:
        server = subprocess.Popen([sys.executable, "-m", "mlxcel", "--port", str(port)],
                                  cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while not _healthy(port):
            assert server.poll() is None, log.read_text()[-4000:]
            assert time.monotonic() < deadline, "the server did not become healthy"
            time.sleep(0.5)
        yield port
    finally:
        server.terminate()
        server.wait(30)


def test_the_quickstart_curl_gets_an_answer(quickstart_server: int) -> None:
    curl = next(c for c in quickstart_commands() if c.lstrip().startswith("curl"))
    assert "http://127.0.0.1:8080/" in curl  # what step 1's server listens on
    curl = curl.replace("127.0.0.1:8080", f"127.0.0.1:{quickstart_server}")
    done = subprocess.run(["bash", "-c", curl], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["object"] == "chat.completion"
    assert answer["choices"][0]["message"]["content"]


def test_version_prints_the_version() -> None:
    assert "mlxcel-server --version" in "\n".join(quickstart_commands())
    done = subprocess.run([sys.executable, "-m", "mlxcel", "--version"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == f"mlxcel-server {__version__}"
