"""Which word types and two-word phrases name a document's company (SPEC §12, issue 22).

A company's identity is spread over hundreds of weakly distinctive words and phrases that recur
quarter after quarter; an attacker that reads a whole document adds them all up. So the
document defence (``generate/document.py``) works on *types* of a document, treated at every
occurrence:

* ``occurrences`` — every eligible unigram and adjacent two-word phrase of a text: never a stop
  word, a number, a Loughran–McDonald tone word (``measure.tone.is_tone_word``: tone is the
  utility a finance reader measures) or anything inside a placeholder; and every eligible word
  *framed* by a stop or tone word beside it ("coming into", "our defense", "strong bookings"):
  the phrase is the type, the eligible word is all a treatment changes. On the dev corpus, once
  the distinctive words are exchanged, such phrases hold most of what still names a document to
  the word-bigram attackers (retrieval, naive Bayes: 67 % of the retrieval margin left at 14 %
  of words), and a phrase can be exchanged for the partner's word in the same frame ("coming
  into" → "heading into") where exchanging the word everywhere would cost every occurrence;
* ``TermModel`` — the log-odds z-score with an informative Dirichlet prior (Monroe et al. 2008;
  ``models.log_odds.log_odds_z``) of each company against the others, counted from the corpus
  itself (one document per company is enough) and, when the attacker's reading is given, from
  two disjoint halves of it (split by document; a type's reading z is the *smaller* of its two
  half z-scores, so it must be distinctive in two independent samples: cross-fitting). The two
  are combined by ``max``;
* ``document_terms`` — per document: each candidate type, its occurrences, its z, its kind
  (number of words, capitalised, entity category, ``word_shape``) and its usual surface form.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy import sparse

from ..config import PLACEHOLDER_PATTERN
from ..corpus import Chunk
from ..measure.tone import is_tone_word
from ..models.log_odds import SparseLogOdds

#: A word: letters, digits, apostrophes, "&". A hyphen ends a word, so the parts of a compound
#: are words of their own ("Atmos-enabled": "Atmos" is treated wherever "Atmos" is).
TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9'’&]*[A-Za-z0-9]|[A-Za-z]")
PLACEHOLDER = re.compile(PLACEHOLDER_PATTERN)
_WORDS = re.compile(r"\w+")
#: Entity categories a generic fill knows ("the region", …) and that a replacement prefers to match.
GENERIC = {"Location": "the region", "Product": "the product", "Organization": "the partner",
           "Person": "the executive", "Event": "the event"}  # fmt: skip
#: Words of an earnings call that are never a company's own (besides scikit-learn's stop words).
_EXTRA_STOP = {"quarter", "year", "million", "billion", "percent", "company", "name", "executive",
               "thank", "thanks", "call", "today", "also", "analyst"}  # fmt: skip


_STOP: frozenset[str] | None = None


def stop_words() -> frozenset[str]:
    """scikit-learn's English stop words and ``_EXTRA_STOP``, built on first use: importing
    scikit-learn costs 0.6 s, which a dashboard page reading kept results never needs."""
    global _STOP
    if _STOP is None:
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

        _STOP = frozenset(ENGLISH_STOP_WORDS | _EXTRA_STOP)
    return _STOP


#: Distinct words whose ``eligible`` / ``is_frame_word`` answers are kept (a word's answer never
#: changes; asked once per token, they were ~40 % of ``occurrences`` on the dev corpus: issue 21).
WORD_MEMO = 200_000


@lru_cache(maxsize=WORD_MEMO)
def eligible(word: str) -> bool:
    """Whether a token may be treated: not a stop word, a number, a short lower-case word or a
    tone word (nor a hyphenated word holding one)."""
    low = word.lower()
    return (len(low) >= 2 and low not in (_STOP or stop_words()) and not low.isdigit()
            and not (len(low) < 3 and word.islower())
            and not any(is_tone_word(part) for part in re.findall(r"[A-Za-z]+", word)))  # fmt: skip


@dataclass(frozen=True, slots=True)
class Occurrence:
    """One occurrence of a type in a chunk: offsets of what a treatment changes, lower-cased
    type, surface, words changed, and for a *framed* word its frame ("_ into", "our _": the
    neighbour that stays). Slotted, and ``document_terms`` shares one string per type and
    surface: a document holds one per word, phrase and framed word (issue 21: on the dev corpus
    the documents' occurrences were 62 MB of a release's 170 MB of candidates and attackers)."""

    start: int
    end: int
    key: str  # lower-cased type ("word", "word word" or a framed word "word into")
    surface: str
    n: int  # words
    frame: str = ""


@lru_cache(maxsize=WORD_MEMO)
def is_frame_word(word: str) -> bool:
    """A neighbour that frames a word: a stop word or a tone word of two letters or more (an
    attacker's word bigrams read "coming into", "our defense", "strong bookings"; only the other
    word may change, so function words and tone stay)."""
    low = word.lower()
    return len(low) >= 2 and low.isalpha() and (low in (_STOP or stop_words()) or is_tone_word(low))


def occurrences(text: str, frames: bool = True, strings: dict[str, str] | None = None) -> list[Occurrence]:
    """Every eligible unigram and adjacent two-word phrase of ``text`` outside placeholders, and
    (``frames``) every eligible word framed by a stop or tone word beside it ("coming into": the
    type is the phrase, only "coming" changes). ``strings``: each key, surface and frame is
    the first equal string kept there (``document_terms``: one object per distinct string)."""
    return [Occurrence(*row) for row in occurrence_rows(text, frames, strings)]


def occurrence_rows(text: str, frames: bool = True, strings: dict[str, str] | None = None) -> list[tuple]:
    """``occurrences`` as tuples of ``Occurrence``'s fields, in its order (start, end, key,
    surface, n, frame): ``document_terms`` reads them into a document's columns and never
    needed the objects (making one per word and phrase was a sixth of it at 100k: issue 21)."""
    blocked = [m.span() for m in PLACEHOLDER.finditer(text)]
    toks = list(TOKEN.finditer(text))
    if blocked:
        toks = [m for m in toks if not any(s <= m.start() < e for s, e in blocked)]
    # each token's offsets, surface and lower case read once (ASCII tokens: a phrase's lower
    # case is its words' lower cases joined)
    starts, ends = [m.start() for m in toks], [m.end() for m in toks]
    # every string the first equal one in ``strings`` (made once: no second Occurrence per
    # occurrence to share them, a quarter of ``document_terms`` at 100k passages)
    shared = ({} if strings is None else strings).setdefault
    words = [shared(w, w) for w in (m.group() for m in toks)]
    lows = [shared(w, w) for w in (w.lower() for w in words)]
    ok = [eligible(w) for w in words]
    last = len(toks) - 1
    out: list[tuple] = []
    add = out.append
    for i in range(len(toks)):
        # the last token: nothing follows it (``joined`` guards the next token's reads)
        joined = i < last and starts[i + 1] == ends[i] + 1 and text[ends[i]] == " "
        if not ok[i]:
            if frames and joined and ok[i + 1] and is_frame_word(words[i]):
                key, frame = f"{lows[i]} {lows[i + 1]}", f"{lows[i]} _"
                add((starts[i + 1], ends[i + 1], shared(key, key), words[i + 1], 1, shared(frame, frame)))
            continue
        add((starts[i], ends[i], lows[i], words[i], 1, ""))
        if joined and ok[i + 1]:
            key, surface = f"{lows[i]} {lows[i + 1]}", text[starts[i] : ends[i + 1]]
            add((starts[i], ends[i + 1], shared(key, key), shared(surface, surface), 2, ""))
        elif frames and joined and is_frame_word(words[i + 1]):
            key, frame = f"{lows[i]} {lows[i + 1]}", f"_ {lows[i + 1]}"
            add((starts[i], ends[i], shared(key, key), words[i], 1, shared(frame, frame)))
    return out


def occurrence_keys(text: str) -> list[str]:
    """``[o.key for o in occurrences(text)]``, without making the occurrences: what the term
    model counts (``TermModel.fit``: the corpus and the reading, 200,000 passages at 100k, where
    building an ``Occurrence`` with its surface for every word was most of the count; issue 21)."""
    blocked = [m.span() for m in PLACEHOLDER.finditer(text)]
    toks = list(TOKEN.finditer(text))
    if blocked:
        toks = [m for m in toks if not any(s <= m.start() < e for s, e in blocked)]
    starts, ends = [m.start() for m in toks], [m.end() for m in toks]
    words = [m.group() for m in toks]
    lows = [w.lower() for w in words]
    ok = [eligible(w) for w in words]
    last = len(toks) - 1
    out: list[str] = []
    add = out.append
    for i in range(len(toks)):
        joined = i < last and starts[i + 1] == ends[i] + 1 and text[ends[i]] == " "
        if not ok[i]:
            if joined and ok[i + 1] and is_frame_word(words[i]):
                add(f"{lows[i]} {lows[i + 1]}")
            continue
        add(lows[i])
        if joined and (ok[i + 1] or is_frame_word(words[i + 1])):
            add(f"{lows[i]} {lows[i + 1]}")
    return out


def word_shape(phrase: str) -> str:
    """A cheap part-of-speech proxy from the last word's ending: "ly" (adverb), "ing", "ed",
    "pos" (possessive), "s" (plural / 3rd person), "" (anything else). A replacement must have
    the same shape, so an adverb never becomes a noun ("sequentially" -> "Engineered")."""
    w = phrase.split(" ")[-1].lower()
    if w.endswith(("'s", "’s")):
        return "pos"
    for suffix in ("ly", "ing", "ed"):
        if w.endswith(suffix) and len(w) > len(suffix) + 2:
            return suffix
    if w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return "s"
    return ""


def _counts(texts: Sequence[str], labels: Sequence[str], classes: list[str], vocab: dict) -> tuple:
    rows: list[int] = []
    cols: list[int] = []
    where = {c: i for i, c in enumerate(classes)}
    column = vocab.setdefault
    for text, label in zip(texts, labels, strict=True):
        keys = occurrence_keys(text)
        rows.extend([where[label]] * len(keys))
        cols.extend([column(k, len(vocab)) for k in keys])
    return rows, cols


def reading_halves(doc_ids: Sequence[str], labels: Sequence[str], random_state: int = 0) -> dict[str, int]:
    """Half (0/1) of each reading document: each company's documents alternate, shuffled."""
    rng = np.random.default_rng(random_state)
    by: dict[str, list[str]] = defaultdict(list)
    for d, c in zip(doc_ids, labels, strict=True):
        if d not in by[c]:
            by[c].append(d)
    half = {}
    for comp in sorted(by):
        docs = sorted(by[comp])
        start = int(rng.integers(2))
        for i, j in enumerate(rng.permutation(len(docs))):
            half[docs[j]] = (start + i) % 2
    return half


