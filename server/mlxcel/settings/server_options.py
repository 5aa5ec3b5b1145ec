"""Settings of the server itself: the model, the socket, templates, side models, the Responses
API stores and logging (flag names and ``LLAMA_ARG_*`` variables as llama-server's)."""

from __future__ import annotations

from .option import Option, file_path

SERVER = "Server"
TEMPLATES = "Chat templates"
MODELS = "Side models"
STORES = "Responses API stores"
RESPONSES = "responses"  # the family whose section of ServerConfig.sections they fill

SERVER_OPTIONS: tuple[Option[object], ...] = (
    Option("model", None, "local model directory or hub id", SERVER,
           flags=("-m", "--model"), env=("LLAMA_ARG_MODEL",),
           shown_default="the bundled fixture model"),
    Option("host", "127.0.0.1", "address to listen on", SERVER,
           flags=("--host",), env=("LLAMA_ARG_HOST",)),
    Option("port", 8080, "port to listen on", SERVER,
           flags=("--port",), env=("LLAMA_ARG_PORT",), type=int),
    Option("api_key", None, "require this key as `Authorization: Bearer KEY` (or `x-api-key`) "
           "on every route but GET /health and GET /", SERVER,
           flags=("--api-key",), env=("LLAMA_API_KEY",), shown_default="no key"),
    Option("ctx_size", 0, "context size in tokens, shared by the slots (0 = the model's own "
           "per slot)", SERVER, flags=("-c", "--ctx-size"), env=("LLAMA_ARG_CTX_SIZE",),
           type=int),
    Option("alias", None, "model name reported to clients", SERVER,
           flags=("-a", "--alias"), env=("LLAMA_ARG_ALIAS",),
           shown_default="the model's directory name or hub id"),
    Option("metrics", False, "serve Prometheus metrics on /metrics", SERVER,
           flags=("--metrics",), env=("LLAMA_ARG_ENDPOINT_METRICS",), kind="bool"),
    Option("metrics_port", None, "also serve Prometheus metrics on this port (implies "
           "--metrics)", SERVER, flags=("--metrics-port",), type=int),
    Option("slots", True, "serve /slots", SERVER, flags=("--slots",),
           off_flags=("--no-slots",), env=("LLAMA_ARG_ENDPOINT_SLOTS",), kind="bool"),
    Option("log_level", "info", "logging level of the server and uvicorn", SERVER,
           flags=("--log-level",), env=("MLXCEL_LOG_LEVEL",),
           choices=("debug", "info", "warning", "error"), to="cli"),
    Option("adapter_dir", None, "directory of LoRA adapters that a request's mlx-lm `adapters` "
           "field may name; without it such requests get 400", SERVER,
           flags=("--adapter-dir",), env=("MLXCEL_ADAPTER_DIR",)),
    Option("chat_template", None, "Jinja chat template (text or a file path) replacing the "
           "model's", TEMPLATES, flags=("--chat-template",), env=("LLAMA_ARG_CHAT_TEMPLATE",),
           to="cli", shown_default="the model's own"),
    Option("chat_template_file", None, "file holding the Jinja chat template", TEMPLATES,
           flags=("--chat-template-file",), env=("LLAMA_ARG_CHAT_TEMPLATE_FILE",), to="cli"),
    Option("chat_template_kwargs", None, "JSON object of default template kwargs; a request's "
           "keys win", TEMPLATES, flags=("--chat-template-kwargs",),
           env=("LLAMA_ARG_CHAT_TEMPLATE_KWARGS",), to="cli"),
    Option("prefill_assistant", False, "continue a trailing assistant message (chat and "
           "Responses) instead of starting a new turn (llama-server's default; OpenAI's API "
           "starts a new one); Messages always continue one, as Anthropic's API does",
           TEMPLATES, flags=("--prefill-assistant",),
           off_flags=("--no-prefill-assistant",), env=("LLAMA_ARG_PREFILL_ASSISTANT",),
           kind="bool"),
    Option("embedding_model", None, "encoder (BERT-family) model directory or hub id for "
           "/v1/embeddings, /embedding and /embeddings (without it they answer 501)", MODELS,
           flags=("--embedding-model",), env=("MLXCEL_EMBEDDING_MODEL",), to="family",
           section="embeddings"),
    Option("rerank_model", None, "cross-encoder (*ForSequenceClassification) for /v1/rerank and "
           "its aliases (without it they answer 501)", MODELS,
           flags=("--rerank-model",), env=("MLXCEL_RERANK_MODEL",), to="family",
           section="embeddings"),
    Option("pooling", None, "embedding pooling", MODELS, flags=("--pooling",),
           env=("LLAMA_ARG_POOLING",), choices=("none", "mean", "cls", "last"),
           shown_default="the checkpoint's sentence-transformers setting, else mean", to="family",
           section="embeddings"),
    Option("store_path", None, "SQLite file holding stored responses and conversations across "
           "restarts; `:memory:` keeps them in memory only (lost when the server stops)", STORES,
           flags=("--store-path",), env=("MLXCEL_STORE_PATH",), type=file_path,
           shown_default="responses.sqlite3 in the user's data directory: $XDG_DATA_HOME/mlxcel/, "
           "else ~/.local/share/mlxcel/ (~/Library/Application Support/mlxcel/ on macOS)",
           to="family", section=RESPONSES),
    Option("responses_store_max_entries", 1024, "stored responses kept for GET, DELETE, cancel "
           "and previous_response_id; 0 disables the store", STORES,
           flags=("--responses-store-max-entries",),
           env=("LLAMA_ARG_RESPONSES_STORE_MAX_ENTRIES",), type=int, to="family",
           section=RESPONSES),
    Option("responses_store_ttl_secs", 3600, "seconds a stored response is kept after its last "
           "write", STORES, flags=("--responses-store-ttl-secs",),
           env=("LLAMA_ARG_RESPONSES_STORE_TTL_SECS",), type=int,
           to="family", section=RESPONSES),
    Option("conversation_store_max_entries", 256, "conversations (string ids) kept; 0 disables "
           "the store", STORES, flags=("--conversation-store-max-entries",),
           env=("LLAMA_ARG_CONVERSATION_STORE_MAX_ENTRIES",), type=int,
           to="family", section=RESPONSES),
    Option("conversation_store_ttl_secs", 3600, "seconds a conversation is kept after its last "
           "write", STORES, flags=("--conversation-store-ttl-secs",),
           env=("LLAMA_ARG_CONVERSATION_STORE_TTL_SECS",), type=int,
           to="family", section=RESPONSES),
    Option("responses_store_max_bytes", 256 * 1024 * 1024, "bytes the Responses store may hold, "
           "responses and conversations together, counted as the UTF-8 JSON it stores; the "
           "least recently used entries are evicted first", STORES,
           flags=("--store-bytes", "--responses-store-max-bytes"), env=("MLXCEL_STORE_BYTES",),
           type=int, minimum=0, to="family", section=RESPONSES),
)
