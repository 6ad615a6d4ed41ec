"""What a run chose to release: the typed result of ``run_release`` that ``publish`` writes.

One object for the CLI and the app: the configuration as run, the corpus as loaded and as
cleaned, the candidates, the choice and the reviewed release, the attack scorers, and what the
run noticed on the way. Its measured protection (attack.json, audit.json) is computed once,
when first asked for (``publish.protection``), or given by the caller (the app's caches).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..config import RunConfig
from ..corpus import Corpus
from ..errors import NoValidPairsError
from .candidates import Candidates
from .chosen import Choice
from .review import ChosenRelease


@dataclass(eq=False)
class ReleaseResult:
    """A run from prepared data to the release to write (``release`` None: nothing to write)."""

    config: RunConfig
    corpus: Corpus  # as loaded: metadata, executives, original text
    clean: Corpus  # after presentation extraction and suppression (aliases filled in)
    candidates: Candidates
    choice: Choice
    release: ChosenRelease | None
    scorers: Mapping = field(default_factory=dict, repr=False)  # attack scorers by attacker name
    fit_warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the run changed or could not do
    timings: dict = field(default_factory=dict)  # seconds per stage
    attack: tuple | None = field(default=None, repr=False)  # (attack.json dict, attack.csv frame)
    audit: dict | None = field(default=None, repr=False)  # audit.json's contents

    @property
    def context(self):
        """The pre-swap data (roles applied, mixture fitted) every candidate starts from."""
        return self.candidates.ctx

    @property
    def sweep(self):
        return self.candidates.sweep

    @property
    def row(self):
        """The written candidate's row of the candidate table (None: nothing written)."""
        if self.choice.release_id is None:
            return None
        return self.candidates.table.loc[self.choice.release_id]

    @property
    def goal_met(self) -> bool | None:
        return self.choice.goal_met

    def changed(self) -> dict[int, str]:
        """{position: released text} of every chunk the written release changed."""
        return {} if self.release is None else self.release.changed(self.context.chunks)

    def written_release(self) -> ChosenRelease:
        """The release to write; ``NoValidPairsError`` saying why when there is none."""
        if self.release is None:
            raise NoValidPairsError(self.no_release_reason() or "No release was chosen to write.")
        return self.release

    def no_release_reason(self) -> str:
        """Why there is nothing to write, in a sentence or two ("" when there is a release)."""
        if self.release is not None:
            return ""
        if len(self.candidates.line_pool()) == 0:
            why = " ".join(self.sweep.messages())
            return f"No candidate release: no combination had a valid pair to swap. {why}".strip()
        return self.choice.line.message
