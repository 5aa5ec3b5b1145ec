"""Preflight: the setup mistakes found before any check runs, each as one line and its own exit
status (``exit_codes.SuiteExit``), instead of hundreds of FAILs that blame the server.

Four mistakes are told apart, within ``PREFLIGHT_BUDGET_S`` seconds in all:

- a ``--base-url`` without ``http://`` or ``https://`` (refused, with the URL to use);
- a base URL ending in ``/v1``, OpenAI's client convention: the suite adds ``/v1`` itself, so
  the suffix is dropped with a note;
- nothing answering at the URL (connection refused, unknown host, no answer);
- a server that answers 401/403 on every generation route it has (404 on the others: a key is
  needed), or 404 on every LLM route (not an LLM server, or a wrong path in the URL).

Probing stops at the first generation route (a POST) that answers with anything else, so a
real server sees ``GET /v1/models`` and one POST with an empty body, which any LLM server
refuses with a 4xx without generating. ``GET /v1/models`` alone does not decide: llama-server
serves it without a key (tools/server/README.md, ``--api-key``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import httpx

from .exit_codes import SuiteExit

PREFLIGHT_BUDGET_S = 6.0
_PROBE_TIMEOUT_S = 2.5
# Routes of the families the suite checks (OpenAI, Anthropic, Open Responses, llama-server):
# a server with none of them is not what the suite checks.
LLM_ROUTES: tuple[tuple[str, str], ...] = (
    ("GET", "/v1/models"),
    ("POST", "/v1/chat/completions"),
    ("POST", "/v1/completions"),
    ("POST", "/v1/messages"),
    ("POST", "/v1/responses"),
    ("POST", "/completion"),
)
_KEY_STATUSES = frozenset({401, 403})


class PreflightError(Exception):
    """A setup mistake: ``str(self)`` is the one line to print, ``exit_status`` the status."""

    def __init__(self, exit_status: SuiteExit, message: str) -> None:
        super().__init__(message)
        self.exit_status = exit_status


@dataclass(frozen=True)
class CheckedURL:
    """The base URL the suite will use, and the note to print when it was corrected."""

    url: str
    note: str | None = None


def checked_base_url(given: str) -> CheckedURL:
    """``given`` as the suite's base URL: a scheme is required; a trailing ``/v1`` (OpenAI's
    client convention, https://github.com/openai/openai-python#configuring-the-http-client)
    is dropped, because every suite route already starts with ``/v1``."""
    parts = urlsplit(given.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        hint = f" (did you mean http://{given.strip()}?)" if "://" not in given else ""
        raise PreflightError(SuiteExit.USAGE, f"--base-url {given!r} is not an http:// or "
                             f"https:// URL{hint}")
    path = parts.path.rstrip("/")
    note = None
    if path == "/v1" or path.endswith("/v1"):
        path = path[: -len("/v1")]
        fixed = urlunsplit((parts.scheme, parts.netloc, path, "", ""))
        note = (f"note: --base-url ends in /v1; the suite adds /v1 to every route itself, so "
                f"it uses {fixed}")
    return CheckedURL(urlunsplit((parts.scheme, parts.netloc, path, "", "")), note)


def _unreachable(base_url: str, exc: httpx.HTTPError) -> PreflightError:
    if isinstance(exc, httpx.TimeoutException):
        why = f"no answer within {_PROBE_TIMEOUT_S:g} s"
    elif isinstance(exc, httpx.ConnectError):
        why = f"connection failed ({exc})" if str(exc) else "connection failed"
    else:
        why = f"{type(exc).__name__}: {exc}"
    return PreflightError(SuiteExit.UNREACHABLE, f"cannot reach {base_url}: {why}; is the "
                          "server running there? (check --base-url)")


def probe_target(base_url: str, api_key: str | None) -> None:
    """Raise ``PreflightError`` when ``base_url`` is unreachable, needs a key, or is not an
    LLM server; return at the first generation route that answers otherwise."""
    headers = {"Authorization": f"Bearer {api_key}", "x-api-key": api_key} if api_key else {}
    deadline = time.monotonic() + PREFLIGHT_BUDGET_S
    statuses: dict[str, int] = {}
    with httpx.Client(base_url=base_url, headers=headers,
                      timeout=httpx.Timeout(_PROBE_TIMEOUT_S)) as http:
        for method, path in LLM_ROUTES:
            if time.monotonic() > deadline:
                break
            try:
                response = http.request(method, path, json={} if method == "POST" else None)
            except httpx.HTTPError as exc:
                if not statuses:  # the first request: nothing answers at all
                    raise _unreachable(base_url, exc) from exc
                continue  # it answered before: a route that fails is the checks' business
            statuses[f"{method} {path}"] = response.status_code
            # A generation route that neither asks for a key nor is missing: all is well.
            # (GET /v1/models does not decide: llama-server serves it without a key.)
            if method == "POST" and response.status_code not in _KEY_STATUSES | {404}:
                return
    _judge(base_url, api_key, statuses)


def _judge(base_url: str, api_key: str | None, statuses: dict[str, int]) -> None:
    codes = set(statuses.values())
    posts = {code for route, code in statuses.items() if route.startswith("POST ")}
    seen = _seen(statuses)
    if posts & _KEY_STATUSES and posts <= _KEY_STATUSES | {404}:
        if api_key:
            raise PreflightError(SuiteExit.NEEDS_KEY, f"{base_url} refused the key passed with "
                                 f"--api-key on every LLM route ({seen})")
        raise PreflightError(SuiteExit.NEEDS_KEY, "this server requires a key: pass --api-key "
                             f"({seen})")
    if codes == {404}:
        raise PreflightError(SuiteExit.NOT_LLM_SERVER, f"this does not look like an LLM server: "
                             f"{seen}; check the path in --base-url")


def _seen(statuses: dict[str, int]) -> str:
    """``401 on all 6 LLM routes probed``, or each route with its status when they differ."""
    codes = set(statuses.values())
    if len(codes) == 1:
        return f"{codes.pop()} on all {len(statuses)} LLM routes probed"
    return ", ".join(f"{route} -> {code}" for route, code in statuses.items())
