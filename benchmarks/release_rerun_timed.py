"""``release_rerun.py`` with wall-clock timers around the walk's parts (issue 21): where the
document defence's walk spends its time, stage by stage, without a profiler's overhead.

    OMP_NUM_THREADS=1 nice -n 5 .venv/bin/python benchmarks/release_rerun_timed.py DIR/10000 --chunks 10000

Every argument is ``release_rerun.py``'s. After its report it prints, per timed function, the
seconds summed over its calls (a function called inside another is counted in both, so the
lines do not add up) and the number of calls: the term model's fit, the defender's fit (in a
thread beside the terms when its fits go to worker processes: then its seconds overlap the
terms'), the terms and pairing, the margins' scoring, each level applied and measured.
"""

from __future__ import annotations

import atexit
import functools
import runpy
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from neswap_core import run_release  # noqa: E402
from neswap_core.choose import candidates, document_candidates, prefetch  # noqa: E402
from neswap_core.generate import document_budget, document_terms  # noqa: E402

#: (module, attribute) timed; a module attribute is replaced where the caller looks it up.
TIMED = [
    (run_release, "prefetch_candidates"), (run_release, "build_scorers"),
    (run_release, "build_candidates"), (prefetch, "build_candidates"),
    (candidates, "document_candidates"), (candidates, "candidate_table"),
    (document_candidates, "_defence_levels"), (document_candidates, "fitted_defender"),
    (document_candidates, "defence_terms"), (document_candidates, "rank_by_defender"),
    (document_candidates, "defend"), (document_candidates, "_measure_levels"),
    (document_budget, "document_plans"), (document_budget, "_all_fractions"),
]  # fmt: skip
SECONDS: defaultdict[str, float] = defaultdict(float)
CALLS: Counter[str] = Counter()


def _timed(fn, label: str):
    @functools.wraps(fn)
    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            SECONDS[label] += time.perf_counter() - start
            CALLS[label] += 1

    return timed


def _report() -> None:
    print("wall seconds by function (summed over calls; nested calls counted in both):")
    for label, seconds in sorted(SECONDS.items(), key=lambda kv: -kv[1]):
        print(f"  {seconds:8.1f} s  x{CALLS[label]:<3d} {label}")


def main() -> None:
    for module, name in TIMED:
        setattr(module, name, _timed(getattr(module, name), f"{module.__name__.split('.')[-1]}.{name}"))
    term_model = document_terms.TermModel
    term_model.fit = _timed(term_model.fit, "TermModel.fit")
    atexit.register(_report)
    sys.argv = [str(ROOT / "benchmarks" / "release_rerun.py"), *sys.argv[1:]]
    runpy.run_path(sys.argv[0], run_name="__main__")


if __name__ == "__main__":
    main()
