"""The divergence audit (SPEC §9): reference vectors, conversion cases, closed forms, edge cases.

The reference values come from an independent implementation (../shared/anchors); the closed
forms are KL(N(μ, I) ‖ N(0, I)) = ‖μ‖²/2 and 0 for identical laws; a plain loop written from
the anchors' README checks the vectorised estimator where the anchors do not reach (d = 384,
near-duplicates, a fully masked document).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from neswap_core.errors import FitError
from neswap_core.measure.audit import ALPHAS, RenyiAudit, audit_comparison, released_embeddings
from neswap_core.measure.renyi import renyi_divergence
from neswap_core.measure.zcdp import zcdp_epsilon, zcdp_line

ANCHORS = Path(__file__).resolve().parents[2] / "shared" / "anchors" / "renyi_vectors.json"
needs_anchors = pytest.mark.skipif(not ANCHORS.exists(), reason="../shared/anchors is not available")


def anchors() -> dict:
    return json.loads(ANCHORS.read_text())


def case_ids(section: str) -> list[str]:
    return [c["name"] for c in anchors()[section]] if ANCHORS.exists() else []


# --- reference vectors ------------------------------------------------------------------------------
@needs_anchors
@pytest.mark.parametrize("name", case_ids("inline"))
def test_paper_estimator_reproduces_the_reference_vectors(name):
    case = next(c for c in anchors()["inline"] if c["name"] == name)
    alphas = case["estimates"]["alphas"]
    fwd, rev = renyi_divergence(np.array(case["X0"]), np.array(case["X1"]), alphas, k=case["k"])
    np.testing.assert_allclose(fwd, case["estimates"]["paper"]["fwd"], rtol=1e-9, atol=0)
    np.testing.assert_allclose(rev, case["estimates"]["paper"]["rev"], rtol=1e-9, atol=0)


@needs_anchors
@pytest.mark.parametrize("name", case_ids("conversion"))
def test_zcdp_conversion_reproduces_the_reference_cases(name):
    case = next(c for c in anchors()["conversion"] if c["name"] == name)
    line = zcdp_line(case["alphas"], case["D"], case["delta"])
    assert line.xi == pytest.approx(case["xi"], rel=1e-9, abs=1e-12)
    assert line.rho == pytest.approx(case["rho"], rel=1e-9, abs=1e-12)
    assert line.epsilon == pytest.approx(case["eps_zcdp"], rel=1e-9)


def test_zcdp_line_is_above_every_point_and_no_other_line_is_better():
    rng = np.random.default_rng(3)
    alphas = np.array(ALPHAS[1:])
    for _ in range(20):
        d = np.sort(rng.gamma(2.0, 0.5, alphas.size)) * rng.uniform(0.1, 3.0)
        line = zcdp_line(alphas, d, 1e-3)
        assert np.all(line.at(alphas) >= d - 1e-12)
        assert line.epsilon == pytest.approx(zcdp_epsilon(line.xi, line.rho, 1e-3))
        # Brute force over slopes: the best intercept for each slope, never a smaller ε.
        for rho in np.linspace(0.0, d.max(), 400):
            xi = max(0.0, float((d - rho * alphas).max()))
            assert zcdp_epsilon(xi, rho, 1e-3) >= line.epsilon - 1e-12


def test_zcdp_ignores_kl_and_rejects_bad_delta():
    line = zcdp_line([1.0, 2.0], [5.0, 0.2], 0.01)  # KL is no zCDP constraint
    assert line.xi + 2 * line.rho == pytest.approx(0.2)
    with pytest.raises(FitError, match="δ"):
        zcdp_line([2.0], [0.1], 0.0)


# --- closed forms -------------------------------------------------------------------------------------
def test_kl_of_a_gaussian_shift_matches_the_closed_form():
    """KL(N(μ, I) ‖ N(0, I)) = ‖μ‖²/2 in both directions. The kNN plug-in is consistent but biased
    at finite n (upwards near 0 — the permutation floor shows by how much — and downwards in the
    tails at large shifts), hence a tolerance of 0.15 + 10 %."""
    rng = np.random.default_rng(0)
    estimates = []
    for shift in (0.5, 1.0, 2.0):
        mu = np.array([shift, 0.0])
        x0, x1 = rng.normal(size=(1000, 2)) + mu, rng.normal(size=(1000, 2))
        fwd, rev = renyi_divergence(x0, x1, [1.0])
        truth = shift**2 / 2
        assert abs(fwd[0] - truth) <= 0.15 + 0.1 * truth, (shift, fwd[0])
        assert abs(rev[0] - truth) <= 0.15 + 0.1 * truth, (shift, rev[0])
        estimates.append(fwd[0])
    assert np.all(np.diff(estimates) > 0)


def test_identical_laws_stay_within_the_permutation_floor():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(400, 4))
    audit = RenyiAudit(n_bootstrap=5, n_permutations=20, random_state=0).fit(x, ["a"] * 200 + ["b"] * 200)
    curve = audit.audits_["a"].curve.set_index("alpha")
    for alpha in (1.0, 2.0):
        row = curve.loc[alpha]
        assert row["estimate"] <= row["null_mean"] + 3 * row["null_sd"], row
    # ... and a real shift stands far above it.
    shifted = np.vstack([x[:200] + 1.5, x[200:]])
    far = RenyiAudit(n_bootstrap=5, n_permutations=20).fit(shifted, ["a"] * 200 + ["b"] * 200)
    row = far.audits_["a"].curve.set_index("alpha").loc[1.0]
    assert row["estimate"] > row["null_mean"] + 5 * row["null_sd"]
    assert far.epsilon_ > audit.epsilon_


# --- a plain loop from the anchors' README, for what the anchors do not cover -------------------------
def loop_estimate(x0: np.ndarray, x1: np.ndarray, alpha: float, k: int = 5) -> float:
    def atoms(x):
        u, c = np.unique(np.round(x, 5), axis=0, return_counts=True)
        return u, c.astype(float)

    def stats(y, u, c):  # n(y) and ρ(y) in the reference (u, c), y itself excluded
        d = np.sqrt(((u - y) ** 2).sum(axis=1))
        same = np.all(u == y, axis=1)
        own = c[same].sum()
        order = [i for i in np.argsort(d) if not same[i]][:k]
        return own + c[order].sum(), d[order[-1]]

    (u0, c0), (u1, c1) = atoms(x0), atoms(x1)
    d = x0.shape[1]
    n0p = sum(stats(y, u0, c0)[0] for y in u0)
    n1p = sum(stats(y, u1, c1)[0] for y in u1)
    terms = []
    for y, cy in zip(u0, c0, strict=True):
        n0, r0 = stats(y, u0, c0)
        n1, r1 = stats(y, u1, c1)
        lr = (np.log(n0) - np.log(n0p) - d * np.log(r0)) - (np.log(n1) - np.log(n1p) - d * np.log(r1))
        terms.append((cy / c0.sum(), lr))
    w, lr = np.array(terms).T
    if alpha == 1.0:
        return float(w @ lr)
    z = np.log(w) + (alpha - 1) * lr
    return float((z.max() + np.log(np.exp(z - z.max()).sum())) / (alpha - 1))


def unit_rows(rng, n, d=384):
    x = rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_d384_near_duplicates_are_finite_and_match_the_plain_loop():
    rng = np.random.default_rng(2)
    base = unit_rows(rng, 40)
    x0 = np.vstack([base[:20], base[:5] + 3e-5 * np.eye(384)[:5]])  # 5 near-duplicates (10⁻⁵ apart)
    x1 = np.vstack([base[20:], base[5:10] + 2e-5 * np.eye(384)[7:12]])
    fwd, rev = renyi_divergence(x0, x1, ALPHAS)
    assert np.isfinite(fwd).all() and np.isfinite(rev).all()
    assert np.all(fwd != 0) and np.all(rev != 0)  # d·log ρ is ~10³ here: nothing overflowed to 0
    for i, alpha in enumerate(ALPHAS):
        assert fwd[i] == pytest.approx(loop_estimate(x0, x1, alpha), rel=1e-7)
        assert rev[i] == pytest.approx(loop_estimate(x1, x0, alpha), rel=1e-7)


def test_fully_masked_chunks_give_finite_nonzero_divergences():
    rng = np.random.default_rng(4)
    masked = unit_rows(rng, 1)[0]  # "[MASK] [MASK] ." embeds to one vector
    others = unit_rows(rng, 60)
    x = np.vstack([np.tile(masked, (12, 1)),  # document a: every chunk fully masked
                   others[:30], np.tile(masked, (3, 1)),  # document b: some masked chunks
                   others[30:]])  # document c
    groups = ["a"] * 12 + ["b"] * 33 + ["c"] * 30
    audit = RenyiAudit(n_bootstrap=3, n_permutations=3).fit(x, groups)
    curves = audit.curves_
    assert np.isfinite(curves[["forward", "reverse", "boot_mean", "null_mean"]].to_numpy()).all()
    assert np.isfinite(audit.documents_["epsilon"]).all()
    a = audit.audits_["a"].curve
    assert (a["forward"] > 0).all()  # the masked atom is rarer among the others: D > 0, not 0
    # A single repeated atom in both samples is the same law: exactly 0.
    fwd, rev = renyi_divergence(np.tile(masked, (5, 1)), np.tile(masked, (7, 1)), ALPHAS)
    np.testing.assert_array_equal(fwd, 0.0)
    np.testing.assert_array_equal(rev, 0.0)


# --- the per-document audit -----------------------------------------------------------------------------
def test_audit_reports_every_document_and_the_corpus_maximum():
    rng = np.random.default_rng(5)
    x = np.vstack([unit_rows(rng, 25, 16) + 0.3 * i for i in range(4)])
    groups = np.repeat(["w", "x", "y", "z"], 25)
    audit = RenyiAudit(n_bootstrap=4, n_permutations=3, random_state=7).fit(x, groups)
    docs = audit.documents_
    assert list(docs["document"]) == ["w", "x", "y", "z"]
    assert audit.delta_ == pytest.approx(1 / 100)
    assert audit.epsilon_ == pytest.approx(docs["epsilon"].max())
    assert audit.worst_ == docs.loc[docs["epsilon"].idxmax(), "document"]
    assert len(audit.curves_) == 4 * len(ALPHAS)
    assert (docs["epsilon_boot_sd"] > 0).all()
    again = RenyiAudit(n_bootstrap=4, n_permutations=3, random_state=7).fit(x, groups)
    np.testing.assert_array_equal(again.curves_["boot_mean"], audit.curves_["boot_mean"])
    payload = json.loads(json.dumps(audit.to_dict()))
    assert payload["epsilon"] == audit.epsilon_ and len(payload["documents"]) == 4
    assert len(payload["curves"]) == 4 * len(ALPHAS)
    table = audit_comparison(audit, again)
    np.testing.assert_array_equal(table["epsilon_before"], table["epsilon_after"])


def test_audit_needs_two_documents():
    with pytest.raises(FitError, match="at least 2 documents"):
        RenyiAudit().fit(np.eye(6), ["a"] * 6)


def test_released_embeddings_embed_only_the_changed_chunks():
    calls = []

    def embed(texts):
        calls.append(list(texts))
        return np.full((len(texts), 3), 9.0, dtype=np.float32)

    before = np.zeros((5, 3), dtype=np.float32)
    after = released_embeddings(before, {1: "new b", 3: "new d"}, embed)
    assert calls == [["new b", "new d"]]
    np.testing.assert_array_equal(after[[1, 3]], 9.0)
    np.testing.assert_array_equal(after[[0, 2, 4]], 0.0)
    assert before.sum() == 0  # the input is not modified


# --- large corpora: the audit on a sample (issue 21) ---------------------------------------------------
def shifted_documents(rng, n_docs: int, rows: int, d: int = 4, shift: float = 0.0) -> tuple:
    """``n_docs`` documents of ``rows`` Gaussian rows; document i is moved by ``shift`` · i / n."""
    x = np.vstack([rng.normal(size=(rows, d)) + shift * i / n_docs for i in range(n_docs)])
    return x, np.repeat([f"doc{i:03d}" for i in range(n_docs)], rows)


def test_a_corpus_beyond_the_distance_matrix_bound_is_audited_on_a_sample(monkeypatch):
    # The estimator holds every pairwise distance (renyi.MAX_ATOMS). Before the sample a corpus
    # past that bound failed its whole release at the audit; here the bound is 300 rows.
    monkeypatch.setattr("neswap_core.measure.renyi.MAX_ATOMS", 300)
    x, groups = shifted_documents(np.random.default_rng(8), 12, 40)
    with pytest.raises(FitError, match="audit a sample"):
        RenyiAudit(n_bootstrap=2, n_permutations=2, max_documents=None, max_rows=None).fit(x, groups)
    audit = RenyiAudit(n_bootstrap=2, n_permutations=2, max_documents=4, max_rows=250,
                       random_state=3).fit(x, groups)  # fmt: skip
    sample = audit.sample_
    assert sample["audited_documents"] == 4 and sample["documents"] == 12
    assert sample["rows"] <= 250 and sample["total_rows"] == 480
    assert len(audit.documents_) == 4 and set(audit.documents_["chunks"]) == {40}
    assert audit.delta_ == pytest.approx(1 / 480)  # δ = 1/n of the corpus, not of the sample
    assert sample["share_above_bound"] == pytest.approx(1 - 0.05 ** (1 / 4))
    assert "4 of 12 documents" in sample["statement"]
    assert json.loads(json.dumps(audit.to_dict()))["sample"]["audited_documents"] == 4
    # the same documents before and after a release: the sample depends on the seed only
    again = RenyiAudit(n_bootstrap=2, n_permutations=2, max_documents=4, max_rows=250,
                       random_state=3).fit(x + 0.01, groups)  # fmt: skip
    assert list(again.documents_["document"]) == list(audit.documents_["document"])


def test_a_corpus_within_the_bounds_is_audited_whole_as_before():
    x, groups = shifted_documents(np.random.default_rng(9), 6, 20)
    whole = RenyiAudit(n_bootstrap=3, n_permutations=2, max_documents=None, max_rows=None).fit(x, groups)
    bounded = RenyiAudit(n_bootstrap=3, n_permutations=2, max_documents=6, max_rows=120).fit(x, groups)
    assert bounded.sample_ is None and "sample" not in bounded.to_dict()
    np.testing.assert_array_equal(bounded.curves_["boot_mean"], whole.curves_["boot_mean"])


def test_a_sampled_reference_gives_the_whole_reference_s_estimate_within_its_noise():
    # A second method for the same figure: each audited document against every other passage
    # (whole) and against a random sample of whole documents (the sampled audit).
    x, groups = shifted_documents(np.random.default_rng(10), 24, 30, shift=3.0)
    whole = RenyiAudit(n_bootstrap=10, n_permutations=2, max_documents=None, max_rows=None).fit(x, groups)
    sampled = RenyiAudit(n_bootstrap=10, n_permutations=2, max_documents=8, max_rows=480).fit(x, groups)
    mine = sampled.documents_.set_index("document")
    full = whole.documents_.set_index("document").loc[mine.index]
    noise = 3 * np.hypot(mine["epsilon_boot_sd"], full["epsilon_boot_sd"]) + 0.1 * full["epsilon"]
    assert (np.abs(mine["epsilon"] - full["epsilon"]) <= noise).all(), (mine["epsilon"], full["epsilon"])
    # the ends of the shift stand out more than the middle in both
    assert np.corrcoef(mine["epsilon"], full["epsilon"])[0, 1] > 0.8


def test_the_sample_s_confidence_statement_holds_for_its_draws():
    # With S of D documents drawn uniformly, a share q > 1 − 0.05^(1/S) of documents above the
    # sample's largest ε is missed entirely by at most 5 % of samples: checked over 2,000 seeds.
    from neswap_core.measure.audit import audit_sample

    n_docs, audited = 200, 30
    bound = 1 - 0.05 ** (1 / audited)
    bad = {f"doc{i:03d}" for i in range(int(np.ceil(bound * n_docs)))}
    groups = np.repeat([f"doc{i:03d}" for i in range(n_docs)], 3)
    missed = 0
    for seed in range(2_000):
        names, rows = audit_sample(groups, audited, None, seed)
        assert len(names) == audited and len(rows) == len(groups)
        missed += not (bad & set(names))
    assert missed / 2_000 <= 0.05


def test_the_atoms_distances_are_made_in_place_by_rows_the_whole_matrix_s_numbers():
    """Issue 21: the audit's atoms held five M × M arrays at once (the Gram products, their
    scale, the squared distances, the distances and a ranked copy, plus an M × M index matrix
    of the neighbour search): 2.5 GB at the 8,000 atoms of a full sample. Made in place a block
    of rows at a time, the peak is about the one matrix kept, and every distance, neighbour list
    and reference search is the whole-matrix algebra's, bit for bit (computed here whole)."""
    import tracemalloc

    from neswap_core.measure import renyi

    rng = np.random.default_rng(5)
    m, d = 1500, 64
    x = rng.normal(size=(m, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    x[600:800] = x[:200] + 1e-4 * rng.normal(size=(200, d))  # near-duplicates: recomputed pairs
    x[800:850] = x[:50]  # identical rows: one atom
    tracemalloc.start()
    try:
        atoms = renyi.pool_atoms(x)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    matrix = atoms.distances.nbytes
    assert peak < 2.2 * matrix, (peak, matrix)  # five matrices (and the index one) before
    # the whole-matrix algebra
    p = atoms.points
    sq = np.einsum("ij,ij->i", p, p)
    scale = sq[:, None] + sq[None, :]
    d2 = np.maximum(scale - 2.0 * p @ p.T, 0.0)
    ci, cj = np.nonzero(d2 < 1e-3 * scale)
    diff = p[ci] - p[cj]
    d2[ci, cj] = np.einsum("ij,ij->i", diff, diff)
    whole = np.sqrt(d2)
    assert len(ci) > len(p)  # near-duplicate pairs beyond the diagonal were recomputed
    assert np.array_equal(atoms.distances, whole)
    ranked = whole.copy()
    np.fill_diagonal(ranked, -1.0)
    width = renyi.NEIGHBOURS
    part = np.argpartition(ranked, width, axis=1)[:, : width + 1]
    part = np.take_along_axis(part, np.argsort(np.take_along_axis(ranked, part, 1), axis=1), 1)
    assert np.array_equal(atoms.order, part[:, 1:])
    counts = np.zeros(atoms.n_atoms)
    counts[rng.choice(atoms.n_atoms, 120, replace=False)] = 1
    queries = rng.choice(atoms.n_atoms, 40, replace=False)
    support = np.flatnonzero(counts > 0)
    n, kth, k_eff = renyi._from_matrix(atoms, queries, counts, 5)
    sub = whole[support][:, queries].T
    own = support[np.minimum(np.searchsorted(support, queries), len(support) - 1)] == queries
    sub[np.flatnonzero(own), np.searchsorted(support, queries)[own]] = np.inf
    nearest = np.sort(sub, axis=1)[:, 4]
    assert np.array_equal(whole[queries, kth], nearest) and (k_eff == 5).all()
