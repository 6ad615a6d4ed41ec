"""Seconds for valid-pair counting and a 30-swap run at 1k / 10k / 100k synthetic chunks.

Usage: python benchmarks/swapping_scale.py [--sizes 1000 10000 100000] [--seed 0]

Synthetic corpus: 50 chunks per document, 10 clusters, entity strings drawn from vocabularies
that grow with n (so most S cells are rare, as in real transcripts), S = Organization + Product
(the paper's winning combination), Event with role C, Date fixed. Checks SPEC §3's "fast at
100,000 chunks" without an n × n matrix; prints one line per size and require option.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from neswap_core.corpus import Chunk, EntitySpan, chunk_id  # noqa: E402
from neswap_core.generate.swapping import apply_roles, count_valid_pairs, swap_sequence  # noqa: E402

ROLES = {
    "Organization": "S",
    "Product": "S",
    "Event": "C",
    "Date": "F",
    "Person": "U",
    "Location": "U",
}
LABELS = {
    "Organization": "ORG",
    "Product": "PRODUCT",
    "Event": "EVENT",
    "Date": "DATE",
    "Person": "PERSON",
    "Location": "GPE",
}
SWAP = ["Organization", "Product"]
FILLER = "revenue grew this quarter and margins improved as demand held up".split()


def synthetic_chunks(n: int, rng: np.random.Generator) -> tuple[list[Chunk], np.ndarray]:
    """n chunks of n/50 documents with 0-2 entities per category and 10 cluster labels."""
    size = max(20, n // 5)
    counts = rng.integers(0, 3, size=(n, len(LABELS)))
    values = rng.integers(0, size, size=(n, len(LABELS), 2))
    words = rng.integers(0, len(FILLER), size=(n, len(LABELS), 2))
    chunks: list[Chunk] = []
    for k in range(n):
        doc = f"doc{k // 50:05d}"
        parts: list[str] = []
        spans: list[EntitySpan] = []
        pos = 0
        for c, (category, label) in enumerate(LABELS.items()):
            for m in range(counts[k, c]):
                value = f"{category[:3].title()}{values[k, c, m]}"
                word = FILLER[words[k, c, m]]
                parts += [word, value]
                start = pos + len(word) + 1
                spans.append(EntitySpan(start, start + len(value), label, category, value))
                pos = start + len(value) + 1
        chunks.append(Chunk(chunk_id(doc, k % 50), doc, k % 50, " ".join(parts), doc, tuple(spans)))
    return chunks, rng.integers(0, 10, size=n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(
        "seconds; roles = apply_roles (Event -> [Event]) once; count = count_valid_pairs; "
        "swaps = swap_sequence(max_swaps=30) on the role-applied chunks"
    )
    print(
        f"{'n':>8} {'require':>7} {'roles':>7} {'count':>7} {'swaps':>7} {'valid pairs':>12} {'done':>5}"
    )
    for n in args.sizes:
        chunks, labels = synthetic_chunks(n, np.random.default_rng(args.seed))
        t0 = time.perf_counter()
        base = apply_roles(chunks, ROLES)
        roles = time.perf_counter() - t0
        for require in ("all", "any"):
            t0 = time.perf_counter()
            pairs = count_valid_pairs(base, labels, SWAP, require)
            count = time.perf_counter() - t0
            t0 = time.perf_counter()
            run = swap_sequence(base, labels, SWAP, np.random.default_rng(args.seed), 30, require)
            swaps = time.perf_counter() - t0
            print(
                f"{n:>8} {require:>7} {roles:>7.2f} {count:>7.2f} {swaps:>7.2f} {pairs:>12} "
                f"{run.n_swaps:>5}"
            )


if __name__ == "__main__":
    main()
