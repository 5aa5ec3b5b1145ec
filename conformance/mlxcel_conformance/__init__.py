"""mlxcel-conformance: checks any LLM server against the mlxcel OpenAPI spec and goldens."""

__version__ = "0.1.0"
