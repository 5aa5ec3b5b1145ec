"""The registry of named checks: one spec property per check, found by name.

A check is a plain function decorated with `@check(name, severity=..., description=...)`. It
returns useful parsed data when the property holds and raises `ConformanceFailure` (through
`fail`) carrying its own name when it does not. Tests call the functions directly or by name
through `run_check`; the report lists failures by check name. A check whose few lines run inline
in a test is registered with `declare` (checks/inline_checks.py): every name `fail` uses is
registered, so `get_check` finds it and the report can say what it judges.

Every check has a tier and a source (`sources.SOURCES`): a contract check names the public
contract it enforces, an extension check names the reference feature. `fail` puts both in the
failure's evidence, so every FAIL says on what authority it was given.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

import pytest

from mlxcel_conformance.checks.sources import SOURCES, Tier
from mlxcel_conformance.checks.verdict_policy import (
    DEFAULT_VERDICTS,
    PLATFORM_PREFIX,
    VerdictClass,
    skip_reason,
)
from mlxcel_conformance.errors import ConformanceFailure, SetupError, Severity

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class CheckSpec:
    name: str
    severity: Severity
    description: str
    func: Callable[..., Any] | None  # None: the check runs inline in its test (`declare`)
    tier: Tier = Tier.CONTRACT
    source: str = ""
    verdicts: frozenset[VerdictClass] = DEFAULT_VERDICTS  # the classes it may give


REGISTRY: dict[str, CheckSpec] = {}

# Modules outside the ``checks`` package that register checks of their own (the HTTP client,
# the stream readers, the goldens, the fuzzer): `get_check` imports them before it gives up, so a
# name is found whichever modules a caller happened to import.
REGISTERING_MODULES = (
    "mlxcel_conformance.client",
    "mlxcel_conformance.readers",
    "mlxcel_conformance.flows",
    "mlxcel_conformance.goldens",
    "mlxcel_conformance.checks.audio",
    "mlxcel_conformance.checks.fuzzing",
)


def check(
    name: str, *, severity: Severity = Severity.HIGH, description: str = "",
    verdicts: frozenset[VerdictClass] = DEFAULT_VERDICTS,
) -> Callable[[F], F]:
    """Register the decorated function as the check `name`; the function is returned unchanged.
    ``verdicts``: the classes it may give (docs/conformance/verdicts.md)."""

    def register(func: F) -> F:
        earlier = REGISTRY.get(name)
        # a declared name (`declare`) may later get its function, from a module imported later
        if (earlier is not None and earlier.func is not None
                and _origin(earlier.func) != _origin(func)):
            raise ValueError(f"check {name!r} registered twice")
        doc = description or (func.__doc__ or "").strip().split("\n")[0]
        tier, source = _provenance(name)
        REGISTRY[name] = CheckSpec(name=name, severity=severity, description=doc, func=func,
                                   tier=tier, source=source, verdicts=verdicts)
        return func

    return register


UNSOURCED = "(no source registered: add the check to checks/sources.py)"


def _provenance(name: str) -> tuple[Tier, str]:
    """The check's tier and source; a check missing from ``sources.SOURCES`` still runs (a
    test of the suite fails until it is added) and says so in every failure."""
    return SOURCES.get(name, (Tier.CONTRACT, UNSOURCED))


def _origin(func: Callable[..., Any]) -> tuple[str, str]:
    # a module imported twice (pytest import modes, plugins) re-registers the same definition
    return (getattr(func, "__module__", ""), getattr(func, "__qualname__", ""))


def declare(name: str, *, severity: Severity = Severity.HIGH, description: str,
            verdicts: frozenset[VerdictClass] = DEFAULT_VERDICTS) -> None:
    """Register the check `name` whose logic runs inline in a test (a comparison or two too
    small for a function of its own): it has a severity, a description and a source like any
    other, and `run_check` refuses it. A name already registered with a function keeps it."""
    if name in REGISTRY:
        return
    tier, source = _provenance(name)
    REGISTRY[name] = CheckSpec(name=name, severity=severity, description=description, func=None,
                               tier=tier, source=source, verdicts=verdicts)


def get_check(name: str) -> CheckSpec:
    if name not in REGISTRY:
        for module in REGISTERING_MODULES:
            importlib.import_module(module)
    try:
        return REGISTRY[name]
    except KeyError:
        raise SetupError(f"unknown check {name!r}; known: {', '.join(sorted(REGISTRY))}") from None


def run_check(name: str, *args: Any, **kwargs: Any) -> Any:
    """Run a registered check by name."""
    func = get_check(name).func
    if func is None:
        raise SetupError(f"check {name!r} runs inline in its test; it has no function to run")
    return func(*args, **kwargs)


def fail(name: str, message: str, *, severity: Severity | None = None,
         source: str | None = None, ignored: bool = False, ignored_field: str | None = None,
         **evidence: Any) -> NoReturn:
    """Raise the failure of check `name`, with its registered severity unless overridden. The
    evidence carries the check's tier and source (`source` overrides the registered one, for a
    check applied to one particular documented case). ``ignored``: the server accepted a field
    and silently did not honour it, the IGNORED class of FAIL (named in the message and the
    evidence); the check must declare it. ``ignored_field``: the request field it ignored; one
    ignored field is one defect, whichever case or form showed it (``n`` in a body and in a
    stream)."""
    spec = REGISTRY.get(name)
    default = spec.severity if spec is not None else Severity.HIGH
    tier, registered = _provenance(name)
    evidence = {"source": source or registered, "tier": tier.value, **evidence}
    if evidence.get("defect") is None:  # a check that names its defect only in some cases
        evidence.pop("defect", None)
    if ignored:
        _allowed(name, VerdictClass.IGNORED)
        evidence["verdict_class"] = VerdictClass.IGNORED.value
        if ignored_field is not None:
            evidence.setdefault("defect", ignored_defect(ignored_field))
        message = f"IGNORED: {message}"
    raise ConformanceFailure(name, message, severity or default, evidence)


def ignored_defect(field: str) -> str:
    """The defect key of a request field accepted and not honoured."""
    return f"ignored: the server accepts `{field}` and does not honour it"


def _allowed(name: str, verdict: VerdictClass) -> None:
    spec = get_check(name)
    if verdict not in spec.verdicts:
        raise SetupError(f"check {name!r} may not give {verdict.value}: it declares "
                         f"{sorted(v.value for v in spec.verdicts)}")


def unsupported(name: str, message: str) -> NoReturn:
    """The server refused cleanly (a 4xx in its family's error shape) a combination it does not
    offer: UNSUPPORTED, not FAIL. The check must declare UNSUPPORTED."""
    _allowed(name, VerdictClass.UNSUPPORTED)
    pytest.skip(skip_reason(VerdictClass.UNSUPPORTED, name, message))


def lenient(name: str, message: str) -> NoReturn:
    """The server accepted a request its spec calls invalid: LENIENT, shown in the report and
    never counted as a FAIL. The check must declare LENIENT."""
    _allowed(name, VerdictClass.LENIENT)
    pytest.skip(skip_reason(VerdictClass.LENIENT, name, message))


def inconclusive(name: str, message: str) -> NoReturn:
    """What the server answered cannot decide the check (an answer cut by max_tokens): no
    verdict on the server (INCONCLUSIVE in the report), and certainly not a PASS. The check must
    declare INCONCLUSIVE."""
    _allowed(name, VerdictClass.INCONCLUSIVE)
    pytest.skip(skip_reason(VerdictClass.INCONCLUSIVE, name, message))


def platform_error(name: str, message: str) -> NoReturn:
    """The server failed for a platform it does not support (a Metal-only kernel on Linux):
    ERROR/platform, a fault of where the suite ran it, not a FAIL."""
    _allowed(name, VerdictClass.ERROR)
    raise SetupError(f"{PLATFORM_PREFIX}{name}: {message}")
