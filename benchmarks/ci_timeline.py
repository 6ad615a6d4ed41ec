"""Where CI's minutes go: each pytest-xdist worker's timeline from one run's log.

Run the suite as ``make test`` does, with every duration and the worker of each result::

    .venv/bin/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder -v --durations=0 > ci.log
    .venv/bin/python benchmarks/ci_timeline.py ci.log

Each worker runs its tests one after another, so the durations of its tests in the order it
reported them give its timeline (setup, call and teardown; pytest hides those under 5 ms, and
time between tests is not counted). Printed: each worker's busy seconds and the idle tail (the
time one worker waited for the other at the end: what an ordering of the files could save),
the files in each worker's order with their seconds, and the longest files and tests.
"""

from __future__ import annotations

import argparse
import collections
import re
from pathlib import Path

RESULT = re.compile(r"^\[(gw\d+)\] \[\s*\d+%\] (PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS) (\S+)")
DURATION = re.compile(r"^([0-9.]+)s (setup|call|teardown)\s+(\S+)")


def read_log(text: str) -> tuple[dict[str, list[str]], dict[str, float]]:
    """(worker -> test ids in the order it reported them, test id -> seconds)."""
    order: dict[str, list[str]] = collections.defaultdict(list)
    seconds: dict[str, float] = collections.defaultdict(float)
    for line in text.splitlines():
        if m := RESULT.match(line):
            if m.group(3) not in order[m.group(1)]:
                order[m.group(1)].append(m.group(3))
        elif m := DURATION.match(line):
            seconds[m.group(3)] += float(m.group(1))
    return dict(order), dict(seconds)


def file_of(test_id: str) -> str:
    return test_id.split("::", 1)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    order, seconds = read_log(args.log.read_text(encoding="utf-8", errors="replace"))
    if not order:
        raise SystemExit("no '[gwN] ... PASSED' lines: run pytest with -n 2 -v (see the docstring)")
    ends = {}
    for worker, tests in sorted(order.items()):
        runs: list[tuple[str, float]] = []
        for test in tests:
            if runs and runs[-1][0] == file_of(test):
                runs[-1] = (runs[-1][0], runs[-1][1] + seconds.get(test, 0.0))
            else:
                runs.append((file_of(test), seconds.get(test, 0.0)))
        ends[worker] = sum(s for _, s in runs)
        print(f"{worker}: {len(tests)} tests, {ends[worker]:.0f} s busy")
        clock = 0.0
        for name, s in runs:
            if s >= 20:
                print(f"  {clock:6.0f}–{clock + s:6.0f} s  {s:5.0f} s  {name}")
            clock += s
    print(f"idle tail: {max(ends.values()) - min(ends.values()):.0f} s "
          f"(the longest worker {max(ends.values()):.0f} s, an even split "
          f"{sum(ends.values()) / len(ends):.0f} s)")
    files: collections.Counter = collections.Counter()
    for test, s in seconds.items():
        files[file_of(test)] += s
    print(f"longest files (of {sum(files.values()):.0f} s of tests):")
    for name, s in files.most_common(args.top):
        print(f"  {s:6.0f} s  {name}")
    print("longest tests:")
    for test, s in sorted(seconds.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"  {s:6.0f} s  {test}")


if __name__ == "__main__":
    main()
