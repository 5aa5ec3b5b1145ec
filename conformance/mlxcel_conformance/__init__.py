"""mlxcel-conformance: checks any LLM inference server against the mlxcel OpenAPI spec and goldens."""
