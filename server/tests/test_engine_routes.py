"""The engine's routes through the app: /metrics only with --metrics, /slots off with
--no-slots, the stable disabled cache payload, /props defaults, X-Priority accepted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from mlxcel.app import create_app
from mlxcel.config import ServerConfig
from mlxcel.engine.prompt_cache import disabled_stats
from mlxcel.engine.worker import Engine, EngineConfig

MODEL = str(Path(__file__).resolve().parents[2] / "fixtures" / "models" / "qwen3-tiny")


@pytest.fixture(scope="module")
def plain() -> Iterator[TestClient]:
    config = ServerConfig(model=MODEL, slots=False, ctx_size=4096, parallel=2)
    engine = Engine(EngineConfig(model=MODEL, ctx_size=4096, parallel=2, cache_prompt=False))
    with TestClient(create_app(config, engine)) as client:
        assert engine.wait_ready(60)
        yield client


def test_metrics_absent_without_the_flag(plain: TestClient) -> None:
    response = plain.get("/metrics")
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_slots_absent_with_no_slots(plain: TestClient) -> None:
    assert plain.get("/slots").status_code == 404


def test_cache_disabled_payload_is_stable(plain: TestClient) -> None:
    assert plain.get("/v1/cache/stats").json() == disabled_stats()
    assert plain.post("/v1/cache/reset").json() == disabled_stats()


def test_props_and_health_report_the_per_slot_context(plain: TestClient) -> None:
    props = plain.get("/props").json()
    assert props["total_slots"] == 2
    settings = props["default_generation_settings"]
    # llama-server's README shape: the defaults nested under params, its default seed
    assert settings["params"]["seed"] == 4294967295
    assert settings["n_ctx"] == 2048 and settings["is_processing"] is False
    assert props["modalities"] == {"vision": False, "video": False, "audio": False}
    assert props["model_path"] == MODEL and props["chat_template"]
    health = plain.get("/health").json()
    assert health["context_size"] == 2048 and health["batch"]["max_batch_size"] == 2


def test_priority_header_and_cache_prompt_field(plain: TestClient) -> None:
    body = {"messages": [{"role": "user", "content": "hello"}], "max_tokens": 3,
            "temperature": 0, "cache_prompt": True}
    response = plain.post("/v1/chat/completions", json=body, headers={"X-Priority": "high"})
    assert response.status_code == 200
    assert response.json()["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    nested = {k: v for k, v in body.items() if k != "cache_prompt"}
    bad = plain.post("/v1/chat/completions", json={**nested, "extra_body": {"cache_prompt": 1}})
    assert bad.status_code == 400
