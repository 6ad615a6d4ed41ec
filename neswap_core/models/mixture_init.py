"""Input checks and starting values for the spherical mixture EM (SPEC §4).

Input policy (``prepare_embeddings``): NaN/inf, zero rows, non-numeric or non-2-D input and
d < 2 raise ``FitError``; float32 (or integer) input is accepted and computed in float64; rows
whose norm is off 1 by more than ``UNIT_TOL`` are normalised with a ``MixtureWarning`` (smaller
deviations, e.g. float32 rounding, silently); duplicate rows are allowed (real corpora repeat
boilerplate chunks), but ``fit`` refuses fewer distinct rows than components.

Seeding ("denoised-kmeans++"). In high dimension the EM converges within a few iterations to
the partition its start implies, so on clustered data the start decides the final likelihood.
Plain k-means++ on the cosine distance covers clusters poorly there: a point of an already
covered cluster lies at distance ≈ 1 − A² (A = mean cosine to its centre) from that cluster's
seed, hardly closer than a point of an uncovered one. Two changes fix this (on the synthetic
grid, clusters left uncovered per start fell from ≈ 5 to ≈ 0.1; ``--compare-init`` of
``benchmarks/mixture_vs_spheroids.py`` compares the strategies):

* denoised seeds — a candidate point is replaced by the normalised mean of its
  ``SEED_DENOISE`` nearest neighbours, which lies close to its cluster's centre (distance
  ≈ 1 − A instead of 1 − A²), so covered clusters stop looking far away;
* greedy sampling with a sharper potential — ``SEED_TRIALS`` candidates drawn with
  probability ∝ D^8, keeping the one that lowers Σ min D^8 the most.

Seeding runs on a float32 random subsample (1,000–2,000 rows); above 1,024 dimensions the
candidates' neighbours are short-listed with a 256-dimensional Gaussian sketch and confirmed
with exact cosines. All starts of one fit are seeded together, so every product serves all.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import FitError

UNIT_TOL = 1e-5
INITS: tuple[str, ...] = ("auto", "denoised-kmeans++", "kmeans++", "random")
SEED_SQUARINGS = 2  # potential D^(2^(1+2)) = D^8
SEED_TRIALS = 4
SEED_DENOISE = 10
SEED_SAMPLE_SIZE = (1000, 2000)  # rows, and at most SEED_SAMPLE_CELLS rows × dimensions
SEED_SAMPLE_CELLS = 1_536_000
SEED_SKETCH_DIM = 256
SEED_SHORTLIST = 5


class MixtureWarning(UserWarning):
    """Something about the input or the fit that the analyst should know (not an error)."""


def prepare_embeddings(X: object) -> np.ndarray:
    """(n, d) float64 C-contiguous array of unit rows, or ``FitError`` saying what is wrong."""
    try:
        arr = np.asarray(X)
    except (TypeError, ValueError) as exc:
        raise FitError(f"embeddings must be a numeric 2-D array (n_points, dim): {exc}") from exc
    if arr.dtype.kind not in "fiub":
        raise FitError(f"embeddings must be real numbers, got dtype {arr.dtype}.")
    if arr.ndim != 2:
        raise FitError(f"embeddings must be a 2-D array (n_points, dim), got shape {arr.shape}; "
                       "reshape a single point with x.reshape(1, -1).")
    n, d = arr.shape
    if n == 0:
        raise FitError("embeddings are empty: there is no point to fit or score.")
    if d < 2:
        raise FitError(f"embeddings must have dimension d >= 2 (points on S^(d-1)), got d = {d}.")
    arr = np.array(arr, dtype=np.float64, order="C")  # a copy: the caller's array is untouched
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.sqrt(np.einsum("ij,ij->i", arr, arr))
    if not np.all(np.isfinite(norms)):
        bad = ~np.isfinite(arr).all(axis=1)
        if bad.any():
            rows = np.flatnonzero(bad)
            raise FitError(f"{rows.size} embedding rows contain NaN or inf (first: row "
                           f"{rows[0]}); recompute or remove them.")
        norms = np.linalg.norm(arr, axis=1)  # huge finite values: the careful norm
    if np.any(norms == 0):
        rows = np.flatnonzero(norms == 0)
        raise FitError(f"{rows.size} embedding rows are zero vectors (first: row {rows[0]}): "
                       "they have no direction on the sphere; remove them (empty chunks?).")
    off = np.abs(norms - 1.0)
    if off.max() > UNIT_TOL:
        warnings.warn(f"{int((off > UNIT_TOL).sum())} embedding rows were not unit vectors "
                      f"(norms {norms.min():.4g}..{norms.max():.4g}); they were normalised.",
                      MixtureWarning, stacklevel=3)
    arr /= norms[:, None]
    return arr


def count_distinct_rows(X: np.ndarray) -> int:
    """Number of distinct rows of X (rows are bucketed by a fixed projection, then compared)."""
    key = X @ np.cos(np.arange(1, X.shape[1] + 1) * 0.6180339887498949)
    order = np.argsort(key, kind="stable")
    key = key[order]
    close = np.flatnonzero(np.abs(np.diff(key)) <= 1e-12 * (1.0 + np.abs(key[1:])))
    same = np.all(X[order[close]] == X[order[close + 1]], axis=1)
    return int(X.shape[0] - same.sum())


@dataclass
class Starts:
    """Starting points of B runs: centres (B, K, d); for random partitions also the part
    sizes and mean resultant lengths (B, K), NaN where the points are to be assigned to the
    nearest centre instead."""

    means: np.ndarray
    sizes: np.ndarray
    resultants: np.ndarray


def seed_means(X: np.ndarray, n_components: int, n_seeds: int, rng: np.random.Generator,
               init: str = "denoised-kmeans++") -> Starts:
    """Starting points for ``n_seeds`` runs with ``n_components`` components each.

    X: (n, d) unit rows (float32 is enough). ``init``: "random" gives random partitions (the
    anchor's start: centroids near the overall mean, small ρ, and the soft E-step separates
    them gradually), "kmeans++" plain k-means++, "denoised-kmeans++" the greedy denoised
    variant with potential D^8 (module docstring). ("auto" is resolved by the estimator.)
    """
    shape = (n_seeds, n_components)
    nan = np.full(shape, np.nan)
    if init == "random":
        return Starts(*_random_partitions(X, n_components, n_seeds, rng))
    return Starts(_kmeanspp_means(X, n_components, n_seeds, rng, init, SEED_SQUARINGS), nan,
                  nan.copy())


def _random_partitions(X: np.ndarray, k: int, n_seeds: int, rng: np.random.Generator):
    """Centroid directions, sizes and mean resultant lengths of random partitions into k parts."""
    n = X.shape[0]
    labels = rng.integers(k, size=(n_seeds, n))
    onehot = np.eye(k, dtype=X.dtype)[labels]  # (B, n, K)
    sums = (onehot.transpose(0, 2, 1) @ X).astype(np.float64)  # (B, K, d) sums of the parts
    sizes = onehot.sum(axis=1, dtype=np.float64)
    norms = np.linalg.norm(sums, axis=-1)
    empty = norms == 0  # an empty part: a random data point, the size of one point
    sums[empty] = X[rng.integers(n, size=int(empty.sum()))]
    sizes[empty] = 1.0
    return _normalise(sums), sizes, np.where(empty, 0.0, norms / sizes)


def _kmeanspp_means(X: np.ndarray, k: int, n_seeds: int, rng: np.random.Generator, kind: str,
                    squarings: int) -> np.ndarray:
    """Seeds by plain ("kmeans++") or greedy denoised k-means++ on a float32 subsample."""
    n, d = X.shape
    size = int(np.clip(SEED_SAMPLE_CELLS // d, *SEED_SAMPLE_SIZE))
    sub = X if n <= size else X[np.sort(rng.choice(n, size, replace=False))]
    sub = np.ascontiguousarray(sub, dtype=np.float32)
    if kind == "kmeans++":
        chosen = _kmeanspp(sub, sub, k, n_seeds, rng, trials=1,
                           squarings=np.zeros(n_seeds, dtype=int), denoise=1)
    else:
        sketch = sub
        if d > 4 * SEED_SKETCH_DIM:  # sketched cosines (± 0.06) pick candidates at a fraction of the cost
            gauss = rng.standard_normal((d, SEED_SKETCH_DIM)).astype(np.float32)
            sketch = _normalise(sub @ gauss)
        chosen = _kmeanspp(sketch, sub, k, n_seeds, rng, trials=SEED_TRIALS,
                           squarings=np.full(n_seeds, squarings), denoise=SEED_DENOISE)
    return _normalise(sub[chosen].astype(np.float64).mean(axis=2))  # (B, K, m, d) -> (B, K, d)


def _normalise(v: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(norm > 0, norm, 1.0)


def _neighbourhoods(sketch: np.ndarray, full: np.ndarray, idx: np.ndarray, denoise: int):
    """Neighbourhoods of the candidate rows ``idx`` (L,).

    Returns their ``denoise`` nearest rows (L, m), the mean directions of those (L, d) and the
    candidates' sketched cosines with every row (L, s). The neighbours are the best by exact
    cosine among the ``SEED_SHORTLIST`` × m best by sketched cosine.
    """
    sims = np.ascontiguousarray((sketch @ sketch[idx].T).T)  # (L, s); this order is faster
    if denoise <= 1:
        return idx[:, None], full[idx], sims
    s = sketch.shape[0]
    m = min(denoise, s)
    if full is not sketch:
        short = min(SEED_SHORTLIST * m, s)
        top = np.argpartition(sims, s - short, axis=1)[:, -short:]  # (L, short)
        exact = (full[top] @ full[idx][:, :, None])[:, :, 0]
        keep = np.argpartition(exact, short - m, axis=1)[:, -m:]
        top = np.take_along_axis(top, keep, axis=1)
    else:
        top = np.argpartition(sims, s - m, axis=1)[:, -m:]
    return top, _normalise(full[top].mean(axis=1)), sims


def _power(dist: np.ndarray, squarings: np.ndarray) -> np.ndarray:
    """dist ** (2 ** squarings[b]) for the rows b of dist (B, ...), in float64 (pow is slow)."""
    out = dist.astype(np.float64)
    out *= out
    for level in range(1, int(squarings.max()) + 1):
        rows = squarings >= level
        out[rows] *= out[rows]
    return out


def _draw(weight: np.ndarray, trials: int, rng: np.random.Generator) -> np.ndarray:
    """``trials`` row indices per start, drawn with probability ∝ weight (B, s)."""
    n_seeds, s = weight.shape
    cum = np.cumsum(weight, axis=1)
    total = cum[:, -1]
    draws = rng.random((n_seeds, trials)) * total[:, None]
    idx = np.empty((n_seeds, trials), dtype=np.int64)
    for b in range(n_seeds):
        if total[b] > 0:
            idx[b] = np.searchsorted(cum[b], draws[b], side="right")
        else:  # every point coincides with a seed: any point will do
            idx[b] = rng.integers(s, size=trials)
    return np.minimum(idx, s - 1)


def _kmeanspp(sub: np.ndarray, full: np.ndarray, k: int, n_seeds: int,
              rng: np.random.Generator, *, trials: int, squarings: np.ndarray,
              denoise: int) -> np.ndarray:
    """Greedy k-means++ on the cosine distance D = 1 − xᵀc, for ``n_seeds`` starts at once.

    Returns the row indices whose mean is each seed, shape (n_seeds, k, max(denoise, 1)).
    """
    s = sub.shape[0]
    m = max(min(denoise, s), 1)
    chosen = np.empty((n_seeds, k, m), dtype=np.int64)
    chosen[:, 0], centre, _ = _neighbourhoods(sub, full, rng.integers(s, size=n_seeds), denoise)
    dist = np.maximum(1.0 - (full @ centre.T).T, 0.0)  # (B, s) exact distance to the nearest seed
    rows = np.arange(n_seeds)
    for j in range(1, k):
        idx = _draw(_power(dist, squarings), trials, rng)
        near, cand, sims = _neighbourhoods(sub, full, idx.ravel(), denoise)  # (B * L, ...)
        # choose among the trials by the potential with the candidate points themselves ...
        new = np.minimum(dist[:, None, :], np.maximum(1.0 - sims, 0.0).reshape(n_seeds, trials, s))
        best = np.argmin(_power(new, squarings).sum(axis=2), axis=1)  # (B,)
        pick = rows * trials + best
        chosen[:, j] = near[pick]
        # ... and measure exact distances to the chosen (denoised) seed
        dist = np.minimum(dist, np.maximum(1.0 - (full @ cand[pick].T).T, 0.0))
    return chosen
