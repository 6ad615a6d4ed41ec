"""Measured protection of a release (SPEC §8): what an attacker names before and after.

``ReleaseScorer(attacker, texts, labels, doc_ids)`` is built once per corpus and attacker: it
scores every pre-release chunk once and keeps, per chunk, the log-probability of each company and,
per document, their sums. ``score(changed)`` with ``changed = {chunk position: released text}``
re-vectorises and re-scores only the changed chunks (one sparse product) and returns
``AttackMeasures``:

* ``chunk_top1`` / ``chunk_top5``: share of all released chunks whose company is the attacker's
  first guess / among its five first guesses (corpus-wide);
* ``changed_pre_top1`` / ``changed_post_top1`` (and top-5): the same over the changed chunks
  only, before and after (the paper's Table 2); NaN when nothing changed;
* ``document_accuracy``: the attacker sums the log-probabilities of all released chunks of a
  document per company and names the best one; ``documents_named`` counts the documents named
  correctly and ``named_documents`` lists them;
* ``table``: 2×2 counts over changed chunks, rows pre correct/wrong, columns post correct/wrong,
  and ``mcnemar_p``: exact McNemar test, two-sided binomial test (p = ½) on the discordant cells
  (1.0 when there are none), as in the paper's Table 3;
* ``chance``: 1 / number of companies of the corpus (with line-ups, the mean of 1 / the size of
  each chunk's line-up).

An attacker fitted with **line-ups** (``measure/lineups.py``: ``lineup_``, the line-up of each
class) names every chunk and document among the companies of its true company's line-up: the
scores of the other companies are masked on entry, so every figure below is within line-ups.

A chunk whose company the attacker never saw (not in ``classes_``) can never be named: it counts
as wrong. A "changed" position whose released text equals the original is not counted as changed.
``score_steps`` scores the cumulative releases after each step of a sequence (a swap run's
prefixes) from one vectorisation; ``measure_draws`` turns several draws into mean ± s.d.
``explain_document`` gives the per-document view: the chunks that gave the document away and the
words that weighed most.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import ConfigError
from .lineups import (
    SCORE_BLOCK,
    LineupRows,
    lineup_chance,
    mask_rows,
    row_lineups,
    stack_rows,
    take_rows,
)

TOP_K = 5


def mcnemar_exact(table: np.ndarray) -> float:
    """Two-sided exact McNemar p-value of a 2×2 table (binomial on the discordant cells)."""
    b, c = int(table[0, 1]), int(table[1, 0])
    if b + c == 0:
        return 1.0
    from scipy.stats import binomtest  # here: scipy.stats costs 0.45 s to import (issue 21)

    return float(binomtest(b, b + c, 0.5, alternative="two-sided").pvalue)


@dataclass
class AttackMeasures:
    """The attacker's accuracies on one release (SPEC §8; see the module docstring)."""

    attacker: str
    n_chunks: int
    n_documents: int
    n_companies: int
    chunk_top1: float
    chunk_top5: float
    n_changed: int
    changed_pre_top1: float
    changed_post_top1: float
    changed_pre_top5: float
    changed_post_top5: float
    document_accuracy: float
    documents_named: int
    named_documents: tuple[str, ...]
    table: np.ndarray
    mcnemar_p: float
    chance: float
    documents: pd.DataFrame = field(repr=False)

    def to_dict(self) -> dict:
        """JSON-ready summary (NaN becomes None); the per-document frame as records."""
        out = {}
        for key in (
            "attacker",
            "n_chunks",
            "n_documents",
            "n_companies",
            "chunk_top1",
            "chunk_top5",
            "n_changed",
            "changed_pre_top1",
            "changed_post_top1",
            "changed_pre_top5",
            "changed_post_top5",
            "document_accuracy",
            "documents_named",
            "mcnemar_p",
            "chance",
        ):
            value = getattr(self, key)
            if isinstance(value, float) and not np.isfinite(value):
                value = None
            out[key] = value
        out["named_documents"] = list(self.named_documents)
        out["table"] = {
            "pre_correct": {
                "post_correct": int(self.table[0, 0]),
                "post_wrong": int(self.table[0, 1]),
            },
            "pre_wrong": {
                "post_correct": int(self.table[1, 0]),
                "post_wrong": int(self.table[1, 1]),
            },
        }
        return out


