"""What one request may cost, how long a client may take, who may call (docs/limits.md), and
the queues of the single-worker image and audio backends."""

from __future__ import annotations

from .option import Option, comma_list

LIMITS = "Request limits"
ACCESS = "Timeouts and access"
IMAGES = "Image generation"
AUDIO = "Audio"
MIB = 1024 * 1024


def _limit(dest: str, default: int, help_text: str, minimum: int,
           env: tuple[str, ...] = ()) -> Option[object]:
    return Option(dest, default, help_text, LIMITS, flags=("--" + dest.replace("_", "-"),),
                  env=env, type=int, to="limits", minimum=minimum)


LIMIT_OPTIONS: tuple[Option[object], ...] = (
    _limit("max_body_bytes", 32 * MIB, "largest request body on any route; larger is 413 "
           "before it is read", 1, env=("MLXCEL_MAX_BODY_BYTES",)),
    _limit("max_json_values", 1_000_000, "most array items and object members in a JSON body "
           "(objects and arrays: a twentieth of it); more is 413 before it is parsed", 1),
    _limit("max_json_depth", 128, "deepest nesting of a JSON body", 2),
    _limit("max_stop_strings", 16, "most stop strings per request", 0),
    _limit("max_stop_chars", 1024, "longest stop string, in characters", 1),
    _limit("max_dry_breakers", 64, "most dry_sequence_breakers per request", 0),
    _limit("dry_breaker_chars", 40, "characters kept of each string DRY breaker, as llama.cpp "
           "cuts them", 1),
    _limit("max_logit_bias", 4096, "most logit_bias entries per request; more is 400 before "
           "they are validated", 0),
    _limit("max_logprob_entries", 131_072, "most log probabilities one non-streamed /completion "
           "answer may hold (n_probs x the tokens it may generate, per prompt); more is 400 "
           "before generation (a stream is not bounded)", 0),
    _limit("max_tokenize_chars", MIB, "longest text tokenized at once (a prompt, a message "
           "list as rendered, /tokenize content); longer is 400 context_length_exceeded", 1),
    _limit("max_schema_depth", 32, "deepest nesting of a tool or response_format JSON schema",
           1),
    _limit("prepare_threads", 4, "worker threads that parse, render and tokenize requests off "
           "the event loop", 1),
)

ACCESS_OPTIONS: tuple[Option[object], ...] = (
    Option("timeout_header", 10.0, "seconds a request's headers may take to arrive; then 408 "
           "and close", ACCESS, flags=("--timeout-header",), env=("MLXCEL_TIMEOUT_HEADER",),
           type=float, field="timeout_header_s", minimum=0.1),
    Option("timeout_read", 15.0, "seconds a request body may pause between two reads; then "
           "408", ACCESS, flags=("--timeout-read",), env=("MLXCEL_TIMEOUT_READ",), type=float,
           field="timeout_read_s", minimum=0.1),
    Option("timeout_body", 60.0, "seconds a whole request body may take to arrive, however "
           "steadily it trickles (a chunked body too); then 408", ACCESS,
           flags=("--timeout-body",), env=("MLXCEL_TIMEOUT_BODY",), type=float,
           field="timeout_body_s", minimum=0.1),
    Option("max_connections", 0, "most open client connections; one more replaces the oldest "
           "idle or still-sending one, else is answered 503 and closed (0: the open-file limit "
           "less 128)", ACCESS,
           flags=("--max-connections",), env=("MLXCEL_MAX_CONNECTIONS",), type=int,
           minimum=0),
    Option("shutdown_grace", 30.0, "seconds the first SIGTERM or Ctrl-C lets running requests "
           "finish (new ones get 503); streams still running then end with their final event "
           "and the server exits 0", ACCESS, flags=("--shutdown-grace",),
           env=("MLXCEL_SHUTDOWN_GRACE",), type=float, field="shutdown_grace_s", minimum=0.0),
    Option("timeout_keep_alive", 5.0, "seconds an idle kept-alive connection stays open",
           ACCESS, flags=("--timeout-keep-alive",), env=("MLXCEL_TIMEOUT_KEEP_ALIVE",),
           type=float, field="timeout_keep_alive_s", minimum=0.1),
    Option("allowed_origins", (), "comma-separated browser origins (e.g. "
           "http://localhost:3000) allowed to call the server besides its own; '*' allows any; "
           "a request with another Origin gets 403", ACCESS, flags=("--allowed-origins",),
           env=("MLXCEL_ALLOWED_ORIGINS",), type=comma_list),
    Option("allowed_hosts", (), "comma-separated Host names a server bound to loopback also "
           "answers ('*': any); others get 403 (DNS rebinding)", ACCESS,
           flags=("--allowed-hosts",), env=("MLXCEL_ALLOWED_HOSTS",),
           type=comma_list),
)


def _worker(kind: str, family: str, group: str,
            model_help: str) -> tuple[Option[object], ...]:
    """The model, queue and timeout of a family's single worker, in the family's section
    (``model``, ``max_queue``, ``timeout_s``)."""
    env = f"MLXCEL_{kind.upper()}"
    return (
        Option(f"{kind}_model", None, model_help, group, flags=(f"--{kind}-model",),
               env=(f"{env}_MODEL",), to="family", section=family, field="model"),
        Option(f"{kind}_max_queue", 4, f"{kind} requests that may wait behind the running one; "
               "beyond it 503", group, flags=(f"--{kind}-max-queue",),
               env=(f"{env}_MAX_QUEUE",), type=int, to="family", section=family,
               field="max_queue"),
        Option(f"{kind}_timeout", 300.0, f"seconds an {kind} request may take from admission "
               "to its answer; past it 504", group, flags=(f"--{kind}-timeout",),
               env=(f"{env}_TIMEOUT",), type=float, to="family", section=family,
               field="timeout_s"),
    )


WORKER_OPTIONS: tuple[Option[object], ...] = (
    *_worker("image", "images", IMAGES, "Z-Image checkpoint directory (diffusers layout: "
             "transformer/, text_encoder/, vae/, tokenizer/) for /v1/images/generations and "
             "/v1/images/edits, loaded at startup beside the text model; needs the images extra "
             "and mflux 0.24.0"),
    *_worker("audio", "audio", AUDIO, "Whisper or Kokoro checkpoint (directory or hub id; the "
             "kind is read from its config.json): start an audio-only server, with no text "
             "model, for /v1/audio/transcriptions and /v1/audio/translations (Whisper) or "
             "/v1/audio/speech (Kokoro); needs the audio extra"),
)
