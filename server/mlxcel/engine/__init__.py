"""The engine owns MLX: model loading, the generation thread, sampling, stops, detokenization."""
