"""Per-family request models, translation to ``GenerationRequest``, and response rendering."""
