"""Progress of a mixture fit as a fraction done, for a progress display (SPEC §4, issue 13).

EM has no fixed length: it stops when the leading run's relative log-likelihood change falls to
``tol``. Counting iterations against ``max_iter`` (an upper bound) leaves a bar near 10 % that
jumps to done. Instead the fit is cut into its phases, each weighted by its cost in run-steps
(the B restarts run as one batch, so a batched step costs B): annealing (B × steps),
screening (B × ``SCREEN_ITER``) and the leader's refinement. Within a phase that ends by
convergence, the fraction is the larger of the iterations used and the progress of the change
on a log scale, log(c₀ / c) / log(c₀ / tol) from the first change c₀ — EM converges roughly
linearly, so log c falls about evenly per iteration. The fraction never goes back.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

Report = Callable[[float, str], None]

#: Refinement iterations budgeted in the weights before the convergence estimate takes over.
REFINE_GUESS = 30


@dataclass
class Phase:
    """One part of the fit: a name, its cost in run-steps and its length bound in iterations."""

    name: str
    runs: int
    steps: int
    converges: bool = False  # ends when the change reaches tol (else after ``steps``)

    @property
    def cost(self) -> float:
        return float(self.runs * (min(self.steps, REFINE_GUESS) if self.converges else self.steps))


@dataclass
class FitProgress:
    """Turns EM steps into ``report(fraction, message)`` calls (fraction in [0, 1), then 1)."""

    report: Report
    tol: float
    phases: list[Phase] = field(default_factory=list)
    _phase: int = 0
    _first_step: int = 0
    _first_change: float | None = None
    _last: float = 0.0

    def start(self, name: str, runs: int, steps: int, converges: bool = False) -> None:
        """Plan one more phase (call for every phase before the first ``step``)."""
        if steps > 0:
            self.phases.append(Phase(name, max(int(runs), 1), int(steps), converges))

    def enter(self, name: str, n_iter: int) -> None:
        """The fit is now in phase ``name``; ``n_iter`` iterations were done before it."""
        names = [p.name for p in self.phases]
        if name in names:
            self._phase = names.index(name)
        self._first_step, self._first_change = n_iter, None

    def fraction(self, n_iter: int, change: float | None) -> float:
        """Fraction of the whole fit done after iteration ``n_iter`` with relative change ``change``."""
        if not self.phases:
            return 0.0
        total = sum(p.cost for p in self.phases)
        done = sum(p.cost for p in self.phases[: self._phase])
        phase = self.phases[self._phase]
        steps_in = max(n_iter - self._first_step, 0)
        part = min(steps_in / max(phase.steps, 1), 1.0)
        if phase.converges and change is not None and math.isfinite(change) and change > 0:
            if self._first_change is None:
                self._first_change = change
            span = math.log(self._first_change / self.tol)
            if span > 0:
                part = max(part, min(math.log(self._first_change / change) / span, 1.0))
            part = max(part, min(steps_in / REFINE_GUESS, 1.0) * 0.5)
        return min((done + part * phase.cost) / total, 0.99)

    def step(self, n_iter: int, change: float | None = None) -> None:
        """Report after EM iteration ``n_iter`` (``change``: the leader's relative change)."""
        self._last = max(self._last, self.fraction(n_iter, change))
        phase = self.phases[self._phase].name if self.phases else "EM"
        self.report(self._last, f"{phase}, EM iteration {n_iter}")

    def done(self, message: str) -> None:
        self.report(1.0, message)