class TermModel:
    """Distinctive word types and phrases per company (module docstring).

    Parameters: ``prior_share`` (Dirichlet prior strength as a share of the counts),
    ``random_state`` (the reading's split in halves). Fitted: ``classes_``, ``vocabulary_``
    {type: column}, ``parts_`` (the corpus's counts and, with a reading, its two halves', each
    ``models.log_odds.SparseLogOdds``), ``spread_`` (per type: how many companies' corpus documents use it).
    A type's z for a company (``score``) is the larger of the corpus's z and the reading's, the
    smaller of its two halves' z; it is worked out for the types asked, never for every class ×
    type (a dense matrix of them grows with companies times vocabulary: ``SparseLogOdds``).
    """

    def __init__(self, *, prior_share: float = 0.1, random_state: int = 0):
        self.prior_share, self.random_state = prior_share, random_state

    def fit(self, chunks: Sequence[Chunk], reading: tuple | None = None) -> TermModel:
        """``reading``: (texts, labels, doc ids) of the attacker's reading, or None."""
        texts, labels, docs = reading if reading is not None else ((), (), ())
        classes = sorted({c.protected for c in chunks} | set(labels))
        vocab: dict[str, int] = {}
        parts = {"corpus": _counts([c.text for c in chunks], [c.protected for c in chunks], classes, vocab)}
        if len(texts):
            half = reading_halves(docs, labels, self.random_state)
            for h in (0, 1):
                keep = [i for i, d in enumerate(docs) if half[d] == h]
                parts[f"half{h}"] = _counts([texts[i] for i in keep], [labels[i] for i in keep],
                                            classes, vocab)  # fmt: skip
        shape = (len(classes), max(len(vocab), 1))
        self.parts_ = {name: SparseLogOdds.of(sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=shape),
                                              self.prior_share)
                       for name, (rows, cols) in parts.items()}  # fmt: skip
        self.spread_ = np.bincount(self.parts_["corpus"].counts.indices, minlength=shape[1])
        self.classes_ = np.array(classes, dtype=object)
        self.vocabulary_ = vocab
        self._row = {c: i for i, c in enumerate(classes)}
        return self

    def score(self, company: str, keys: Sequence[str]) -> np.ndarray:
        """z of each type in ``keys`` for ``company`` (0 for an unknown type or company)."""
        k = self._row.get(company)
        if k is None:
            return np.zeros(len(keys))
        cols = np.array([self.vocabulary_.get(t, -1) for t in keys], dtype=np.int64)
        known = np.maximum(cols, 0)
        z = self.parts_["corpus"].z(k, known)
        if "half0" in self.parts_:
            z = np.maximum(z, np.minimum(self.parts_["half0"].z(k, known), self.parts_["half1"].z(k, known)))
        return np.where(cols >= 0, z, 0.0)

    def exclusive(self, keys: Sequence[str]) -> np.ndarray:
        """Whether each type of ``keys`` is used by exactly one company's corpus documents."""
        cols = np.array([self.vocabulary_.get(t, -1) for t in keys], dtype=np.int64)
        spread = self.spread_[np.maximum(cols, 0)] if len(cols) else np.zeros(0, dtype=np.int64)
        return (cols >= 0) & (spread == 1)


