"""The embedding analysis of language affinity (section 3.3, Fig. 8 and 9 of the paper).

`mean_pooled`: a text's vector is the mean of a local causal LM's last-layer hidden states over the text's own
tokens, special tokens left out (crossknow's choice: the paper says only "embeddings"). `language_distances`:
1 - cosine of the languages' centroids of L2-normalised vectors (Fig. 8). `tsne_projection`: a seeded 2-D t-SNE.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from crossknow.errors import CrossknowError, MissingDependencyError


def load_embedder(spec: str, device: str = "auto", dtype: str = "float32") -> tuple[Any, Any]:
    """(tokenizer, model) of a local model spec (`default`, `hf:PATH[@REV]`, `gguf:FILE`); an error naming the
    spec for any other (a server gives no hidden states)."""
    from crossknow.models.device import resolve_device
    from crossknow.models.hf_loading import load_causal_lm
    from crossknow.models.specs import resolve_local

    local = resolve_local(spec)
    if local is None:
        raise CrossknowError(f"embedding model {spec!r}: hidden states need a local model "
                             "(default, hf:PATH, gguf:FILE)")
    model_id = local.model_id or local.path
    return load_causal_lm(local.path, local.revision, model_id, resolve_device(device), dtype)


def mean_pooled(tokenizer: Any, model: Any, texts: Sequence[str], batch_size: int = 8) -> np.ndarray:
    """(len(texts), hidden size) float32: each text's last-layer hidden states averaged over its non-special
    tokens (see the module docstring). Texts are batched right-padded; padding never enters a mean."""
    import torch

    body = model.get_decoder()
    device = next(model.parameters()).device
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    vectors = []
    for start in range(0, len(texts), batch_size):
        encoded = [tokenizer(text, return_special_tokens_mask=True) for text in texts[start : start + batch_size]]
        width = max(len(e["input_ids"]) for e in encoded)
        ids = torch.full((len(encoded), width), pad, dtype=torch.long)
        attention = torch.zeros((len(encoded), width), dtype=torch.long)
        pooled = torch.zeros((len(encoded), width), dtype=torch.float32)
        for row, e in enumerate(encoded):
            n = len(e["input_ids"])
            ids[row, :n] = torch.tensor(e["input_ids"])
            attention[row, :n] = 1
            pooled[row, :n] = 1 - torch.tensor(e["special_tokens_mask"], dtype=torch.float32)
        if torch.any(pooled.sum(dim=1) == 0):
            raise CrossknowError("a text has no token of its own to embed (an empty question?)")
        with torch.no_grad():
            hidden = body(input_ids=ids.to(device), attention_mask=attention.to(device)).last_hidden_state
        hidden = hidden.float().cpu()
        vectors.append(((hidden * pooled[:, :, None]).sum(dim=1) / pooled.sum(dim=1, keepdim=True)).numpy())
    return np.concatenate(vectors) if vectors else np.zeros((0, model.config.hidden_size), dtype=np.float32)


def normalised(vectors: np.ndarray) -> np.ndarray:
    """Each row scaled to unit L2 norm."""
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def language_distances(vectors: Mapping[str, np.ndarray]) -> tuple[list[str], np.ndarray]:
    """(languages, D) with D[i, j] = 1 - cos(c_i, c_j), c = the mean of a language's normalised vectors."""
    languages = list(vectors)
    if any(len(vectors[lang]) == 0 for lang in languages):
        raise CrossknowError("every language needs at least one embedded text")
    centroids = normalised(np.stack([normalised(np.asarray(vectors[lang], dtype=np.float64)).mean(axis=0)
                                     for lang in languages]))
    distances = 1.0 - np.clip(centroids @ centroids.T, -1.0, 1.0)
    np.fill_diagonal(distances, 0.0)
    return languages, (distances + distances.T) / 2


def tsne_projection(vectors: np.ndarray, seed: int = 0) -> np.ndarray:
    """(n, 2) t-SNE coordinates of the normalised vectors (cosine metric; perplexity 30, scikit-learn's
    default, lowered to (n - 1) / 3 for fewer texts: crossknow's choice, since it must stay below n and a
    perplexity near n makes every text a neighbour of every other)."""
    try:
        from sklearn.manifold import TSNE
    except ImportError as error:  # pragma: no cover - exercised only without the hf extra
        raise MissingDependencyError("scikit-learn", "hf", "The t-SNE projection") from error
    if len(vectors) < 3:
        raise CrossknowError(f"t-SNE needs at least 3 texts, got {len(vectors)}")
    perplexity = max(1.0, min(30.0, (len(vectors) - 1) / 3))
    tsne = TSNE(n_components=2, perplexity=perplexity, metric="cosine", init="random", random_state=seed)
    return tsne.fit_transform(normalised(np.asarray(vectors, dtype=np.float64)))