def _ranks(log_p: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Rank of the true class per row: how many classes score strictly higher (0 = named; a tie
    with the best counts as named); ``len(classes)`` for unknown labels. The panel uses it too."""
    n_classes = log_p.shape[1]
    ranks = np.full(len(y), n_classes, dtype=np.int64)
    known = y >= 0
    if known.any():
        true = log_p[known, y[known]]
        ranks[known] = (log_p[known] > true[:, None]).sum(axis=1)
    return ranks


class ReleaseScorer:
    """An attacker's pre-release scores of a corpus, ready to measure any release (SPEC §8).

    ``attacker``: a fitted ``TextAttacker`` (reading attacker) or ``CrossFittedAttacker``
    (in-corpus; fitted on these ``texts`` in this order), or an (n, n_classes) array of
    pre-release probabilities with ``classes`` (then only the pre-release figures are available).
    ``texts``, ``labels``, ``doc_ids``: the pre-release chunks, their company and document.
    ``pre_log_proba``: the attacker's log-probabilities of ``texts`` computed before (a disk
    memo, ``choose/scorers.build_scorers``), so a warm run does not score the corpus again.
    """

    def __init__(
        self,
        attacker,
        texts: Sequence[str],
        labels: Sequence[str],
        doc_ids: Sequence[str],
        *,
        name: str = "attacker",
        classes: Sequence[str] | None = None,
        pre_log_proba: np.ndarray | LineupRows | None = None,
    ) -> None:
        self.texts = [str(t) for t in texts]
        n = len(self.texts)
        if not (n == len(labels) == len(doc_ids)):
            raise ConfigError(
                f"{n} texts, {len(labels)} labels and {len(doc_ids)} doc ids: give one of each per chunk."
            )
        self.name = name
        self.lineup_ = None  # the line-up of each class (measure/lineups.py), None: one
        if isinstance(attacker, np.ndarray):
            if classes is None or attacker.shape != (n, len(classes)):
                raise ConfigError("Probabilities need `classes` and one row per text.")
            self.attacker, self.classes_ = None, np.asarray(classes, dtype=object)
            log_proba = np.log(np.clip(attacker, 1e-300, 1.0))
        else:
            self.attacker, self.classes_ = attacker, np.asarray(attacker.classes_, dtype=object)
            self.lineup_ = getattr(attacker, "lineup_", None)
        where = {c: i for i, c in enumerate(self.classes_)}
        self.labels = np.asarray([str(v) for v in labels], dtype=object)
        self.y_ = np.array([where.get(v, -1) for v in self.labels], dtype=np.int64)
        self.doc_ids = np.asarray([str(d) for d in doc_ids], dtype=object)
        # each document's first chunk, in one pass (a scan per document was documents × chunks)
        self.documents_, first, self.doc_index_ = np.unique(self.doc_ids, return_index=True,
                                                            return_inverse=True)  # fmt: skip
        self.doc_labels_ = self.labels[first]
        self.doc_y_ = self.y_[first]
        if self.attacker is None:
            pre_log_proba = log_proba
        elif pre_log_proba is not None and np.shape(pre_log_proba) != (n, len(self.classes_)):
            pre_log_proba = None  # another corpus's: scored below
        # in blocks of about SCORE_BLOCK rows (with line-ups no passages × companies matrix is
        # ever whole: issue 21); each row's scores do not depend on its block
        self.rank_ = np.zeros(n, dtype=np.int64)
        kept = []
        for at in np.array_split(np.arange(n), -(-n // SCORE_BLOCK)) if n else []:
            if pre_log_proba is None:
                block = self._attacker_scores(at, self.texts[at[0] : at[-1] + 1])
            else:
                block = np.asarray(take_rows(pre_log_proba, at), dtype=np.float64)
            block = mask_rows(block, self.y_[at], self.lineup_)
            self.rank_[at] = _ranks(block, self.y_[at])
            kept.append(LineupRows.of(block, self.y_[at], self.lineup_))
        # with line-ups each row's line-up block only; ``log_proba_rows`` gives back the rows
        self.pre_log_proba_ = stack_rows(kept, len(self.classes_))
        self._document_scores()
        self.n_companies = len(set(self.labels))
        self.chance_ = lineup_chance(self.y_, self.lineup_, self.n_companies)
        self.unknown_labels = sorted(set(self.labels) - set(self.classes_))

    def log_proba_rows(self, positions: np.ndarray) -> np.ndarray:
        """The masked pre-release log-probabilities of the passages at ``positions``."""
        return take_rows(self.pre_log_proba_, np.asarray(positions, dtype=np.int64))

    @property
    def log_proba_(self) -> np.ndarray:
        """Every passage's masked pre-release log-probabilities, (n, classes): made whole on
        demand (``pre_log_proba_`` keeps them by line-up)."""
        return self.log_proba_rows(np.arange(len(self.texts)))

    #: A document is named when its true company ties for the best score (the panel's
    #: families, pessimistic as ``measure/panel.py``); else only when it is the first guess.
    ties_named = False

    #: Passages and documents measured (None: all), set by ``scoped``.
    scope_: np.ndarray | None = None
    doc_scope_: np.ndarray | None = None

    def scoped(self, positions: np.ndarray | None) -> ReleaseScorer:
        """This scorer measuring only the passages at ``positions`` — whole documents, a
        large corpus's measurement sample (``measure.candidate_sample``): every share is over
        them and a change elsewhere is neither scored nor counted. None: ``self``."""
        if positions is None:
            return self
        out = copy.copy(self)
        out.scope_ = np.zeros(len(self.texts), dtype=bool)
        out.scope_[np.asarray(positions, dtype=np.int64)] = True
        out.doc_scope_ = np.zeros(len(self.documents_), dtype=bool)
        out.doc_scope_[self.doc_index_[out.scope_]] = True
        return out

    # --- scoring ------------------------------------------------------------------------------
    def _changed(self, changed: Mapping[int, str]) -> tuple[np.ndarray, list[str]]:
        pos, texts = [], []
        scope = self.scope_
        for p, t in changed.items():
            p = int(p)
            if not 0 <= p < len(self.texts):
                raise ConfigError(f"Chunk position {p} is outside 0..{len(self.texts) - 1}.")
            if scope is not None and not scope[p]:
                continue
            if str(t) != self.texts[p]:
                pos.append(p)
                texts.append(str(t))
        return np.asarray(pos, dtype=np.int64), texts

    def released_log_proba(self, positions: np.ndarray, texts: list[str]) -> np.ndarray:
        """Log-probabilities of released texts at ``positions`` (the only new attacker call)."""
        if len(positions) == 0:
            return np.zeros((0, len(self.classes_)))
        if self.attacker is None:
            raise ConfigError(
                f"The {self.name} scorer holds fixed probabilities only; it cannot score released "
                "text. Build it from a fitted attacker."
            )
        return mask_rows(self._attacker_scores(positions, texts), self.y_[positions], self.lineup_)

    def _attacker_scores(self, positions: np.ndarray, texts: list[str]) -> np.ndarray:
        """The attacker's scores; with line-ups each text is scored by the model of its true
        company's line-up only (``lineups`` argument; the other columns are masked anyway)."""
        attacker = self.attacker
        if attacker is None:
            raise ConfigError(f"The {self.name} scorer holds fixed probabilities only.")
        rows = row_lineups(self.y_[positions], self.lineup_)
        if rows is None:
            return attacker.log_proba_at(positions, texts)
        return attacker.log_proba_at(positions, texts, lineups=rows)

    def released_rows(self, positions: np.ndarray, texts: list[str]) -> tuple[np.ndarray, object]:
        """(score rows, word counts or None) of released ``texts`` at ``positions``: what a
        release's measures need of its changed passages (``ReleaseMeasuring.add``); a
        whole-document family also needs their word counts (``DocumentFamilyScorer``)."""
        return self.released_log_proba(positions, texts), None

    def score(self, changed: Mapping[int, str]) -> AttackMeasures:
        """Measures of the release that replaces the chunks at the given positions."""
        pos, texts = self._changed(changed)
        return self._measure(pos, lambda at: self.released_rows(pos[at], [texts[i] for i in at]))

    def score_steps(self, steps: Sequence[Mapping[int, str]]) -> list[AttackMeasures]:
        """Measures of the cumulative releases after step 1, 2, ... (later text wins)."""
        flat_pos, flat_texts, cumulative = self.flat_steps(steps)
        log_p = self.released_log_proba(flat_pos, flat_texts)
        return [self.measures(pos, log_p[rows]) for pos, rows in cumulative]

    def flat_steps(
        self, steps: Sequence[Mapping[int, str]]
    ) -> tuple[np.ndarray, list[str], list[tuple[np.ndarray, np.ndarray]]]:
        """The changed chunks of all ``steps`` as one flat list (positions, texts), so one
        attacker call scores them all, and per step the (positions, flat rows) of the cumulative
        release after it: a position changed again by a later step takes that step's row."""
        flat_pos: list[int] = []
        flat_texts: list[str] = []
        step_of: list[int] = []
        for s, step in enumerate(steps):
            pos, texts = self._changed(step)
            flat_pos.extend(pos.tolist())
            flat_texts.extend(texts)
            step_of.extend([s] * len(pos))
        step_arr = np.asarray(step_of, dtype=np.int64)
        cumulative, latest = [], {}
        for s in range(len(steps)):
            for row in np.flatnonzero(step_arr == s):
                latest[flat_pos[row]] = int(row)
            pos = np.fromiter(latest.keys(), dtype=np.int64, count=len(latest))
            rows = np.fromiter(latest.values(), dtype=np.int64, count=len(latest))
            cumulative.append((pos, rows))
        return np.asarray(flat_pos, dtype=np.int64), flat_texts, cumulative

    def pre_release(self) -> AttackMeasures:
        """Measures before any release (nothing changed)."""
        return self.measures(np.zeros(0, dtype=np.int64), np.zeros((0, len(self.classes_))))

    def measures(self, positions: np.ndarray, log_p: np.ndarray) -> AttackMeasures:
        """Measures when the chunks at ``positions`` score ``log_p`` instead of their pre scores."""
        log_p = np.asarray(log_p)
        return self._measure(np.asarray(positions, dtype=np.int64), lambda at: (log_p[at], None))

    # --- documents, kept by line-up and measured by blocks of documents (issue 21) -------------
    def _document_scores(self) -> None:
        """Each document's pre-release scores (the sum of its passages' masked rows, added in
        passage order), kept by line-up as ``doc_log_proba_``, and what a release compares
        with: ``doc_guess_``, ``doc_true_``, ``doc_other_`` (``DocumentScores``)."""
        parts = []
        for at in document_blocks(self.doc_index_, np.arange(len(self.texts))):
            docs, inverse = np.unique(self.doc_index_[at], return_inverse=True)
            sums = np.zeros((len(docs), len(self.classes_)))
            np.add.at(sums, inverse, self.log_proba_rows(at))
            parts.append((docs, sums))
        self._keep_documents(parts)

    def _keep_documents(self, parts: list[tuple[np.ndarray, np.ndarray]]) -> None:
        """Keep ``parts`` (blocks of (documents, their dense score rows), covering every
        document of the corpus once, in increasing order) by line-up, with their summary."""
        k, n_docs = len(self.classes_), len(self.documents_)
        parts = [(d, r) for d, r in parts if len(d)]
        if not parts:
            self.doc_log_proba_: np.ndarray | LineupRows = np.zeros((0, k))
            self.doc_scores_ = DocumentScores.empty(0)
            return
        self.doc_log_proba_ = stack_rows([LineupRows.of(r, self.doc_y_[d], self.lineup_) for d, r in parts], k)
        self.doc_scores_ = DocumentScores.empty(n_docs)
        for docs, rows in parts:
            self.doc_scores_.put(docs, rows, self.doc_y_[docs])

    def doc_log_proba_rows(self, documents: np.ndarray) -> np.ndarray:
        """The pre-release score rows of ``documents`` (indices into ``documents_``), whole."""
        return take_rows(self.doc_log_proba_, np.asarray(documents, dtype=np.int64))

    def _measure(self, positions: np.ndarray, post) -> AttackMeasures:
        """Measures when the chunks at ``positions`` are released, ``post(at)`` giving the
        masked score rows (and, for a whole-document family, the word counts) of
        ``positions[at]``: asked for by blocks of whole documents of about ``SCORE_BLOCK``
        changed passages, so neither a changed passages × companies nor a documents ×
        companies matrix is ever whole (issue 21: 1 GB per attacker at 100,000 passages)."""
        measuring = ReleaseMeasuring(self, positions)
        for at in document_blocks(self.doc_index_[positions], np.arange(len(positions))):
            measuring.add(at, *post(at))
        return measuring.measures()

    def _released_documents(self, positions: np.ndarray, rows: np.ndarray, counts) -> tuple[np.ndarray, np.ndarray]:
        """The documents holding ``positions`` (whole documents' changed passages, in the
        release's order) and their released score rows: the pre-release sums plus each
        changed passage's change, added in that order (as one pass over the release adds)."""
        docs, inverse = np.unique(self.doc_index_[positions], return_inverse=True)
        out = self.doc_log_proba_rows(docs)
        np.add.at(out, inverse, rows - self.log_proba_rows(positions))
        return docs, out

    def _assemble(self, rank, pre_rank, post_rank, scores: DocumentScores, positions) -> AttackMeasures:
        pre1, post1 = pre_rank == 0, post_rank == 0
        table = np.array(
            [
                [np.sum(pre1 & post1), np.sum(pre1 & ~post1)],
                [np.sum(~pre1 & post1), np.sum(~pre1 & ~post1)],
            ],
            dtype=np.int64,
        )
        named = scores.named(self.doc_y_, ties=self.ties_named)
        n_changed = len(positions)

        def share(mask):
            return float(np.mean(mask)) if len(mask) else float("nan")

        docs = _document_frame(self, scores, named, positions)
        documents = self.documents_
        if self.scope_ is not None:  # a measurement sample: its passages and documents only
            rank, named, documents = rank[self.scope_], named[self.doc_scope_], documents[self.doc_scope_]
            docs = docs[self.doc_scope_].reset_index(drop=True)
        return AttackMeasures(
            attacker=self.name,
            n_chunks=len(rank),
            n_documents=len(documents),
            n_companies=self.n_companies,
            chunk_top1=share(rank == 0),
            chunk_top5=share(rank < TOP_K),
            n_changed=n_changed,
            changed_pre_top1=share(pre1),
            changed_post_top1=share(post1),
            changed_pre_top5=share(pre_rank < TOP_K),
            changed_post_top5=share(post_rank < TOP_K),
            document_accuracy=share(named),
            documents_named=int(named.sum()),
            named_documents=tuple(documents[named]),
            table=table,
            mcnemar_p=mcnemar_exact(table),
            chance=self.chance_,
            documents=docs,
        )


