"""Encoder models (BERT family) for the embedding and reranking routes: loading through
mlx-embeddings, pooling and normalization, and the worker thread that runs them."""
