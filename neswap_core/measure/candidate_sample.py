"""The documents every candidate of a large corpus is measured on, and what that sample can say
(issue 21; SPEC §6, §8, §12).

Measuring a candidate embeds its changed passages (DU, cosine, clusters, the panel's embedding
attacker) and scores them with every attacker, and the default grid holds about a hundred
candidates, several of which change almost every passage: on a large corpus that is several
embedding passes of the whole corpus, the one cost that grows without bound. Past
``MAX_MEASURED_DOCUMENTS`` documents or ``MAX_MEASURED_PASSAGES`` passages, the candidates are
measured on a **random sample of whole documents** instead: the first documents of a seeded
permutation while both bounds hold (a document is never cut, so document-level attackers read
it whole). Every candidate is made on the whole corpus and measured on the same sample, so
their differences are not sampling noise; the **written release** is still measured on every
document (its attack report, ``publish/protection.py``).

What the sample estimates: a share of documents (an attacker's document accuracy) is a simple
random sample of n of N documents, so its 95 % margin is at most
1.96 · √(0.25 / n · (N − n) / (N − 1)) (the worst case p = ½, finite-population corrected:
±0.057 for 300 of 6,000); passage shares, mean cosine and clusters are means over the sampled
documents' passages; DU is the ratio estimator 1 + Σ_sample δ / |Σ_sample log f| of
1 + Δ / |L0|. Words unchanged, passages changed and tone need no model and stay whole. The dev
corpus (35 documents, 1,238 passages) and smaller are measured whole: nothing changes there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: Above either bound the candidates are measured on a sample of whole documents.
MAX_MEASURED_DOCUMENTS = 300
MAX_MEASURED_PASSAGES = 6_000
#: Confidence of the margin stated for a share of documents.
SAMPLE_CONFIDENCE = 0.95
_Z = 1.959963984540054  # the standard normal's 97.5 % quantile
#: Second word of the permutation's seed (the first is ``random_state``).
_STREAM = 23


@dataclass(frozen=True)
class MeasurementSample:
    """Which passages the candidates are measured on: ``positions`` (corpus order) of the
    ``documents`` drawn out of ``total_documents`` (``total_passages`` passages in all)."""

    positions: np.ndarray
    documents: int
    total_documents: int
    total_passages: int

    @property
    def passages(self) -> int:
        return len(self.positions)

    @property
    def document_margin(self) -> float:
        """95 % margin of a share of documents measured on the sample (module docstring)."""
        n, big_n = self.documents, self.total_documents
        fpc = (big_n - n) / (big_n - 1) if big_n > 1 else 0.0
        return float(_Z * np.sqrt(0.25 / max(n, 1) * max(fpc, 0.0)))

    def to_dict(self) -> dict:
        return {"documents": self.documents, "total_documents": self.total_documents,
                "passages": self.passages, "total_passages": self.total_passages,
                "confidence": SAMPLE_CONFIDENCE, "document_margin": self.document_margin,
                "statement": self.statement()}  # fmt: skip

    def statement(self) -> str:
        return (f"Every candidate was measured on a random sample of whole documents: "
                f"{self.documents:,} of {self.total_documents:,} documents ({self.passages:,} of "
                f"{self.total_passages:,} passages); a share of documents named is within "
                f"±{self.document_margin:.3f} of the whole corpus's with "
                f"{100 * SAMPLE_CONFIDENCE:g} % confidence. The written release's own attack "
                "report measures every document.")  # fmt: skip


def measurement_sample(doc_ids: Sequence[str], random_state: int = 0,
                       max_documents: int | None = None,
                       max_passages: int | None = None) -> MeasurementSample | None:
    """The sample of whole documents the candidates are measured on, or None when the corpus is
    within both bounds (default ``MAX_MEASURED_DOCUMENTS``, ``MAX_MEASURED_PASSAGES``) and is
    measured whole (module docstring)."""
    max_documents = MAX_MEASURED_DOCUMENTS if max_documents is None else max_documents
    max_passages = MAX_MEASURED_PASSAGES if max_passages is None else max_passages
    ids = np.asarray([str(d) for d in doc_ids], dtype=object)
    names, index, sizes = np.unique(ids, return_inverse=True, return_counts=True)
    if len(names) <= max_documents and len(ids) <= max_passages:
        return None
    order = np.random.default_rng([int(random_state), _STREAM]).permutation(len(names))
    total = np.cumsum(sizes[order])
    keep = int(np.sum(total <= max_passages))
    keep = max(min(keep, max_documents), min(2, len(names)))
    chosen = np.zeros(len(names), dtype=bool)
    chosen[order[:keep]] = True
    positions = np.flatnonzero(chosen[index])
    return MeasurementSample(positions, keep, len(names), len(ids))