#: Entity categories whose distinctive types are treated first (issue 23 item 8: a product,
#: brand or organisation that belongs to one company names it to any reader).
NAMED_FIRST = ("Product", "Organization")
#: z above which such a type counts as the company's own (models.log_odds' default term floor).
NAMED_MIN_Z = 2.0
#: The least z that counts as positive (an own name needs one).
POSITIVE_Z = 1e-9
#: Version of ``DocTerms``'s layout, part of the keys of what is memoised with it on disk.
DOCTERMS_LAYOUT = 3


def is_name(surface: str) -> bool:
    """Every word of ``surface`` starts with a capital ("Tellurium Cloud", not "Cloud markets")."""
    return all(word[:1].isupper() for word in surface.split(" "))


#: Codes of the ``category`` and ``shape`` columns of ``DocTerms``.
CATEGORIES = ("", *GENERIC)
SHAPES = ("", "ly", "ing", "ed", "pos", "s")


class _Column(Mapping):
    """Read-only ``key -> value`` over a document's sorted keys (``DocTerms``'s views):
    ``value(i)`` of the key at index i, ``keep(i)`` whether that key belongs to the view."""

    __slots__ = ("_keys", "_value", "_keep")

    def __init__(self, keys: list[str], value, keep=None):
        self._keys, self._value, self._keep = keys, value, keep

    def _index(self, key) -> int:
        i = bisect_left(self._keys, key) if isinstance(key, str) else len(self._keys)
        if i < len(self._keys) and self._keys[i] == key and (self._keep is None or self._keep(i)):
            return i
        raise KeyError(key)

    def __getitem__(self, key):
        return self._value(self._index(key))

    def __contains__(self, key) -> bool:
        try:
            self._index(key)
        except KeyError:
            return False
        return True

    def __iter__(self):
        return (k for i, k in enumerate(self._keys) if self._keep is None or self._keep(i))

    def __len__(self) -> int:
        return len(self._keys) if self._keep is None else sum(1 for _ in self)


