"""The last step of the release path: the choice among measured candidates and the release with
the analyst's review applied (run_release.py step 7; SPEC §7, §9).

Apart from the runner, whose other steps bring the attackers and the mixture (scikit-learn, 1.5
s to import): the app finishes a release from its kept candidates without them (issue 21).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..config import RunConfig
from ..corpus import Corpus
from .candidates import Candidates
from .chosen import PINNED, choose
from .result import ReleaseResult
from .review import decision_map


def finish_release(
    config: RunConfig,
    corpus: Corpus,
    clean: Corpus,
    candidates: Candidates,
    scorers: Mapping | None = None,
    *,
    fit_warnings: Sequence[str] = (),
    notes: Sequence[str] = (),
    timings: dict | None = None,
) -> ReleaseResult:
    """The choice of ``config`` among ``candidates`` and its release after review (step 7)."""
    candidates, choice = choose(candidates, config, scorers)
    release = None
    if choice.release_id is not None:
        decisions = decision_map(config.review.decisions) if choice.why == PINNED else {}
        release = candidates.source(choice.release_id).review(decisions)
    # the attackers as given, not copied: a mapping that loads them on first use (the app's)
    # loads them only if the release is measured again, not to be finished (issue 21)
    return ReleaseResult(config, corpus, clean, candidates, choice, release,
                         {} if scorers is None else scorers, list(fit_warnings), list(notes),
                         dict(timings or {}))  # fmt: skip
