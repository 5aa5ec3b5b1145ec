"""POST /infill: fill-in-the-middle completion for models that have FIM tokens.

The prompt is llama-server's layout, ``[extra context] <PRE> prefix <SUF> suffix <MID> prompt``,
with the repository-level form (``<REPO>`` name, ``<FILE_SEP>`` per chunk) when the model has
those tokens. A model without fill-in-the-middle tokens answers 501 ``not_supported_error``.
"""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict

from ...api.offload import off_loop
from ...api.state import app_state
from ...config import GenerationDefaults
from ...engine.loaded_model import LoadedModel
from ...errors import NotSupported
from ...generation import GenerationRequest
from ...protocol.body import parse_json_object, validate_model
from .native_completion import NativeCompletionRequest, to_generation_requests
from .routes import run_native

router = APIRouter()

# (prefix, suffix, middle) spellings used by the common code-model families.
FIM_SPELLINGS: tuple[tuple[str, str, str], ...] = (
    ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"),
    ("<fim_prefix>", "<fim_suffix>", "<fim_middle>"),
    ("<|fim▁begin|>", "<|fim▁hole|>", "<|fim▁end|>"),
    ("<PRE>", "<SUF>", "<MID>"),
)
REPO_SPELLINGS: tuple[tuple[str, str], ...] = (
    ("<|repo_name|>", "<|file_sep|>"),
    ("<repo_name>", "<file_sep>"),
)


class ExtraChunk(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")
    filename: str = ""
    text: str


class InfillFields(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")
    input_prefix: str = ""
    input_suffix: str = ""
    input_extra: list[ExtraChunk] = []
    prompt: str = ""


@dataclass(frozen=True)
class FimTokens:
    prefix: int
    suffix: int
    middle: int
    repo: int | None = None
    file_sep: int | None = None


def fim_tokens(model: LoadedModel) -> FimTokens | None:
    vocab = model.tokenizer.get_vocab()
    for pre, suf, mid in FIM_SPELLINGS:
        if pre in vocab and suf in vocab and mid in vocab:
            repo = next(((vocab[r], vocab[f]) for r, f in REPO_SPELLINGS
                         if r in vocab and f in vocab), None)
            return FimTokens(vocab[pre], vocab[suf], vocab[mid],
                             repo[0] if repo else None, repo[1] if repo else None)
    return None


def infill_prompt(model: LoadedModel, fim: FimTokens, fields: InfillFields) -> list[int]:
    tokens: list[int] = []
    if fim.repo is not None and fim.file_sep is not None:
        tokens += [fim.repo, *model.encode("myproject\n")]
        for chunk in fields.input_extra:
            tokens += [fim.file_sep, *model.encode(f"{chunk.filename}\n{chunk.text}")]
    else:
        for chunk in fields.input_extra:
            tokens += model.encode(chunk.text)
    tokens += [fim.prefix, *model.encode(fields.input_prefix)]
    tokens += [fim.suffix, *model.encode(fields.input_suffix)]
    tokens += [fim.middle, *model.encode(fields.prompt)]
    return tokens


@router.post("/infill")
async def infill(request: Request) -> Response:
    state = app_state(request)
    raw = await request.body()
    model = state.require_model()
    body, gens = await off_loop(_prepare, raw, model, state.config.defaults)
    return await run_native(request, state, body, gens)


def _prepare(raw: bytes, model: LoadedModel, defaults: GenerationDefaults
             ) -> tuple[NativeCompletionRequest, list[GenerationRequest]]:
    """Parse, validate and tokenize an infill request (off the event loop)."""
    data = parse_json_object(raw)
    fields = validate_model(InfillFields, data)
    body = validate_model(NativeCompletionRequest, {**data, "prompt": fields.prompt})
    fim = fim_tokens(model)
    if fim is None:
        raise NotSupported(
            "Infill is not supported by this model: it has no fill-in-the-middle "
            "(FIM prefix/suffix/middle) tokens."
        )
    return body, to_generation_requests(body, model, defaults,
                                        prompts=[infill_prompt(model, fim, fields)])
