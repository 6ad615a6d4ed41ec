"""Disclosure risk DR of a release, from the Pitman fit of the pre-swap marginal table z_J (SPEC §5).

Only chunks with at least one entity in J enter z_J (n_J of them). With Ŝ₁ = E S₁(N) (exact
finite-N form) and p̂ = (Ŝ₁ / s₁)(n_J / N),

    DR = 1 − (#{swapped chunks that were sample uniques in z_J} / s₁) · min(p̂, 1).

Decisions where SPEC and paper are silent:
- DR is always a number in [0, 1]. With no swapped sample unique it is exactly 1. When s₁ = 0
  (status "no_uniques", "single_cell", "empty") nothing can be swapped away and DR stays 1.
- Where p̂ is undefined but uniques exist ("too_few": one chunk) DR uses the factor 1, the
  paper's simple risk measure; "all_unique" uses the limit θ → ∞, where Ŝ₁ → N and p̂ → 1.
- p̂ > 1 is kept raw in the profile (status "p_hat_above_one", a ``PitmanWarning``) and
  clipped to 1 only inside DR.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import pandas as pd

from ..errors import ConfigError, FitError
from ..models.pitman import (
    FitStatus,
    PitmanEstimator,
    PitmanWarning,
    asymptotic_population_uniques,
    expected_population_uniques,
)
from ..text.contingency import cell_keys

RiskStatus = FitStatus | Literal["p_hat_above_one"]
_FITTED = ("ok", "ewens", "not_converged", "no_uniques")  # statuses with finite (θ̂, α̂)


def frequency_of_frequencies(keys: Iterable[Hashable]) -> dict[int, int]:
    """{cell size j: number of cells s_j} of a sequence of cell keys (e.g. ``cell_keys(z, J)``)."""
    try:
        cell_sizes = Counter(keys).values()
    except TypeError as exc:
        raise FitError(f"Cell keys must be hashable (tuples, strings): {exc}.") from exc
    return dict(sorted(Counter(cell_sizes).items()))


def sample_unique_mask(keys: Iterable[Hashable]) -> np.ndarray:
    """Boolean array, in input order: True where a key occurs exactly once (a sample unique)."""
    keys = list(keys)
    try:
        counts = Counter(keys)
    except TypeError as exc:
        raise FitError(f"Cell keys must be hashable (tuples, strings): {exc}.") from exc
    return np.fromiter((counts[key] == 1 for key in keys), dtype=bool, count=len(keys))


def p_hat(population_uniques: float, s1: int, n: int, population: float) -> float:
    """p̂ = (Ŝ₁ / s₁)(n / N): share of sample uniques expected to be population uniques (raw)."""
    if s1 <= 0:
        return float("nan")
    return float(population_uniques / s1 * (n / population))


@dataclass(frozen=True)
class RiskProfile:
    """The Pitman fit of z_J for one combination J and the p̂ that DR uses (SPEC §5).

    The fit does not depend on N: ``at_population(N)`` gives the profile at another N for free.
    """

    categories: tuple[str, ...]
    population: float  # N
    n_J: int  # chunks with at least one entity in J
    k: int  # cells of z_J
    s1: int  # sample uniques
    theta: float
    alpha: float
    theta_se: float
    alpha_se: float
    loglik: float
    population_uniques: float  # Ŝ₁ = E S₁(N), exact finite-N form
    p_hat: float  # raw, may exceed 1 (then status "p_hat_above_one")
    status: RiskStatus
    fit_status: FitStatus
    converged: bool
    sample_unique_ids: frozenset[str]  # chunk ids of the sample uniques of z_J
    fit_messages: tuple[str, ...]  # what the estimator said about the fit

    @property
    def sample_unique_ratio(self) -> float:
        """s₁ / n_J (nan for an empty table)."""
        return self.s1 / self.n_J if self.n_J else float("nan")

    @property
    def risk_weight(self) -> float:
        """The factor min(p̂, 1) used in DR; 1 where p̂ is undefined (see the module docstring)."""
        return min(self.p_hat, 1.0) if math.isfinite(self.p_hat) else 1.0

    @property
    def messages(self) -> tuple[str, ...]:
        """Everything the analyst should read about this profile: the fit, then p̂."""
        if not (math.isfinite(self.p_hat) and self.p_hat > 1.0):
            return self.fit_messages
        return (*self.fit_messages, _p_hat_text(self))

    def at_population(self, population: float) -> RiskProfile:
        """The same fit evaluated at another population size N (new Ŝ₁, p̂ and status)."""
        big_n = _check_population(population, self.n_J)
        s1_hat = float(_population_uniques(self.fit_status, self.theta, self.alpha, big_n))
        raw_p = 1.0 if self.fit_status == "all_unique" else p_hat(s1_hat, self.s1, self.n_J, big_n)
        above = math.isfinite(raw_p) and raw_p > 1.0
        status = "p_hat_above_one" if above and self.fit_status == "ok" else self.fit_status
        profile = replace(
            self, population=big_n, population_uniques=s1_hat, p_hat=raw_p, status=status
        )
        if above:
            warnings.warn(_p_hat_text(profile), PitmanWarning, stacklevel=2)
        return profile


def _p_hat_text(profile: RiskProfile) -> str:
    return (
        f"p_hat = {profile.p_hat:.4g} > 1 for J = {profile.categories} at N = {profile.population:.3g}: "
        "more population uniques than sample uniques expected; DR clips it to 1."
    )


def _check_population(population: float, n: int) -> float:
    try:
        big_n = float(population)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"The population size N must be a number, got {population!r}.") from exc
    if not math.isfinite(big_n) or big_n < max(n, 1):
        raise ConfigError(
            f"The population size N must be finite and at least the sample size n_J = {n}, "
            f"got {population}; the paper uses 1e10, 1e20 or 1e30."
        )
    return big_n


def _population_uniques(status: FitStatus, theta: float, alpha: float, population):
    """Ŝ₁ at N for a fit of the given status: exact form, or the degenerate case's limit."""
    big_n = np.asarray(population, dtype=float)
    if status in _FITTED:
        return expected_population_uniques(theta, alpha, big_n)
    if status == "all_unique":
        return big_n * 1.0  # θ → ∞: every individual of the population is unique
    if status == "single_cell":
        return big_n * 0.0  # θ + α → 0: Γ(θ + α) → ∞
    return big_n * np.nan


