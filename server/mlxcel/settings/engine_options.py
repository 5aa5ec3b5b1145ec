"""Settings of the engine: slots, queue, prompt cache, streaming, speculative decoding and
the bounds of image and video inputs. Nothing here imports the engine (chat/ and structured/
read the request limits, which must not reach the engine): the engine imports its prompt-cache
defaults from here."""

from __future__ import annotations

from ..media.policy import (
    DEFAULT_DECODE_TIMEOUT_S,
    DEFAULT_FETCH_TIMEOUT_S,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_PIXELS,
    DEFAULT_VIDEO_MAX_FRAMES,
    PRIVATE_URLS_ENV,
    VIDEO_DIRS_ENV,
)
from .option import Option

ENGINE = "Slots, queue and prompt cache"
SPECULATIVE = "Speculative decoding"
MEDIA = "Image and video input"
DEFAULT_CAPACITY_BYTES = 2 * 1024**3  # the prompt cache (engine/prompt_cache.py)
DEFAULT_MAX_ENTRIES = 1024
DEFAULT_TTL_S = 3600.0
SPEC_TYPES = ("none", "draft-simple", "ngram-simple", "prompt-lookup")

ENGINE_OPTIONS: tuple[Option[object], ...] = (
    Option("parallel", 4, "parallel slots: requests decoded together (continuous batching)",
           ENGINE, flags=("-np", "--parallel"), env=("LLAMA_ARG_N_PARALLEL",), type=int,
           to="engine", minimum=1),
    Option("max_queue", 0, "requests waiting for a slot; beyond it 503 (0 = 4 x --parallel)",
           ENGINE, flags=("--max-queue",), env=("MLXCEL_MAX_QUEUE",), type=int, to="engine",
           minimum=0),
    Option("prefill_step_size", 256, "prompt tokens per prefill chunk, interleaved with "
           "decoding", ENGINE, flags=("--prefill-step-size",), type=int, to="engine",
           minimum=1),
    Option("cache_prompt", True, "reuse the longest cached prompt prefix", ENGINE,
           off_flags=("--no-cache-prompt",), env=("LLAMA_ARG_NO_CACHE_PROMPT",),
           env_inverted=True, kind="bool", to="engine"),
    Option("cache_bytes", DEFAULT_CAPACITY_BYTES, "prompt cache capacity in bytes", ENGINE,
           flags=("--cache-bytes",), type=int, to="engine"),
    Option("cache_entries", DEFAULT_MAX_ENTRIES, "prompt cache capacity in entries", ENGINE,
           flags=("--cache-entries",), type=int, to="engine"),
    Option("cache_ttl", DEFAULT_TTL_S, "seconds a prompt cache entry is kept after its last "
           "use", ENGINE, flags=("--cache-ttl",), type=float, to="engine",
           field="cache_ttl_s"),
    Option("stream_interval_ms", 16.0, "milliseconds a stream's tokens gather between socket "
           "writes (0 sends each token as it is generated; the first token and the end go at "
           "once; only a stream faster than one token per interval is grouped)", ENGINE,
           flags=("--stream-interval-ms",),
           env=("MLXCEL_STREAM_INTERVAL_MS",), type=float, to="engine", minimum=0.0),
    Option("stream_buffer_bytes", 8 * 1024 * 1024, "bytes of output (as encoded, estimated) "
           "a stream may hold unread by its client; more cancels the generation (docs/limits.md)",
           ENGINE, flags=("--stream-buffer-bytes",), env=("MLXCEL_STREAM_BUFFER_BYTES",),
           type=int, to="engine", minimum=1024),
    Option("stream_stall_timeout", 30.0, "seconds a stream's output may wait unread by its "
           "client before the generation is cancelled, and a connection may read nothing of "
           "what the server has to send before it is closed (docs/limits.md)", ENGINE,
           flags=("--stream-stall-timeout",), env=("MLXCEL_STREAM_STALL_TIMEOUT",), type=float,
           to="engine", field="stream_stall_timeout_s", minimum=0.1),
)

SPECULATIVE_OPTIONS: tuple[Option[object], ...] = (
    Option("draft_model", None, "draft model directory (sharing the model's tokenizer) for "
           "speculative decoding; the only one a request's `draft_model` may name",
           SPECULATIVE, flags=("--draft-model", "-md", "--model-draft", "--spec-draft-model"),
           env=("LLAMA_ARG_SPEC_DRAFT_MODEL", "LLAMA_ARG_MODEL_DRAFT")),
    Option("draft_max", 3, "tokens drafted per verify round (a request's num_draft_tokens "
           "wins)", SPECULATIVE,
           flags=("--draft-max", "--num-draft-tokens", "--spec-draft-n-max", "--draft",
                  "--draft-n"),
           env=("LLAMA_ARG_SPEC_DRAFT_N_MAX", "LLAMA_ARG_DRAFT_MAX"), type=int, to="engine",
           minimum=0),
    Option("spec_type", "none", "ngram-simple (alias prompt-lookup): prompt-lookup decoding, "
           "n-gram drafts from the prompt and the text so far, no second model; --draft-model "
           "takes precedence", SPECULATIVE, flags=("--spec-type",),
           env=("LLAMA_ARG_SPEC_TYPE",), choices=SPEC_TYPES, to="cli"),
)

MEDIA_OPTIONS: tuple[Option[object], ...] = (
    Option("media_path", [], "directory whose files image URLs may name (file:// or absolute "
           "path); repeatable, comma-separated in the variable; without it every local path is "
           "refused", MEDIA, flags=("--media-path",), env=("MLXCEL_MEDIA_PATH",),
           kind="append", to="media", field="media_paths"),
    Option("media_max_bytes", DEFAULT_MAX_BYTES, "largest image a request may send or name, in "
           "bytes (413 beyond)", MEDIA, flags=("--media-max-bytes",), type=int, to="media",
           field="max_bytes", minimum=1),
    Option("media_max_pixels", DEFAULT_MAX_PIXELS, "largest image, width x height, read from "
           "its header before decoding (413 beyond)", MEDIA, flags=("--media-max-pixels",),
           type=int, to="media", field="max_pixels", minimum=1),
    Option("media_decode_timeout", DEFAULT_DECODE_TIMEOUT_S, "seconds one image may take to "
           "decode (400 image_decode_timeout beyond)", MEDIA,
           flags=("--media-decode-timeout",), type=float, to="media",
           field="decode_timeout_s", minimum=0.001),
    Option("media_fetch_timeout", DEFAULT_FETCH_TIMEOUT_S, "seconds an http(s) image may take "
           "to download (400 media_fetch_timeout beyond)", MEDIA,
           flags=("--media-fetch-timeout",), type=float, to="media", field="fetch_timeout_s",
           minimum=0.001),
    Option("video_max_frames", DEFAULT_VIDEO_MAX_FRAMES, "most frames sampled from one "
           "video_url", MEDIA, flags=("--video-max-frames",), type=int, to="media",
           minimum=2),
    Option("video_dirs", [], "directories local video paths may name, comma-separated; "
           "without it every local video path is refused", MEDIA,
           env=(VIDEO_DIRS_ENV,), kind="append", to="media"),
    Option("allow_private_urls", False, "let http(s) media URLs name non-public addresses "
           "(loopback, private networks)", MEDIA, env=(PRIVATE_URLS_ENV,),
           kind="bool", to="media"),
)
