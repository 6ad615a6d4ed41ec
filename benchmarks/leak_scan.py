"""The leak scan of a large release: one prefix-tree pattern vs an alternation of every term
(issue 21; ``text.alternation``).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/leak_scan.py DIR/100000 [--documents 2000]

``DIR`` is a folder ``benchmarks/protecting_scale.py --keep DIR`` left whose release was
written (``out/released/``, ``out/key/chunks.csv``). The terms: every document's identifiers
(``publish.leaks.leak_terms`` of its corpus) and, as the release's detected executives, each
document's person names of ``key/chunks.csv`` (the 100k write scanned for the executives it
detected). Scans the first ``--documents`` released documents (all: 0) with the terms compiled
as before 2026-12-07 (every term in one alternation, longest first) and as now, prints the
seconds of each, their ratio and whether the hits are the same.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _alternation_pattern(terms, flags: int = 0):
    """The leak scan's pattern as it was: every term, longest first, in one alternation."""
    bodies = sorted({t.text for t in terms}, key=lambda s: (-len(s), s))
    if not bodies:
        return None
    alternatives = "|".join(r"\s+".join(re.escape(w) for w in b.split()) for b in bodies)
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", flags)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--documents", type=int, default=2000, help="released documents scanned (0: all)")
    args = ap.parse_args()
    from neswap_core.publish import leaks
    from neswap_core.text.loading import load_corpus

    csv.field_size_limit(sys.maxsize)
    corpus = load_corpus(args.folder / "corpus")
    people: dict[str, set[str]] = {}
    with open(args.folder / "out" / "key" / "chunks.csv", newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            names = [n.strip() for n in (row.get("Person") or "").split(" & ") if " " in n.strip()]
            people.setdefault(row["doc_id"], set()).update(names)
    terms = leaks.leak_terms(corpus, {d: sorted(v) for d, v in people.items()})
    with open(args.folder / "out" / "key" / "pseudonyms.csv", newline="", encoding="utf-8") as handle:
        originals = {r["pseudonym"]: r["doc_id"] for r in csv.DictReader(handle)}
    docs = sorted((args.folder / "out" / "released" / "docs").glob("*.txt"))
    docs = docs[: args.documents] if args.documents else docs
    released = {p.stem: p.read_text(encoding="utf-8").split("\n\n") for p in docs}
    chunks = sum(len(v) for v in released.values())
    print(f"{len(terms):,} terms ({sum(t.kind == 'executive' for t in terms):,} executives' forms), "
          f"{len(released):,} released documents, {chunks:,} passages", flush=True)
    timings, hits = {}, {}
    for name, pattern in (("alternation of every term", _alternation_pattern), ("prefix tree (now)", leaks._pattern)):
        original = leaks._pattern
        leaks._pattern = pattern
        try:
            start = time.perf_counter()
            found = leaks.scan_release(released, terms, originals)
            timings[name] = time.perf_counter() - start
        finally:
            leaks._pattern = original
        hits[name] = [(h.document, h.chunk, h.identifier, h.case, h.kind, h.found) for h in found]
        print(f"  {name:<26} {timings[name]:8.2f} s, {len(found):,} hits", flush=True)
    old, new = timings.values()
    same = len(set(map(tuple, hits.values()))) == 1
    print(f"ratio {old / new:.1f} x; the same hits: {same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
