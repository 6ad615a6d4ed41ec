"""The key tables' TAB diff of every document, on one core and on every core (issue 21).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/tab_diff.py [--copies 10]

The dev corpus's documents, ``--copies`` times under fresh ids (10: about as many characters
as the 10k synthetic corpus, 6 M), each "released" with every third capitalised word replaced
by another one (as swaps and placeholders change words in place), diffed by
``publish.annotations.tab_documents`` serially (``processes=1``) and on every core (its
default past ``PARALLEL_CHARS``). Prints both times, their ratio and whether the records are the
same (they must be).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT.parent / "shared" / "corpus" / "dev" / "docs"


def documents(copies: int) -> tuple[dict[str, str], dict[str, str]]:
    texts = {p.stem: p.read_text(encoding="utf-8") for p in sorted(DEV.glob("*.txt"))}
    originals, released = {}, {}
    capital = re.compile(r"\b[A-Z][a-z]+\b")
    for r in range(copies):
        for name, text in texts.items():
            doc_id = f"{name}R{r}"
            originals[doc_id] = text
            count = iter(range(10**9))
            released[doc_id] = capital.sub(
                lambda m, count=count: "Globex" if next(count) % 3 == 0 else m.group(0), text)
    return originals, released


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=10)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from neswap_core.publish.annotations import PARALLEL_CHARS, tab_documents

    originals, released = documents(args.copies)
    pseudonyms = {d: f"P{i:05d}" for i, d in enumerate(originals)}
    chars = sum(map(len, originals.values()))
    print(f"{len(originals):,} documents, {chars / 1e6:.1f} M characters (parallel from "
          f"{PARALLEL_CHARS / 1e6:.0f} M), {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    start = time.perf_counter()
    serial = tab_documents(originals, released, pseudonyms, processes=1)
    serial_s = time.perf_counter() - start
    start = time.perf_counter()
    parallel = tab_documents(originals, released, pseudonyms)
    parallel_s = time.perf_counter() - start
    print(f"one core {serial_s:.1f} s, every core {parallel_s:.1f} s: ratio {serial_s / parallel_s:.2f}; "
          f"the same records: {parallel == serial}")
    return 0 if parallel == serial else 1


if __name__ == "__main__":
    sys.exit(main())
