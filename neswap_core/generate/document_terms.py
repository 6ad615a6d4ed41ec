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
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

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


def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS | _EXTRA_STOP)


STOP = _stop_words()


def eligible(word: str) -> bool:
    """Whether a token may be treated: not a stop word, a number, a short lower-case word or a
    tone word (nor a hyphenated word holding one)."""
    low = word.lower()
    return (len(low) >= 2 and low not in STOP and not low.isdigit()
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


def is_frame_word(word: str) -> bool:
    """A neighbour that frames a word: a stop word or a tone word of two letters or more (an
    attacker's word bigrams read "coming into", "our defense", "strong bookings"; only the other
    word may change, so function words and tone stay)."""
    low = word.lower()
    return len(low) >= 2 and low.isalpha() and (low in STOP or is_tone_word(low))


def occurrences(text: str, frames: bool = True) -> list[Occurrence]:
    """Every eligible unigram and adjacent two-word phrase of ``text`` outside placeholders, and
    (``frames``) every eligible word framed by a stop or tone word beside it ("coming into": the
    type is the phrase, only "coming" changes)."""
    blocked = [m.span() for m in PLACEHOLDER.finditer(text)]
    toks = [m for m in TOKEN.finditer(text) if not any(s <= m.start() < e for s, e in blocked)]
    ok = [eligible(m.group()) for m in toks]
    out = []
    for i, m in enumerate(toks):
        if i + 1 < len(toks):
            nxt = toks[i + 1]
            joined = text[m.end():nxt.start()] == " "
        else:
            nxt, joined = m, False  # the last token: nothing follows it (``joined`` guards ``nxt``)
        if not ok[i]:
            if frames and joined and ok[i + 1] and is_frame_word(m.group()):
                key = f"{m.group().lower()} {nxt.group().lower()}"
                out.append(Occurrence(nxt.start(), nxt.end(), key, nxt.group(), 1,
                                      f"{m.group().lower()} _"))  # fmt: skip
            continue
        out.append(Occurrence(m.start(), m.end(), m.group().lower(), m.group(), 1))
        if joined and ok[i + 1]:
            s = text[m.start():nxt.end()]
            out.append(Occurrence(m.start(), nxt.end(), s.lower(), s, 2))
        elif frames and joined and is_frame_word(nxt.group()):
            out.append(Occurrence(m.start(), m.end(), f"{m.group().lower()} {nxt.group().lower()}",
                                  m.group(), 1, f"_ {nxt.group().lower()}"))  # fmt: skip
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
    rows, cols = [], []
    where = {c: i for i, c in enumerate(classes)}
    for text, label in zip(texts, labels, strict=True):
        for o in occurrences(text):
            rows.append(where[label])
            cols.append(vocab.setdefault(o.key, len(vocab)))
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
DOCTERMS_LAYOUT = 2


def is_name(surface: str) -> bool:
    """Every word of ``surface`` starts with a capital ("Tellurium Cloud", not "Cloud markets")."""
    return all(word[:1].isupper() for word in surface.split(" "))


@dataclass
class DocTerms:
    """The candidate types of one document with their occurrences, cost and score.

    ``types`` holds every type of the document; ``occ``, ``score``, ``kind``, ``surface``,
    ``only`` and ``frame`` only the types a defence can treat: z >= ``floor`` and the
    document's own names (``own_name``). ``document_terms(..., min_z=)`` sets the floor; the
    rest are most of a document's types (a share that grows with the corpus: two thirds at 30k
    synthetic passages) and only their membership is ever asked (issue 21)."""

    doc_id: str
    company: str
    positions: list[int]  # chunk positions of the document
    words: int  # \w+ tokens of the document
    occ: dict = field(default_factory=dict)  # key -> [(position, Occurrence)]
    score: dict = field(default_factory=dict)  # key -> z
    kind: dict = field(default_factory=dict)  # key -> (n words, capitalised, category, shape)
    surface: dict = field(default_factory=dict)  # key -> most frequent surface form
    only: set = field(default_factory=set)  # keys no other company's corpus documents use
    frame: dict = field(default_factory=dict)  # framed keys -> frame ("_ into"), others absent
    types: frozenset = field(default_factory=frozenset)  # every type, with details or not
    floor: float = -math.inf  # every type with z >= floor has its details
    _phrases: dict | None = field(default=None, repr=False, compare=False)

    def cost(self, key: str) -> int:
        """Words changed when ``key`` is treated at every occurrence."""
        return sum(o.n for _, o in self.occ[key])

    def own_words(self) -> set[str]:
        """The words of the document's unframed types: its eligible words (every word of an
        unframed phrase is a type of its own)."""
        return {k for k in self.types if " " not in k}

    def phrases_holding(self, word: str) -> list[str]:
        """The two-word types (phrases and framed words) with details that hold ``word``:
        treating the word at every occurrence treats them too. Indexed once per document
        (selection asks for every selected word; a scan of every type each time was
        quadratic). Only types with details are ever selected, so only they are indexed."""
        if self._phrases is None:
            index: dict[str, list[str]] = defaultdict(list)
            for key in self.occ:
                if " " in key:
                    for w in dict.fromkeys(key.split(" ")):
                        index[w].append(key)
            self._phrases = dict(index)
        return self._phrases.get(word, [])


def own_name(d: DocTerms, key: str) -> bool:
    """Whether ``key`` is one of the document's own names: a capitalised, unframed type with a
    positive z that no other company of the corpus uses, written as a name
    (``document_budget.named_types`` treats these first, with no z floor)."""
    return (d.score[key] >= POSITIVE_Z and key in d.only and key not in d.frame and is_name(d.surface[key])
            and d.kind[key][1])


def _category_at(chunk: Chunk, o: Occurrence) -> str:
    for s in chunk.entities:
        if s.start < o.end and o.start < s.end and s.category in GENERIC:
            return s.category
    return ""


def _shared(o: Occurrence, strings: dict[str, str]) -> Occurrence:
    """``o`` with its key, surface and frame replaced by the first equal string seen (one
    object per distinct string instead of one per occurrence)."""
    key = strings.setdefault(o.key, o.key)
    surface = strings.setdefault(o.surface, o.surface)
    frame = strings.setdefault(o.frame, o.frame)
    if key is o.key and surface is o.surface and frame is o.frame:
        return o
    return Occurrence(o.start, o.end, key, surface, o.n, frame)


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
    for doc_id, positions in by_doc.items():  # one document at a time: only its details stay
        d = docs[doc_id] = DocTerms(doc_id, chunks[positions[0]].protected, positions, 0)
        for p in positions:
            d.words += len(_WORDS.findall(chunks[p].text))
            for o in occurrences(chunks[p].text):
                o = _shared(o, strings)
                d.occ.setdefault(o.key, []).append((p, o))
        _describe(d, chunks, model, floor)
    return docs


def _describe(d: DocTerms, chunks: Sequence[Chunk], model: TermModel, floor: float) -> None:
    """Score ``d``'s types and describe those a defence may treat; drop the others' details."""
    keys = list(d.occ)
    d.score = {k: float(z) for k, z in zip(keys, model.score(d.company, keys), strict=True)}
    d.only = {k for k, one in zip(keys, model.exclusive(keys), strict=True) if one}
    for k, occ in d.occ.items():
        if d.score[k] < floor and k not in d.only:
            continue  # never treated: only its membership is asked (an own name needs ``only``)
        surface = Counter(o.surface for _, o in occ).most_common(1)[0][0]
        cap = sum(o.surface[0].isupper() for _, o in occ) > len(occ) / 2
        cat = Counter(_category_at(chunks[p], o) for p, o in occ).most_common(1)[0][0]
        d.surface[k], d.kind[k] = surface, (occ[0][1].n, cap, cat, word_shape(surface))
        if occ[0][1].frame:
            d.frame[k] = occ[0][1].frame
    d.types, d.floor = frozenset(keys), floor
    if floor > -math.inf:  # new dicts, not deletions: a dict keeps its table when emptied
        keep = {k for k in keys if d.score[k] >= floor or (k in d.surface and own_name(d, k))}
        d.occ = {k: v for k, v in d.occ.items() if k in keep}
        d.score = {k: v for k, v in d.score.items() if k in keep}
        d.surface = {k: v for k, v in d.surface.items() if k in keep}
        d.kind = {k: v for k, v in d.kind.items() if k in keep}
        d.frame = {k: v for k, v in d.frame.items() if k in keep}
        d.only = d.only & keep


def ranked_candidates(d: DocTerms, min_z: float, rank: str = "z") -> list[str]:
    """Candidate types with z >= min_z, best first: by z, or by z per word changed weighted by
    the sublinear tf an attacker gives them (``per_cost``: z·(1+log n)/cost)."""
    if min_z < d.floor:
        raise ValueError(f"document {d.doc_id}'s terms keep the details of types with z >= "
                         f"{d.floor:g} only; rank them with min_z >= {d.floor:g} or build them "
                         f"with document_terms(..., min_z={min_z:g})")
    keys = [k for k, z in d.score.items() if z >= min_z]
    if rank == "z":
        pri = {k: d.score[k] for k in keys}
    else:
        pri = {k: d.score[k] * (1 + math.log(len(d.occ[k]))) / d.cost(k) for k in keys}
    return sorted(keys, key=lambda k: (-pri[k], k))


def select_terms(d: DocTerms, order: Sequence[str], budget_words: float) -> list[str]:
    """Types in ``order`` until ``budget_words`` changed words are spent (a bigram whose words
    are already selected as unigrams costs nothing more and is skipped)."""
    chosen, spent, covered = [], 0.0, set()
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
            covered.update(d.phrases_holding(k))
    return chosen
