"""Attack an existing release folder (SPEC §8, §11): the CLI's ``evaluate`` command.

``released/`` holds documents under pseudonyms; ``key/pseudonyms.csv`` maps them back to the
original ids. The corpus is prepared again with the release's configuration
(``key/config.toml``; chunking, NER and embeddings come from the caches), the C roles are
applied as in the release, the released paragraphs are matched to the corpus's chunks
(``report.released_changes``), and the attackers measure the release: the attacker panel
(``sweep.panel_families``, fitted on the reading) when the corpus has an ``attacker/`` folder,
the in-corpus attacker always.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..choose.scorers import build_scorers
from ..config import RunConfig
from ..config.defaults import LINEUP_COMPANIES
from ..corpus import Chunk
from ..disk_memo import DiskMemo, content_key
from ..errors import CorpusError
from ..generate.rewrite import apply_roles
from ..measure.attack_scores import ReleaseScorer
from ..measure.llm import company_candidates, llm_release_measures
from ..measure.reading import missing_companies, reading_attacker
from ..models.embedding import Embedder
from ..paths import resolve_cache_dir
from ..prepare.pipeline import prepare_path
from ..text.loading import attacker_files, attacker_label, load_attacker, load_corpus
from .attack_report import attack_report, released_changes


@dataclass
class Evaluation:
    """The measures of one released folder: JSON summary and per-document table."""

    summary: dict
    table: pd.DataFrame
    scorers: dict[str, ReleaseScorer]
    pre_texts: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    changed: dict[int, str] = field(default_factory=dict)
    documents: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (released, company)
    candidates: dict[str, tuple[str, ...]] = field(default_factory=dict)  # company -> aliases

    def add_llm(self, attacker) -> dict:
        """Measure the release with an LLM attacker (measure/llm.py) and add it to the summary."""

        result = llm_release_measures(
            attacker, self.pre_texts, self.changed, self.labels, self.documents
        )
        self.summary["attackers"]["llm"] = result
        return result


def load_reading(corpus_path: str | Path, protect: str, cache_dir: str | Path | None = None):
    """The corpus's ``attacker/`` reading as a corpus, or None when it has none."""
    files = attacker_files(corpus_path)
    if files is None:
        return None
    # parsed once per content (0.35 s of a 5-second warm re-run on dev, issue 21)
    key = content_key("reading corpus", sorted(files.items()), protect, attacker_label(corpus_path))
    # None when the folder went away since its files were read
    return DiskMemo(resolve_cache_dir(cache_dir), "reading_corpora").get_or_compute(
        key, lambda: load_attacker(corpus_path, protect=protect))


def fit_reading(corpus_path: str | Path, chunks: list[Chunk], corpus, protect: str,
                cache_dir: str | Path | None = None, lineup: int | None = LINEUP_COMPANIES,
                background: bool = False):
    """The reading attacker of the corpus's ``attacker/`` folder, or None when it has none
    (``cache_dir``: a neswap cache folder, where it is kept between runs; ``lineup``: at most
    this many companies per line-up, ``measure/lineups.py``; ``background``: fitting in a worker
    process while the caller goes on, ``measure.reading.ReadingInBackground``)."""

    reading = load_reading(corpus_path, protect, cache_dir)
    if reading is None:
        return None
    return reading_attacker(reading, chunks, corpus, cache_dir=cache_dir, lineup=lineup, background=background)


def reading_notes(attacker, chunks: list[Chunk]) -> dict:
    """What the report says about the reading attacker's training."""
    if attacker is None:
        return {"reading": "no attacker/ folder beside the corpus: in-corpus attacker only"}
    return {
        "reading_units": attacker.n_units_,
        "reading_unit_sentences": attacker.unit_sentences_,
        "reading_missing_companies": missing_companies(attacker, chunks),
    }


def _released_texts(release: Path) -> dict[str, str]:
    """Original doc id → released text, via key/pseudonyms.csv."""

    key = release / "key" / "pseudonyms.csv"
    folder = release / "released"
    if not key.is_file() or not folder.is_dir():
        raise CorpusError(
            f"{release} is not a release folder: expected released/ and key/pseudonyms.csv "
            "(written by `python -m neswap_core release`)."
        )
    with key.open(encoding="utf-8") as fh:
        back = {row["pseudonym"]: row["doc_id"] for row in csv.DictReader(fh)}
    docs = load_corpus(folder, protect="doc_id").documents
    unknown = sorted(d.doc_id for d in docs if d.doc_id not in back)
    if unknown:
        raise CorpusError(f"Released documents {unknown[:5]} are not in {key}.")
    return {back[d.doc_id]: d.text for d in docs}


def _embedder(config: RunConfig):
    """The release's embedder (cached vectors by text) for the panel's embedding attacker."""
    return Embedder(config.prepare.embedding_model, config.prepare.cache_dir,
                    backend=config.prepare.embedding_backend)


def evaluate_release(release: str | Path, corpus_path: str | Path | None = None) -> Evaluation:
    """Measure the release in folder ``release`` against the corpus it was made from."""

    release = Path(release)
    config_file = release / "key" / "config.toml"
    config = RunConfig.load(config_file) if config_file.is_file() else RunConfig()
    corpus_path = str(corpus_path or config.corpus)
    config.corpus = corpus_path
    released = _released_texts(release)
    prepared = prepare_path(corpus_path, config)
    pre = apply_roles(list(prepared.chunks), dict(config.roles))
    changed = released_changes([c.text for c in pre], [c.doc_id for c in pre], released)
    reading = fit_reading(corpus_path, prepared.chunks, prepared.raw, config.protect,
                          resolve_cache_dir(config.prepare.cache_dir), config.sweep.lineup)
    scorers = build_scorers(pre, reading, random_state=config.sweep.seed,
                            families=config.sweep.panel_families, embed=_embedder(config).encode,
                            cache_dir=config.prepare.cache_dir, lineup=config.sweep.lineup)  # fmt: skip
    summary, table = attack_report(scorers, changed, [c.chunk_id for c in pre])
    summary.update(release=str(release), corpus=corpus_path, **reading_notes(reading, pre))
    clean = prepared.clean.corpus
    companies = {d.doc_id: clean.protected_value(d) for d in clean.documents}
    candidates = company_candidates(clean)
    return Evaluation(
        summary,
        table,
        scorers,
        [c.text for c in pre],
        [c.protected for c in pre],
        changed,
        {doc: (text, companies[doc]) for doc, text in released.items()},
        candidates,
    )


def evaluation_files(evaluation: Evaluation) -> dict[str, bytes]:
    """attack.json and attack.csv of an evaluated release folder."""
    return {
        "attack.json": (json.dumps(evaluation.summary, indent=2, sort_keys=True, default=str)
                        + "\n").encode("utf-8"),
        "attack.csv": evaluation.table.to_csv(index=False).encode("utf-8"),
    }
