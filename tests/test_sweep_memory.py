"""The protecting path's memory grows at most linearly in chunks (issue 21).

The bundled sample's prepared chunks (real text, real entities) are repeated under fresh
document ids and companies to n and 2n chunks; the mixture is fitted on their real vectors (plus
small noise), and the whole candidate path runs on each: the paper's sweep, the plan grid with
term swaps and targeted redaction, the in-corpus attacker and every candidate's measured row.
Its peak Python allocation (tracemalloc) at 2n must stay under 2.6 times the one at n: a
structure of n² cells over chunks (a similarity matrix, a pair table) would give about 4.
The changed passages are embedded by a stand-in that hashes each text to a unit vector (the
model is not what is measured here; its memory is per batch, not per corpus).
"""

from __future__ import annotations

import hashlib
import tracemalloc
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def hashed_vectors(texts) -> np.ndarray:
    """A deterministic unit vector per text (a stand-in for the embedding model)."""
    rows = []
    for text in texts:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        v = np.random.default_rng(seed).standard_normal(384)
        rows.append(v / np.linalg.norm(v))
    return np.asarray(rows, dtype=np.float32).reshape(len(rows), 384)


def tiled(chunks, x: np.ndarray, n: int, rng: np.random.Generator):
    """n chunks: the real chunks repeated under fresh documents and companies, vectors = real +
    noise (re-normalised), as benchmarks/scale.py builds its large sizes."""
    from neswap_core.corpus import chunk_id

    reps = -(-n // len(chunks))
    out = [replace(c, chunk_id=chunk_id(f"{c.doc_id}r{r}", c.index), doc_id=f"{c.doc_id}r{r}",
                   protected=f"{c.protected} r{r}") for r in range(reps) for c in chunks][:n]
    noisy = np.tile(x, (reps, 1))[:n] + rng.normal(scale=0.01, size=(n, x.shape[1]))
    return out, (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)


def candidate_path_peak(chunks, x, config) -> tuple[float, int]:
    """Peak MB allocated while the candidates of ``config`` are built and measured."""
    from neswap_core.choose.candidates import build_candidates
    from neswap_core.choose.scorers import build_scorers
    from neswap_core.generate.context import fit_mixture
    from neswap_core.generate.releases import ReleaseContext, sweep_for_config

    ctx = ReleaseContext(list(chunks), x, fit_mixture(x, config), hashed_vectors)
    tracemalloc.start()
    try:
        sweep = sweep_for_config(ctx, config)
        scorers = build_scorers(ctx.chunks, None, in_corpus=True, random_state=0)
        table = build_candidates(sweep, config, scorers).table
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak / 1e6, len(table)


@pytest.mark.slow
def test_candidate_path_memory_grows_at_most_linearly(monkeypatch):
    from neswap_core.config import RunConfig
    from neswap_core.prepare.pipeline import prepare_path

    monkeypatch.chdir(ROOT)
    # every step of the path once: two plan rounds with term swaps, targeted redaction and the
    # document defence at one of the default grid's levels (the grid's other points repeat them)
    config = RunConfig.of(corpus="data/sample", n_components=5, n_init=1, max_swaps=10,
                          plan_rounds=2, plan_terms=[True], plan_redaction_levels=[0.05],
                          document_levels=[0.3])
    prepared = prepare_path("data/sample", config)
    base = len(prepared.chunks)
    rng = np.random.default_rng(0)
    peaks = {}
    for n in (base, 2 * base):
        chunks, x = tiled(prepared.chunks, prepared.embeddings, n, rng)
        peaks[n] = candidate_path_peak(chunks, x, config)
    (small, rows_small), (big, rows_big) = peaks[base], peaks[2 * base]
    assert rows_small > 10 and rows_big > 10
    assert big <= 2.6 * small, (small, big)
