"""Valid swap pairs (SPEC §3): counted and drawn uniformly without an n × n matrix.

A pair (i, j) is valid iff the chunks come from different protected values, share a cluster,
their S values differ (every S category with both chunks non-empty for ``require="all"``, at
least one such category for ``"any"``), some non-S value differs, and neither was swapped.
Values are the z cells of SPEC §1 (``contingency.cell_value``), compared as strings.

How (exact, O(2^(|S|+2)·n) to start, O(cluster size) per draw): every chunk gets integer codes
(cluster, protected value, one code per S cell, one code for the tuple of non-S cells). The
number of valid partners of each chunk (its *degree*) follows by inclusion–exclusion over
"agrees on attribute" events, each term a group-size lookup. A pair is drawn by picking chunk i
with probability d_i / Σd and then a uniform valid partner of i: the unordered pair {i, j} has
probability d_i/Σd · 1/d_i + d_j/Σd · 1/d_j = 2/Σd, exactly uniform among the currently valid
pairs (integer draws, no floating-point weights). After a draw both chunks leave and the degrees
of their partners drop by one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..config import CATEGORIES
from ..corpus import Chunk
from ..errors import ConfigError, CorpusError
from ..text.contingency import cell_value
from .rewrite import validate_roles

REQUIRE_OPTIONS: tuple[str, ...] = ("all", "any")


@dataclass(frozen=True)
class PairCodes:
    """Integer codes of every chunk for the pair constraints (one row per chunk)."""

    categories: tuple[str, ...]  # the S categories, in the order of the ``swap`` columns
    require: str  # "all" or "any"
    cluster: np.ndarray  # dense cluster code per chunk
    clusters: np.ndarray  # the original cluster label of each dense code
    protected: np.ndarray  # code of the protected value c_i
    swap: np.ndarray  # (n, |S|) code of each S cell, -1 when empty
    other: np.ndarray  # code of the tuple of non-S cells

    @property
    def n(self) -> int:
        return int(self.cluster.size)

    @property
    def eligible(self) -> np.ndarray:
        """Chunks that can be in any pair: every S cell non-empty ("all"), or one ("any")."""
        present = self.swap >= 0
        return np.asarray(present.all(axis=1) if self.require == "all" else present.any(axis=1))

    def restrict(self, category: str) -> PairCodes:
        """The same codes with ``category`` as the only S category (for diagnostics)."""
        k = self.categories.index(category)
        return replace(self, categories=(category,), swap=self.swap[:, [k]])


def resolve_categories(
    roles: Mapping[str, str] | Sequence[str] | str,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(S categories, C categories) from a roles mapping or from a list of S categories."""
    if isinstance(roles, Mapping):
        full = validate_roles(roles)
        swap = tuple(c for c in CATEGORIES if full[c] == "S")
        ignored = tuple(c for c in CATEGORIES if full[c] == "C")
    else:
        swap = (roles,) if isinstance(roles, str) else tuple(roles)
        ignored = ()
    unknown = [c for c in swap if c not in CATEGORIES]
    if unknown:
        raise ConfigError(f"Unknown swap categories {unknown}; known: {list(CATEGORIES)}.")
    if not swap:
        raise ConfigError("No category has role S: give at least one category to swap.")
    if len(set(swap)) != len(swap):
        raise ConfigError(f"Swap categories are repeated: {list(swap)}; name each once.")
    return swap, ignored


def _check_inputs(
    chunks: Sequence[Chunk], labels: np.ndarray | Sequence[int], require: str
) -> np.ndarray:
    if require not in REQUIRE_OPTIONS:
        raise ConfigError(f"require must be 'all' or 'any', got {require!r}.")
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.size != len(chunks):
        raise CorpusError(
            f"Need one cluster label per chunk: got {labels.size} labels for {len(chunks)} "
            "chunks; pass the MAP labels of the mixture fitted on these chunks."
        )
    if labels.size and labels.dtype.kind not in "iu":
        raise CorpusError(
            f"Cluster labels must be integers (MAP labels), got dtype {labels.dtype}."
        )
    ids = [c.chunk_id for c in chunks]
    if len(set(ids)) != len(ids):
        raise CorpusError("Chunk ids are not unique; rebuild the chunks with corpus.chunk_id().")
    return labels.astype(np.int64)


