"""Per-request LoRA adapters through the HTTP app on the real fixture and the committed adapter
``fixtures/adapters/qwen3-tiny-lora``: the adapter changes greedy output to exactly what mlx-lm
produces with it, is loaded once, and stays correct while the batch is busy."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from mlxcel.app import create_app
from mlxcel.config import ServerConfig
from mlxcel.engine.worker import Engine, EngineConfig

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
MODEL = str(FIXTURES / "models" / "qwen3-tiny")
ADAPTERS = FIXTURES / "adapters"
CHAT = "/v1/chat/completions"


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[TestClient, Engine]]:
    config = ServerConfig(model=MODEL, parallel=2, adapter_dir=str(ADAPTERS))
    engine = Engine(EngineConfig(model=MODEL, parallel=2))
    with TestClient(create_app(config, engine)) as client:
        assert engine.wait_ready(60)
        yield client, engine


def _reply(client: TestClient, content: str = "Say hello.", **fields: Any) -> str:
    body = {"messages": [{"role": "user", "content": content}], "max_tokens": 16,
            "temperature": 0, **fields}
    response = client.post(CHAT, json=body)
    assert response.status_code == 200, response.text
    return str(response.json()["choices"][0]["message"]["content"])


def _mlx_lm_reference() -> str:
    from mlx_lm import generate, load

    model, tokenizer = load(MODEL, adapter_path=str(ADAPTERS / "qwen3-tiny-lora"))[:2]
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "Say hello."}],
                                           add_generation_prompt=True, tokenize=False)
    text: str = generate(model, tokenizer, prompt, max_tokens=16)
    return text


def test_adapter_changes_output_to_mlx_lm_s(served: tuple[TestClient, Engine]) -> None:
    client, engine = served
    plain = _reply(client)
    adapted = _reply(client, adapters="qwen3-tiny-lora")
    assert plain == "Hello! How can I help you today?"
    assert adapted != plain
    assert adapted.strip() == _mlx_lm_reference().strip()
    # loaded once, cached; the base model's prompt cache is not polluted by adapted requests
    assert _reply(client, adapters="qwen3-tiny-lora") == adapted
    assert engine.adapters.loads == 1
    assert _reply(client) == plain


def test_adapter_requests_wait_for_the_lane_and_stay_exact(
    served: tuple[TestClient, Engine],
) -> None:
    client, _ = served
    adapted = _reply(client, adapters="qwen3-tiny-lora")
    plain = _reply(client)
    jobs = [{}, {"adapters": "qwen3-tiny-lora"}, {}, {"adapters": "qwen3-tiny-lora"}]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda fields: _reply(client, **fields), jobs))
    assert got == [plain, adapted, plain, adapted]


def test_queue_pop_skips_blocked_requests_keeping_their_place() -> None:
    import asyncio

    from mlxcel.engine.adapters import needs_solo_lane
    from mlxcel.engine.handle import RequestHandle
    from mlxcel.engine.scheduler import PrefillQueue
    from mlxcel.generation import GenerationRequest

    loop = asyncio.new_event_loop()
    try:
        queue = PrefillQueue(8)
        handles = [RequestHandle(GenerationRequest((1,), 1, adapter=a), loop)
                   for a in ("/a", None, "/b", None)]
        for handle in handles:
            queue.push(handle)
        assert queue.pop(needs_solo_lane) is handles[1]
        assert queue.pop(needs_solo_lane) is handles[3]
        assert queue.pop(needs_solo_lane) is None
        assert [queue.pop(), queue.pop(), queue.pop()] == [handles[0], handles[2], None]
    finally:
        loop.close()
