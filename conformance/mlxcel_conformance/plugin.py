"""The pytest plugin that turns the suite's tests into a conformance run against one target.

Options pick the target (``--base-url`` or a self-started reference server), the profile and
the report directory. Each test carries ``@pytest.mark.conformance(family=..., feature=...)``;
a family outside the profile is recorded UNSUPPORTED and not run. Outcomes become report
records: ``ConformanceFailure`` -> FAIL with its check and evidence, ``SetupError`` -> ERROR,
a skip that names UNSUPPORTED, LENIENT or INCONCLUSIVE (``verdict_policy.read_skip``) -> that
verdict; none of those three fails the run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from . import pace
from .checks import sources
from .checks.sources import Tier
from .checks.verdict_policy import read_skip
from .client import SuiteClient
from .errors import ConformanceFailure, SetupError
from .fail_lines import SHOWN, defect_lines, error_lines, shown_line
from .fixture_models import FIXTURES_ENV, draft_args
from .flows import REFERENCE_SHAPES
from .golden_diff import format_case
from .profiles import PROFILES, Profile, get_profile
from .report import JSON_NAME, Record, Report, Verdict
from .report_html import HTML_NAME, render_report
from .sdk_clients import refused, schema_form
from .target import ReferenceServer, Target

# --passes, then the robustness family's options and whole-run watch (opt-in: --robustness),
# which imports passes: listed first, pytest imports it itself (to rewrite its asserts).
pytest_plugins = ["mlxcel_conformance.passes", "mlxcel_conformance.robustness_plugin"]

_REPORT_KEY = pytest.StashKey[Report]()
_PROFILE_KEY = pytest.StashKey[Profile]()
_TARGET_KEY = pytest.StashKey[Target]()

# Exceptions that mean the server under test misbehaved at the transport or SDK level.
_SERVER_FAULTS: tuple[type[BaseException], ...] = (httpx.TransportError, AssertionError)
# The authority behind a FAIL that is not a named check's: the SDK's own validation, or a request
# the server dropped.
_FAULT_SOURCES = {"sdk-openai": sources.OPENAI_SDK, "sdk-anthropic": sources.ANTHROPIC_SDK}
_TRANSPORT_SOURCE = "RFC 9110: every request gets a response (the connection failed or hung)"
# The reference's promise behind a FAIL for a request it left unanswered past the suite's wait.
_REFERENCE_WAIT = ("mlxcel API reference: docs/limits.md, \"No request can stall, hang or crash "
                   "mlxcel-server\" (answered within the suite's wait, sized from the measured "
                   "pace)")
# Families that run only when their flag (``--robustness``) is given; without it they leave no
# record.
OPT_IN_FAMILIES = frozenset({"robustness"})
# Rewritten after every record, so a run killed at its deadline still leaves what it found.
PARTIAL_NAME = "conformance.partial.json"


def pytest_addoption(parser: pytest.Parser) -> None:
    """The suite's options, in the order ``mlxcel-conformance --help`` lists them; every help
    ends with the default (the CLI's short help reads them from here)."""
    group = parser.getgroup("mlxcel-conformance")
    group.addoption("--base-url", default=None, metavar="URL",
                    help="server under test (default: none: start the reference server here "
                    "on a free port with its fixture model, which needs mlxcel installed)")
    group.addoption("--profile", default=None, metavar="NAME",
                    help=f"API families the server claims, one of {', '.join(PROFILES)}; "
                    "families it does not claim are UNSUPPORTED, not FAIL (default: mlxcel)")
    group.addoption("--families", default=None, metavar="LIST",
                    help="comma-separated families: run only these of the profile's "
                    "(e.g. chat,responses); the others are UNSUPPORTED (default: all the "
                    "profile claims)")
    group.addoption("--destructive", default="last", choices=["last", "skip", "only"],
                    help="tests whose bad input can crash a weak server: run them last, "
                    "skip them, or run only them (default: last)")
    group.addoption("--goldens", default="auto", choices=["auto", "exact", "shape"],
                    help="golden replay: exact (same fixture model: text and token counts), "
                    "shape (any server: structure, types, status codes, event order), auto "
                    "(exact for the self-started reference server, shape for --base-url) "
                    "(default: auto)")
    group.addoption("--report", default=None, metavar="DIR",
                    help=f"write {JSON_NAME}, conformance.md and the HTML page {HTML_NAME} "
                    "into DIR (default: none, the summary is printed only)")
    group.addoption("--fail-on", default="any", choices=["any", "fail"],
                    help="exit status: any (pytest's: non-zero on FAIL or ERROR) or fail "
                    "(non-zero only when a claimed family has a FAIL verdict) (default: any)")
    group.addoption("--api-key", default=None, metavar="KEY",
                    help="API key for the server under test; enables the auth checks "
                    "(default: none, auth is not checked)")
    group.addoption("--model", default=None, metavar="NAME",
                    help="model field to send (default: the first id of /v1/models, or none)")
    group.addoption("--request-timeout", default=None, type=float, metavar="SECONDS",
                    help="seconds a suite request may take (default: 60, or longer for a "
                    "slow target: four times what 64 tokens take at the pace the suite "
                    "measures at its start)")
    group.addoption("--fuzz-examples", default="12", metavar="N",
                    help="schemathesis examples per operation; nox -s fuzz raises it "
                    "(default: 12)")
    group.addoption("--server-model", default=None, metavar="PATH",
                    help="model of the self-started reference server (default: the server's "
                    "bundled fixture)")
    group.addoption("--server-draft", action="store_true", default=False,
                    help="start the self-started reference server with the draft fixture "
                    "(speculative decoding); its goldens are recorded without one "
                    "(default: off)")
    group.addoption("--fixture-dir", default=None, metavar="DIR",
                    help="fixture models for the self-started reference server (encoders, "
                    f"draft) (default: ${FIXTURES_ENV}, else the suite's package data, else "
                    "the checkout's fixtures/models)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "conformance(family, feature, extension=None): a conformance test of one "
        "feature of a family; with extension=NAME it checks an mlxcel extension, run only "
        "where the profile claims NAME"
    )
    base_url = config.getoption("--base-url")
    try:
        profile = get_profile(config.getoption("--profile") or "mlxcel")
        families = config.getoption("--families")
        if families:
            profile = profile.narrowed(name.strip() for name in families.split(","))
    except SetupError as exc:  # pytest prints a UsageError as one line, not INTERNALERROR
        raise pytest.UsageError(str(exc)) from None
    config.stash[_PROFILE_KEY] = profile
    REFERENCE_SHAPES["claimed"] = bool(profile.extensions)
    config.stash[_REPORT_KEY] = Report(target=base_url or "self-started", profile=profile.name)


@pytest.fixture(scope="session")
def target(pytestconfig: pytest.Config) -> Iterator[Target]:
    base_url = pytestconfig.getoption("--base-url")
    if base_url:
        tgt = Target(base_url.rstrip("/"), pytestconfig.getoption("--api-key"),
                     pytestconfig.getoption("--model"))
        pytestconfig.stash[_TARGET_KEY] = tgt
        yield tgt
        return
    fixtures = pytestconfig.getoption("--fixture-dir")
    server = ReferenceServer(model=pytestconfig.getoption("--server-model"),
                             fixtures=Path(fixtures) if fixtures else None)
    if pytestconfig.getoption("--server-draft"):
        server.extra_args = (*server.extra_args, *draft_args(server.fixtures))
    tgt = server.start()
    tgt.model = pytestconfig.getoption("--model")
    pytestconfig.stash[_REPORT_KEY].target = tgt.base_url
    pytestconfig.stash[_TARGET_KEY] = tgt
    try:
        yield tgt
    finally:
        server.stop()


@pytest.fixture(scope="session")
def client(target: Target, pytestconfig: pytest.Config) -> Iterator[SuiteClient]:
    fixture = target.self_started and not pytestconfig.getoption("--server-model")
    seconds = pace.measure(target, pytestconfig.getoption("--request-timeout"),
                           probe=not fixture).request_timeout_s
    suite_client = SuiteClient(target, httpx.Timeout(seconds, connect=min(5.0, seconds)))
    try:
        yield suite_client
    finally:
        suite_client.close()


@pytest.fixture(scope="session")
def model_name(client: SuiteClient) -> str | None:
    return client.model_for_requests()


@pytest.fixture(scope="session")
def golden_mode(pytestconfig: pytest.Config, target: Target) -> str:
    mode = str(pytestconfig.getoption("--goldens"))
    if mode == "auto":
        return "exact" if target.self_started else "shape"
    return mode


@pytest.fixture(scope="session")
def probed_golden_mode(pytestconfig: pytest.Config) -> str:
    """The mode of goldens recorded on a capability's own fixture (vision, audio, images): ``shape``
    (any server with the capability), ``exact`` only when ``--goldens exact`` is asked for."""
    return "exact" if pytestconfig.getoption("--goldens") == "exact" else "shape"


@pytest.fixture(scope="session")
def profile(pytestconfig: pytest.Config) -> Profile:
    return pytestconfig.stash[_PROFILE_KEY]


def _destructive(item: pytest.Item) -> int:
    """0: an ordinary test; 1: bad input that crashes weak servers; 2: ``"last"`` (a client that
    leaves mid-stream, which a weak server keeps generating for)."""
    mark = item.get_closest_marker("conformance")
    value = mark.kwargs.get("destructive") if mark else None
    return 2 if value == "last" else int(bool(value))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``destructive`` (bad input that crashes weak servers) run last, so one
    crash does not turn every later feature into a FAIL; ``destructive="last"`` after all of
    them. ``--destructive skip`` deselects them and ``only`` the others: suite processes that
    share one server skip them at once, and one process runs them alone afterwards."""
    mode = config.getoption("--destructive")
    if mode != "last":
        wanted = [bool(_destructive(item)) == (mode == "only") for item in items]
        dropped = [item for item, keep in zip(items, wanted, strict=True) if not keep]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item, keep in zip(items, wanted, strict=True) if keep]
    items.sort(key=_destructive)


def _conformance_mark(item: pytest.Item) -> pytest.Mark | None:
    """The item's conformance mark: one given to its parameter (``pytest.param(...,
    marks=...)``: a variant reported as its own feature) wins over the function's."""
    callspec = getattr(item, "callspec", None)
    for mark in getattr(callspec, "marks", ()):
        if mark.name == "conformance":
            return mark
    return item.get_closest_marker("conformance")


