"""The spec in openapi/ and the reference server agree: every served route is in the spec and
every spec route is served (or declared unsupported with ``x-mlxcel-unsupported``)."""

from __future__ import annotations

from typing import Any

from fastapi.routing import APIRoute

from mlxcel.app import create_app
from mlxcel.bundled import bundled_model_path
from mlxcel.config import ServerConfig
from mlxcel_conformance import spec


def _routes(routes: list[Any]) -> list[APIRoute]:
    """Flatten included routers (FastAPI keeps them nested since 0.16x)."""
    out: list[APIRoute] = []
    for route in routes:
        if isinstance(route, APIRoute):
            out.append(route)
        elif hasattr(route, "original_router"):
            out.extend(_routes(route.original_router.routes))
    return out


def _served() -> set[tuple[str, str]]:
    app = create_app(ServerConfig(model=str(bundled_model_path())))
    served = {
        (method, route.path)
        for route in _routes(list(app.routes))
        for method in route.methods
        if method != "HEAD"
    }
    assert served, "found no routes on the app"
    return served


def _specified() -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    served, unsupported = set(), set()
    for op in spec.operations():
        key = (op.method.upper(), op.path)
        raw = spec.load_spec()["paths"][op.path][op.method.lower()]
        (unsupported if raw.get("x-mlxcel-unsupported") else served).add(key)
    return served, unsupported


def test_every_served_route_is_in_the_spec() -> None:
    specified, unsupported = _specified()
    missing = _served() - specified - unsupported
    assert not missing, f"routes served but absent from openapi/: {sorted(missing)}"


def test_every_spec_route_is_served() -> None:
    specified, _ = _specified()
    absent = specified - _served()
    assert not absent, f"routes in openapi/ that the server does not serve: {sorted(absent)}"
