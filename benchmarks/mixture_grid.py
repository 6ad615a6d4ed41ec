#!/usr/bin/env python3
"""Time to fit the paper's 24-setting grid f × K × ε on the dev-corpus embeddings (issue 3).

The paper's grid is family {PKB, spherical Cauchy} × K {10, 30} × ε {1e-3, 1e-10} × N
{1e10, 1e20, 1e30}; N (population size) only enters the risk measure, so the grid needs 8
mixture fits. This prints each fit (seconds, iterations, components, log-likelihood) and the
total, with our default settings and one BLAS thread; ``--anchor`` adds the spheroids anchor's
time for the same 8 fits (minutes: its spherical Cauchy fits are slow).

    python benchmarks/mixture_grid.py [--real PATH.npy] [--threads 1] [--anchor]

Embeddings: ``--real``, else ``benchmarks/.data/dev_embeddings.npy``, else the pipeline
(``neswap_core.prepare.pipeline.prepare_path`` on ``../shared/corpus/dev``, then cached there).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--real", type=Path, help="(n, 384) .npy of chunk embeddings")
    p.add_argument("--threads", type=int, default=1, help="BLAS threads (0: leave as is)")
    p.add_argument("--seed", type=int, default=0, help="random_state of every fit")
    p.add_argument("--anchor", action="store_true", help="also time the spheroids anchor")
    p.add_argument("--timeout", type=int, default=600, help="seconds allowed per anchor run")
    return p.parse_args(argv)


ARGS = parse() if __name__ == "__main__" else None
if ARGS is not None and ARGS.threads > 0:  # before numpy is imported anywhere
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(ARGS.threads)

import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mixture_vs_spheroids as bench  # noqa: E402  (also puts the repo on sys.path)

from neswap_core.config import PAPER_FAMILIES, PAPER_KS, PAPER_MIN_WEIGHTS  # noqa: E402
from neswap_core.models.mixture import SphericalMixture  # noqa: E402


def main(args: argparse.Namespace) -> int:
    X = bench.real_embeddings(args.real)
    if X is None:
        return 1
    exe = bench.spheroids_python() if args.anchor else None
    if args.anchor and exe is None:
        print(bench.INSTALL)
    print(f"dev-corpus embeddings: n = {X.shape[0]}, d = {X.shape[1]}; threads = {args.threads}")
    print(f"{'family':8} {'K':>3} {'eps':>7} {'seconds':>8} {'iter':>5} {'K kept':>6} "
          f"{'loglik':>12}" + (f" {'anchor s':>9}" if exe else ""))
    total, anchor_total = 0.0, 0.0
    with tempfile.TemporaryDirectory(prefix="mixgrid-") as tmp:
        data = Path(tmp) / "X.npy"
        np.save(data, np.ascontiguousarray(X, dtype=np.float64))
        for family in PAPER_FAMILIES:
            for k in PAPER_KS:
                for eps in PAPER_MIN_WEIGHTS:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        t0 = time.perf_counter()
                        m = SphericalMixture(family, k, min_weight=eps,
                                             random_state=args.seed).fit(X)
                        seconds = time.perf_counter() - t0
                    total += seconds
                    line = (f"{family:8} {k:3d} {eps:7.0e} {seconds:8.2f} {m.n_iter_:5d} "
                            f"{m.n_components_:6d} {m.loglik_:12,.1f}")
                    if exe:
                        rec = bench.theirs(exe, data, None, family, k, eps, _anchor_args(args),
                                           Path(tmp), f"real_k{k}")
                        anchor_total += rec.get("seconds", np.nan)
                        line += f" {rec.get('seconds', np.nan):9.2f}"
                    print(line, flush=True)
    print(f"total for the 8 fits (= the paper's 24 settings, N does not enter the fit): "
          f"{total:.2f} s" + (f"; anchor {anchor_total:.1f} s" if exe else ""))
    return 0


def _anchor_args(args: argparse.Namespace) -> argparse.Namespace:
    return argparse.Namespace(threads=args.threads, timeout=args.timeout, refresh_anchor=False)


if __name__ == "__main__":
    sys.exit(main(ARGS))