def _marker(item: pytest.Item) -> tuple[str, str] | None:
    mark = _conformance_mark(item)
    if mark is None:
        return None
    family = str(mark.kwargs.get("family", "misc"))
    feature = str(mark.kwargs.get("feature", item.name))
    return family, feature


def _extension(item: pytest.Item) -> str | None:
    """The mlxcel extension a feature checks (``extension=`` on its marker), or None for a
    contract feature."""
    mark = _conformance_mark(item)
    value = None if mark is None else mark.kwargs.get("extension")
    return None if value is None else str(value)


def _tier(item: pytest.Item) -> str:
    return Tier.EXTENSION.value if _extension(item) else Tier.CONTRACT.value


def pytest_runtest_setup(item: pytest.Item) -> None:
    found = _marker(item)
    if found is None:
        return
    if found[0] in OPT_IN_FAMILIES and not item.config.getoption(f"--{found[0]}"):
        # Not asked for: no record at all (not UNSUPPORTED), whatever the profile claims, so
        # reports and the peers' matrix leave the family out alike.
        pytest.skip(f"the {found[0]} family is hostile: run it with --{found[0]}")
    profile = item.config.stash[_PROFILE_KEY]
    if not profile.claims(found[0]):
        pytest.skip(f"UNSUPPORTED: profile {profile.name} does not claim family {found[0]}")
    extension = _extension(item)
    if extension is not None and not profile.claims_extension(extension):
        pytest.skip(f"UNSUPPORTED: profile {profile.name} does not claim the mlxcel "
                    f"extension {extension}")


