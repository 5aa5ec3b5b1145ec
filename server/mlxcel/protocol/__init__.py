"""Protocol pieces several API families share: body parsing and JSON-shape checks, the sampling
fields and their resolution, logprobs, timings, completion ids, field types. Each family's own
models and rendering are in ``families/<name>/``; nothing here names a family."""
