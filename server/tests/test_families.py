"""The family registry (``mlxcel.families``): every package declares a ``Family``, no two
families serve one route, and what a family declares about paths names routes that exist."""

from __future__ import annotations

import pkgutil
from types import SimpleNamespace

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
    for family in families:
        own = {path for _, path in _routes(family)}
        assert family.text_model_free <= own, "a family answers only for its own routes"
        assert set(family.needs) <= own
        if family.error_shape is not None:  # claimed by the family that serves the path
            assert family.error_shape.paths <= own, family.error_shape.paths - own


def test_the_image_worker_adds_its_queue_to_health(fixture_model: str) -> None:
    """``Family.health``: nothing without ``--image-model``, the worker's queue with one."""
    from mlxcel.api.state import AppState
    from mlxcel.config import ServerConfig
    from mlxcel.engine.worker import Engine, EngineConfig
    from mlxcel.families.images import FAMILY as IMAGES

    state = AppState(config=ServerConfig(model=fixture_model),
                     engine=Engine(EngineConfig(model=fixture_model)))
    assert IMAGES.health is not None
    assert IMAGES.health(state) == {}
    worker = SimpleNamespace(model=SimpleNamespace(name="z-image"), queue_depth=1, max_queue=4,
                             timeout_s=300.0)
    state.services.parts["images"] = worker
    assert IMAGES.health(state) == {"images": {"model": "z-image", "queue_depth": 1,
                                               "max_queue": 4, "timeout_s": 300.0}}
