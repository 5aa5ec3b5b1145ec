"""The family registry (``mlxcel.families``): every package declares a ``Family``, no two
families serve one route, and what a family declares about paths names routes that exist."""

from __future__ import annotations

import pkgutil

from fastapi.routing import APIRoute

from mlxcel import families
from mlxcel.families import Family, installed

NAMES = {"anthropic", "audio", "completions", "embeddings", "images", "llama", "openai_chat",
         "responses"}


def _routes(family: Family) -> set[tuple[str, str]]:
    return {(method, route.path) for router in family.routers for route in router.routes
            if isinstance(route, APIRoute) for method in route.methods}


def test_every_family_package_is_installed() -> None:
    packages = {info.name for info in pkgutil.iter_modules(families.__path__) if info.ispkg}
    assert packages == NAMES
    assert len(installed()) == len(NAMES)  # each exports a Family (else installed() raises)


def test_no_two_families_serve_one_route() -> None:
    seen: dict[tuple[str, str], int] = {}
    for index, family in enumerate(installed()):
        for route in _routes(family):
            assert seen.setdefault(route, index) == index, f"{route} served twice"


def test_declared_paths_are_routes() -> None:
    families = installed()
    served = {path for family in families for _, path in _routes(family)}
    for family in families:
        own = {path for _, path in _routes(family)}
        assert family.text_model_free <= own, "a family answers only for its own routes"
        assert set(family.needs) <= own
        if family.error_shape is not None:  # a shape may cover paths another family serves
            assert family.error_shape.paths <= served, family.error_shape.paths - served
