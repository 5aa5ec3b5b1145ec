"""POST /tokenize and POST /detokenize (llama-server's shapes)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict

from ...api.offload import json_response, parse_request
from ...api.state import app_state
from ...engine.loaded_model import LoadedModel
from ...errors import ServerError
from ...protocol.types import Int

router = APIRouter()


class TokenizeRequest(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")
    content: str
    add_special: bool = False
    with_pieces: bool = False


class DetokenizeRequest(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")
    tokens: list[Int]


def _piece(model: LoadedModel, token_id: int) -> str | list[int]:
    """A token's text, or its raw bytes when it is not valid UTF-8 on its own."""
    text = model.decode([token_id])
    if "\ufffd" not in text:
        return text
    raw = model.tokenizer.convert_ids_to_tokens(token_id)
    return list(raw.encode("utf-8")) if isinstance(raw, str) else []


def _tokens(model: LoadedModel, body: TokenizeRequest) -> dict[str, Any]:
    ids = model.encode(body.content, add_special=body.add_special)
    tokens: list[Any] = ids
    if body.with_pieces:
        tokens = [{"id": i, "piece": _piece(model, i)} for i in ids]
    return {"tokens": tokens}


def _content(model: LoadedModel, body: DetokenizeRequest) -> dict[str, Any]:
    vocab = model.vocab_size
    for token_id in body.tokens:
        if not 0 <= token_id < vocab:
            raise ServerError(
                f"token id {token_id} is out of vocabulary range (vocab_size {vocab})"
            )
    return {"content": model.decode(body.tokens)}


# Both answers grow with the input (a 32 MiB text, its pieces): computed and rendered off
# the event loop.
@router.post("/tokenize")
async def tokenize(request: Request) -> Response:
    body = await parse_request(request, TokenizeRequest)
    return await json_response(_tokens, app_state(request).require_model(), body)


@router.post("/detokenize")
async def detokenize(request: Request) -> Response:
    body = await parse_request(request, DetokenizeRequest)
    return await json_response(_content, app_state(request).require_model(), body)
