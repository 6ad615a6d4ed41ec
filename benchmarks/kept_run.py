"""A kept ``protecting_scale.py --keep`` folder read back for the benchmarks that rerun it.

``kept_inputs(folder, chunks)``: the folder's configuration, embedder, preparation (its caches:
seconds) and the attacker's reading (the synthetic reading ``protecting_scale.py`` made for that
size, regenerated from its seed, and fitted through the cache), as ``release_rerun.py``,
``defence_order.py`` and ``attack_report.py`` need them.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from protecting_scale import DEV


def kept_reading(folder: Path, chunks: int):
    """The synthetic reading of a kept run of ``chunks`` (its documents' ids prefixed "R")."""
    from neswap_core.prepare.pipeline import clean_corpus
    from neswap_core.text.loading import load_corpus
    from neswap_core.text.synthetic import documents_for_chunks, sentence_pool, synthetic_corpus

    pool = sentence_pool(clean_corpus(load_corpus(DEV)).corpus)
    spec_file = folder / "synthetic.json"  # protecting_scale.py's --company-words
    words = json.loads(spec_file.read_text())["company_words"] if spec_file.is_file() else 0
    reading = synthetic_corpus(pool, documents_for_chunks(chunks, company_words=words), random_state=chunks + 1)
    return reading.with_documents([replace(d, doc_id="R" + d.doc_id, metadata={**d.metadata, "doc_id": "R" + d.doc_id})
                                   for d in reading.documents])  # fmt: skip (as protecting_scale.py)


def kept_config(folder: Path):
    """(run configuration, embedder) of a kept folder: its corpus, cache and ``out/``."""
    from neswap_core.config import RunConfig
    from neswap_core.models.embedding import Embedder

    config = RunConfig.of(corpus=str(folder / "corpus"), cache_dir=str(folder / "cache"), out=str(folder / "out"))
    embedder = Embedder(config.prepare.embedding_model, config.prepare.cache_dir,
                        backend=config.prepare.embedding_backend)  # fmt: skip
    return config, embedder


def kept_inputs(folder: Path, chunks: int):
    """(config, embedder, prepared corpus, fitted reading attacker) of a kept folder."""
    from neswap_core.measure.reading import reading_attacker
    from neswap_core.run_release import prepare_release

    reading = kept_reading(folder, chunks)
    config, embedder = kept_config(folder)
    prepared = prepare_release(config, embedder=embedder)
    attacker = reading_attacker(reading, prepared.chunks, prepared.raw, cache_dir=config.prepare.cache_dir)
    return config, embedder, prepared, attacker
