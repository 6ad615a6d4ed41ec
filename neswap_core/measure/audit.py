"""The divergence audit of a corpus or a release, per document and corpus-wide (SPEC §9).

For every document, P0 = its chunk embeddings and P1 = all other chunks; ``RenyiAudit`` estimates
D̂_α in both directions (``renyi``), the bootstrap mean ± s.d. (each sample resampled with
replacement), a permutation null (the P0/P1 labels shuffled: the estimator's floor at zero true
divergence) and the (ε, δ) of the optimal zCDP line (``zcdp``) with δ = 1/n (n chunks). The
curve of a document is the larger of the two directions at each α (DP bounds both); the corpus
figure is the largest ε of any document. Before and after a release: fit on the pre-release
embeddings and on ``released_embeddings`` (only changed chunks are embedded again).

Large corpora are audited on a sample, with its confidence stated (issue 21). The estimator holds
every pairwise distance of the pooled rows (``renyi.MAX_ATOMS``), and each document costs one
pass over the reference per resample, so above ``MAX_AUDITED_DOCUMENTS`` documents or
``MAX_AUDIT_ROWS`` passages the audit draws documents uniformly at random (whole documents,
seeded by ``random_state``): up to ``MAX_AUDITED_DOCUMENTS`` are audited, and the reference of
each is every other passage of the sample (the audited documents, then further whole documents
while the rows allow), a random sample of "all other chunks". The corpus figure is then the
largest ε of the audited documents; with S of them drawn uniformly, at most 1 − 0.05^(1/S) of
all documents (about 3/S) exceed it, with 95 % confidence (``to_dict``'s ``sample``). The dev
corpus (35 documents, 1,238 passages) and smaller are audited whole, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import FitError
from ..models.blas_threads import single_blas_thread
from .renyi import DECIMALS, Atoms, pool_atoms, renyi_pair
from .zcdp import ZcdpLine, zcdp_line

#: The α grid of SPEC §9 (α = 1 is KL).
ALPHAS: tuple[float, ...] = (1.0, 1.1, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0)
#: Nearest neighbours of the estimator.
K_NEIGHBOURS = 5
#: Bootstrap resamples and label permutations per document.
N_BOOTSTRAP = 25
N_PERMUTATIONS = 25
#: Beyond these, documents are audited on a sample (module docstring): about 30 CPU-s per audit
#: at the bounds (3,000 passages of 85 documents took 18 CPU-s), a 4,000² distance matrix.
MAX_AUDITED_DOCUMENTS = 100
MAX_AUDIT_ROWS = 4_000
#: Confidence of the sample's statement about the documents it did not audit.
SAMPLE_CONFIDENCE = 0.95


def audit_sample(groups: np.ndarray, max_documents: int | None, max_rows: int | None,
                 random_state: int) -> tuple[list[str], np.ndarray] | None:
    """(audited documents in corpus order, the sample's rows in corpus order), or None when the
    corpus is within both bounds and is audited whole (module docstring)."""
    names = list(dict.fromkeys(groups.tolist()))
    sizes = dict(zip(*np.unique(groups, return_counts=True), strict=True))
    if ((max_documents is None or len(names) <= max_documents)
            and (max_rows is None or len(groups) <= max_rows)):  # fmt: skip
        return None
    if max_documents is not None and max_documents < 2:
        raise FitError(f"The audit compares documents with each other: max_documents must be at "
                       f"least 2, got {max_documents}.")  # fmt: skip
    order = np.random.default_rng([int(random_state), 21]).permutation(len(names))
    rows_left = np.inf if max_rows is None else max_rows
    audited: list[str] = []
    pooled: list[str] = []
    for i in order:
        name, size = names[int(i)], int(sizes[names[int(i)]])
        room = max_documents is None or len(audited) < max_documents
        if size > rows_left and len(audited) >= 2:
            continue  # too long for what is left: a shorter document may fit
        if room:
            audited.append(name)
        pooled.append(name)
        rows_left -= size
    keep = set(audited)
    audited = [n for n in names if n in keep]
    rows = np.flatnonzero(np.isin(groups, pooled))
    return audited, rows


@dataclass(frozen=True)
class DocumentAudit:
    """One document's divergence curve (rows: α) and its (ε, δ) line."""

    group: str
    n_chunks: int
    curve: pd.DataFrame  # alpha, forward, reverse, estimate, boot_mean, boot_sd, null_mean, null_sd
    line: ZcdpLine
    epsilon_boot: np.ndarray  # ε of every bootstrap resample
    null_line: ZcdpLine  # the line over the permutation null's mean curve: ε's floor

    def summary(self) -> dict:
        c = self.curve.set_index("alpha")
        return {
            "document": self.group,
            "chunks": self.n_chunks,
            "epsilon": self.line.epsilon,
            "epsilon_boot_mean": float(self.epsilon_boot.mean()),
            "epsilon_boot_sd": float(self.epsilon_boot.std(ddof=1))
            if self.epsilon_boot.size > 1
            else 0.0,
            "epsilon_floor": self.null_line.epsilon,
            "xi": self.line.xi,
            "rho": self.line.rho,
            "kl": float(c.loc[1.0, "estimate"]) if 1.0 in c.index else float("nan"),
            "kl_floor": float(c.loc[1.0, "null_mean"]) if 1.0 in c.index else float("nan"),
        }


class RenyiAudit:
    """kNN Rényi divergence audit of each group of rows against all other rows (SPEC §9).

    Parameters follow scikit-learn: ``fit(embeddings, groups)`` learns ``documents_`` (one row
    per group: ε, its bootstrap mean ± s.d., the permutation floor, ξ, ρ, KL), ``curves_`` (one
    row per group and α), ``audits_`` (``DocumentAudit`` per group), ``epsilon_`` (the largest
    ε: the corpus figure), ``delta_`` (1/n) and ``worst_`` (its group).
    """

    def __init__(
        self,
        *,
        alphas: Sequence[float] = ALPHAS,
        k: int = K_NEIGHBOURS,
        n_bootstrap: int = N_BOOTSTRAP,
        n_permutations: int = N_PERMUTATIONS,
        decimals: int = DECIMALS,
        delta: float | None = None,
        max_documents: int | None = MAX_AUDITED_DOCUMENTS,
        max_rows: int | None = MAX_AUDIT_ROWS,
        random_state: int = 0,
    ) -> None:
        self.alphas = alphas
        self.k = k
        self.n_bootstrap = n_bootstrap
        self.n_permutations = n_permutations
        self.decimals = decimals
        self.delta = delta
        self.max_documents = max_documents
        self.max_rows = max_rows
        self.random_state = random_state

    @single_blas_thread  # its distances are dense products: the same bits on any core count
    def fit(
        self,
        embeddings: np.ndarray,
        groups: Sequence[str],
        progress: Callable[[float, str], None] | None = None,
    ) -> RenyiAudit:
        group = np.asarray([str(g) for g in groups])
        if len(group) != len(embeddings):
            raise FitError(f"{len(embeddings)} embeddings but {len(group)} document labels.")
        names = list(dict.fromkeys(group))
        if len(names) < 2:
            raise FitError(
                "The divergence audit compares each document with the others: it needs "
                "at least 2 documents."
            )
        if self.k < 1 or self.n_bootstrap < 2:
            raise FitError("The audit needs k ≥ 1 neighbours and at least 2 bootstrap resamples.")
        self.delta_ = float(self.delta) if self.delta is not None else 1.0 / len(group)
        sample = audit_sample(group, self.max_documents, self.max_rows, self.random_state)
        self.sample_ = None
        if sample is not None:
            names, rows = sample
            self.sample_ = sample_statement(len(names), len(dict.fromkeys(group.tolist())),
                                            len(rows), len(group))  # fmt: skip
            embeddings, group = np.asarray(embeddings)[rows], group[rows]
        atoms = pool_atoms(embeddings, self.decimals)
        rng = np.random.default_rng(self.random_state)
        self.audits_ = {}
        for i, name in enumerate(names):
            if progress:
                progress(i / len(names), f"document {i + 1} of {len(names)}")
            self.audits_[name] = self._audit_group(atoms, group == name, name, rng)
        if progress:
            progress(1.0, "done")
        self.documents_ = pd.DataFrame([a.summary() for a in self.audits_.values()])
        self.curves_ = pd.concat(
            [a.curve.assign(document=g) for g, a in self.audits_.items()], ignore_index=True
        )
        worst = int(self.documents_["epsilon"].to_numpy().argmax())
        self.worst_ = str(self.documents_["document"].iloc[worst])
        self.epsilon_ = float(self.documents_["epsilon"].iloc[worst])
        return self

    def to_dict(self) -> dict:
        """JSON-ready result (e.g. ``audit.json``): settings, corpus ε, per-document rows and curves."""
        def clean(records: list[dict]) -> list[dict]:
            return [{k: (None if isinstance(v, float) and not np.isfinite(v) else v)
                     for k, v in r.items()} for r in records]

        return {
            "alphas": [float(a) for a in self.alphas], "k": self.k, "n_bootstrap": self.n_bootstrap,
            "n_permutations": self.n_permutations, "decimals": self.decimals,
            "random_state": self.random_state, "delta": self.delta_, "epsilon": self.epsilon_,
            "most_distinguishable": self.worst_,
            **({"sample": self.sample_} if self.sample_ is not None else {}),
            "documents": clean(self.documents_.to_dict("records")),
            "curves": clean(self.curves_.to_dict("records")),
        }

    def _curve(
        self, atoms: Atoms, rows0: np.ndarray, rows1: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        return renyi_pair(atoms, atoms.counts(rows0), atoms.counts(rows1), self.alphas, self.k)

    def _audit_group(
        self, atoms: Atoms, mask: np.ndarray, name: str, rng: np.random.Generator
    ) -> DocumentAudit:
        rows0, rows1 = np.flatnonzero(mask), np.flatnonzero(~mask)
        fwd, rev = self._curve(atoms, rows0, rows1)
        boot = np.array(
            [
                np.maximum(
                    *self._curve(
                        atoms, rng.choice(rows0, rows0.size), rng.choice(rows1, rows1.size)
                    )
                )
                for _ in range(self.n_bootstrap)
            ]
        )
        everyone = np.arange(mask.size)
        permuted = []
        for _ in range(self.n_permutations):
            perm = rng.permutation(everyone)
            permuted.append(np.maximum(*self._curve(atoms, perm[: rows0.size], perm[rows0.size :])))
        null = np.array(permuted) if permuted else np.zeros((0, len(self.alphas)))
        estimate = np.maximum(fwd, rev)
        curve = pd.DataFrame(
            {
                "alpha": np.asarray(self.alphas, dtype=float),
                "forward": fwd,
                "reverse": rev,
                "estimate": estimate,
                "boot_mean": boot.mean(0),
                "boot_sd": boot.std(0, ddof=1),
                "null_mean": null.mean(0) if len(null) else np.nan,
                "null_sd": null.std(0, ddof=1) if len(null) > 1 else np.nan,
            }
        )
        line = zcdp_line(self.alphas, estimate, self.delta_)
        eps_boot = np.array([zcdp_line(self.alphas, b, self.delta_).epsilon for b in boot])
        null_line = (
            zcdp_line(self.alphas, null.mean(0), self.delta_)
            if len(null)
            else ZcdpLine(np.nan, np.nan, self.delta_, np.nan)
        )
        return DocumentAudit(name, int(rows0.size), curve, line, eps_boot, null_line)


def sample_statement(audited: int, documents: int, rows: int, total_rows: int) -> dict:
    """What a sampled audit covers and the confidence of its corpus figure (module docstring)."""
    bound = 1.0 - (1.0 - SAMPLE_CONFIDENCE) ** (1.0 / audited)
    return {
        "audited_documents": audited, "documents": documents, "rows": rows, "total_rows": total_rows,
        "confidence": SAMPLE_CONFIDENCE, "share_above_bound": bound,
        "statement": (f"audited on a random sample: {audited:,} of {documents:,} documents, each "
                      f"against {rows:,} of {total_rows:,} passages; with "
                      f"{100 * SAMPLE_CONFIDENCE:g} % confidence at most {100 * bound:.1f} % of "
                      "all documents exceed the sample's largest ε"),
    }  # fmt: skip


def released_embeddings(
    embeddings: np.ndarray, changed: Mapping[int, str], embed: Callable[[list[str]], np.ndarray]
) -> np.ndarray:
    """The embeddings of a release: the pre-release rows with only the changed chunks re-embedded.

    ``changed`` maps chunk positions to their released text; ``embed`` is the cached embedder's
    ``encode`` (unchanged text is never embedded again).
    """
    out = np.array(embeddings, dtype=np.float32, copy=True)
    if changed:
        positions = list(changed)
        if min(positions) < 0 or max(positions) >= len(out):
            raise FitError(f"A changed chunk position is outside 0–{len(out) - 1}.")
        out[positions] = embed([changed[p] for p in positions])
    return out


def audit_release(
    before: np.ndarray, after: np.ndarray, groups: Sequence[str], **params
) -> tuple[RenyiAudit, RenyiAudit]:
    """The audit before and after a release, with the same parameters and random state."""
    return RenyiAudit(**params).fit(before, groups), RenyiAudit(**params).fit(after, groups)


def audit_comparison(before: RenyiAudit, after: RenyiAudit) -> pd.DataFrame:
    """One row per document: ε and KL before and after the release, and the permutation floor."""
    b = before.documents_.set_index("document")
    a = after.documents_.set_index("document")
    return pd.DataFrame(
        {
            "chunks": b["chunks"],
            "epsilon_before": b["epsilon"],
            "epsilon_after": a["epsilon"],
            "epsilon_floor": b["epsilon_floor"],
            "kl_before": b["kl"],
            "kl_after": a["kl"],
        }
    ).reset_index()


#: ε up to which a (ε, δ) guarantee is read as strong, and as weak (above: none worth the name).
#: Differential privacy's usual reading: e^ε bounds how much the release may change an
#: observer's odds of telling one document from the rest; ε ≤ 1 (odds × 2.7 at most) is a
#: strong guarantee, ε ≤ 10 a weak one (the range deployed systems publish), beyond that e^ε
#: bounds nothing an analyst can use.
EPSILON_STRONG, EPSILON_WEAK = 1.0, 10.0
#: ε within this factor of the permutation floor is no evidence that a document stands out.
FLOOR_MARGIN = 1.1


def epsilon_reading(epsilon: float, floor: float | None = None) -> str:
    """How to read an audit ε in a few plain words (issue 20: "ε = 157" with no scale), the one
    place the app, the report and the CLI take it from: the formal guarantee it would give,
    and, with the permutation ``floor``, whether it is evidence at all."""
    if epsilon is None or not np.isfinite(epsilon):
        return "no estimate (too few passages)"
    if floor is not None and np.isfinite(floor) and epsilon <= FLOOR_MARGIN * floor:
        near = ("at the permutation floor: no evidence that any document stands out (the "
                "estimator reports this much for documents that do not differ at all)")
        return near if epsilon > EPSILON_WEAK else f"{near}; also a weak formal guarantee"
    if epsilon <= EPSILON_STRONG:
        return (f"a strong formal guarantee: an observer's odds of telling a document apart "
                f"change by at most ×{np.exp(epsilon):.1f}")
    if epsilon <= EPSILON_WEAK:
        return (f"a weak formal guarantee: an observer's odds of telling a document apart may "
                f"change by up to ×{np.exp(epsilon):.3g}")
    return "no meaningful formal guarantee; the measured attack is the figure to read"
