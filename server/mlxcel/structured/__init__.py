"""Constrained decoding: JSON Schema (or a Lark grammar) → llguidance matcher → a per-token mask
applied to MLX logits through ``GenerationRequest.logits_processor_factories``."""
