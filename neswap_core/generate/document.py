"""Document-level defence (SPEC §12, issue 22): a document's distinctive types exchanged with
those of a similar document of another company, at every occurrence.

Measured on the dev corpus (scratch/r22/FINDINGS.md): per-chunk budgets and per-chunk decoys
do not add up to a different *document*; a type left in one chunk names the document again, and
removal (masking, generic fills) only removes signal, never points anywhere else. So:

* ``pair_documents`` — each document gets a partner document of **another company**, drawn
  uniformly among its ``top_k`` most similar ones (TF-IDF cosine of whole documents); pairs are
  mutual, an odd count closes with a 3-cycle (a document that has no possible partner is masked);
* ``replacements`` — a selected type takes the partner's distinctive type of the same kind (same
  number of words and ``word_shape``, preferably the same capitalisation and entity category)
  at the same rank, so the two documents exchange vocabulary both ways; a framed word ("coming
  into") takes, first, the partner's word in the same frame ("heading into"); ``fill = "mask"`` writes
  ``[…]``, ``"generic"`` a generic phrase of the entity's kind ("the region"), ``"pair+generic"``
  entities generic and other types paired;
* ``apply_defence`` — every selected type is treated at **every** occurrence in its document
  (document-consistent treatment; an occurrence right after a placeholder is masked rather than
  paired: "[Company Name] Group" would read as the residue of another company's alias, which the
  leak scan rightly blocks), and a mask takes the legal suffix that follows it ("ANZ Banking
  Group" → "[…]", never "[…] Group"); optional rounding of exact figures ("$61.1 billion" → "about
  $61 billion"). Tone words and placeholders are never candidates (``document_terms.eligible``).
  It returns the released chunks and one ``Change`` per changed occurrence, keyed by document
  and type: a reviewer rejects a type, and all of its occurrences stay (a half-treated type
  names the document again).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ..config import MASK_PLACEHOLDER
from ..config.defaults import DEFAULT_DOCUMENT_CANDIDATES
from ..corpus import Chunk
from ..text.corporate import legal_suffix_end
from .document_terms import (
    GENERIC,
    PLACEHOLDER,
    DocTerms,
    Occurrence,
    TermModel,
    document_terms,
    ranked_candidates,
    select_terms,
)

DETERMINERS = {"the", "our", "its", "their", "a", "an", "this", "that", "these", "those", "your",
               "his", "her"}  # fmt: skip
FILLS = ("pair", "mask", "generic", "pair+generic")
#: Text ending in a placeholder: a word right after one is masked, never paired (module docstring).
AFTER_PLACEHOLDER = re.compile(r"\]\s*$")


@dataclass(frozen=True)
class DefenceParams:
    """``level``: share of each document's words the defence may change; ``min_z``: z floor of a
    candidate type; ``rank``: "z" | "per_cost"; ``fill``: one of ``FILLS``; ``top_k``: partners
    drawn among the top_k most similar documents; ``round_figures``: also round decimal figures
    (not counted in ``level``)."""

    level: float = 0.14
    min_z: float = 0.5
    rank: str = "z"
    fill: str = "pair"
    top_k: int = 3
    round_figures: bool = False

    def describe(self) -> str:
        what = {"pair": "exchanged with a similar document of another company", "mask": "masked",
                "generic": "replaced by generic phrases",
                "pair+generic": "exchanged (entities: generic phrases)"}[self.fill]  # fmt: skip
        text = f"document defence: up to {100 * self.level:.0f} % of each document's words {what}"
        return text + (", figures rounded" if self.round_figures else "")


@dataclass(frozen=True)
class Change:
    """One changed occurrence: offsets in the chunk's text before the defence, what it became,
    ``kind`` ("pair" | "mask" | "generic" | "round"), the type (``term``) and its z."""

    chunk_id: str
    doc_id: str
    start: int
    end: int
    before: str
    after: str
    kind: str
    term: str = ""
    score: float = 0.0
    partner_doc: str = ""

    @property
    def key(self) -> str:
        """The review key: one decision per document and type (every occurrence)."""
        return f"{self.doc_id}|{self.term}"

    def to_dict(self) -> dict:
        return {"kind": self.kind, "document": self.doc_id, "chunk": self.chunk_id,
                "term": self.term, "before": self.before, "after": self.after,
                "z": round(self.score, 3), "start": self.start, "end": self.end,
                "partner document": self.partner_doc, "key": self.key}  # fmt: skip


@dataclass
class DefenceResult:
    """The released chunks, their changes, the pairing and each document's treated types."""

    chunks: list[Chunk]
    changes: list[Change]
    partner: dict[str, str] = field(default_factory=dict)
    selected: dict[str, list[str]] = field(default_factory=dict)

    def changed(self, base: Sequence[Chunk]) -> dict[int, Chunk]:
        """{position: released chunk} of the chunks whose text changed."""
        return {p: c for p, c in enumerate(self.chunks) if c.text != base[p].text}