@dataclass(eq=False)
class DocTerms:
    """The candidate types of one document with their occurrences, cost and score, in columns.

    ``types``: every type of the document, sorted. ``keys``: the types a defence can treat (z >=
    ``floor`` and the document's own names, ``is_own_name``), sorted, with one entry per type in
    each column and their occurrences in ``occ_*`` (those of ``keys[i]`` at
    ``occ_ptr[i]:occ_ptr[i + 1]``). Columns, not a dict per type: a document's types are nearly
    as many as its words and a dict, tuple and object each cost ~600 bytes a type (issue 21:
    1.75 GB at 30k passages); ``occ``, ``score``, ``kind``, ``surface``, ``frame`` and
    ``only`` read them as mappings."""

    doc_id: str
    company: str
    positions: list[int]  # chunk positions of the document
    words: int  # \w+ tokens of the document
    types: tuple = ()  # every type, sorted (membership)
    keys: list = field(default_factory=list)  # the types with details, sorted
    zs: np.ndarray = field(default_factory=lambda: np.zeros(0))
    n: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))  # words per type
    costs: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))  # words changed
    capital: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # mostly capitalised
    category: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))  # CATEGORIES code
    shape: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))  # SHAPES code
    exclusive: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # no other company uses it
    surfaces: list = field(default_factory=list)  # most frequent surface form
    frames: list = field(default_factory=list)  # frame of a framed word ("_ into"), else ""
    occ_ptr: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    occ_pos: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))  # chunk position
    occ_start: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    occ_end: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    occ_surface: list = field(default_factory=list)
    floor: float = -math.inf  # every type with z >= floor has its details

    def index(self, key: str) -> int:
        """Row of ``key`` among the types with details (KeyError if it has none)."""
        i = bisect_left(self.keys, key)
        if i < len(self.keys) and self.keys[i] == key:
            return i
        raise KeyError(key)

    def has_type(self, key: str) -> bool:
        """Whether the document holds ``key`` (with details or not)."""
        i = bisect_left(self.types, key)
        return i < len(self.types) and self.types[i] == key

    def cost(self, key: str) -> int:
        """Words changed when ``key`` is treated at every occurrence."""
        return int(self.costs[self.index(key)])

    def count(self, key: str) -> int:
        """Occurrences of ``key``."""
        i = self.index(key)
        return int(self.occ_ptr[i + 1] - self.occ_ptr[i])

    def occurrences(self, key: str) -> list[tuple[int, Occurrence]]:
        """(chunk position, Occurrence) of every occurrence of ``key``, in text order."""
        return self._occurrences(self.index(key))

    def _occurrences(self, i: int) -> list[tuple[int, Occurrence]]:
        key, n, frame = self.keys[i], int(self.n[i]), self.frames[i]
        return [(int(self.occ_pos[j]), Occurrence(int(self.occ_start[j]), int(self.occ_end[j]), key,
                                                  self.occ_surface[j], n, frame))
                for j in range(int(self.occ_ptr[i]), int(self.occ_ptr[i + 1]))]  # fmt: skip

    def own_words(self) -> set[str]:
        """The words of the document's unframed types: its eligible words (every word of an
        unframed phrase is a type of its own)."""
        return {k for k in self.types if " " not in k}

    def phrase_index(self) -> dict[str, list[str]]:
        """Word -> the two-word types with details (phrases and framed words) holding it:
        treating the word at every occurrence treats them too (only types with details are
        ever selected). Built per selection, not kept: it would double what a document holds."""
        index: dict[str, list[str]] = defaultdict(list)
        for key in self.keys:
            if " " in key:
                for w in dict.fromkeys(key.split(" ")):
                    index[w].append(key)
        return index

    def kind_of(self, i: int) -> tuple[int, bool, str, str]:
        """(n words, capitalised, entity category, word shape) of the type at row ``i``."""
        return (int(self.n[i]), bool(self.capital[i]), CATEGORIES[self.category[i]], SHAPES[self.shape[i]])

    @property
    def occ(self) -> Mapping:
        return _Column(self.keys, self._occurrences)

    @property
    def score(self) -> Mapping:
        return _Column(self.keys, lambda i: float(self.zs[i]))

    @property
    def kind(self) -> Mapping:
        return _Column(self.keys, self.kind_of)

    @property
    def surface(self) -> Mapping:
        return _Column(self.keys, self.surfaces.__getitem__)

    @property
    def frame(self) -> Mapping:
        return _Column(self.keys, self.frames.__getitem__, lambda i: bool(self.frames[i]))

    @property
    def only(self) -> Mapping:
        return _Column(self.keys, lambda i: True, lambda i: bool(self.exclusive[i]))


