"""The prefetch's walk on a kept protecting-path run, its document defence cold (issue 21).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/prefetch_walk.py DIR/30000 --chunks 30000

``DIR`` is a folder ``benchmarks/protecting_scale.py --keep DIR`` left (its corpus and cache).
The preparation and the reading attacker come back from the cache; the document defence's
defender, its plans and the candidates' memo are removed first, so the walk (which builds the
document defence and every plan to list the texts to embed, ``choose/prefetch.py``) runs as it
does in a cold release. Prints the walk's and the embedding's seconds. Profile it with
``py-spy record --subprocesses -f raw -o walk.raw -- <this command>``: at 30k chunks it showed
the defender's retrieval member scoring every company for each candidate type (c83f8b9).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", help="one size's folder of protecting_scale.py --keep")
    ap.add_argument("--chunks", type=int, required=True, help="the size it was run at (its reading's seed)")
    args = ap.parse_args()
    from protecting_scale import DEV

    from neswap_core.choose.prefetch import prefetch_candidates
    from neswap_core.config import RunConfig
    from neswap_core.generate.context import release_context
    from neswap_core.measure.reading import reading_attacker
    from neswap_core.models.embedding import Embedder
    from neswap_core.prepare.pipeline import clean_corpus
    from neswap_core.run_release import prepare_release
    from neswap_core.text.loading import load_corpus
    from neswap_core.text.synthetic import documents_for_chunks, sentence_pool, synthetic_corpus

    work = Path(args.folder)
    cache = work / "cache"
    for cold in [cache / "document_defence", cache / "memo" / "document_builds", cache / "memo" / "document_levels",
                 cache / "memo" / "document_preps",
                 cache / "memo" / "document_measures",
                 cache / "memo" / "candidate_tables", *cache.glob("*/prefetch")]:  # fmt: skip
        shutil.rmtree(cold, ignore_errors=True)
    pool = sentence_pool(clean_corpus(load_corpus(DEV)).corpus)
    reading = synthetic_corpus(pool, documents_for_chunks(args.chunks), random_state=args.chunks + 1)
    reading = reading.with_documents([replace(d, doc_id="R" + d.doc_id, metadata={**d.metadata, "doc_id": "R" + d.doc_id})
                                      for d in reading.documents])  # fmt: skip (as protecting_scale.py)
    config = RunConfig.of(corpus=str(work / "corpus"), cache_dir=str(cache), out=str(work / "out"))
    embedder = Embedder(config.prepare.embedding_model, config.prepare.cache_dir,
                        backend=config.prepare.embedding_backend)  # fmt: skip
    start = time.perf_counter()
    prepared = prepare_release(config, embedder=embedder)
    attacker = reading_attacker(reading, prepared.chunks, prepared.raw, cache_dir=config.prepare.cache_dir)
    ctx, _ = release_context(prepared.chunks, prepared.embeddings, embedder.encode, config)
    print(f"{len(prepared.chunks):,} chunks; preparation, reading and mixture back in "
          f"{time.perf_counter() - start:.1f} s", flush=True)
    parts: dict[str, float] = {}
    start = time.perf_counter()
    sent = prefetch_candidates(ctx, config, 2, reading_units=attacker.units_, timings=parts)
    print(f"prefetch {time.perf_counter() - start:.1f} s: "
          + ", ".join(f"{k} {v:.1f} s" for k, v in parts.items()) + f"; {sent:,} texts embedded")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
