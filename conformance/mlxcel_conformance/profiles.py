"""Target profiles: which API families a server claims. A family outside the profile is
reported UNSUPPORTED, never FAIL.

Decisions recorded here:
- `schema` (the whole mlxcel OpenAPI spec fuzzed with schemathesis) is claimed only by `mlxcel`:
  on a peer, routes it never offered would surface as failures instead of unsupported families.
  Within it, refusing every request the spec calls invalid is a claim of its own
  (`openapi_strict`, see checks/fuzzing.py).
- Leniency (accepting a request a spec calls invalid) is LENIENT everywhere, never a FAIL: the
  error checks report it so too (checks/contract_edges.py, docs/conformance/verdicts.md); only
  the reference promises to refuse what its own spec calls invalid (`openapi_strict`).
- A peer's documented values are valid under its profile (`DOCUMENTED_VALUES`): the suite does
  not send them as bad input there.
- `mlx-lm` claims what `mlx_lm.server` serves: chat, completions, models, health, and the OpenAI
  SDK round trips; not tokenize, auth, responses, anthropic, llama-native or embeddings.
- `mlx-lm-fields` (mlx-lm's documented chat fields) is claimed by `mlxcel` and `mlx-lm` only.
- `llama-server` serves /v1/responses and /v1/messages nowadays, so it claims both.
- `vllm-mlx` has its own profile: what `vllm-mlx serve` offers (chat, completions, models,
  health, Responses, Anthropic Messages, the SDK round trips), not mlx-lm's documented fields.
- Extensions: a feature marked ``extension=NAME`` checks one of mlxcel's own features (the
  reference's API document, not a public contract). Only a profile that claims NAME runs it
  (`mlxcel` claims all); elsewhere it is UNSUPPORTED, never FAIL, and reported apart.
- `vision` is image *input* (image parts on chat, Responses and Messages); `images` is image
  *generation* (/v1/images/*). A server whose loaded model reads no images (it answers a valid
  image with 400) reports `vision` UNSUPPORTED at run time, whatever its profile claims.
- `audio`, `images` and `realtime` check mlxcel's documented 501 for a route without its model
  (the flag named in the message): only the `mlxcel` profile claims them. `audio` also checks
  Whisper transcription and translation; those features are UNSUPPORTED on a server whose
  transcription route answers 501, and the 501 checks are UNSUPPORTED on one that transcribes.
  `images` likewise checks generation and edits (PNG shape, seeds, the documented 400s and 415)
  on a server started with `--image-model`, and reports them UNSUPPORTED where generation
  answers 501.
- `mlxcel-contract` is the reference judged by the contract tier alone: every family but the
  two that hold only extensions (`schema`, `mlxcel-ext`), and no extension claimed, so each
  extension feature is UNSUPPORTED and never runs. It is the run
  that says whether the reference meets the public contracts on a given model (the real-model
  lane in `noxfile.py` runs it on a GGUF), without the reference's own promises about speed,
  batching and its own spec.
- `robustness` (hostile requests, run only with `--robustness`) is claimed by every local
  server (`mlxcel`, `mlx-lm`, `llama-server`), never by `openai`: no one fuzzes a paid API.
  Each of its inputs names its route's family, so a route the profile does not claim is
  UNSUPPORTED for that input.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mlxcel_conformance.errors import SetupError

FAMILIES: tuple[str, ...] = (
    "chat",
    "completions",
    "models",
    "health",
    "observability",
    "tokenize",
    "auth",
    "responses",
    "anthropic",
    "llama-native",
    "embeddings",
    "audio",
    "images",
    "vision",
    "realtime",
    "schema",
    "sdk-openai",
    "sdk-anthropic",
    # mlxcel's extensions (sampling fields, seeded batching, admission control): mlxcel only.
    "mlxcel-ext",
    # mlx-lm's documented chat fields (integer logprobs, penalty windows, adapters, ...).
    "mlx-lm-fields",
    # Hostile requests against the server's availability; opt-in (--robustness).
    "robustness",
)

# mlxcel's own features and refusals, checked only where a profile claims them: the names a
# feature's ``extension=`` marker may carry.
EXTENSIONS: tuple[str, ...] = (
    "reasoning_only",  # message.reasoning_only when reasoning used up max_tokens
    "timings_draft",  # timings draft_n, draft_n_accepted, draft_rounds, draft_kind
    "compaction",  # /v1/responses/compact, context_management
    "schema_limits",  # size and shape limits on response_format / tool schemas
    # response_format on /v1/completions: OpenAI's CreateCompletionRequest has no such field
    # and llama-server's README documents it on /v1/chat/completions only
    "completions_structured",
    "refusals",  # the reference's own 400s where the public API accepts the request
    "not_implemented",  # the reference's documented 501s
    "aliases",  # routes the reference serves beside the documented ones
    "observability",  # /health fields, /slots state, /metrics names, /v1/cache/*
    "media",  # --media-path, one image path for every family
    "adapters",  # --adapter-dir allowlist for mlx-lm's adapters field
    "sampling",  # extra sampling fields, batch-invariant seeds, loop detection
    "admission",  # 503 server_busy / 529 overloaded when the prefill queue is full
    "extra_body",  # a literal `extra_body` object in the request, merged into it
    "conversations",  # Responses `conversation` kept under any string id it is first given
    # many concurrent streams, one connection each or few keep-alive connections: every one
    # answered (2xx or 503). HTTP lets a server refuse a connection or close a persistent one
    # between requests, so this is the reference's promise, not a public contract.
    "load",
    "openapi",  # every operation of mlxcel's own API document, fuzzed (the `schema` family)
    # and every request that document calls invalid refused (4xx/5xx), not only survived:
    # the reference's promise about its own spec (elsewhere leniency is LENIENT, not FAIL)
    "openapi_strict",
    "field_limits",  # a 400 naming the field past OpenAI's documented field bounds
    "durable_store",  # stored responses and conversations survive SIGKILL and a restart
    "disconnect_cancel",  # a stored stream left by its client reads cancelled within 1 s
    # limits only a hosted service's edge enforces (Anthropic's 413 above 32 MB), and the error
    # body of routes and methods no public API defines: the reference's promises, not a contract
    "edge_limits",
    "route_errors",
)
ALL_EXTENSIONS = frozenset(EXTENSIONS)


def _validate_extensions(names: Iterable[str]) -> frozenset[str]:
    chosen = frozenset(names)
    unknown = sorted(chosen - ALL_EXTENSIONS)
    if unknown:
        raise SetupError(f"unknown extension {unknown}; known: {', '.join(EXTENSIONS)}")
    return chosen


def _validate(families: Iterable[str]) -> frozenset[str]:
    chosen = frozenset(families)
    unknown = sorted(chosen - set(FAMILIES))
    if unknown:
        raise SetupError(f"unknown API family {unknown}; known: {', '.join(FAMILIES)}")
    return chosen


@dataclass(frozen=True)
class Profile:
    name: str
    families: frozenset[str]
    description: str = ""
    extensions: frozenset[str] = frozenset()
    # Held to every key the real services send today (field_parity_current), not only to the
    # public spec's minimum: the reference, and the real APIs themselves.
    current_shapes: bool = False
    # The reference's own promise: every request answered within the suite's pace-derived
    # wait, so a timeout is a FAIL there (for any other server, INCONCLUSIVE: no public text
    # sets a time limit). CI keeps failing on a reference that hangs.
    answers_in_time: bool = False

    def __post_init__(self) -> None:
        _validate(self.families)
        _validate_extensions(self.extensions)

    def narrowed(self, families: Iterable[str]) -> Profile:
        """This profile limited to `families` (e.g. `--families chat`): the rest UNSUPPORTED."""
        chosen = _validate(families)
        return Profile(f"{self.name}:{','.join(sorted(chosen))}", self.families & chosen,
                       f"{self.description} (only {', '.join(sorted(chosen))})",
                       self.extensions, self.current_shapes, self.answers_in_time)

    def claims_extension(self, name: str) -> bool:
        """Whether the target claims mlxcel's extension `name`; an unknown name is a suite bug."""
        _validate_extensions([name])
        return name in self.extensions

    def documented(self, case: str) -> str | None:
        """Where this profile's server documents the request value ``case`` as valid (None:
        it does not); a narrowed profile keeps its server's documents."""
        return DOCUMENTED_VALUES.get(self.name.split(":", 1)[0], {}).get(case)

    def claims(self, family: str) -> bool:
        """Whether the target claims `family`; an unknown family name is a suite bug."""
        _validate([family])
        return family in self.families


