"""The embedding analysis: mean pooling against a plain one-text-at-a-time computation with the real
embedded model, the language distance matrix against a hand computation, the t-SNE shape, and the figures."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from crossknow.errors import CrossknowError
from crossknow.pitfalls.affinity.embeddings import language_distances, load_embedder, mean_pooled, tsne_projection
from crossknow.report.pitfalls_figures import distance_heatmap, tsne_figure

SENTENCES = ["The capital of France is Paris.", "東京は日本の首都です。そして大きな都市です。"]


@pytest.mark.slow
def test_mean_pooling_equals_a_plain_computation(embedded_generator) -> None:
    tokenizer, model = embedded_generator.tokenizer, embedded_generator.model
    # Batched together (the shorter one right-padded) ...
    batched = mean_pooled(tokenizer, model, SENTENCES, batch_size=2)
    for row, sentence in enumerate(SENTENCES):
        # ... against each sentence alone, no padding: the full model's last hidden state (its final norm
        # applied), averaged over every position after BOS.
        ids = tokenizer(sentence, return_tensors="pt").input_ids
        assert ids[0, 0].item() == tokenizer.bos_token_id
        with torch.no_grad():
            hidden = model(ids, output_hidden_states=True).hidden_states[-1][0]
        plain = hidden[1:].float().mean(dim=0).numpy()
        assert batched.shape == (2, model.config.hidden_size)
        np.testing.assert_allclose(batched[row], plain, rtol=1e-4, atol=1e-4)
    assert not np.allclose(batched[0], batched[1])


def test_distance_matrix_by_hand() -> None:
    vectors = {
        "en": np.array([[2.0, 0.0], [0.0, 3.0]]),  # normalised: (1, 0), (0, 1) -> centroid (0.5, 0.5)
        "fr": np.array([[5.0, 0.0]]),              # centroid (1, 0)
        "zh": np.array([[0.0, -1.0]]),             # centroid (0, -1)
    }
    languages, distances = language_distances(vectors)
    assert languages == ["en", "fr", "zh"]
    # cos(en, fr) = 0.5 / (sqrt(0.5) * 1) = 1/sqrt(2); cos(en, zh) = -0.5 / sqrt(0.5) = -1/sqrt(2); cos(fr, zh) = 0
    expected = np.array([
        [0.0, 1 - 1 / math.sqrt(2), 1 + 1 / math.sqrt(2)],
        [1 - 1 / math.sqrt(2), 0.0, 1.0],
        [1 + 1 / math.sqrt(2), 1.0, 0.0],
    ])
    np.testing.assert_allclose(distances, expected, atol=1e-12)
    np.testing.assert_array_equal(distances, distances.T)
    assert np.all(np.diag(distances) == 0)
    with pytest.raises(CrossknowError, match="at least one"):
        language_distances({"en": np.zeros((0, 2)), "fr": np.ones((1, 2))})


def test_tsne_and_figures() -> None:
    rng = np.random.default_rng(0)
    vectors = np.concatenate([rng.normal(5, 1, (6, 8)), rng.normal(-5, 1, (6, 8))])
    points = tsne_projection(vectors, seed=0)
    assert points.shape == (12, 2) and np.all(np.isfinite(points))
    np.testing.assert_allclose(tsne_projection(vectors, seed=0), points)  # the seed fixes the projection
    # Two well separated groups stay apart: each point's nearest neighbour is in its own group.
    nearest = [int(np.argsort(np.linalg.norm(points - p, axis=1))[1]) for p in points]
    assert all((i < 6) == (j < 6) for i, j in enumerate(nearest))
    labels = ["fr"] * 6 + ["zh"] * 6
    figure = tsne_figure(points, labels)
    assert [t.get_text() for t in figure.axes[0].get_legend().get_texts()] == ["fr", "zh"]
    heat = distance_heatmap(["fr", "zh"], np.array([[0.0, 0.25], [0.25, 0.0]]))
    assert sorted(t.get_text() for t in heat.axes[0].texts) == ["0.000", "0.000", "0.250", "0.250"]
    with pytest.raises(CrossknowError, match="at least 3"):
        tsne_projection(vectors[:2])


def test_a_server_model_cannot_embed() -> None:
    with pytest.raises(CrossknowError, match="local model"):
        load_embedder("openai:gpt-4o-mini")
