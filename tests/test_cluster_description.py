"""Cluster descriptions (issue 13): characteristic words by the log-odds z-score of a cluster
against the rest, and the passage nearest the cluster's mean direction."""

from __future__ import annotations

import numpy as np
import pytest

from neswap_core.models.cluster_description import (
    characteristic_words,
    describe_clusters,
    typical_passages,
)


def test_words_name_each_topic_without_stop_words_or_placeholders():
    texts = (["[Company Name] raised revenue guidance, margin and outlook for the year"] * 3
             + ["[Company Name] paid a dividend and bought back shares with its cash"] * 3)
    words = characteristic_words(texts, np.array([0, 0, 0, 1, 1, 1]), 2, k=4)
    assert set(words[0]) <= {"raised", "revenue", "guidance", "margin", "outlook", "year"}
    assert set(words[1]) <= {"paid", "dividend", "bought", "shares", "cash"}
    assert len(words[0]) == len(words[1]) == 4
    for w in (*words[0], *words[1]):
        assert w not in {"company", "name", "the", "and", "for", "its", "with"}


def test_z_scores_match_the_fightin_words_formula_by_hand():
    # Cluster 0 says "alpha" 4 times and "beta" once; cluster 1 "alpha" once, "beta" 4 times.
    texts = ["alpha alpha beta", "alpha alpha", "beta beta", "beta beta alpha"]
    words = characteristic_words(texts, np.array([0, 0, 1, 1]), 2, k=2, min_count=1)
    assert words == [("alpha",), ("beta",)]  # only z > 0 is characteristic
    # By hand for "alpha" in cluster 0 (prior α₀ = 0.1·10 = 1, α_w = 1·5/10 = 0.5):
    y, yr, n, nr, a0, aw = 4, 1, 5, 5, 1.0, 0.5
    delta = np.log((y + aw) / (n + a0 - y - aw)) - np.log((yr + aw) / (nr + a0 - yr - aw))
    z = delta / np.sqrt(1 / (y + aw) + 1 / (yr + aw))
    from neswap_core.models.log_odds import log_odds_z

    assert log_odds_z(np.array([[4.0, 1.0], [1.0, 4.0]]), 1.0)[0, 0] == pytest.approx(z)


def test_typical_passage_is_the_member_nearest_the_mean_direction():
    rng = np.random.default_rng(0)
    means = np.eye(3)[:2]
    x = rng.normal(size=(40, 3)) * 0.3 + np.repeat(means, 20, axis=0)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    labels = np.repeat([0, 1], 20)
    picked = typical_passages(x, labels, means)
    for c, i in enumerate(picked):
        members = np.flatnonzero(labels == c)
        assert labels[i] == c
        assert x[i] @ means[c] == pytest.approx(max(x[members] @ means[c]))


def test_describe_clusters_handles_an_empty_cluster():
    x = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]])
    described = describe_clusters(["revenue up", "revenue down", "cash cash"], x,
                                  np.array([0, 0, 0]), np.array([[1.0, 0.0], [0.0, 1.0]]))
    assert [d.size for d in described] == [3, 0]
    assert described[0].typical == 0 and described[1].typical is None
    assert described[1].words == ()
