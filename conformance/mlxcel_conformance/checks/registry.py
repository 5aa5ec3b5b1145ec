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

from mlxcel_conformance.checks.sources import SOURCES, Tier
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
    name: str, *, severity: Severity = Severity.HIGH, description: str = ""
) -> Callable[[F], F]:
    """Register the decorated function as the check `name`; the function is returned unchanged."""

    def register(func: F) -> F:
        earlier = REGISTRY.get(name)
        # a declared name (`declare`) may later get its function, from a module imported later
        if (earlier is not None and earlier.func is not None
                and _origin(earlier.func) != _origin(func)):
            raise ValueError(f"check {name!r} registered twice")
        doc = description or (func.__doc__ or "").strip().split("\n")[0]
        tier, source = _provenance(name)
        REGISTRY[name] = CheckSpec(name=name, severity=severity, description=doc, func=func,
                                   tier=tier, source=source)
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


def declare(name: str, *, severity: Severity = Severity.HIGH, description: str) -> None:
    """Register the check `name` whose logic runs inline in a test (a comparison or two too
    small for a function of its own): it has a severity, a description and a source like any
    other, and `run_check` refuses it. A name already registered with a function keeps it."""
    if name in REGISTRY:
        return
    tier, source = _provenance(name)
    REGISTRY[name] = CheckSpec(name=name, severity=severity, description=description, func=None,
                               tier=tier, source=source)


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
         source: str | None = None, **evidence: Any) -> NoReturn:
    """Raise the failure of check `name`, with its registered severity unless overridden. The
    evidence carries the check's tier and source (`source` overrides the registered one, for a
    check applied to one particular documented case)."""
    spec = REGISTRY.get(name)
    default = spec.severity if spec is not None else Severity.HIGH
    tier, registered = _provenance(name)
    evidence = {"source": source or registered, "tier": tier.value, **evidence}
    raise ConformanceFailure(name, message, severity or default, evidence)
