"""The word-level DP baseline (generate/dp_words.py, paper 001 §6): the mechanism's statistics
against their closed form, exactness of the search shortcut, ε → ∞ is the identity."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from neswap_core.generate.dp_words import WordVocabulary, laplace_noise, privatise_texts


@pytest.mark.parametrize(("d", "epsilon"), [(1, 2.0), (8, 0.5), (64, 20.0)])
def test_noise_norm_is_gamma_d_over_epsilon_and_direction_uniform(d, epsilon):
    n = 20_000
    z = laplace_noise(n, d, epsilon, np.random.default_rng(d))
    norms = np.linalg.norm(z, axis=1)
    # ‖z‖ of the density ∝ exp(−ε‖z‖) on R^d is Gamma(shape d, scale 1/ε)
    assert stats.kstest(norms, stats.gamma(a=d, scale=1 / epsilon).cdf).pvalue > 1e-3
    assert norms.mean() == pytest.approx(d / epsilon, abs=4 * np.sqrt(d) / epsilon / np.sqrt(n))
    # the direction is uniform on the sphere: its mean is 0 within 4 standard errors (1/√(n d))
    unit = z / norms[:, None]
    assert np.abs(unit.mean(axis=0)).max() < 4 / np.sqrt(n * d) + 1e-12 or d == 1
    if d == 1:  # one dimension: the Laplace distribution itself, scale 1/ε
        assert stats.kstest(z[:, 0], stats.laplace(scale=1 / epsilon).cdf).pvalue > 1e-3


def test_noise_refuses_a_non_positive_epsilon():
    with pytest.raises(ValueError, match="positive"):
        laplace_noise(3, 2, 0.0, np.random.default_rng(0))


@pytest.fixture(scope="module")
def small_vocabulary():
    rng = np.random.default_rng(1)
    letters = np.array(list("abcdefghij"))
    words = sorted({"".join(rng.choice(letters, size=5)) for _ in range(400)})
    return WordVocabulary(np.asarray(words, dtype=object), rng.standard_normal((len(words), 8))
                          .astype(np.float32))


def test_each_word_goes_to_the_nearest_word_of_its_noisy_vector(small_vocabulary):
    v = small_vocabulary
    texts = [" ".join(v.words[i] for i in range(k, k + 30)) + ", 42 [Company Name]."
             for k in range(0, 300, 30)]
    released, treated, changed = privatise_texts(texts, 4.0, np.random.default_rng(9), v)
    # the same noise, brute force over the whole vocabulary (no shortcut)
    words = [w for t in texts for w in t.split(",")[0].split()]
    rows = np.array([v.index_[w] for w in words])
    noise = laplace_noise(len(words), 8, 4.0, np.random.default_rng(9))
    points = v.vectors[rows] + noise
    d2 = ((points[:, None, :] - v.vectors[None, :, :]) ** 2).sum(axis=2)
    expected = v.words[d2.argmin(axis=1)]
    got = [w for t in released for w in t.split(",")[0].split()]
    assert got == list(expected)
    assert treated == len(words) and changed == int((expected != v.words[rows]).sum()) > 0
    assert all(t.endswith(", 42 [Company Name].") for t in released)  # numbers, placeholders kept


def test_infinite_and_huge_epsilon_are_the_identity_and_more_noise_changes_more(small_vocabulary):
    v = small_vocabulary
    text = " ".join(v.words[:200]) + " Outofvocabularyword"
    assert privatise_texts([text], np.inf, np.random.default_rng(0), v)[0] == [text]
    assert privatise_texts([text], 1e9, np.random.default_rng(0), v)[0] == [text]  # OOV included
    shares = [privatise_texts([text], e, np.random.default_rng(0), v)[2] for e in (0.5, 5, 50)]
    assert shares[0] > shares[1] > shares[2]


def test_capitalised_words_stay_capitalised(small_vocabulary):
    v = small_vocabulary
    text = " ".join(w.capitalize() for w in v.words[:50])
    released = privatise_texts([text], 0.1, np.random.default_rng(2), v)[0][0]
    assert all(w[0].isupper() for w in released.split())
    assert released != text


def test_minilm_vocabulary_holds_english_words_and_maps_close_words_at_high_epsilon():
    from neswap_core.generate.dp_words import minilm_vocabulary

    v = minilm_vocabulary()
    assert v.vectors.shape[1] == 64 and len(v.words) > 15_000
    assert {"revenue", "margin", "quarter"} <= set(v.index_)
    text = "Revenue grew in the quarter and margins improved."
    assert privatise_texts([text], 1e6, np.random.default_rng(0), v)[0] == [text]


def test_dp_candidates_enter_the_candidate_table_and_review_to_a_release():
    """Per ε one candidate (sampler "dp_words") measured like the others; ε huge changes
    nothing, a small ε changes words; the chosen one reviews to its released chunks."""
    from neswap_core.choose.candidates import build_candidates
    from neswap_core.config import RunConfig
    from neswap_core.generate.releases import sweep_releases
    from tests.test_candidates import ctx as ctx_fixture

    ctx = ctx_fixture.__wrapped__()
    config = RunConfig.of(dp_epsilons=[1e9, 2.0], max_swaps=2)
    sweep = sweep_releases(ctx, ["Organization"], combination_size=1, max_swaps=2)
    table = build_candidates(sweep, config).table
    dp = table[table["sampler"] == "dp_words"].set_index("epsilon")
    assert list(dp.index) == [1e9, 2.0]
    assert dp.loc[1e9, "words_unchanged"] == 1.0 and dp.loc[1e9, "chunks_changed"] == 0.0
    assert dp.loc[2.0, "words_unchanged"] < 0.9 and dp.loc[2.0, "tone_kept"] <= 1.0
    release_id = dp.loc[2.0, "release_id"]
    chosen = build_candidates(sweep, config).source(release_id).review({})
    assert chosen.release_id == release_id and len(chosen.log) == round(
        dp.loc[2.0, "chunks_changed"] * len(ctx.chunks))
    with pytest.raises(Exception, match="dp_epsilons"):
        RunConfig.of(dp_epsilons=[0.0])