def is_own_name(z: float, only: bool, frame: str, surface: str, capital: bool) -> bool:
    """A document's own name: a capitalised, unframed type with a positive z that no other
    company of the corpus uses, written as a name (``document_budget.named_types`` treats these
    first, with no z floor)."""
    return z >= POSITIVE_Z and only and not frame and capital and is_name(surface)


def _category_at(chunk: Chunk, start: int, end: int) -> str:
    for s in chunk.entities:
        if s.start < end and start < s.end and s.category in GENERIC:
            return s.category
    return ""


def document_terms(chunks: Sequence[Chunk], model: TermModel, min_z: float | None = None) -> dict[str, DocTerms]:
    """Per document id: its candidate types (module docstring), scored by ``model``.

    ``min_z``: the z floor of the defence that will use them (``DefenceParams.min_z``); the
    details of a type below both it and ``NAMED_MIN_Z`` are dropped unless it is one of the
    document's own names (``DocTerms``). None keeps every type's details."""
    by_doc: dict[str, list[int]] = {}
    for p, c in enumerate(chunks):
        by_doc.setdefault(c.doc_id, []).append(p)
    floor = -math.inf if min_z is None else min(min_z, NAMED_MIN_Z)
    docs: dict[str, DocTerms] = {}
    strings: dict[str, str] = {}
    for doc_id, positions in by_doc.items():  # one document at a time: only its columns stay
        occ: dict[str, list] = {}
        words = 0
        for p in positions:
            words += len(_WORDS.findall(chunks[p].text))
            for row in occurrence_rows(chunks[p].text, strings=strings):  # (start, end, key, surface, n, frame)
                occ.setdefault(row[2], []).append((p, row))
        docs[doc_id] = _columns(doc_id, chunks[positions[0]].protected, positions, words, occ,
                                chunks, model, floor)  # fmt: skip
    return docs