def fit_risk(
    z: pd.DataFrame,
    categories: Sequence[str],
    population: float,
    estimator: PitmanEstimator | None = None,
) -> RiskProfile:
    """Fit the Pitman model to z_J (chunks non-empty in J) and compute Ŝ₁ and p̂ at N = population.

    ``estimator`` supplies fitting parameters (tol, max_iter, grid_size); a fresh one is fitted.
    """
    cats = (categories,) if isinstance(categories, str) else tuple(categories)
    if not cats:
        raise ConfigError("A risk profile needs at least one category in J.")
    try:
        keys = cell_keys(z, cats)
    except KeyError as exc:
        raise ConfigError(f"{exc.args[0]}; choose J among {list(z.columns)}.") from exc
    fof = frequency_of_frequencies(keys)
    uniques = frozenset(str(i) for i in keys.index[sample_unique_mask(keys)])
    template = estimator or PitmanEstimator()
    est = PitmanEstimator(template.tol, template.max_iter, template.grid_size).fit(fof)
    _check_population(population, est.n_)
    fitted = RiskProfile(
        categories=cats,
        population=float("nan"),
        n_J=est.n_,
        k=est.k_,
        s1=est.s1_,
        theta=est.theta_,
        alpha=est.alpha_,
        theta_se=est.theta_se_,
        alpha_se=est.alpha_se_,
        loglik=est.loglik_,
        population_uniques=float("nan"),
        p_hat=float("nan"),
        status=est.status_,
        fit_status=est.status_,
        converged=est.converged_,
        sample_unique_ids=uniques,
        fit_messages=est.messages_,
    )
    return fitted.at_population(population)


def disclosure_risk(profile: RiskProfile, swapped_chunk_ids: Iterable[str]) -> float:
    """DR = 1 − (#swapped sample uniques / s₁) · min(p̂, 1); exactly 1 with no swaps (SPEC §5)."""
    hits = len(set(map(str, swapped_chunk_ids)) & profile.sample_unique_ids)
    if hits == 0:
        return 1.0
    return 1.0 - hits / profile.s1 * profile.risk_weight


def disclosure_risk_path(profile: RiskProfile, swaps: Sequence[tuple[str, str]]) -> np.ndarray:
    """DR after 0, 1, …, T sequential swaps of chunk pairs: array of length T + 1, first entry 1."""
    hits = np.array([sum(str(c) in profile.sample_unique_ids for c in pair) for pair in swaps])
    cumulative = np.concatenate([[0], np.cumsum(hits)]) if len(hits) else np.zeros(1)
    if profile.s1 == 0:
        return np.ones(len(cumulative))
    return 1.0 - cumulative / profile.s1 * profile.risk_weight


#: Columns of the paper's Table 1 as ``profile_table`` writes them.
TABLE_COLUMNS = (
    "J", "n_J", "k", "s1", "s1/n_J", "theta", "theta_se", "alpha", "alpha_se", "N", "S1_hat",
    "p_hat", "status", "converged",
)  # fmt: skip


def profile_table(profiles: Iterable[RiskProfile]) -> pd.DataFrame:
    """The paper's Table 1 from fitted profiles: one row per J, columns ``TABLE_COLUMNS``."""
    rows = [
        (", ".join(p.categories), p.n_J, p.k, p.s1, p.sample_unique_ratio, p.theta, p.theta_se,
         p.alpha, p.alpha_se, p.population, p.population_uniques, p.p_hat, p.status, p.converged)
        for p in profiles
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=list(TABLE_COLUMNS))


def pitman_table(
    z: pd.DataFrame,
    combinations: Iterable[Sequence[str]],
    population: float,
    estimator: PitmanEstimator | None = None,
) -> pd.DataFrame:
    """Fit every combination J and return Table 1 (J, n_J, k, s1, s1/n_J, θ̂, α̂, SEs, Ŝ₁, p̂, status)."""
    return profile_table(fit_risk(z, cats, population, estimator) for cats in combinations)


def p_hat_by_population(profile: RiskProfile, populations: Iterable[float]) -> pd.DataFrame:
    """How Ŝ₁ and p̂ move with N (p̂ scales as N^(α̂−1)): exact and asymptotic forms side by side."""
    big_n = np.array([_check_population(v, profile.n_J) for v in populations], dtype=float)
    exact = np.asarray(_population_uniques(profile.fit_status, profile.theta, profile.alpha, big_n))
    if profile.fit_status in _FITTED:
        asym = np.asarray(asymptotic_population_uniques(profile.theta, profile.alpha, big_n))
    else:
        asym = exact
    share = profile.n_J / big_n / profile.s1 if profile.s1 else np.full(len(big_n), np.nan)
    if profile.fit_status == "all_unique":
        p_exact = p_asym = np.ones(len(big_n))
    else:
        p_exact, p_asym = exact * share, asym * share
    return pd.DataFrame(
        {
            "N": big_n,
            "S1_hat": exact,
            "S1_hat_asymptotic": asym,
            "p_hat": p_exact,
            "p_hat_asymptotic": p_asym,
        }
    )