def _classify(excinfo: pytest.ExceptionInfo[BaseException], family: str,
              answers_in_time: bool = False) -> Record:
    """``answers_in_time``: the target promises an answer within the suite's wait (the
    reference's profiles), so a timeout is a FAIL of that promise, not INCONCLUSIVE."""
    exc = excinfo.value
    if isinstance(exc, ConformanceFailure):
        return Record(family="", feature="", verdict=Verdict.FAIL, checks=[exc.check],
                      severity=exc.severity.value, message=exc.message,
                      evidence=dict(exc.evidence), duration_s=0.0)
    if isinstance(exc, SetupError):
        return Record(family="", feature="", verdict=Verdict.ERROR, checks=[], severity=None,
                      message=str(exc), evidence={}, duration_s=0.0)
    kind = type(exc).__name__
    timed_out = _is_timeout(exc) or _is_timeout(exc.__cause__)
    if timed_out and not answers_in_time:
        return _timed_out(exc, kind)
    evidence: dict[str, Any] = {}
    if isinstance(exc, httpx.TransportError):
        # The server went away or hung: say which request found out.
        try:
            evidence = {"request": f"{exc.request.method} {exc.request.url}"}
        except RuntimeError:
            evidence = {}
        evidence["transport_error"] = kind
    # In an SDK round trip, whatever the SDK raises is its verdict on the server's answer.
    server_fault = isinstance(exc, _SERVER_FAULTS) or family.startswith("sdk-")
    if server_fault:
        evidence["source"] = _REFERENCE_WAIT if timed_out else \
            _FAULT_SOURCES.get(family, _TRANSPORT_SOURCE)
        if exc.__cause__ is not None:  # an SDK's validation error names the fields it refused
            evidence["cause"] = f"{type(exc.__cause__).__name__}: {exc.__cause__}"[:2000]
            form = schema_form(exc.__cause__)
            if form is not None:
                evidence["defect"] = form
    return Record(family="", feature="", verdict=Verdict.FAIL if server_fault else Verdict.ERROR,
                  checks=[kind], severity="high" if server_fault else None,
                  message=f"{kind}: {exc}{_fields(exc.__cause__)}"[:2000], evidence=evidence,
                  duration_s=0.0)


