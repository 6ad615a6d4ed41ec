"""A process tree's CPU use, second by second: where a core stands idle in a long run (issue 21).

    python benchmarks/cpu_timeline.py record PID FILE      # until PID ends: t, main, workers, n
    python benchmarks/cpu_timeline.py show FILE [--bin 20] [--after 60]

``record`` samples ``/proc`` every second: the CPU seconds the process ``PID`` used in that second
(``main``), those of all its descendants together (``workers``: fit, scoring and embedding
workers) and how many descendants there are. ``show`` sums them by bins (as % of one core) and
prints the idle core-seconds of a 2-core machine after ``--after`` seconds (the preparation's
reading back). Start it beside ``release_rerun.py``:

    (OMP_NUM_THREADS=1 .venv/bin/python benchmarks/release_rerun.py DIR/N --chunks N > run.log &)
    python benchmarks/cpu_timeline.py record $(pgrep -f "release_rerun.py DIR" | head -1) line.txt
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def _processes() -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, CPU seconds used so far) of every process."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        out[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK)
    return out


def record(root: int, path: Path) -> None:
    seen: dict[int, float] = {}
    start = time.time()
    with path.open("w") as out:
        while Path(f"/proc/{root}").exists():
            procs = _processes()
            tree, grew = {root}, True
            while grew:
                grew = False
                for pid, (parent, _) in procs.items():
                    if parent in tree and pid not in tree:
                        tree.add(pid)
                        grew = True
            first = not seen  # what the processes used before the first sample is not counted
            used = {pid: 0.0 if first else procs[pid][1] - seen.get(pid, 0.0) for pid in tree if pid in procs}
            main = used.pop(root, 0.0)
            out.write(f"{time.time() - start:.1f} {main:.2f} {sum(used.values()):.2f} {len(tree) - 1}\n")
            out.flush()
            seen = {pid: procs[pid][1] for pid in tree if pid in procs}
            time.sleep(1.0)


def show(path: Path, width: float, after: float) -> None:
    rows = [tuple(map(float, line.split())) for line in path.read_text().splitlines() if line.strip()]
    bins: dict[int, list[float]] = {}
    for t, main, workers, n in rows:
        b = bins.setdefault(int(t // width), [0.0, 0.0, 0.0])
        b[0], b[1], b[2] = b[0] + main, b[1] + workers, max(b[2], n)
    for b, (main, workers, n) in sorted(bins.items()):
        print(f"{b * width:6.0f}-{(b + 1) * width:6.0f} s  main {100 * main / width:4.0f} %  "
              f"workers {100 * workers / width:4.0f} %  ({int(n)} workers)")
    late = [r for r in rows if r[0] > after]
    idle = sum(max(2.0 - m - w, 0.0) for _, m, w, _ in late)
    print(f"after {after:g} s: main {sum(r[1] for r in late):.0f} CPU-s, workers "
          f"{sum(r[2] for r in late):.0f} CPU-s, idle {idle:.0f} core-s of 2 cores over {len(late)} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("pid", type=int)
    rec.add_argument("file", type=Path)
    sh = sub.add_parser("show")
    sh.add_argument("file", type=Path)
    sh.add_argument("--bin", type=float, default=20.0)
    sh.add_argument("--after", type=float, default=60.0)
    args = parser.parse_args()
    if args.command == "record":
        record(args.pid, args.file)
    else:
        show(args.file, args.bin, args.after)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
