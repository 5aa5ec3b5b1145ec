"""mlxcel-conformance: checks any LLM server against the mlxcel OpenAPI spec and goldens."""