def _combine(ids: np.ndarray, column: np.ndarray) -> np.ndarray:
    """Dense group ids of the rows' (group, column value) pairs; column values are >= -1."""
    key = ids * (int(column.max(initial=-1)) + 2) + (column + 1)
    return np.unique(key, return_inverse=True)[1].astype(np.int64)


def _code(table: dict, value: object) -> int:
    """Dense code of ``value`` in ``table`` (first come, first numbered)."""
    return table.setdefault(value, len(table))


def pair_codes(
    chunks: Sequence[Chunk],
    labels: np.ndarray | Sequence[int],
    categories: Sequence[str],
    require: str = "all",
    ignore: Sequence[str] = (),
) -> PairCodes:
    """Codes of the chunks for the constraints of SPEC §3; ``ignore``: categories never compared.

    The non-S categories are all categories found in the chunks except S and ``ignore``
    (C categories, which are placeholders everywhere after ``apply_roles``); a chunk's non-S
    key lists only its non-empty cells, which compares exactly like the full tuple.
    """
    labels = _check_inputs(chunks, labels, require)
    skip = set(categories) | set(ignore)
    swap = np.full((len(chunks), len(categories)), -1, dtype=np.int64)
    other = np.empty(len(chunks), dtype=np.int64)
    protected = np.empty(len(chunks), dtype=np.int64)
    swap_tables: list[dict[str, int]] = [{} for _ in categories]
    other_table: dict[tuple[tuple[str, str], ...], int] = {}
    protected_table: dict[str, int] = {}
    for row, chunk in enumerate(chunks):
        texts: dict[str, list[str]] = {}
        for span in chunk.entities:
            texts.setdefault(span.category, []).append(span.text)
        for k, category in enumerate(categories):
            if category in texts:
                swap[row, k] = _code(swap_tables[k], cell_value(texts[category]))
        key = tuple(sorted((c, cell_value(v)) for c, v in texts.items() if c not in skip))
        other[row] = _code(other_table, key)
        protected[row] = _code(protected_table, chunk.protected)
    clusters, cluster = np.unique(labels, return_inverse=True)
    return PairCodes(
        categories=tuple(categories),
        require=require,
        cluster=cluster.astype(np.int64),
        clusters=clusters,
        protected=protected,
        swap=swap,
        other=other,
    )


# --- degrees by inclusion–exclusion -------------------------------------------------------------
def _sizes(ids: np.ndarray) -> np.ndarray:
    return np.bincount(ids)[ids]


def _degrees_all(codes: PairCodes, rows: np.ndarray) -> np.ndarray:
    """Valid partners when every S value must differ: Σ_A (-1)^|A| (|group agreeing on A| - 1)."""
    attrs = [codes.protected[rows], codes.other[rows]] + [
        codes.swap[rows, k] for k in range(len(codes.categories))
    ]
    total = np.zeros(rows.size, dtype=np.int64)

    def visit(ids: np.ndarray, start: int, sign: int) -> None:
        nonlocal total
        total = total + sign * (_sizes(ids) - 1)
        for t in range(start, len(attrs)):
            visit(_combine(ids, attrs[t]), t + 1, -sign)

    visit(_combine(np.zeros(rows.size, dtype=np.int64), codes.cluster[rows]), 0, 1)
    return total


