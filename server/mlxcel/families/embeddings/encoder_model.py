"""Loading an encoder checkpoint with mlx-embeddings, and what the routes need to know of it.

An embedding checkpoint is any architecture mlx-embeddings loads (BERT, XLM-RoBERTa,
ModernBERT, ...). A reranker is a BERT ``*ForSequenceClassification`` checkpoint: the encoder
and pooler come from mlx-embeddings' BERT, the one-logit ``classifier`` head is applied here.
The tokenizer is the checkpoint's ``tokenizer.json`` (with its own special-token template).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mlx.core as mx
import mlx.nn as nn
import numpy as np
from tokenizers import Tokenizer

from .pooling import POOLINGS, Pooling


@dataclass
class EncoderModel:
    name: str
    model: nn.Module
    tokenizer: Tokenizer
    config: dict[str, Any]
    pooling: Pooling
    classifier: nn.Linear | None = None

    @property
    def max_tokens(self) -> int:
        return int(self.config.get("max_position_embeddings") or 512)

    @property
    def vocab_size(self) -> int:
        return int(self.tokenizer.get_vocab_size())

    @property
    def dimensions(self) -> int:
        return int(self.config["hidden_size"])

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text).ids)

    def encode_pair(self, query: str, document: str) -> tuple[list[int], list[int]]:
        enc = self.tokenizer.encode(query, document)
        return list(enc.ids), list(enc.type_ids)

    def token_states(self, ids: list[int]) -> np.ndarray:
        """Last hidden states (tokens, hidden) of one input; call on the encoder thread."""
        out = self.model(mx.array([ids]), attention_mask=mx.ones((1, len(ids))))
        states = out.last_hidden_state[0].astype(mx.float32)
        mx.eval(states)
        return np.array(states)

    def score(self, ids: list[int], type_ids: list[int]) -> float:
        """The cross-encoder's relevance logit for one (query, document) pair."""
        assert self.classifier is not None
        out = self.model(mx.array([ids]), token_type_ids=mx.array([type_ids]),
                         attention_mask=mx.ones((1, len(ids))))
        logit = self.classifier(out.pooler_output)[0, 0].astype(mx.float32)
        return float(np.array(logit))


def _default_pooling(path: Path) -> Pooling:
    """The sentence-transformers pooling setting shipped with the checkpoint, else mean."""
    config = path / "1_Pooling" / "config.json"
    if config.is_file():
        modes = json.loads(config.read_text())
        for key, name in (("pooling_mode_cls_token", "cls"), ("pooling_mode_lasttoken", "last"),
                          ("pooling_mode_mean_tokens", "mean")):
            if modes.get(key):
                return name  # type: ignore[return-value]
    return "mean"


def _load_cross_encoder(path: Path, config: dict[str, Any]) -> tuple[nn.Module, nn.Linear]:
    from mlx_embeddings.models.bert import Model, ModelArgs

    if config.get("model_type") != "bert":
        raise ValueError(f"reranking supports BERT sequence classifiers, not "
                         f"{config.get('model_type')!r}")
    weights: dict[str, mx.array] = {}
    for file in sorted(path.glob("model*.safetensors")):
        weights.update(mx.load(str(file)))  # type: ignore[arg-type]
    model = Model(ModelArgs.from_dict(config))
    encoder = [(k.removeprefix("bert."), v) for k, v in weights.items()
               if k.startswith("bert.") and "position_ids" not in k]
    model.load_weights(encoder)
    head = nn.Linear(int(config["hidden_size"]), int(config.get("num_labels", 1)))
    head.load_weights([(k.removeprefix("classifier."), v) for k, v in weights.items()
                       if k.startswith("classifier.")])
    model.eval()
    mx.eval(model.parameters(), head.parameters())
    return model, head


def load_encoder(path_or_repo: str, *, pooling: str | None = None,
                 reranker: bool = False) -> EncoderModel:
    """Load an embedding model, or (``reranker``) a sequence-classification cross-encoder."""
    from mlx_embeddings.utils import get_model_path, load_config, load_model

    path = get_model_path(path_or_repo)
    config = load_config(path)
    architectures = config.get("architectures") or []
    is_classifier = any(a.endswith("ForSequenceClassification") for a in architectures)
    if reranker and not is_classifier:
        raise ValueError(f"{path_or_repo} is not a sequence-classification (reranker) "
                         f"checkpoint: architectures {architectures}")
    tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    chosen = pooling or _default_pooling(path)
    if chosen not in POOLINGS:
        raise ValueError(f"unknown pooling {chosen!r}; choose one of {POOLINGS}")
    classifier = None
    if is_classifier:
        model, classifier = _load_cross_encoder(path, config)
    else:
        model = load_model(path, path_to_repo=path_or_repo)
    name = Path(path_or_repo).name if Path(path_or_repo).exists() else path_or_repo
    return EncoderModel(name, model, tokenizer, config, chosen, classifier)  # type: ignore[arg-type]