class ReleaseMeasuring:
    """A release's measures (``ReleaseScorer.score``), added up by blocks of whole documents
    that the caller chooses: the attack report's per-document views score each block's changed
    passages once and measure the release from the same rows, where they scored them twice
    more (issue 21: a third of the report at 100,000 passages). Any blocks give the same
    figures, bit for bit, as long as each holds its documents' changed passages in the order
    of ``positions`` (their sums are added in that order)."""

    def __init__(self, scorer: ReleaseScorer, positions: np.ndarray) -> None:
        self.scorer, self.positions = scorer, np.asarray(positions, dtype=np.int64)
        self._rank = scorer.rank_.copy()
        self._post_rank = np.zeros(len(self.positions), dtype=np.int64)
        self._scores = scorer.doc_scores_.copy()

    def add(self, at: np.ndarray, rows: np.ndarray, counts=None) -> np.ndarray:
        """Release the passages ``positions[at]`` (whole documents' changed passages) with
        score ``rows`` (and word ``counts``: ``released_rows``); gives the masked rows back."""
        s, where = self.scorer, self.positions[at]
        rows = mask_rows(np.asarray(rows, dtype=np.float64), s.y_[where], s.lineup_)
        self._post_rank[at] = _ranks(rows, s.y_[where])
        docs, doc_rows = s._released_documents(where, rows, counts)
        self._scores.put(docs, doc_rows, s.doc_y_[docs])
        return rows

    def named(self) -> tuple[np.ndarray, np.ndarray]:
        """(named, predicted company) of every document of the corpus (``documents_`` order,
        a measurement sample's scope aside), as ``measures().documents`` gives them."""
        s = self.scorer
        return self._scores.named(s.doc_y_, ties=s.ties_named), s.classes_[self._scores.guess]

    def measures(self) -> AttackMeasures:
        """The measures once every changed passage was added."""
        s, positions = self.scorer, self.positions
        rank = self._rank.copy()
        rank[positions] = self._post_rank
        return s._assemble(rank, s.rank_[positions], self._post_rank, self._scores, positions)


