"""How much a faster embedding path changes the answer (issue 14's quality bar).

Three measures against a reference path (today's float32 PyTorch model):
- ``gap_agreement``: share of sentence gaps where both chunkers agree on "break here or not" at
  the same percentile threshold (bar >= 0.98 at threshold 75);
- ``cosine_agreement``: cosine between the two paths' vectors of the same texts (bar >= 0.99);
- ``label_agreement``: share of chunks whose mixture MAP labels agree, after matching the two
  label sets one-to-one (Hungarian, largest overlap) since component numbers are arbitrary
  (bar >= 0.97).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

from ..errors import NeswapError
from ..text.chunking import ChunkedCorpus, breakpoints_for

GAP_BAR = 0.98
COSINE_BAR = 0.99
LABEL_BAR = 0.97


def gap_agreement(reference: ChunkedCorpus, other: ChunkedCorpus, threshold: float) -> float:
    """Share of sentence gaps (all documents) with the same break/no-break decision."""
    same = total = 0
    for a, b in zip(reference.documents, other.documents, strict=True):
        if len(a.sentences) != len(b.sentences):
            raise NeswapError(f"Document {a.doc_id} was split differently by the two paths.")
        n_gaps = len(a.distances)
        if n_gaps == 0:
            continue
        cut_a = np.zeros(n_gaps, dtype=bool)
        cut_b = np.zeros(n_gaps, dtype=bool)
        cut_a[breakpoints_for(a.distances, threshold)] = True
        cut_b[breakpoints_for(b.distances, threshold)] = True
        same += int((cut_a == cut_b).sum())
        total += n_gaps
    return same / total if total else 1.0


def cosine_agreement(reference: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Cosine between matching rows of two (n, d) arrays."""
    a = np.asarray(reference, dtype=np.float64)
    b = np.asarray(other, dtype=np.float64)
    if a.shape != b.shape:
        raise NeswapError(f"Cannot compare embeddings of shapes {a.shape} and {b.shape}.")
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.einsum("ij,ij->i", a, b) / np.where(norms > 0, norms, 1.0)


def label_agreement(reference: np.ndarray, other: np.ndarray) -> float:
    """Share of items with the same label once the labels are matched one-to-one."""
    a = np.asarray(reference)
    b = np.asarray(other)
    if a.shape != b.shape:
        raise NeswapError("Label arrays of different lengths cannot be compared.")
    if a.size == 0:
        return 1.0
    ua, ia = np.unique(a, return_inverse=True)
    ub, ib = np.unique(b, return_inverse=True)
    overlap = np.zeros((len(ua), len(ub)), dtype=np.int64)
    np.add.at(overlap, (ia, ib), 1)
    rows, cols = linear_sum_assignment(-overlap)
    return float(overlap[rows, cols].sum() / a.size)


@dataclass(frozen=True)
class QualityReport:
    """The three measures and whether each holds its bar."""

    gap_agreement: float
    cosine_mean: float
    cosine_min: float
    label_agreement: float

    @property
    def holds(self) -> bool:
        return (
            self.gap_agreement >= GAP_BAR
            and self.cosine_min >= COSINE_BAR
            and self.label_agreement >= LABEL_BAR
        )

    def lines(self) -> list[str]:
        """Human-readable lines with the bar beside each figure."""
        return [
            f"chunk boundaries agree on {self.gap_agreement:.2%} of sentence gaps "
            f"(bar >= {GAP_BAR:.0%}: {'ok' if self.gap_agreement >= GAP_BAR else 'FAILS'})",
            f"chunk embeddings cosine: min {self.cosine_min:.4f}, mean {self.cosine_mean:.4f} "
            f"(bar >= {COSINE_BAR}: {'ok' if self.cosine_min >= COSINE_BAR else 'FAILS'})",
            f"mixture MAP labels agree on {self.label_agreement:.2%} of chunks "
            f"(bar >= {LABEL_BAR:.0%}: {'ok' if self.label_agreement >= LABEL_BAR else 'FAILS'})",
        ]
