"""Ranked word redaction (SPEC §9, paper 001 "smarter redaction"): the top K % words -> [MASK].

A scorer gives every maskable word of a chunk a *redaction priority* (higher = masked first);
``redact_chunks`` masks the top share of each chunk and keeps the entity spans consistent.
``SmarterRedactor`` is paper 001's scorer: a multinomial logistic regression on TF-IDF word
features tells the protected class (the document's company) from the rest, and a word's
priority is its weight for the chunk's own class. ``generate/ranker.py`` (paper 002) plugs in
through the same ``word_scores_batch`` interface.

Decisions where the paper and SPEC are silent:
- *Words*: maximal runs of letters/digits, joined by an inner apostrophe, hyphen or dot
  (``don't``, ``year-over-year``, ``3.5``, ``U.S``); punctuation, ``$``, ``%`` and white space
  are never masked and never counted. Words inside a placeholder (``[Company Name]``,
  ``[MASK]``, ...) are neither masked nor counted, so redacting twice never re-masks a mask.
- *Share*: with n maskable words in a chunk and level K (a proportion in [0, 1]) exactly
  m = min(n, max(1, round_half_up(K · n))) words are masked when K > 0 and n > 0, else none.
  The share is per chunk, so every chunk loses (about) the same proportion.
- *Priority*: the signed weight ``coef_[own class, word]`` (not tf-idf × weight): within one
  chunk the tf-idf norm is a common factor, and the weight alone ranks a word by how much it
  points to *this* company rather than by how often it occurs. Words the model never saw get 0.
- *Repeated words*: occurrences are ranked, not word types. All occurrences of a word share its
  priority, so they are masked together unless the cut falls between them (then the earliest
  go first, ties broken by position): the stated share stays exact.
- *Entity spans*: a span that overlaps a masked word is dropped (its text is no longer the
  entity); the other spans are shifted, so ``span.text == chunk.text[start:end]`` holds.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple, Protocol

import numpy as np

from ..config import MASK_PLACEHOLDER
from ..corpus import Chunk, EntitySpan
from ..errors import ConfigError, CorpusError, FitError
from ..measure.term_budget import fit_within_budget
from ..models.blas_threads import single_blas_thread
from ..models.logistic import logistic_regression
from ..text.corporate import legal_suffix_end
from ..text.words import text_words, word_spans


class WordScore(NamedTuple):
    """One maskable word of a text with its redaction priority (higher is masked first)."""

    start: int
    end: int
    word: str
    score: float


@dataclass(frozen=True)
class RedactionRecord:
    """One masked word: ``chunk.text[start:end] == word`` in the chunk *before* redaction;
    ``replacement`` is what takes its place (the mask placeholder, or a decoy word)."""

    chunk_id: str
    start: int
    end: int
    word: str
    score: float
    replacement: str = MASK_PLACEHOLDER


class WordScorer(Protocol):
    """Anything that gives the words of texts a redaction priority (SmarterRedactor, ranker):
    ``word_scores`` of one text; a scorer that can do better on many texts at once adds
    ``word_scores_batch(texts, labels)``, used when present."""

    def word_scores(self, text: str, label: str) -> list[WordScore]: ...


# --- words and shares ---------------------------------------------------------------------------
def validate_level(level: float) -> float:
    """A redaction level K must be a proportion in [0, 1]."""
    try:
        value = float(level)
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"The redaction level must be a number in [0, 1], got {level!r}."
        ) from exc
    if not 0.0 <= value <= 1.0 or math.isnan(value):
        raise ConfigError(
            f"The redaction level is a proportion of words in [0, 1] (0.1 = 10 %), got {level!r}."
        )
    return value


def masked_count(n_words: int, level: float) -> int:
    """Words to mask among ``n_words``: round half up of K·n, at least 1 when K > 0 and n > 0."""
    level = validate_level(level)
    if n_words <= 0 or level == 0.0:
        return 0
    m = math.floor(level * n_words + 0.5 + 1e-9)  # 1e-9: 0.15 * 10 is 1.4999999999999998
    return min(n_words, max(1, m))


def select_words(scores: Sequence[WordScore], level: float) -> list[WordScore]:
    """The top ``masked_count`` words by priority (ties: earlier first), in text order."""
    m = masked_count(len(scores), level)
    if m == 0:
        return []
    order = sorted(range(len(scores)), key=lambda i: (-scores[i].score, scores[i].start))
    return sorted((scores[i] for i in order[:m]), key=lambda s: s.start)


# --- applying masks -----------------------------------------------------------------------------
def with_legal_suffixes(chunk: Chunk, records: Sequence[RedactionRecord]) -> list[RedactionRecord]:
    """``records`` (one chunk's, in text order) with each mask taking the legal suffix words that
    follow it ("Acme| Inc" → "[…]"): "[…] Inc" says what kind of firm was masked and the leak
    scan blocks it as residue. A record inside a widened one is dropped."""
    out: list[RedactionRecord] = []
    last = -1
    for r in records:
        if r.start < last:
            continue
        end = legal_suffix_end(chunk.text, r.end)
        out.append(r if end == r.end else replace(r, end=end, word=chunk.text[r.start : end]))
        last = end
    return out


def apply_redactions(chunk: Chunk, records: Sequence[RedactionRecord]) -> Chunk:
    """Replace each recorded word by its replacement; drop overlapping spans, shift the others.

    Pure: returns a new chunk (or ``chunk`` itself when ``records`` is empty). The records of a
    review may be any subset of those ``redact_chunks`` returned (rejected ones left out).
    """
    edits = sorted({(r.start, r.end, r.word, r.replacement) for r in records if r.chunk_id == chunk.chunk_id})
    if not edits:
        return chunk
    previous_end = 0
    for start, end, word, _ in edits:
        if start < previous_end or chunk.text[start:end] != word:
            raise CorpusError(
                f"Chunk {chunk.chunk_id}: the redaction of {word!r} at {start}:{end} does not "
                "match the chunk text (or overlaps another); redact the chunk again from its "
                "current text."
            )
        previous_end = end
    pieces: list[str] = []
    pos = 0
    for start, end, _, replacement in edits:
        pieces += [chunk.text[pos:start], replacement]
        pos = end
    pieces.append(chunk.text[pos:])
    return replace(chunk, text="".join(pieces), entities=_shifted_spans(chunk.entities, edits))


def _shifted_spans(
    spans: Sequence[EntitySpan], edits: list[tuple[int, int, str, str]]
) -> tuple[EntitySpan, ...]:
    ends = [end for _, end, _, _ in edits]
    deltas = np.cumsum([len(new) - (end - start) for start, end, _, new in edits]).tolist()
    kept: list[EntitySpan] = []
    for span in spans:
        k = bisect_right(ends, span.start)  # edits wholly before the span
        if k < len(edits) and edits[k][0] < span.end:
            continue  # a masked word lies inside the span
        shift = deltas[k - 1] if k else 0
        kept.append(replace(span, start=span.start + shift, end=span.end + shift))
    return tuple(kept)


def _batch_scores(scorer: WordScorer, texts: list[str], labels: list[str]) -> list[list[WordScore]]:
    batch = getattr(scorer, "word_scores_batch", None)
    if batch is not None:
        return batch(texts, labels)
    return [scorer.word_scores(t, lab) for t, lab in zip(texts, labels, strict=True)]


def redact_chunks(
    chunks: Sequence[Chunk], scorer: WordScorer, level: float
) -> tuple[list[Chunk], list[RedactionRecord]]:
    """Mask the top ``level`` share of each chunk's words by the scorer's priority (SPEC §9).

    Returns the new chunks (unchanged chunks are the same objects) and one record per masked
    word, in chunk then text order, for review.
    """
    level = validate_level(level)
    chunks = list(chunks)
    if level == 0.0 or not chunks:
        return chunks, []
    all_scores = _batch_scores(scorer, [c.text for c in chunks], [c.protected for c in chunks])
    out: list[Chunk] = []
    records: list[RedactionRecord] = []
    for chunk, scores in zip(chunks, all_scores, strict=True):
        chosen = with_legal_suffixes(chunk, [
            RedactionRecord(chunk.chunk_id, s.start, s.end, s.word, float(s.score))
            for s in select_words(scores, level)
        ])  # fmt: skip
        records += chosen
        out.append(apply_redactions(chunk, chosen))
    return out, records


def masked_share(chunks: Sequence[Chunk]) -> float:
    """Share of masks among maskable words plus masks, over ``chunks`` (0 when empty)."""
    masks = sum(c.text.count(MASK_PLACEHOLDER) for c in chunks)
    words = sum(len(word_spans(c.text)) for c in chunks)
    return masks / (masks + words) if masks + words else 0.0


# --- paper 001: logistic-regression weights -----------------------------------------------------
class SmarterRedactor:
    """Paper 001's ranking: TF-IDF + multinomial logistic regression, a word's own-class weight.

    Parameters: ``C`` inverse L2 strength, ``min_df`` minimum document frequency of a word,
    ``sublinear_tf`` 1 + log(tf), ``random_state`` for the solver. Fitted: ``vectorizer_``,
    ``model_``, ``classes_``, ``weights_`` (n_classes × n_words, also for two classes).
    """

    def __init__(
        self,
        *,
        C: float = 10.0,
        min_df: int = 1,
        sublinear_tf: bool = True,
        max_iter: int = 1000,
        random_state: int | None = 0,
    ) -> None:
        self.C = C
        self.min_df = min_df
        self.sublinear_tf = sublinear_tf
        self.max_iter = max_iter
        self.random_state = random_state

    @single_blas_thread
    def fit(self, texts: Sequence[str], labels: Sequence[str]) -> SmarterRedactor:
        """Learn the word weights from texts labelled with their protected class."""
        from sklearn.feature_extraction.text import TfidfVectorizer

        texts, labels = list(texts), [str(x) for x in labels]
        if len(texts) != len(labels) or not texts:
            raise FitError(
                f"SmarterRedactor.fit needs one label per text; got {len(texts)} texts and "
                f"{len(labels)} labels."
            )
        if len(set(labels)) < 2:
            raise FitError(
                "Smarter redaction needs texts of at least two protected classes (companies) "
                "to learn what tells them apart; add documents of another company."
            )
        self.vectorizer_ = TfidfVectorizer(
            analyzer=text_words, sublinear_tf=self.sublinear_tf, min_df=self.min_df
        )
        try:
            x = fit_within_budget(self.vectorizer_, texts, len(set(labels)))
        except ValueError as exc:
            raise FitError(
                f"No words to learn from: {exc}. Check that the texts are not empty."
            ) from exc
        self.model_ = logistic_regression(
            C=self.C, max_iter=self.max_iter, random_state=self.random_state
        ).fit(x, labels)
        self.classes_ = self.model_.classes_
        coef = self.model_.coef_
        self.weights_ = np.vstack([-coef[0], coef[0]]) if len(self.classes_) == 2 else coef
        self._class_index = {c: i for i, c in enumerate(self.classes_)}
        return self

    def word_scores(self, text: str, label: str) -> list[WordScore]:
        """(start, end, word, own-class weight) for each maskable word of ``text``."""
        return self.word_scores_batch([text], [label])[0]

    def word_scores_batch(
        self, texts: Sequence[str], labels: Sequence[str]
    ) -> list[list[WordScore]]:
        """``word_scores`` for many texts at once."""
        if not hasattr(self, "weights_"):
            raise FitError("Call SmarterRedactor.fit(texts, labels) before scoring words.")
        vocabulary = self.vectorizer_.vocabulary_
        out: list[list[WordScore]] = []
        for text, label in zip(texts, labels, strict=True):
            row = self._class_index.get(str(label))
            if row is None:
                raise FitError(
                    f"The protected class {label!r} was not among the {len(self.classes_)} "
                    "classes the redactor was fit on; fit it on texts that include this class."
                )
            spans = word_spans(text)
            columns = np.array([vocabulary.get(w.lower(), -1) for _, _, w in spans], dtype=int)
            weights = np.where(columns >= 0, self.weights_[row, np.maximum(columns, 0)], 0.0)
            out.append(
                [WordScore(s, e, w, float(v)) for (s, e, w), v in zip(spans, weights, strict=True)]
            )
        return out
