"""How the attackers' fits grow with the corpus (issue 21): the reason the 100k sweep is out of reach.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/fit_scaling.py [--sizes 2500 5000 10000]
        [--lineup L] [--log FILE]

On synthetic corpora of real dev-corpus sentences (``text.synthetic``; companies grow with the
corpus, about 16 passages of 4 sentences per company as in the protecting-scale benchmark), fits
each attacker of a default release once, serially in this process on one BLAS thread: the
panel's word, char_wb and retrieval families and the in-corpus attacker's five folds. Prints the
seconds of each fit at each size and the slope of log seconds on log passages between sizes
(1 = linear). A multinomial linear model over k companies costs about passages × k per
iteration, and k grows with the corpus: the slope of the linear families is near 2 or above,
the retrieval family's (one profile per company) near 1. ``--lineup L``: the same fits with
line-ups of at most L companies (``measure/lineups.py``, the release's default 50): one model per
line-up, each on its line-up's passages, so the linear families' slopes fall to about 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[2500, 5000, 10000])
    ap.add_argument("--lineup", type=int, default=0, help="line-ups of at most this many companies (0: none)")
    ap.add_argument("--only", nargs="+", help="only these fits (word, char, retrieval, in-corpus)")
    ap.add_argument("--log", help="also append the figures as one JSON line to this file")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from fit_processes import passages

    from neswap_core.measure.attack import CrossFittedAttacker
    from neswap_core.measure.panel import AttackerPanel
    from neswap_core.models import fit_processes

    fit_processes.MIN_TEXTS = 10**12  # every fit in this process, one after the other
    lineup = args.lineup or None
    fits = {
        name: (lambda t, y, d, name=name: AttackerPanel([name], lineup=lineup).fit(t, y, d))
        for name in ("word", "char", "retrieval")
    }
    fits["in-corpus (5 folds)"] = lambda t, y, d: CrossFittedAttacker(random_state=0, lineup=lineup).fit(t, y, d)
    if args.only:
        fits = {k: v for k, v in fits.items() if k.split(" ")[0] in args.only}
    rows = []
    for n in args.sizes:
        texts, labels, ids = passages(n)
        row = {"passages": len(texts), "companies": len(set(labels)), "load": os.getloadavg()[0],
               "lineup": args.lineup, "seconds": {}}
        for name, fit in fits.items():
            start = time.perf_counter()
            fit(texts, labels, ids)
            row["seconds"][name] = time.perf_counter() - start
        rows.append(row)
        print(f"{row['passages']:>7,} passages, {row['companies']:>4} companies, line-ups "
              f"{args.lineup or 'none'} (load "
              f"{row['load']:.2f}): " + ", ".join(f"{k} {v:.1f} s" for k, v in row["seconds"].items()),
              flush=True)
    for a, b in zip(rows[:-1], rows[1:], strict=True):
        ratio = np.log(b["passages"] / a["passages"])
        slopes = {k: np.log(b["seconds"][k] / a["seconds"][k]) / ratio for k in fits}
        print(f"slope {a['passages']:,} -> {b['passages']:,}: "
              + ", ".join(f"{k} {v:.2f}" for k, v in slopes.items()))
    if len(rows) > 1:
        last = rows[-1]
        span = np.log(rows[-1]["passages"] / rows[0]["passages"])
        for k in fits:
            slope = np.log(rows[-1]["seconds"][k] / rows[0]["seconds"][k]) / span
            at_100k = last["seconds"][k] * (100_000 / last["passages"]) ** slope
            print(f"{k}: slope {slope:.2f} over the sizes; at that slope 100,000 passages would "
                  f"take about {at_100k / 3600:.1f} h for this fit alone (an extrapolation, not run)")
    if args.log:
        with open(args.log, "a") as handle:
            handle.write(json.dumps({"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                     "rows": rows}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
