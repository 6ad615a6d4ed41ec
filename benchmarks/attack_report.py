"""The written release's attack report alone, on a kept protecting-path run (issue 21).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/attack_report.py DIR/N --chunks N [--repeat 2]

``DIR/N`` is a folder ``benchmarks/protecting_scale.py --keep DIR`` left, after a
``benchmarks/release_rerun.py DIR/N --chunks N`` run of the same code (its ``run_release`` memos
are read back: seconds). Then ``publish.attack_report.attack_report`` of the chosen release, the
report attack.json and attack.csv hold (every attacker: its figures before and after, and a view
of every document), in this one process, timed in CPU seconds: inside the writer it shares the
cores with the audit's and the adaptive attacker's workers, so its wall time there says little.
The first run starts with this process's row memos as ``run_release`` left them (the writer's
case); the later ones find the released texts' rows kept. Compare two versions of the code by
running each on its own copy of the folder.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", help="one size's folder of protecting_scale.py --keep")
    ap.add_argument("--chunks", type=int, required=True, help="the size it was run at (its reading's seed)")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    from kept_run import kept_inputs

    from neswap_core.publish.attack_report import attack_report
    from neswap_core.run_release import run_release

    work = Path(args.folder)
    config, embedder, prepared, attacker = kept_inputs(work, args.chunks)
    start = time.perf_counter()
    result = run_release(prepared, config, embedder.encode, reading=attacker)
    changed = result.changed()
    ids = [c.chunk_id for c in result.context.chunks]
    print(f"{work}: {len(ids):,} passages, {len(changed):,} changed, {len(result.scorers)} attackers; "
          f"run_release read back in {time.perf_counter() - start:.1f} s; "
          f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    for k in range(args.repeat):
        cpu, wall = time.process_time(), time.perf_counter()
        _, table = attack_report(result.scorers, changed, ids)
        print(f"  attack report, run {k + 1}: {time.process_time() - cpu:.2f} CPU-s, "
              f"{time.perf_counter() - wall:.2f} s ({len(table):,} rows)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
