"""spaCy NER throughput per ``nlp.pipe`` batch size on chunk-sized texts of the dev corpus.

    OMP_NUM_THREADS=1 nice -n 5 .venv/bin/python benchmarks/ner_batch.py [--documents 12]

Prints words per CPU-second for each batch size (two rounds, best kept) and the ratio to the
configured ``DEFAULT_NER_BATCH``: the measurement behind that default (issue 14). Parallelism is
not spaCy's ``n_process`` but whole documents shared between processes (prepare/lanes.py), so
only the batch size is chosen here.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from neswap_core.config import DEFAULT_NER_BATCH  # noqa: E402

DEV = ROOT.parent / "shared" / "corpus" / "dev"
SIZES = (8, 16, 32, 64, 128, 256)


def chunk_sized(texts: list[str], words: int = 150) -> list[str]:
    """Paragraphs joined into pieces of about ``words`` words (the size of a chunk)."""
    out, current = [], ""
    for paragraph in (p for t in texts for p in t.split("\n") if p.strip()):
        current += paragraph + "\n"
        if len(current.split()) > words:
            out.append(current)
            current = ""
    return out + ([current] if current else [])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(DEV))
    ap.add_argument("--documents", type=int, default=12)
    args = ap.parse_args()
    if not Path(args.corpus).exists():
        print(f"skip: {args.corpus} not found")
        return 0
    from neswap_core.prepare.pipeline import clean_corpus
    from neswap_core.text.entities import load_ner
    from neswap_core.text.loading import load_corpus

    nlp = load_ner()
    clean = clean_corpus(load_corpus(args.corpus), nlp=nlp).corpus
    texts = chunk_sized([d.text for d in clean.documents[: args.documents]])
    words = sum(len(t.split()) for t in texts)
    list(nlp.pipe(texts[:20]))  # warm-up
    best: dict[int, float] = {}
    for _ in range(2):
        for size in SIZES:
            start = time.process_time()
            list(nlp.pipe(texts, batch_size=size))
            rate = words / (time.process_time() - start)
            best[size] = max(best.get(size, 0.0), rate)
    print(f"{len(texts)} chunk-sized texts, {words:,} words; words per CPU-second (best of 2):")
    for size in SIZES:
        mark = "  <- DEFAULT_NER_BATCH" if size == DEFAULT_NER_BATCH else ""
        print(f"  batch {size:>4}: {best[size]:>8,.0f}  ratio to default "
              f"{best[size] / best[DEFAULT_NER_BATCH]:.2f}{mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
