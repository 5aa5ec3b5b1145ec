"""The HTTP layer every family shares: auth, the request guard, error handlers, body offload,
the typed app state, streaming from the engine; and the server's own routes (health, models,
metrics, prompt cache). API families live in ``families/``."""