def _is_timeout(exc: BaseException | None) -> bool:
    """httpx's timeouts, and those of the copy of httpx an SDK may carry (openai's ``httpx2``),
    under an SDK's own ``APITimeoutError``."""
    return exc is not None and any(t.__name__ == "TimeoutException" for t in type(exc).__mro__)


def _timed_out(exc: BaseException, kind: str) -> Record:
    """No answer within the suite's own wait: INCONCLUSIVE, not FAIL. No public text sets a
    time limit on an answer (RFC 9110 only asks for one), and a slow server, a busy machine or a
    request the server let run on (a length field it ignored, which its own check reports)
    all look alike here. The record names the request and the wait that ran out."""
    timeout = exc if _is_timeout(exc) else exc.__cause__
    evidence: dict[str, Any] = {"transport_error": type(timeout).__name__}
    waited = None
    try:
        request = timeout.request  # type: ignore[union-attr]
        evidence["request"] = f"{request.method} {request.url}"
        waited = (request.extensions.get("timeout") or {}).get("read")
    except (AttributeError, RuntimeError):
        pass
    measured = pace.current().tokens_per_s
    evidence["suite_wait_s"] = waited
    evidence["pace_tokens_per_s"] = measured if measured != float("inf") else None
    wait = f"{waited:.4g} s" if isinstance(waited, (int, float)) else "the suite's wait"
    return Record(family="", feature="", verdict=Verdict.INCONCLUSIVE, checks=[kind],
                  severity=None, message=f"{kind}: no answer within {wait}, the suite's own "
                  "wait (no public rule sets one): this decides nothing about the feature",
                  evidence=evidence, duration_s=0.0)


