"""The suite's first minute: each setup mistake is one ERROR line and its own exit status within
10 s, and no FAIL (the real CLI as a subprocess, against tiny local servers and a port with
nothing listening)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from mlxcel_conformance.exit_codes import SuiteExit
from mlxcel_conformance.preflight import PreflightError, checked_base_url
from mlxcel_conformance.target import free_port

LIMIT_S = 10.0


@contextmanager
def answering(status: int, on_get: int | None = None) -> Iterator[tuple[str, list[str]]]:
    """A server that answers ``status`` to every method and path (``on_get`` to a GET, where
    given); yields its URL and the paths it was asked for."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self) -> None:
            seen.append(f"{self.command} {self.path}")
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            code = on_get if on_get is not None and self.command == "GET" else status
            body = b'{"models": [{"name": "m"}]}' if code == 200 else b'{"detail": "no"}'
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer  # noqa: N815 (http.server's names)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def _suite(*argv: str) -> tuple[int, str, float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "mlxcel_conformance", *argv],
                          capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


def _one_error_line(out: str) -> str:
    lines = out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ERROR: "), out
    assert "FAIL" not in out and "Traceback" not in out
    return lines[0]


def test_nothing_listening_is_one_line_and_exit_69() -> None:
    code, out, took = _suite("--base-url", f"http://127.0.0.1:{free_port()}")
    assert code == SuiteExit.UNREACHABLE == 69, out
    assert "cannot reach" in _one_error_line(out) and took < LIMIT_S


def test_a_url_without_a_scheme_is_refused_with_the_fix() -> None:
    port = free_port()
    code, out, took = _suite("--base-url", f"127.0.0.1:{port}")
    assert code == SuiteExit.USAGE == 64, out
    assert f"did you mean http://127.0.0.1:{port}?" in _one_error_line(out) and took < LIMIT_S


def test_401_everywhere_asks_for_a_key() -> None:
    with answering(401) as (url, _):
        code, out, took = _suite("--base-url", url)
    assert code == SuiteExit.NEEDS_KEY == 77, out
    assert "this server requires a key: pass --api-key" in _one_error_line(out)
    assert took < LIMIT_S


def test_a_public_model_list_does_not_hide_a_key_requirement() -> None:
    """llama-server with --api-key lists its models to anyone and refuses the rest."""
    with answering(401, on_get=200) as (url, _):
        code, out, _took = _suite("--base-url", url)
    assert code == SuiteExit.NEEDS_KEY, out
    assert "this server requires a key: pass --api-key" in _one_error_line(out)


def test_403_with_a_key_says_the_key_was_refused() -> None:
    with answering(403) as (url, _):
        code, out, _took = _suite("--base-url", url, "--api-key", "wrong")
    assert code == SuiteExit.NEEDS_KEY, out
    assert "refused the key passed with --api-key" in _one_error_line(out)


def test_404_everywhere_is_not_an_llm_server() -> None:
    with answering(404) as (url, seen):
        code, out, took = _suite("--base-url", url)
    assert code == SuiteExit.NOT_LLM_SERVER == 65, out
    assert "this does not look like an LLM server" in _one_error_line(out) and took < LIMIT_S
    assert "GET /v1/models" in seen and "POST /v1/chat/completions" in seen


@pytest.fixture(scope="module")
def run_through() -> tuple[str, int, str, list[str]]:
    """One suite run that gets past the preflight to collection (each costs a whole one): a
    --base-url ending in /v1/, and pytest options beside the suite's. The URL, exit code,
    output, and the paths the server was asked for."""
    with answering(200) as (url, seen):
        code, out, _took = _suite("--base-url", f"{url}/v1/", "--maxfail=1", "--co",
                                  "-k", "no_test_has_this_name")
    return url, code, out, seen


def test_a_base_url_ending_in_v1_is_corrected_with_a_note(
        run_through: tuple[str, int, str, list[str]]) -> None:
    url, code, out, seen = run_through
    assert code == pytest.ExitCode.NO_TESTS_COLLECTED, out  # it ran, with the corrected URL
    assert f"note: --base-url ends in /v1; the suite adds /v1 to every route itself, so it " \
        f"uses {url}" in out
    assert seen == ["GET /v1/models", "POST /v1/chat/completions"]  # at the right paths


@pytest.mark.parametrize(("argv", "says"), [
    (["--profile", "mlxlm"], "unknown profile 'mlxlm'; choose one of mlxcel, "),
    (["--families", "chat,chatt"], "unknown family chatt in --families; choose from chat,"),
    (["--base-ur", "http://127.0.0.1:1"], "unknown option --base-ur; did you mean --base-url?"),
    (["--goldens", "exac"], "--goldens 'exac': choose one of auto, exact, shape"),
    (["--no-such-option"], "unknown option --no-such-option (mlxcel-conformance --help"),
    (["--passes", "x"], "--passes 'x': not a number"),
    (["--passes", "0"], "--passes '0': run at least one pass"),
])
def test_a_typo_is_one_line_with_the_choices(argv: list[str], says: str) -> None:
    code, out, _took = _suite(*argv)
    assert code == SuiteExit.USAGE, out
    assert says in _one_error_line(out)


def test_pytest_options_still_pass(run_through: tuple[str, int, str, list[str]]) -> None:
    """An option of pytest's (not the suite's: --maxfail, --co) is not a typo."""
    _url, code, out, _seen = run_through
    assert code == pytest.ExitCode.NO_TESTS_COLLECTED, out
    assert "unknown option" not in out


def test_version_is_the_suites() -> None:
    code, out, _took = _suite("--version")
    assert code == 0 and out.startswith("mlxcel-conformance 0."), out


@pytest.mark.parametrize(("given", "url"), [
    ("http://h:1/v1", "http://h:1"),
    ("http://h:1/v1/", "http://h:1"),
    ("https://h/api/v1", "https://h/api"),
    ("http://h:1/", "http://h:1"),
])
def test_checked_base_url(given: str, url: str) -> None:
    assert checked_base_url(given).url == url


@pytest.mark.parametrize("given", ["h:1", "localhost", "ftp://h/", "http://"])
def test_checked_base_url_refuses(given: str) -> None:
    with pytest.raises(PreflightError) as refused:
        checked_base_url(given)
    assert refused.value.exit_status is SuiteExit.USAGE
