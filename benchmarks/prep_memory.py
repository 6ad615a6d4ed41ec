"""What the document defence's preparation holds in memory, and what pickling it adds (issue 21).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/prep_memory.py DIR/cache/memo/document_preps/KEY.pkl

The preparation (every document's scored types with their occurrences, the pairing, fills and
plans; ``choose/document_candidates.py``) is what bounds the protecting path's memory since
the attackers' scores are kept by line-up: the prefetch's walk builds it and pickles it into the
build memo. Loads one kept preparation (e.g. from a ``protecting_scale.py --keep`` run), prints
the anonymous memory it holds, its documents, types and occurrences, then pickles it to a
temporary file and prints the extra anonymous memory at the peak (the pickler's memo of every
object) and the seconds each way.
"""

from __future__ import annotations

import gc
import os
import pickle
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _anon_gb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024**2
    return float("nan")


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    peak = [0.0]

    def poll() -> None:
        while True:
            peak[0] = max(peak[0], _anon_gb())
            time.sleep(0.05)

    threading.Thread(target=poll, daemon=True).start()
    import neswap_core.choose.document_candidates  # noqa: F401  (its imports are not the preparation)

    before = _anon_gb()
    start = time.perf_counter()
    with open(sys.argv[1], "rb") as fh:
        prep = pickle.load(fh)
    gc.collect()
    time.sleep(0.3)
    held = _anon_gb()
    docs = prep.docs
    floor = min((d.floor for d in docs.values()), default=0.0)
    print(f"read back in {time.perf_counter() - start:.1f} s; holds {held - before:.2f} GB anonymous; "
          f"{len(docs):,} documents, {sum(len(d.types) for d in docs.values()):,} types, "
          f"{sum(len(d.keys) for d in docs.values()):,} with details (z >= {floor:g} or an own name), "
          f"{sum(int(d.occ_ptr[-1]) for d in docs.values()):,} occurrences of them", flush=True)
    peak[0] = 0.0
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, open(Path(tmp) / "prep.pkl", "wb") as fh:
        pickle.dump(prep, fh, protocol=pickle.HIGHEST_PROTOCOL)
        size = fh.tell()
    time.sleep(0.3)
    print(f"pickled ({size / 1e6:.0f} MB) in {time.perf_counter() - start:.1f} s; "
          f"{peak[0] - held:.2f} GB more anonymous memory at the peak; load "
          f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