def _fields(cause: BaseException | None) -> str:
    """The fields a validation error (pydantic's, under an SDK's) refused, when they are few:
    of a union (a stream event, a content block) only the branch whose ``type`` matched, and
    never a key the real service does not send (``sdk_clients.refused``)."""
    found = refused(cause)
    if not 0 < len(found) <= 8:
        return ""
    return " (" + ", ".join(".".join(map(str, e["loc"])) + f": {e['type']}" for e in found) + ")"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    rep: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    found = _marker(item)
    if found is None:
        return
    family, feature = found
    if rep.skipped:
        reason = str(rep.longrepr[2]) if isinstance(rep.longrepr, tuple) else ""
        said = read_skip(reason)
        if said is not None:  # UNSUPPORTED, LENIENT or INCONCLUSIVE: a verdict, not a FAIL
            item.config.stash[_REPORT_KEY].add(
                Record(family=family, feature=feature, verdict=Verdict(said.verdict.value),
                       checks=[said.check] if said.check else [], severity=None,
                       message=said.message, evidence={}, duration_s=rep.duration,
                       tier=_tier(item))
            )
            _write_partial(item.config)
        return
    if rep.when == "call" or (rep.when == "setup" and rep.failed):
        if rep.passed:
            record = Record(family=family, feature=feature, verdict=Verdict.PASS,
                            checks=list(getattr(item, "mlxcel_checks", [])), severity=None,
                            message="", evidence={}, duration_s=rep.duration,
                            tier=_tier(item))
        else:
            assert call.excinfo is not None
            record = _classify(call.excinfo, family,
                               item.config.stash[_PROFILE_KEY].answers_in_time)
            record.family, record.feature, record.duration_s = family, feature, rep.duration
            record.tier = _tier(item)
        item.config.stash[_REPORT_KEY].add(record)
        _write_partial(item.config)


def _write_partial(config: pytest.Config) -> None:
    report_dir = config.getoption("--report")
    if report_dir:
        folder = Path(report_dir)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / PARTIAL_NAME).write_text(config.stash[_REPORT_KEY].to_json(), encoding="utf-8")


def _golden_diffs(report: Report) -> list[str]:
    """One expected/got block per failing golden case, for the terminal summary."""
    blocks = []
    for record in report.records:
        diffs = record.evidence.get("diffs")
        if record.verdict is Verdict.FAIL and isinstance(diffs, list):
            case = str(record.evidence.get("case", record.feature))
            blocks.append(format_case(case, str(record.evidence.get("mode", "?")), diffs))
    return blocks


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if _REPORT_KEY not in config.stash:
        return
    report = config.stash[_REPORT_KEY]
    if not report.records:
        return
    report.finish()
    report_dir = config.getoption("--report")
    # --tb=no is the CLI's default: one line per defect, the full evidence in the report.
    short = config.getoption("tbstyle") == "no"
    blocks = [] if short else _golden_diffs(report)
    if blocks:
        terminalreporter.section("golden diffs (expected vs got)")
        for block in blocks:
            terminalreporter.write_line(block)
    if report_dir:
        report.write(Path(report_dir))
        (Path(report_dir) / HTML_NAME).write_text(render_report(report.to_dict()),
                                                  encoding="utf-8")
        (Path(report_dir) / PARTIAL_NAME).unlink(missing_ok=True)
        terminalreporter.write_line(f"report written to {report_dir}/conformance.{{json,md,html}}")
    if short:
        for line in defect_lines(report.records):  # one FAIL line per defect
            terminalreporter.write_line(line)
        for record in report.records:
            if record.verdict in SHOWN:
                terminalreporter.write_line(shown_line(record))
        for line in error_lines(report.records):
            terminalreporter.write_line(line)
    terminalreporter.write_line(report.summary_line())


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A failed test whose record is no failure of the run (INCONCLUSIVE: a request the suite
    stopped waiting for) leaves the exit status 0; so do ERROR records under ``--fail-on fail``
    (a fault of the suite's setup, not of the server). Any FAIL keeps it 1."""
    config = session.config
    if exitstatus != pytest.ExitCode.TESTS_FAILED or _REPORT_KEY not in config.stash:
        return
    counts = config.stash[_REPORT_KEY].counts()
    if counts[Verdict.FAIL]:
        return
    if config.getoption("--fail-on") == "fail" or not counts[Verdict.ERROR]:
        session.exitstatus = pytest.ExitCode.OK