PROFILES: dict[str, Profile] = {
    profile.name: profile
    for profile in (
        Profile("mlxcel", frozenset(FAMILIES), "the reference server: every family",
                ALL_EXTENSIONS, current_shapes=True, answers_in_time=True),
        Profile("mlxcel-contract", frozenset(FAMILIES) - {"schema", "mlxcel-ext"},
                "the reference server, contract tier only", current_shapes=True,
                answers_in_time=True),
        Profile(
            "mlx-lm",
            frozenset({"chat", "completions", "models", "health", "sdk-openai", "mlx-lm-fields",
                       "robustness"}),
            "mlx_lm.server",
        ),
        Profile(
            "llama-server",
            frozenset(FAMILIES)
            - {"schema", "mlxcel-ext", "audio", "images", "realtime", "mlx-lm-fields"},
            "llama.cpp's llama-server",
        ),
        Profile(
            "vllm-mlx",
            frozenset({"chat", "completions", "models", "health", "responses", "anthropic",
                       "sdk-openai", "sdk-anthropic"}),
            "vllm-mlx serve",
        ),
        Profile(
            "openai",
            frozenset({"chat", "completions", "models", "responses", "sdk-openai", "auth"}),
            "api.openai.com",
            current_shapes=True,
        ),
        Profile(
            "anthropic",
            frozenset({"anthropic", "sdk-anthropic", "auth"}),
            "api.anthropic.com",
            current_shapes=True,
        ),
    )
}


LLAMA_README = "https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md"

# Request values a peer documents as valid that a public API calls invalid: under the peer's
# profile the suite does not send them as bad input (case name -> where the peer documents it).
DOCUMENTED_VALUES: dict[str, dict[str, str]] = {
    "llama-server": {
        "max_tokens=-1": f"{LLAMA_README}, POST /completion n_predict: -1 is infinity (the "
                         "OpenAI-compatible routes map max_tokens to it)",
        "anthropic.max_tokens_missing": f"{LLAMA_README}, POST /v1/messages: max_tokens is "
                                        "optional (default 4096)",
    },
}


def get_profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise SetupError(
            f"unknown profile {name!r}; choose one of {', '.join(sorted(PROFILES))}"
        ) from None


def custom_profile(families: Iterable[str], name: str = "custom") -> Profile:
    """A profile from an explicit family list, e.g. `--families chat,models`."""
    return Profile(name, _validate(families), "families chosen on the command line")