def _document_frame(scorer: ReleaseScorer, scores: DocumentScores, named, positions) -> pd.DataFrame:
    """Per document: doc_id, company, predicted, named, margin (the true company's summed
    log-probability minus the best other company's), n_chunks, n_changed."""
    n = len(scorer.documents_)
    return pd.DataFrame(
        {
            "doc_id": scorer.documents_,
            "company": scorer.doc_labels_,
            "predicted": scorer.classes_[scores.guess],
            "named": named,
            "margin": scores.true - scores.other,
            "n_chunks": np.bincount(scorer.doc_index_, minlength=n),
            "n_changed": np.bincount(scorer.doc_index_[positions], minlength=n),
        }
    )


def document_blocks(doc_of: np.ndarray, items: np.ndarray, size: int | None = None) -> list[np.ndarray]:
    """``items`` (each of the document ``doc_of`` gives) grouped by document, each document's
    in their given order, in blocks of about ``size`` (``SCORE_BLOCK``) items that never cut a
    document: what a scorer measures at once."""
    size = SCORE_BLOCK if size is None else size
    if not len(items):
        return []
    order = np.argsort(doc_of, kind="stable")
    ordered = doc_of[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    blocks, begin = [], 0
    for start in starts[1:].tolist():
        if start - begin >= size:
            blocks.append(items[order[begin:start]])
            begin = start
    blocks.append(items[order[begin:]])
    return blocks


@dataclass
class DocumentScores:
    """What a release's document figures need of each document's score row (SPEC §8), kept
    instead of the rows (documents × companies: issue 21): the attacker's first guess
    (``argmax``), the true company's score (−inf for a company it never saw) and the best
    other company's."""

    guess: np.ndarray
    true: np.ndarray
    other: np.ndarray

    @classmethod
    def empty(cls, n: int) -> DocumentScores:
        return cls(np.zeros(n, dtype=np.int64), np.full(n, -np.inf), np.full(n, -np.inf))

    def copy(self) -> DocumentScores:
        return DocumentScores(self.guess.copy(), self.true.copy(), self.other.copy())

    def put(self, docs: np.ndarray, rows: np.ndarray, y: np.ndarray) -> None:
        """Set documents ``docs`` (of true classes ``y``) from their score ``rows``."""
        if not len(docs):
            return
        r = np.arange(len(docs))
        ok = y >= 0
        self.guess[docs] = rows.argmax(axis=1)
        self.true[docs] = np.where(ok, rows[r, np.maximum(y, 0)], -np.inf)
        held = rows[r, np.maximum(y, 0)].copy()
        rows[r[ok], y[ok]] = -np.inf  # the best of the others (rows are the caller's to spend)
        self.other[docs] = rows.max(axis=1)
        rows[r, np.maximum(y, 0)] = held

    def named(self, y: np.ndarray, *, ties: bool) -> np.ndarray:
        """Documents named: the first guess is the true company, or (``ties``) the true
        company's score is at least every other's."""
        ok = y >= 0
        if ties:
            return ok & (self.true >= self.other)
        return (self.guess == y) & ok
