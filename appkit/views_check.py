"""View helpers of the Check page: the chosen release's measured protection (SPEC §8, §9).

The divergence audit runs on the pre-release embeddings (cached per pre-swap data) and on the
release's embeddings, where only the changed chunks are embedded again (through the content
cache, so chunks already embedded by the sweep cost nothing). Both audits are cached on their
inputs; switching documents or charts never recomputes them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from neswap_core.check.audit import RenyiAudit, audit_comparison, released_embeddings

from .pipeline import digest, embedder

#: Bootstrap resamples and permutations of the app's audit (SPEC §9: at least 25).
AUDIT_RESAMPLES = 25


# --- the release's changed chunks ---------------------------------------------------------------------
def changed_chunks(release) -> dict[int, str]:
    """{position: released text} of the chunks whose text the release changes."""
    base = release.sweep.ctx.chunks
    released = release.released_chunks()
    return {i: new.text for i, (old, new) in enumerate(zip(base, released, strict=True))
            if new.text != old.text}


def changes_key(changed: dict[int, str]) -> str:
    return digest(sorted(changed.items()))


# --- the audit ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AuditPair:
    """The divergence audit before and after the release."""

    before: RenyiAudit
    after: RenyiAudit

    def comparison(self) -> pd.DataFrame:
        return audit_comparison(self.before, self.after)


@st.cache_data(show_spinner=False, max_entries=8)
def _audit(key: str, resamples: int, _x: np.ndarray, _groups: list[str],
           _progress: Callable | None = None) -> RenyiAudit:
    return RenyiAudit(n_bootstrap=resamples, n_permutations=resamples,
                      random_state=0).fit(_x, _groups, progress=_progress)


def audit_pair(stage, changed: dict[int, str], progress: Callable[[str], Callable] | None = None,
               resamples: int = AUDIT_RESAMPLES) -> AuditPair:
    """The audits of the pre-swap data and of the release (cached by pre-swap data and changes)."""
    chunks, x = stage.pre_swap()
    groups = [c.doc_id for c in chunks]
    before = _audit(digest([stage.roles_key, "before"]), resamples, x, groups,
                    progress("Audit before the release") if progress else None)
    if not changed:
        return AuditPair(before, before)
    key = digest([stage.roles_key, changes_key(changed)])
    x_after = released_embeddings(x, changed, embedder().encode)
    after = _audit(key, resamples, x_after, groups,
                   progress("Audit after the release") if progress else None)
    return AuditPair(before, after)


def audit_sentence(pair: AuditPair) -> str:
    """E.g. "The most distinguishable document: ε = 41.2 before and 40.9 after (floor 35.0)"."""
    b, a = pair.before, pair.after
    floor = float(b.documents_["epsilon_floor"].max())
    return (f"Corpus ε (the most distinguishable document, δ = 1/{round(1 / b.delta_)}): "
            f"{b.epsilon_:.2f} before this release and {a.epsilon_:.2f} after; the estimator "
            f"gives up to {floor:.2f} for documents that do not differ at all (permutation floor).")


COMPARISON_COLUMNS = {
    "document": "document", "chunks": "chunks", "epsilon_before": "ε before",
    "epsilon_after": "ε after", "epsilon_floor": "ε floor (no difference)",
    "kl_before": "KL before", "kl_after": "KL after",
}


def comparison_view(pair: AuditPair) -> pd.DataFrame:
    """Per document ε and KL before/after, most distinguishable first, readable headers."""
    table = pair.comparison().sort_values("epsilon_after", ascending=False)
    return table[list(COMPARISON_COLUMNS)].rename(columns=COMPARISON_COLUMNS)


# --- the D_α curve ---------------------------------------------------------------------------------------
_BEFORE, _AFTER, _FLOOR = "#4e79a7", "#e15759", "#9c9c9c"


def divergence_figure(pair: AuditPair, document: str) -> go.Figure:
    """D̂_α of one document vs the rest, before and after, with the zCDP lines and the floor."""
    fig = go.Figure()
    before = pair.before.audits_[document]
    after = pair.after.audits_[document]
    alphas = before.curve["alpha"].to_numpy(float)
    null = before.curve
    upper = null["null_mean"] + null["null_sd"].fillna(0.0)
    lower = null["null_mean"] - null["null_sd"].fillna(0.0)
    fig.add_trace(go.Scatter(x=np.r_[alphas, alphas[::-1]], y=np.r_[upper, lower[::-1]],
                             fill="toself", fillcolor="rgba(156,156,156,0.25)", line={"width": 0},
                             hoverinfo="skip", name="permutation floor (mean ± s.d.)"))
    fig.add_trace(go.Scatter(x=alphas, y=null["null_mean"], mode="lines",
                             line={"color": _FLOOR, "dash": "dot"}, showlegend=False,
                             hovertemplate="α = %{x}<br>floor %{y:.3f}<extra></extra>"))
    for label, audit, color in (("before", before, _BEFORE), ("after", after, _AFTER)):
        c = audit.curve
        fig.add_trace(go.Scatter(
            x=alphas, y=c["estimate"], mode="lines+markers", name=f"D̂_α {label} the release",
            line={"color": color}, marker={"size": 8},
            error_y={"type": "data", "array": c["boot_sd"], "visible": True, "color": color},
            customdata=np.column_stack([c["boot_mean"], c["boot_sd"]]),
            hovertemplate=("α = %{x}<br>D̂ = %{y:.3f}<br>bootstrap %{customdata[0]:.3f} ± "
                           "%{customdata[1]:.3f}<extra>" + label + "</extra>")))
        line = audit.line
        fig.add_trace(go.Scatter(
            x=alphas, y=line.at(alphas), mode="lines", line={"color": color, "dash": "dash"},
            name=f"zCDP line {label}: ξ = {line.xi:.3g}, ρ = {line.rho:.3g} → ε = {line.epsilon:.2f}",
            hoverinfo="skip"))
    fig.update_layout(
        height=440, margin={"l": 10, "r": 10, "t": 30, "b": 10}, template="plotly_white",
        legend={"orientation": "v", "x": 1.01, "y": 1, "font": {"size": 12}},
        xaxis={"title": "order α (log scale; α = 1 is KL)", "type": "log"},
        yaxis={"title": "Rényi divergence D̂_α (nats): this document vs all others"},
    )
    return fig
