#!/usr/bin/env python3
"""Time one EM iteration (M-step + E-step) of our SphericalMixture, one BLAS thread (issue 3).

From the parameters of a short fit, runs ``--steps`` iterations of ``mixture_em.run_em`` with
tolerance 0 and reports ms per iteration, on the dev-corpus embeddings and the synthetic sets:

    python benchmarks/mixture_iteration.py --config real n2000_d384_k10 --family pkb
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy is imported

import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DATA = REPO / "benchmarks" / ".data"

from neswap_core.models.mixture import SphericalMixture  # noqa: E402
from neswap_core.models.mixture_em import EMData, EMState, e_step, run_em  # noqa: E402
from neswap_core.models.mixture_init import prepare_embeddings  # noqa: E402


def load(name: str) -> tuple[np.ndarray, int]:
    """The embeddings of a configuration and its K (real: K from ``--k``)."""
    if name.startswith("real"):
        return np.load(DATA / "dev_embeddings.npy").astype(np.float64), 0
    k = int(name.rsplit("_k", 1)[1])
    return np.load(DATA / f"vmf_{name}_X.npy").astype(np.float64), k


def per_iteration(X: np.ndarray, family: str, k: int, steps: int, repeats: int) -> float:
    """Fastest ms per iteration over ``repeats`` runs of ``steps`` EM iterations."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SphericalMixture(family, k, max_iter=5, n_init=1, random_state=0).fit(X)
    data = EMData(prepare_embeddings(X), "mixed")
    best = np.inf
    for _ in range(repeats):
        state = EMState(model.weights_[None].copy(), model.means_[None].copy(),
                        model.concentrations_[None].copy())
        first = e_step(data, state, family)
        state.trace.append(first[0].sum(axis=1))
        t0 = time.perf_counter()
        run_em(data, state, family, max_steps=steps, tol=0.0, min_weight=0.0, first=first)
        best = min(best, (time.perf_counter() - t0) / steps)
    return 1e3 * best


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", nargs="+", default=["real", "n2000_d384_k10", "n2000_d384_k30"])
    p.add_argument("--family", nargs="+", default=["pkb"], choices=["pkb", "scauchy"])
    p.add_argument("--k", nargs="+", type=int, default=[10, 30], help="K for the real data")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    for name in args.config:
        X, k = load(name)
        for kk in ([k] if k else args.k):
            for family in args.family:
                ms = per_iteration(X, family, kk, args.steps, args.repeats)
                print(f"{name:18s} n={X.shape[0]:6d} d={X.shape[1]:5d} K={kk:3d} {family:8s}"
                      f" {ms:8.2f} ms/it", flush=True)


if __name__ == "__main__":
    main()
