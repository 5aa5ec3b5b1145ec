"""``to_chat_setup`` on the fixture model: template override, a generation prompt that opens a
reasoning block, template kwargs reaching the template, the tool_choice instruction."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlxcel.chat.template import apply_template_override
from mlxcel.chat.turn import TurnSettings
from mlxcel.config import GenerationDefaults
from mlxcel.engine.loaded_model import LoadedModel, load_model
from mlxcel.errors import InvalidRequestError
from mlxcel.families.openai_chat.chat_request import ChatCompletionRequest, to_chat_setup

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "models" / "qwen3-tiny"
OPENS_THINKING = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if flag %}FLAG{% endif %}<think>\n{% endif %}"
)


@pytest.fixture()
def model() -> LoadedModel:
    return load_model(str(FIXTURE))


def request(**fields: object) -> ChatCompletionRequest:
    return ChatCompletionRequest.model_validate(
        {"messages": [{"role": "user", "content": "Hi"}], **fields})


def test_prompt_opening_reasoning(model: LoadedModel) -> None:
    apply_template_override(model, OPENS_THINKING)
    setup = to_chat_setup(request(), model, GenerationDefaults())
    assert setup.starts_in_reasoning
    parser = setup.new_parser()
    parser.feed("thinking hard\n</think>\n\nHello")
    parser.finish()
    assert (parser.reasoning, parser.content) == ("thinking hard", "Hello")


def test_kwargs_reach_the_template(model: LoadedModel) -> None:
    apply_template_override(model, OPENS_THINKING)
    plain = to_chat_setup(request(), model, GenerationDefaults()).generation.prompt_tokens
    server_kwargs = TurnSettings(template_kwargs={"flag": True})
    server = to_chat_setup(request(), model, GenerationDefaults(), server_kwargs)
    own = to_chat_setup(request(chat_template_kwargs={"flag": False}), model,
                        GenerationDefaults(), server_kwargs)
    assert len(server.generation.prompt_tokens) > len(plain)
    assert own.generation.prompt_tokens == plain


def test_forced_choice_places_instruction(model: LoadedModel) -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    body = request(tools=[tool], tool_choice="required")
    setup = to_chat_setup(body, model, GenerationDefaults())
    text = model.decode(list(setup.generation.prompt_tokens))
    assert "You must call one or more of the declared functions." in text
    assert setup.generation.logits_processor_factories and setup.forced
    assert body.messages[0].content == "Hi"  # the request itself is not modified
    with pytest.raises(InvalidRequestError):
        to_chat_setup(request(tools=[tool], tool_choice="required", response_format={
            "type": "json_schema", "json_schema": {"schema": {"type": "object"}}}),
            model, GenerationDefaults())