def _columns(doc_id: str, company: str, positions: list[int], words: int, occ: dict,
             chunks: Sequence[Chunk], model: TermModel, floor: float) -> DocTerms:
    """One document's ``DocTerms`` from its occurrences by type: every type scored, those a
    defence may treat described in columns."""
    every = list(occ)
    z = model.score(company, every)
    only = model.exclusive(every)
    rows = []
    for k, zk, ok in zip(every, z, only, strict=True):
        if zk < floor and not ok:
            continue  # never treated: only its membership is asked (an own name needs ``only``)
        found = occ[k]  # (chunk position, occurrence_rows' tuple)
        surface = Counter(o[3] for _, o in found).most_common(1)[0][0]
        cap = sum(o[3][0].isupper() for _, o in found) > len(found) / 2
        frame = found[0][1][5]
        if zk < floor and not is_own_name(float(zk), bool(ok), frame, surface, cap):
            continue
        cat = Counter(_category_at(chunks[p], o[0], o[1]) for p, o in found).most_common(1)[0][0]
        rows.append((k, float(zk), found[0][1][4], sum(o[4] for _, o in found), cap,
                     CATEGORIES.index(cat), SHAPES.index(word_shape(surface)), bool(ok), surface, frame))
    rows.sort(key=lambda r: r[0])
    found_all = [occ[r[0]] for r in rows]
    ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(f) for f in found_all], out=ptr[1:])
    flat = [po for f in found_all for po in f]
    col = list(zip(*rows, strict=True)) if rows else [()] * 10
    return DocTerms(
        doc_id, company, positions, words, tuple(sorted(every)), list(col[0]),
        np.array(col[1], dtype=float), np.array(col[2], dtype=np.int8), np.array(col[3], dtype=np.int32),
        np.array(col[4], dtype=bool), np.array(col[5], dtype=np.int8), np.array(col[6], dtype=np.int8),
        np.array(col[7], dtype=bool), list(col[8]), list(col[9]), ptr,
        np.array([p for p, _ in flat], dtype=np.int32), np.array([o[0] for _, o in flat], dtype=np.int32),
        np.array([o[1] for _, o in flat], dtype=np.int32), [o[3] for _, o in flat], floor)


def ranked_candidates(d: DocTerms, min_z: float, rank: str = "z") -> list[str]:
    """Candidate types with z >= min_z, best first: by z, or by z per word changed weighted by
    the sublinear tf an attacker gives them (``per_cost``: z·(1+log n)/cost)."""
    if min_z < d.floor:
        raise ValueError(f"document {d.doc_id}'s terms keep the details of types with z >= "
                         f"{d.floor:g} only; rank them with min_z >= {d.floor:g} or build them "
                         f"with document_terms(..., min_z={min_z:g})")
    rows = np.flatnonzero(d.zs >= min_z).tolist()
    z = d.zs.tolist()
    if rank == "z":
        pri = {i: z[i] for i in rows}
    else:
        counts = np.diff(d.occ_ptr).tolist()
        pri = {i: z[i] * (1 + math.log(counts[i])) / int(d.costs[i]) for i in rows}
    return [d.keys[i] for i in sorted(rows, key=lambda i: (-pri[i], d.keys[i]))]


def select_terms(d: DocTerms, order: Sequence[str], budget_words: float) -> list[str]:
    """Types in ``order`` until ``budget_words`` changed words are spent (a bigram whose words
    are already selected as unigrams costs nothing more and is skipped)."""
    chosen, spent, covered = [], 0.0, set()
    phrases = d.phrase_index()
    for k in order:
        if k in covered:
            continue
        c = d.cost(k)
        if spent + c > budget_words + 1e-9:
            continue
        chosen.append(k)
        spent += c
        covered.add(k)
        if " " not in k:  # every bigram holding this word is now treated through it
            covered.update(phrases.get(k, ()))
    return chosen
