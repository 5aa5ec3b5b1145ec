"""mlx-lm's request fields on the server: integer logprobs, role_mapping for a template-less
model (a copy of the fixture without its chat template), the adapter allowlist (``..`` and
symlink escapes refused, an allowed adapter served) and the draft-model fields."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from mlxcel.app import create_app
from mlxcel.chat.template import plain_transcript
from mlxcel.config import ServerConfig
from mlxcel.engine.worker import Engine, EngineConfig
from mlxcel.errors import InvalidRequestError
from mlxcel.protocol.mlx_lm_fields import resolve_adapter

MODEL = Path(__file__).resolve().parents[2] / "fixtures" / "models" / "qwen3-tiny"
ADAPTER = MODEL.parents[1] / "adapters" / "qwen3-tiny-lora"
CHAT = "/v1/chat/completions"


def _templateless_copy(target: Path) -> Path:
    shutil.copytree(MODEL, target)
    config_path = target / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config.pop("chat_template", None)
    config_path.write_text(json.dumps(config))
    return target


@pytest.fixture(scope="module")
def adapter_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("adapters")
    root = base / "allowed"
    root.mkdir()
    shutil.copytree(ADAPTER, root / "lora-a")
    (root / "not-an-adapter").mkdir()
    (base / "outside").mkdir()
    os.symlink(base / "outside", root / "escape")
    os.symlink(root / "lora-a", root / "alias")
    return root


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory, adapter_root: Path) -> Iterator[TestClient]:
    model = str(_templateless_copy(tmp_path_factory.mktemp("m") / "qwen3-tiny-notemplate"))
    config = ServerConfig(model=model, ctx_size=2048, parallel=2, adapter_dir=str(adapter_root))
    engine = Engine(EngineConfig(model=model, ctx_size=2048, parallel=2, cache_prompt=False))
    with TestClient(create_app(config, engine)) as test_client:
        assert engine.wait_ready(60)
        yield test_client


def _chat(client: TestClient, **fields: Any) -> Any:
    body = {"messages": [{"role": "user", "content": "hello"}], "max_tokens": 3,
            "temperature": 0, **fields}
    return client.post(CHAT, json=body)


# --- adapter allowlist ---------------------------------------------------------------------

def test_adapter_inside_the_allowlist_resolves(adapter_root: Path) -> None:
    assert resolve_adapter("lora-a", str(adapter_root)) == (adapter_root / "lora-a").resolve()
    assert resolve_adapter("alias", str(adapter_root)) == (adapter_root / "lora-a").resolve()


@pytest.mark.parametrize("value", ["../outside", "lora-a/../../outside", "..", "escape",
                                   "/etc", "missing", "", "not-an-adapter"])
def test_adapter_escapes_are_refused(adapter_root: Path, value: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        resolve_adapter(value, str(adapter_root))
    assert caught.value.param == "adapters"


def test_adapters_without_the_flag_name_it() -> None:
    with pytest.raises(InvalidRequestError, match="--adapter-dir"):
        resolve_adapter("lora-a", None)


def test_adapter_routes(client: TestClient) -> None:
    for path in (CHAT, "/v1/completions"):
        extra: dict[str, Any] = {"prompt": "hi"} if path != CHAT else {
            "messages": [{"role": "user", "content": "hi"}]}
        bad = client.post(path, json={**extra, "adapters": "../outside"})
        assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"
        escape = client.post(path, json={**extra, "adapters": "escape"})
        assert escape.status_code == 400
        empty = client.post(path, json={**extra, "adapters": "not-an-adapter"})
        assert empty.status_code == 400 and empty.json()["error"]["param"] == "adapters"
        allowed = client.post(path, json={**extra, "adapters": "lora-a", "max_tokens": 4})
        assert allowed.status_code == 200, allowed.text


def test_draft_model_fields(client: TestClient) -> None:
    refused = _chat(client, draft_model="some/draft")
    assert refused.status_code == 501
    assert refused.json()["error"]["param"] == "draft_model"
    assert _chat(client, draft_model=None, num_draft_tokens=4).status_code == 200
    assert _chat(client, num_draft_tokens=-1).status_code == 400


# --- logprobs ------------------------------------------------------------------------------

@pytest.mark.parametrize("count", [1, 4, 10])
def test_integer_logprobs_give_that_many_top_tokens(client: TestClient, count: int) -> None:
    body = _chat(client, logprobs=count).json()
    entries = body["choices"][0]["logprobs"]["content"]
    assert entries and all(len(e["top_logprobs"]) == count for e in entries)


@pytest.mark.parametrize("value", [0, 11, -1, "3"])
def test_integer_logprobs_out_of_range(client: TestClient, value: object) -> None:
    assert _chat(client, logprobs=value).status_code == 400


def test_boolean_logprobs_unchanged(client: TestClient) -> None:
    body = _chat(client, logprobs=True, top_logprobs=2).json()
    assert all(len(e["top_logprobs"]) == 2 for e in body["choices"][0]["logprobs"]["content"])
    assert _chat(client, logprobs=False).json()["choices"][0]["logprobs"] is None


# --- role_mapping --------------------------------------------------------------------------

def test_default_transcript_is_mlx_lms() -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    assert plain_transcript(messages) == "ASSISTANT's RULE: Be brief.\nUSER: hi\nASSISTANT:"
    custom = {"user": "Q: ", "assistant": "A: ", "stop": "\n\n"}
    assert plain_transcript(messages, custom) == "Be brief.\n\nQ: hi\n\nA:"


def test_role_mapping_shapes_the_prompt(client: TestClient) -> None:
    tokenizer = client.app.state.mlxcel.engine.model.tokenizer  # type: ignore[attr-defined]
    custom = {"user": "Question from the user follows: ", "assistant": "A:", "stop": " | "}
    for mapping in (None, custom):
        expected = plain_transcript([{"role": "user", "content": "hello"}], mapping)
        usage = _chat(client, role_mapping=mapping).json()["usage"]
        assert usage["prompt_tokens"] == len(tokenizer.encode(expected, add_special_tokens=False))


def test_role_mapping_must_map_to_strings(client: TestClient) -> None:
    assert _chat(client, role_mapping={"user": 3}).status_code == 400


def test_context_size_fields_validate(client: TestClient) -> None:
    ok = _chat(client, presence_penalty=0.5, presence_context_size=5,
               frequency_penalty=0.5, frequency_context_size=0, repetition_penalty=1.2,
               repetition_context_size=4)
    assert ok.status_code == 200
    assert _chat(client, presence_context_size=-1).status_code == 400


@pytest.mark.parametrize("mapping", [None, {"user": "Q: ", "assistant": "A: ", "stop": "\n\n"},
                                     {"system": "S:", "user": "U:"}])
def test_transcript_matches_mlx_lm(mapping: dict[str, str] | None) -> None:
    """mlx-lm's own ``convert_chat`` as the oracle for the template-less prompt."""
    from mlx_lm.server import convert_chat

    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "bye "}]
    assert plain_transcript(messages, mapping) == convert_chat(messages, mapping)
