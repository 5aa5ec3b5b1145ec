"""Target profiles: which API families a server claims. A family outside the profile is
reported UNSUPPORTED, never FAIL.

Decisions recorded here:
- `schema` (the whole mlxcel OpenAPI spec fuzzed with schemathesis) is claimed only by `mlxcel`:
  on a peer, routes it never offered would surface as failures instead of unsupported families.
- `mlx-lm` claims what `mlx_lm.server` serves: chat, completions, models, health, and the OpenAI
  SDK round trips; not tokenize, auth, responses, anthropic, llama-native or embeddings.
- `mlx-lm-fields` (mlx-lm's documented chat fields) is claimed by `mlxcel` and `mlx-lm` only.
- `llama-server` serves /v1/responses and /v1/messages nowadays, so it claims both.
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

    def __post_init__(self) -> None:
        _validate(self.families)

    def narrowed(self, families: Iterable[str]) -> Profile:
        """This profile limited to `families` (e.g. `--families chat`): the rest UNSUPPORTED."""
        chosen = _validate(families)
        return Profile(f"{self.name}:{','.join(sorted(chosen))}", self.families & chosen,
                       f"{self.description} (only {', '.join(sorted(chosen))})")

    def claims(self, family: str) -> bool:
        """Whether the target claims `family`; an unknown family name is a suite bug."""
        _validate([family])
        return family in self.families


PROFILES: dict[str, Profile] = {
    profile.name: profile
    for profile in (
        Profile("mlxcel", frozenset(FAMILIES), "the reference server: every family"),
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
            "openai",
            frozenset({"chat", "completions", "models", "responses", "sdk-openai", "auth"}),
            "api.openai.com",
        ),
    )
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
