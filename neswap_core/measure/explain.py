"""The per-document view of an attack (SPEC §8): the analyst's to-do list.

For a release (``changed = {position: released text}``) and each document: is it still named,
which released chunks gave it away (highest log-probability of the true company), and which
words weighed most (Σ over the document's released chunks of tf-idf × the true company's
coefficient, under the model that scored each chunk — for the in-corpus attacker the fold model
blind to that chunk).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..errors import ConfigError
from .attack_scores import AttackMeasures, ReleaseMeasuring, ReleaseScorer, document_blocks
from .lineups import SCORE_BLOCK

if TYPE_CHECKING:  # the attackers' module imports scikit-learn (1.5 s): the Check page's views
    from .attack import CrossFittedAttacker  # of kept figures need none of it (issue 21)


@dataclass(frozen=True)
class DocumentView:
    """One document under attack: named or not, its telling chunks and words."""

    doc_id: str
    company: str
    named: bool
    predicted: str
    chunks: pd.DataFrame  # position, log_prob_true, named, changed, text (most telling first)
    words: pd.Series  # term -> weight for the true company (largest first)


def _released_texts(scorer: ReleaseScorer, changed: Mapping[int, str]) -> tuple[list[str], np.ndarray, list[str]]:
    """Released texts of every chunk, and the changed positions and texts (``_changed``)."""
    texts = list(scorer.texts)
    pos, new = scorer._changed(changed)
    for p, t in zip(pos, new, strict=True):
        texts[p] = t
    return texts, pos, new


def _term_weights(scorer: ReleaseScorer, texts: list[str], positions: np.ndarray, label: str, top: int):
    attacker = scorer.attacker
    if attacker is None:
        return pd.Series(dtype=float)
    if getattr(attacker, "positional", False):  # the in-corpus attacker: a fold model per chunk
        fitted: CrossFittedAttacker = attacker
        return fitted.term_weights(texts, label, positions, top)
    return attacker.term_weights(texts, label, top)


def _top_words(scorer: ReleaseScorer, texts: list[str], positions: np.ndarray, label: str,
               n_words: int) -> pd.Series:
    weights = _term_weights(scorer, texts, positions, label, n_words)  # only what can be shown
    return weights[weights > 0].head(n_words)


def naming_terms(scorer: ReleaseScorer, changed: Mapping[int, str], doc_id: str,
                 n_words: int = 10) -> pd.Series:
    """The words and phrases of document ``doc_id``'s released text (``changed`` applied) that
    point most to its true company for this attacker, largest weight first (positive weights
    only; empty for an attacker that reads no words, such as the sentence-meaning one)."""
    found = np.flatnonzero(scorer.documents_ == doc_id)
    if not len(found):
        raise ConfigError(f"Document {doc_id!r} is not in the attacked corpus.")
    d = int(found[0])
    rows = np.flatnonzero(scorer.doc_index_ == d)
    texts = [str(changed.get(int(p), scorer.texts[p])) for p in rows]
    return _top_words(scorer, texts, rows, str(scorer.doc_labels_[d]), n_words)


def document_rows(doc_index: np.ndarray, n_documents: int) -> list[np.ndarray]:
    """Each document's passages in increasing order, in one sort (a scan of every passage per
    document was documents × passages: issue 21)."""
    order = np.argsort(doc_index, kind="stable")
    return np.split(order, np.searchsorted(doc_index[order], np.arange(1, n_documents)))


def document_views(
    scorer: ReleaseScorer,
    changed: Mapping[int, str] | None = None,
    *,
    n_chunks: int = 3,
    n_words: int = 10,
    doc_ids: Sequence[str] | None = None,
) -> list[DocumentView]:
    """One ``DocumentView`` per document of the corpus, or of ``doc_ids`` only, in document
    order (the app shows one document: explaining all of them took minutes on a big corpus)."""
    return release_views(scorer, changed, n_chunks=n_chunks, n_words=n_words, doc_ids=doc_ids)[1]


def release_views(
    scorer: ReleaseScorer,
    changed: Mapping[int, str] | None = None,
    *,
    n_chunks: int = 3,
    n_words: int = 10,
    doc_ids: Sequence[str] | None = None,
) -> tuple[AttackMeasures, list[DocumentView]]:
    """(``scorer.score(changed)``, ``document_views(...)``) with each changed passage scored
    once: in the blocks of whole documents ``score`` scores them in (the same batches, so the
    same bits for every family, the embedding one's dense products included), each block's
    released rows both measured (``ReleaseMeasuring``) and shown. The attack report scored the
    changed passages three times per attacker (issue 21)."""
    changed = changed or {}
    n_docs = len(scorer.documents_)
    members = document_rows(scorer.doc_index_, n_docs)
    wanted = None if doc_ids is None else {str(d) for d in doc_ids}
    show = np.array([wanted is None or str(doc_id) in wanted for doc_id in scorer.documents_], dtype=bool)
    texts, pos, new = _released_texts(scorer, changed)
    doc_of = scorer.doc_index_[pos]
    measuring = ReleaseMeasuring(scorer, pos)
    changed_pos = set(pos.tolist())
    views: dict[int, DocumentView] = {}
    where = np.full(len(texts), -1, dtype=np.int64)  # scratch: a shown passage's row in its block

    def add_views(shown: list[int], at: np.ndarray | None, released: np.ndarray | None) -> None:
        """Views of the ``shown`` documents (blocks of about ``SCORE_BLOCK`` passages: never a
        documents' passages × companies matrix whole), their changed passages ``pos[at]``
        scoring ``released``."""
        for block in _document_blocks(shown, members):
            rows_block = np.concatenate([members[d] for d in block])
            log_p = scorer.log_proba_rows(rows_block)
            if at is not None and released is not None:
                where[rows_block] = np.arange(len(rows_block))
                mine = where[pos[at]]
                log_p[mine[mine >= 0]] = released[mine >= 0]
                where[rows_block] = -1
            start = np.cumsum([0] + [len(members[d]) for d in block])
            for i, d in enumerate(block):
                views[d] = _view(scorer, d, members[d], log_p[start[i] : start[i + 1]], texts,
                                 changed_pos, n_chunks, n_words)  # fmt: skip

    for at in document_blocks(doc_of, np.arange(len(pos))):  # ``ReleaseScorer._measure``'s blocks
        released = measuring.add(at, *scorer.released_rows(pos[at], [new[i] for i in at]))
        add_views([int(d) for d in dict.fromkeys(doc_of[at].tolist()) if show[d]], at, released)
    untouched = show.copy()
    untouched[doc_of] = False
    add_views(np.flatnonzero(untouched).tolist(), None, None)
    # named / predicted as the scorer measures documents (sums of chunk log-probabilities, or a
    # whole-document family's own score: measure/panel_scorers.py)
    named, predicted = measuring.named()
    return measuring.measures(), [replace(views[d], named=bool(named[d]), predicted=str(predicted[d]))
                                  for d in sorted(views)]


def _document_blocks(shown: list[int], members: list[np.ndarray]) -> list[list[int]]:
    """``shown`` documents in order, cut into blocks of about ``SCORE_BLOCK`` passages."""
    blocks: list[list[int]] = []
    size = SCORE_BLOCK
    for d in shown:
        if size >= SCORE_BLOCK:
            blocks.append([])
            size = 0
        blocks[-1].append(d)
        size += len(members[d])
    return blocks


def _view(scorer: ReleaseScorer, d: int, rows: np.ndarray, log_p: np.ndarray, texts: list[str],
          changed_pos: set[int], n_chunks: int, n_words: int) -> DocumentView:
    """Document ``d``'s view from its passages' (``rows``) released log-probabilities (named
    and predicted left for ``release_views`` to fill from the release's measures)."""
    y = scorer.doc_y_[d]
    true_lp = log_p[:, y] if y >= 0 else np.full(len(rows), -np.inf)
    order = np.argsort(-true_lp, kind="stable")[:n_chunks]
    chunks = pd.DataFrame(
        {
            "position": rows[order],
            "log_prob_true": true_lp[order],
            "named": (log_p[order].argmax(axis=1) == y) if y >= 0 else False,
            "changed": [int(p) in changed_pos for p in rows[order]],
            "text": [texts[p] for p in rows[order]],
        }
    )
    label = str(scorer.doc_labels_[d])
    return DocumentView(
        doc_id=str(scorer.documents_[d]),
        company=label,
        named=False,
        predicted="",
        chunks=chunks,
        words=_top_words(scorer, [texts[p] for p in rows], rows, label, n_words),
    )


def views_frame(views: list[DocumentView], chunk_ids: list[str] | None = None) -> pd.DataFrame:
    """The views as one table: doc_id, company, named, predicted, telling_chunks, top_words."""
    rows = []
    for v in views:
        positions = v.chunks["position"].tolist()
        ids = [chunk_ids[p] for p in positions] if chunk_ids else [str(p) for p in positions]
        rows.append(
            {
                "doc_id": v.doc_id, "company": v.company, "named": v.named,
                "predicted": v.predicted, "telling_chunks": " ".join(ids),
                "top_words": "; ".join(v.words.index[:8]),
            }
        )  # fmt: skip
    return pd.DataFrame(rows)