def _not_any_counts(codes: PairCodes, rows: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Per row i: #{j agreeing with i on ``ids`` whose S values are each empty or equal to i's}.

    For i's non-empty S categories U, j's value on each s in U is either -1 or i's value: the
    disjoint cases T ⊆ U (j empty on T, equal on U \\ T) are group lookups.
    """
    swap = codes.swap[rows]
    pattern = ((swap >= 0) * (1 << np.arange(swap.shape[1]))).sum(axis=1)
    counts = np.zeros(rows.size, dtype=np.int64)
    for u in np.unique(pattern):
        cols = [k for k in range(swap.shape[1]) if u >> k & 1]
        query = np.flatnonzero(pattern == u)
        subsets = [[k for j, k in enumerate(cols) if t >> j & 1] for t in range(1 << len(cols))]
        key = np.concatenate([ids] + [ids[query]] * len(subsets))
        for k in cols:
            blocks = [swap[:, k]] + [
                np.full(query.size, -1) if k in sub else swap[query, k] for sub in subsets
            ]
            key = _combine(key, np.concatenate(blocks))
        sizes = np.bincount(key[: rows.size], minlength=int(key.max()) + 1)
        found = sizes[key[rows.size :]].reshape(len(subsets), query.size)
        counts[query] = found.sum(axis=0)
    return counts


def _degrees_any(codes: PairCodes, rows: np.ndarray) -> np.ndarray:
    """Valid partners when one S value must differ: #{¬E_p ∧ ¬E_o} − #{¬E_p ∧ ¬E_o ∧ no S differs}."""
    base = _combine(np.zeros(rows.size, dtype=np.int64), codes.cluster[rows])
    total = np.zeros(rows.size, dtype=np.int64)
    for use_protected in (False, True):
        for use_other in (False, True):
            ids = base
            if use_protected:
                ids = _combine(ids, codes.protected[rows])
            if use_other:
                ids = _combine(ids, codes.other[rows])
            sign = -1 if use_protected ^ use_other else 1
            total += sign * ((_sizes(ids) - 1) - (_not_any_counts(codes, rows, ids) - 1))
    return total


def valid_degrees(codes: PairCodes, alive: np.ndarray | None = None) -> np.ndarray:
    """Number of valid partners of every chunk among the ``alive`` ones (0 for the others)."""
    alive = np.ones(codes.n, dtype=bool) if alive is None else np.asarray(alive, dtype=bool)
    rows = np.flatnonzero(alive & codes.eligible)
    degrees = np.zeros(codes.n, dtype=np.int64)
    if rows.size >= 2:
        compute = _degrees_all if codes.require == "all" else _degrees_any
        degrees[rows] = compute(codes, rows)
    return degrees


def valid_mask(codes: PairCodes, i: int, candidates: np.ndarray) -> np.ndarray:
    """Which ``candidates`` form a valid pair with chunk ``i`` (the direct, per-pair test)."""
    swap_i, swap_c = codes.swap[i], codes.swap[candidates]
    if codes.require == "all":
        differ = ((swap_c != swap_i) & (swap_c >= 0)).all(axis=1) & bool((swap_i >= 0).all())
    else:
        differ = ((swap_c != swap_i) & (swap_c >= 0) & (swap_i >= 0)).any(axis=1)
    return (
        differ
        & (codes.cluster[candidates] == codes.cluster[i])
        & (codes.protected[candidates] != codes.protected[i])
        & (codes.other[candidates] != codes.other[i])
    )


def is_valid_pair(codes: PairCodes, i: int, j: int) -> bool:
    """SPEC §3 constraints 1–4 for one pair (constraint 5 is the caller's ``alive`` set)."""
    return i != j and bool(valid_mask(codes, i, np.array([j]))[0])


class PairSampler:
    """Draws valid pairs one at a time, uniformly among those currently valid (SPEC §3)."""

    def __init__(self, codes: PairCodes, degrees: np.ndarray | None = None) -> None:
        self.codes = codes
        self.alive = np.ones(codes.n, dtype=bool)
        self.degrees = (
            valid_degrees(codes) if degrees is None else np.array(degrees, dtype=np.int64)
        )
        eligible = np.flatnonzero(codes.eligible)
        order = eligible[np.argsort(codes.cluster[eligible], kind="stable")]
        bounds = np.cumsum(np.bincount(codes.cluster[order], minlength=codes.clusters.size))
        self._members = np.split(order, bounds[:-1])

    @property
    def n_pairs(self) -> int:
        """Number of currently valid pairs."""
        return int(self.degrees.sum()) // 2

    def partners(self, i: int) -> np.ndarray:
        """Alive valid partners of chunk ``i``, in index order."""
        members = self._members[self.codes.cluster[i]]
        members = members[self.alive[members]]
        return members[valid_mask(self.codes, i, members)]

    def draw(self, rng: np.random.Generator) -> tuple[int, int] | None:
        """Draw and remove one uniformly random valid pair; ``None`` when none is left."""
        total = int(self.degrees.sum())
        if total == 0:
            return None
        i = int(np.searchsorted(np.cumsum(self.degrees), int(rng.integers(total)), side="right"))
        partners_i = self.partners(i)
        assert partners_i.size == self.degrees[i], "pair degrees out of step with the partners"
        j = int(partners_i[int(rng.integers(partners_i.size))])
        self._remove(i, partners_i)
        self._remove(j, self.partners(j))
        return i, j

    def _remove(self, i: int, partners: np.ndarray) -> None:
        self.alive[i] = False
        self.degrees[partners] -= 1
        self.degrees[i] = 0


# --- counts and diagnostics ---------------------------------------------------------------------
def count_valid_pairs(
    chunks: Sequence[Chunk],
    labels: np.ndarray | Sequence[int],
    roles: Mapping[str, str] | Sequence[str] | str,
    require: str = "all",
) -> int:
    """Number of valid pairs before any swap (roles mapping, or the list of S categories)."""
    categories, ignored = resolve_categories(roles)
    return int(valid_degrees(pair_codes(chunks, labels, categories, require, ignored)).sum()) // 2


def valid_pairs_by_cluster(codes: PairCodes, alive: np.ndarray | None = None) -> dict[int, int]:
    """Number of valid pairs in each cluster, keyed by the original cluster label."""
    degrees = valid_degrees(codes, alive)
    per = np.bincount(codes.cluster, weights=degrees, minlength=codes.clusters.size)
    return {int(label): int(count) // 2 for label, count in zip(codes.clusters, per, strict=True)}


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def explain_no_pairs(codes: PairCodes) -> str:
    """Why ``codes`` admit no valid pair, in the analyst's words (first failing constraint)."""
    names = " + ".join(codes.categories)
    present = (codes.swap >= 0).sum(axis=0)
    missing = [c for c, k in zip(codes.categories, present, strict=True) if k == 0]
    if codes.require == "all" and missing:
        return "no chunk has " + " or ".join(f"{_article(c)} {c} entity" for c in missing)
    if len(missing) == len(codes.categories):
        return f"no chunk has an entity of {names}"
    eligible = int(codes.eligible.sum())
    if eligible < 2:
        if codes.require == "all":
            return (
                f"only {eligible} chunk has an entity in every one of {names} "
                "(require='any' asks for one of them only)"
            )
        return f"only {eligible} chunk has an entity of {names}"
    distinct = np.arange(codes.n, dtype=np.int64)
    free = replace(codes, other=distinct)
    free_s = replace(free, swap=np.where(codes.swap >= 0, distinct[:, None], -1))
    if valid_degrees(free_s).sum() == 0:
        return (
            f"the {eligible} chunks with {names} entities never share a cluster with a chunk "
            "of another document"
        )
    if valid_degrees(free).sum() == 0:
        which = "one of" if codes.require == "all" else "all of"
        return (
            f"every same-cluster pair from different documents has identical values in "
            f"{which} {names}"
        )
    return (
        "every remaining candidate pair has identical values in all other categories "
        "(the swap would only re-index the chunks)"
    )