def pair_documents(chunks: Sequence[Chunk], rng: np.random.Generator, top_k: int = 3) -> dict[str, str]:
    """Partner document of each document (never one of the same company; module docstring).

    A document's similarities to the others are one row of the TF-IDF Gram matrix, made when
    that document is paired (the same sparse products, so the same bits, as the whole matrix);
    the whole matrix was documents² floats (issue 21: 0.3 GB at 6,350 documents, 32 GB at a
    million passages) and its pairing loop documents² Python steps."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    texts: dict[str, list[str]] = defaultdict(list)
    comp: dict[str, str] = {}
    for c in chunks:
        texts[c.doc_id].append(c.text)
        comp[c.doc_id] = c.protected
    ids = sorted(texts)
    if len(set(comp.values())) < 2:
        return {}
    x = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1).fit_transform(
        [" ".join(texts[i]) for i in ids])
    xt = x.T.tocsr()
    company = np.unique([comp[i] for i in ids], return_inverse=True)[1]

    def most_similar(i: int) -> np.ndarray:  # every document, most similar to i first
        return np.argsort(-(x[i] @ xt).toarray().ravel(), kind="stable")

    partner: dict[str, str] = {}
    free = np.ones(len(ids), dtype=bool)
    for i in rng.permutation(len(ids)):
        if not free[i]:
            continue
        order = most_similar(i)
        options = order[free[order] & (company[order] != company[i]) & (order != i)][:top_k]
        if not len(options):
            continue
        j = options[int(rng.integers(len(options)))]
        free[i] = free[j] = False
        partner[ids[i]], partner[ids[j]] = ids[j], ids[i]
    for i in np.flatnonzero(free).tolist():  # odd ones out: a 3-cycle with a pair of two other companies
        for j in most_similar(i):
            a = ids[j]
            if a in partner and comp[a] != comp[ids[i]] and comp[partner[a]] != comp[ids[i]] \
                    and partner[partner[a]] == a:
                b = partner[a]
                partner[a], partner[ids[i]], partner[b] = ids[i], b, a  # a -> i -> b -> a
                break
    return partner


def _cased(original: str, new: str) -> str:
    if original.isupper() and len(original) > 1 and not new.isupper():
        return new if any(ch.isupper() for ch in new) else new.upper()
    if original[0].isupper() and new[0].islower():
        return new[0].upper() + new[1:]
    return new


def replacements(d: DocTerms, chosen: Sequence[str], fill: str, donor: DocTerms | None,
                 donor_order: Sequence[str]) -> dict[str, tuple[str, str]]:
    """type -> (kind, replacement surface or category) for every chosen type of ``d``.

    A paired type takes the donor's type of the same kind (same number of words and shape,
    preferably same capitalisation and entity category) at the same rank, never one holding a
    word that ``d`` itself uses (so no treated type comes back through a replacement); a framed
    word takes the donor's word in the same frame first ("coming into" -> "heading into"), then
    a word of its kind; a type with no donor type of its number of words and shape is masked."""
    out = {}
    pools: dict[tuple, list[str]] = defaultdict(list)
    own_words = d.own_words()
    low: dict[str, str] = {}  # donor type -> its surface, lower-cased
    if donor is not None:
        for k in donor_order:
            j = donor.index(k)
            if any(w in own_words for w in _changed_words(donor, j)):
                continue  # it would bring back a word of d (possibly one being treated)
            n, cap, cat, shape = donor.kind_of(j)
            low[k] = donor.surfaces[j].lower()
            if donor.frames[j]:  # a framed word replaces a word in the same frame first
                pools[("frame", donor.frames[j], cap, shape)].append(k)
                continue
            pools[(n, cap, cat, shape)].append(k)
            if cat:
                pools[(n, cap, "", shape)].append(k)
            pools[(n, shape)].append(k)
    used: Counter = Counter()
    for key in chosen:
        i = d.index(key)
        n, cap, cat, shape = d.kind_of(i)
        if fill in ("generic", "pair+generic") and cat:
            out[key] = ("generic", cat)
            continue
        if fill in ("mask", "generic") or donor is None:
            out[key] = ("mask", MASK_PLACEHOLDER)
            continue
        pool, pk = [], None
        tries: tuple[tuple, ...] = ((n, cap, cat, shape), (n, cap, "", shape), (n, shape))
        if d.frames[i]:
            tries = (("frame", d.frames[i], cap, shape), *tries)
        mine = d.surfaces[i].lower()
        for pk in tries:
            pool = [k for k in pools.get(pk, ()) if k != key and low[k] != mine]
            if pool:
                break
        if not pool:
            out[key] = ("mask", MASK_PLACEHOLDER)
            continue
        out[key] = ("pair", donor.surfaces[donor.index(pool[used[pk] % len(pool)])])
        used[pk] += 1
    return out


def _changed_words(d: DocTerms, i: int) -> list[str]:
    """The words a treatment of the type at row ``i`` writes or removes (a framed word: that
    word only)."""
    return [d.surfaces[i].lower()] if d.frames[i] else d.keys[i].split(" ")


def occurrence_text(chunk_text: str, o: Occurrence, kind: str, what: str) -> str:
    """The text an occurrence becomes under a fill (kind, what)."""
    if kind == "generic":
        phrase = GENERIC[what]
        before = chunk_text[:o.start].split()
        after = phrase.split(" ", 1)[1] if before and before[-1].lower() in DETERMINERS else phrase
        sentence_start = o.start == 0 or chunk_text[max(0, o.start - 2):o.start - 1] in ".!?"
        return _cased(o.surface, after) if sentence_start else after
    if kind == "pair":
        if AFTER_PLACEHOLDER.search(chunk_text[:o.start]):
            return MASK_PLACEHOLDER  # "[Company Name] Group" would read as another alias's residue
        return _cased(o.surface, what)
    return what


def rewrite(chunk: Chunk, edits: list[tuple], partner_doc: str = "") -> tuple[Chunk, list[Change]]:
    """Apply non-overlapping edits (start, end, after, kind, term, score) to ``chunk``, the
    longest first where two start together; entity spans an edit touches are dropped."""
    kept, last = [], -1
    for e in sorted(edits, key=lambda e: (e[0], -(e[1] - e[0]))):
        if e[0] >= last:
            kept.append(e)
            last = e[1]
    text, pieces, pos, bounds, changes = chunk.text, [], 0, [], []
    for s, e, after, kind, term, score in kept:
        pieces += [text[pos:s], after]
        bounds.append((s, e, len(after) - (e - s)))
        changes.append(Change(chunk.chunk_id, chunk.doc_id, s, e, text[s:e], after, kind, term,
                              float(score), partner_doc))  # fmt: skip
        pos = e
    pieces.append(text[pos:])
    spans = []
    for sp in chunk.entities:
        if any(s < sp.end and sp.start < e for s, e, _ in bounds):
            continue
        shift = sum(dl for s, e, dl in bounds if e <= sp.start)
        spans.append(replace(sp, start=sp.start + shift, end=sp.end + shift))
    return replace(chunk, text="".join(pieces), entities=tuple(spans)), changes


FIGURE = re.compile(r"(?<![\w.])(\$)?(\d{1,3}(?:,\d{3})+|\d+)\.(\d+)(\s?(?:%|percent\b|billion\b|million\b))?")


def _round2(value: float) -> str:
    if value == 0:
        return "0"
    digits = 2 - int(math.floor(math.log10(abs(value)))) - 1
    return f"{round(value, digits):,.{digits}f}" if digits > 0 else f"{int(round(value, digits)):,}"


def round_figure_edits(text: str) -> list[tuple]:
    """Edits that round decimal figures to two significant digits, prefixed "about"."""
    edits = []
    blocked = [m.span() for m in PLACEHOLDER.finditer(text)]
    for m in FIGURE.finditer(text):
        if any(s <= m.start() < e for s, e in blocked):
            continue
        value = float((m.group(2) + "." + m.group(3)).replace(",", ""))
        new = _round2(value)
        if float(new.replace(",", "")) == value:
            continue
        body = (m.group(1) or "") + new + (m.group(4) or "")
        prev = text[max(0, m.start() - 6):m.start()].lower()
        edits.append((m.start(), m.end(), body if "about" in prev else "about " + body, "round",
                      m.group(0), 0.0))  # fmt: skip
    return edits


def fill_plan(docs: dict[str, DocTerms], params: DefenceParams, partner: dict[str, str],
              orders: dict[str, list[str]], n_candidates: int = DEFAULT_DOCUMENT_CANDIDATES) -> dict[str, dict]:
    """doc id -> {type: (kind, replacement)} for the ``n_candidates`` best types of each document
    (fixed before selection, so a type always gets the same replacement)."""
    out = {}
    for i, d in docs.items():
        donor = docs.get(partner.get(i, ""))
        donor_order = [k for k in orders[donor.doc_id] if not d.has_type(k)] if donor else []
        out[i] = replacements(d, orders[i][:n_candidates], params.fill, donor, donor_order)
    return out


class _Orders(dict):
    """Doc id -> ``ranked_candidates`` of its terms, each made on first use: a level whose
    selection and fills are given needs none (issue 21: every document ranked again at each of
    six levels was a tenth of applying them at 10k passages)."""

    def __init__(self, docs: dict[str, DocTerms], params: DefenceParams):
        super().__init__()
        self._docs, self._params = docs, params

    def __missing__(self, doc_id: str) -> list[str]:
        order = self[doc_id] = ranked_candidates(self._docs[doc_id], self._params.min_z, self._params.rank)
        return order


def apply_defence(chunks: Sequence[Chunk], model: TermModel | None, params: DefenceParams,
                  rng: np.random.Generator, *, selected: dict[str, list[str]] | None = None,
                  partner: dict[str, str] | None = None, fills: dict | None = None,
                  rejected: frozenset[str] = frozenset(), docs: dict[str, DocTerms] | None = None
                  ) -> DefenceResult:
    """Document-consistent treatment of each document's distinctive types (module docstring).

    ``selected`` (doc id -> types) overrides the z-ranked selection (the budget defender of
    ``document_budget.py`` passes its own), ``partner`` the pairing, ``fills`` the replacements;
    ``rejected``: ``Change.key`` values a reviewer rejected (left out at every occurrence);
    ``docs``: the documents' scored terms (``document_terms``), else ``model`` scores them."""
    chunks = list(chunks)
    if docs is None:
        if model is None:
            raise ValueError("apply_defence needs the documents' terms or a fitted TermModel")
        docs = document_terms(chunks, model, params.min_z)
    orders = _Orders(docs, params)  # each document's ranking made when it is needed only
    if selected is None:
        selected = {i: select_terms(d, orders[i], params.level * d.words) for i, d in docs.items()}
    if partner is None:
        partner = pair_documents(chunks, rng, params.top_k) if "pair" in params.fill else {}
    fills = {i: dict((fills or {}).get(i, {})) for i in docs}
    edits: dict[int, list] = defaultdict(list)
    for i, d in docs.items():
        keep = [k for k in selected.get(i, []) if f"{i}|{k}" not in rejected]
        missing = [k for k in keep if k not in fills[i]]
        if missing:
            donor = docs.get(partner.get(i, ""))
            donor_order = [k for k in orders[donor.doc_id] if not d.has_type(k)] if donor else []
            fills[i].update(replacements(d, missing, params.fill, donor, donor_order))
        for key in keep:
            kind, what = fills[i][key]
            z = float(d.zs[d.index(key)])
            for p, o in d.occurrences(key):
                after = occurrence_text(chunks[p].text, o, kind, what)
                if after == MASK_PLACEHOLDER:  # "[…] Group" would say what kind of firm it was
                    edits[p].append((o.start, legal_suffix_end(chunks[p].text, o.end), after, "mask", key, z))
                else:
                    edits[p].append((o.start, o.end, after, kind, key, z))
        if params.round_figures:
            for p in d.positions:
                edits[p] += [e for e in round_figure_edits(chunks[p].text) if f"{i}|{e[4]}" not in rejected]
    out, changes = list(chunks), []
    for p in sorted(edits):
        out[p], ch = rewrite(chunks[p], edits[p], partner.get(chunks[p].doc_id, ""))
        changes += ch
    return DefenceResult(out, changes, partner, selected)
