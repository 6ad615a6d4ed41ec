"""View helpers of the Check page: the chosen release's measured protection (SPEC §8, §9).

The divergence audit runs on the pre-release embeddings (cached per pre-swap data) and on the
release's embeddings, where only the changed chunks are embedded again (through the content
cache, so chunks already embedded by the sweep cost nothing). Both audits are cached on their
inputs; switching documents or charts never recomputes them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from neswap_core.choose.attack_columns import IN_CORPUS, READING
from neswap_core.measure.audit import (
    RenyiAudit,
    audit_comparison,
    epsilon_reading,
    released_embeddings,
)

from .pipeline import CACHE_DIR, _Memo, digest, embedder
from .reading import (  # noqa: F401  (the pages and tests reach them here too)
    READING_ARTIFACT,
    forget_reading,
    has_reading,
    reading_key_of,
    reading_of,
    reading_units_of,
    store_reading,
    uploaded_reading,
)
from .widgets import fmt_number


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
def _audit(key: str, _x: np.ndarray | Callable[[], np.ndarray], _groups: list[str],
           _progress: Callable | None = None) -> RenyiAudit:
    """The core's audit with its own settings (``measure.audit``: resamples, permutations,
    seed), so this page and key/audit.json show the same figures. Kept on disk too (``key``
    names the pre-swap data and the changes; the core's code is in every memo key), so a
    restarted server draws this page without auditing again. ``_x``: the vectors, or what makes
    them, called only when the audit is not kept (a release's vectors: 0.4 s at 100k)."""
    from neswap_core.disk_memo import DiskMemo, content_key

    from .pipeline import CACHE_DIR

    return DiskMemo(CACHE_DIR, "app_audits").get_or_compute(
        content_key("app audit", key),
        lambda: RenyiAudit().fit(_x() if callable(_x) else _x, _groups, progress=_progress))


def audit_pair(stage, changed: dict[int, str], progress: Callable[[str], Callable] | None = None
               ) -> AuditPair:
    """The audits of the pre-swap data and of the release (cached by pre-swap data and changes)."""
    chunks, x = stage.pre_swap()
    groups = [c.doc_id for c in chunks]
    before = _audit(digest([stage.roles_key, "before"]), x, groups,
                    progress("Audit before the release") if progress else None)
    if not changed:
        return AuditPair(before, before)
    key = digest([stage.roles_key, changes_key(changed)])
    after = _audit(key, lambda: released_embeddings(x, changed, embedder(stage.backend).encode), groups,
                   progress("Audit after the release") if progress else None)
    return AuditPair(before, after)


def audit_sentence(pair: AuditPair) -> str:
    """E.g. "The most distinguishable document: ε = 41.2 before and 40.9 after (floor 35.0)"."""
    b, a = pair.before, pair.after
    floor = float(b.documents_["epsilon_floor"].max())
    return (f"Corpus ε (the most distinguishable document, δ = 1/{round(1 / b.delta_)}): "
            f"{fmt_number(b.epsilon_, 5)} before this release and {fmt_number(a.epsilon_, 5)} after; "
            f"the estimator gives up to {fmt_number(floor, 5)} for documents that do not differ at "
            "all (permutation floor). Lower ε means a document blends in better; only the part "
            "above the floor is evidence that it stands out. How to read "
            f"ε = {fmt_number(a.epsilon_, 3)}: {epsilon_reading(a.epsilon_, floor)}."
            + (f" A large corpus: {a.sample_['statement']}." if getattr(a, "sample_", None) else ""))


COMPARISON_COLUMNS = {
    "document": "document", "chunks": "chunks", "epsilon_before": "ε before",
    "epsilon_after": "ε after", "epsilon_floor": "ε floor (no difference)",
    "kl_before": "KL before", "kl_after": "KL after",
}


def comparison_view(pair: AuditPair) -> pd.DataFrame:
    """Per document ε and KL before/after, most distinguishable first, readable headers."""
    table = pair.comparison().sort_values("epsilon_after", ascending=False)
    return table[list(COMPARISON_COLUMNS)].rename(columns=COMPARISON_COLUMNS)


def comparison_styled(comparison: pd.DataFrame):
    """``comparison_view`` in the app's number format (the cells stay numbers)."""
    from .views_explain import formatted

    return formatted(comparison, default=3)


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
                             mode="lines", fill="toself", fillcolor="rgba(156,156,156,0.25)", line={"width": 0},
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
            name=(f"zCDP line {label}: ξ = {fmt_number(line.xi)}, ρ = {fmt_number(line.rho)} → "
                  f"ε = {fmt_number(line.epsilon)}"),
            hoverinfo="skip"))
    # The zCDP lines climb far above the curves at large α: show the curves, let the lines leave.
    values = np.concatenate([
        np.asarray(a.curve["estimate"] + a.curve["boot_sd"].fillna(0.0), dtype=float)
        for a in (before, after)] + [np.asarray(upper, dtype=float), np.asarray(lower, dtype=float)])
    values = values[np.isfinite(values)]
    top, bottom = (float(values.max()), float(values.min())) if values.size else (1.0, 0.0)
    pad = 0.15 * max(top - min(bottom, 0.0), 1e-6)
    fig.update_layout(
        height=440, margin={"l": 10, "r": 10, "t": 30, "b": 10}, template="plotly_white",
        legend={"orientation": "v", "x": 1.01, "y": 1, "font": {"size": 12}},
        xaxis={"title": "order α (log scale; α = 1 is KL)", "type": "log",
               "tickvals": alphas, "ticktext": [f"{a:g}" for a in alphas]},
        yaxis={"title": "Rényi divergence D̂_α (nats): this document vs all others",
               "range": [min(bottom, 0.0) - pad, top + pad]},
    )
    return fig


# --- the attacker (SPEC §8) -------------------------------------------------------------------------------
ATTACKER_NOTES = {
    READING: ("An **outside reader**: trained on other texts of the same companies (the corpus's "
              "attacker reading), with names suppressed the same way, so it reads only what the "
              "text itself gives away."),
    IN_CORPUS: ("The **in-corpus attacker**: there is no attacker reading for this corpus, so each "
                "passage is scored by a model trained on the rest of this corpus, other passages "
                "of the same document included. It is **stronger than an outside reader**: read "
                "its figures as the pessimistic end."),
}


_SCORER = _Memo(4)


def _scorer(key: str, kind: str, _chunks, _reading, _corpus, seed: int, lineup: int):
    """The page's attacker, trained once per corpus and roles with a progress bar (time left):
    with the release's seed and line-ups, as the CLI's ``release`` trains it (``seed`` picks the
    in-corpus attacker's folds; the reading attacker is fitted as ``fit_reading`` fits it)."""
    from neswap_core import build_scorers
    from neswap_core.measure.reading import reading_attacker

    from .widgets import run_with_progress

    def train():
        if kind == READING:
            reading = reading_attacker(_reading, _chunks, _corpus, cache_dir=CACHE_DIR, lineup=lineup)
            return build_scorers(_chunks, reading, in_corpus=False, random_state=seed,
                                 lineup=lineup)[READING]  # fmt: skip
        return build_scorers(_chunks, random_state=seed, lineup=lineup)[IN_CORPUS]

    return _SCORER.get(key, lambda: run_with_progress(
        "Training the attacker (once per corpus and roles)", train, f"attacker-{kind}",
        len(_chunks)))


@dataclass(frozen=True)
class Attack:
    """Which attacker a page shows (``kind``, ``key``: its content key), and its scorer for the
    pre-swap data, trained or read back only when a figure is not kept on disk: a restarted
    server drew the Frontier page's kept figures after loading the attacker (issue 21)."""

    kind: str
    key: str
    train: Callable[[], object] = field(repr=False, compare=False)

    @functools.cached_property
    def scorer(self):  # neswap_core.measure.attack_scores.ReleaseScorer
        return self.train()

    @property
    def note(self) -> str:
        return ATTACKER_NOTES[self.kind]

    @property
    def reader(self) -> str:
        """Who names the company, for plain sentences."""
        return "An outside reader" if self.kind == READING else "The in-corpus attacker (stronger than an outside reader)"


def attack(stage) -> Attack:
    """The reading attacker when the corpus has a reading, else the in-corpus attacker (cached)."""
    kind = READING if has_reading(stage) else IN_CORPUS
    seed, lineup = int(stage.config.sweep.seed), int(stage.config.sweep.lineup)
    key = digest([stage.roles_key, kind, reading_key_of(stage), seed, lineup])

    def train():
        reading, _ = reading_of(stage)
        return _scorer(key, kind, stage.pre_swap()[0], reading, stage.corpus(), seed, lineup)

    return Attack(kind, key, train)


@st.cache_data(show_spinner=False, max_entries=32)
def _measures(key: str, changes: str, _att: Attack, _changed: dict[int, str]):
    """Kept on disk as well (``pipeline.kept``; ``key`` names the attacker and its pre-swap
    data by content): a restarted server's Frontier and Check pages do not score again."""
    from .pipeline import kept

    return kept("attack_measures", [key, changes], lambda: _att.scorer.score(_changed))


def measures(att: Attack, changed: dict[int, str]):
    """(before, after) AttackMeasures of a release (re-scores only the changed chunks)."""
    return (_measures(att.key, "", att, {}),
            _measures(att.key, changes_key(changed), att, changed))


def pct(value: float) -> str:
    return "—" if value is None or not np.isfinite(value) else f"{100 * value:.0f} %"


def accuracy_sentence(att: Attack, before, after) -> str:
    """E.g. "An outside reader names the company of 76 % of passages before this release and 75 % after"."""
    return (f"{att.reader} names the company of {pct(before.chunk_top1)} of passages before this "
            f"release and {pct(after.chunk_top1)} after, and of {pct(before.document_accuracy)} "
            f"of whole documents before and {pct(after.document_accuracy)} after (chance: "
            f"{pct(after.chance)}).")


def accuracy_table(before, after) -> pd.DataFrame:
    """The paper's Table 2 (changed passages, pre vs post) with the corpus-wide and document rows."""
    n_docs = after.n_documents
    rows = [
        (f"changed passages ({after.n_changed}), top-1", after.changed_pre_top1, after.changed_post_top1),
        (f"changed passages ({after.n_changed}), top-5", after.changed_pre_top5, after.changed_post_top5),
        (f"all passages ({after.n_chunks}), top-1", before.chunk_top1, after.chunk_top1),
        (f"all passages ({after.n_chunks}), top-5", before.chunk_top5, after.chunk_top5),
        (f"whole documents ({n_docs})", before.document_accuracy, after.document_accuracy),
    ]
    return pd.DataFrame([{"accuracy of the attacker on": name, "before the release": pct(b),
                          "after the release": pct(a), "chance": pct(after.chance)}
                         for name, b, a in rows])


def mcnemar_table(after) -> pd.DataFrame:
    """The paper's Table 3: changed passages named correctly before × after."""
    t = after.table
    return pd.DataFrame({"after: named": [int(t[0, 0]), int(t[1, 0])],
                         "after: not named": [int(t[0, 1]), int(t[1, 1])]},
                        index=["before: named", "before: not named"])


def mcnemar_sentence(after) -> str:
    t = after.table
    return (f"Exact McNemar test on the {int(t[0, 1] + t[1, 0])} changed passages whose outcome "
            f"changed ({int(t[0, 1])} no longer named, {int(t[1, 0])} newly named): "
            f"p = {fmt_number(after.mcnemar_p)}. A small p (below 0.05) means the release really changed "
            "what the attacker gets right.")


def todo_list(after) -> pd.DataFrame:
    """Documents the attacker still names, the surest first: the analyst's to-do list."""
    docs = after.documents
    named = docs[docs["named"]].sort_values("margin", ascending=False)
    return named[["doc_id", "company", "margin", "n_chunks", "n_changed"]].rename(columns={
        "doc_id": "document", "margin": "margin (log-odds over the next company)",
        "n_chunks": "passages", "n_changed": "changed by the release"})


@st.cache_data(show_spinner="Explaining what gave this document away…", max_entries=64)
def _document_view(key: str, changes: str, doc_id: str, _att: Attack, _changed: dict[int, str]):
    """Kept on disk as well (the attacker's key, the changes, the document): a restarted server's
    Check page showed it after loading the attacker and sorting its vocabulary again."""
    from neswap_core.measure.explain import document_views

    from .pipeline import kept

    return kept("document_views", [key, changes, doc_id], lambda: document_views(
        _att.scorer, _changed, n_chunks=5, n_words=12, doc_ids=[doc_id])[0])


def document_evidence(att: Attack, changed: dict[int, str], chunk_ids: list[str],
                      doc_id: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The released passages of a document that gave its company away, and the words that weighed most."""
    view = _document_view(att.key, changes_key(changed), doc_id, att, changed)
    c = view.chunks
    passages = pd.DataFrame({
        "passage": [chunk_ids[int(p)] for p in c["position"]],
        "probability of the true company": np.exp(c["log_prob_true"].to_numpy(float)),
        "named": c["named"].to_numpy(bool), "changed by the release": c["changed"].to_numpy(bool),
        "text": c["text"],
    })
    words = view.words.rename("weight").rename_axis("word or phrase").reset_index()
    return passages, words


# --- the frontier's measured axes -------------------------------------------------------------------------
@st.cache_data(show_spinner="Measuring the attacker's accuracy on every candidate release…", max_entries=16)
def _measured_columns(key: str, kind: str, _sweep, _table, _att: Attack) -> pd.DataFrame:
    """Kept on disk as well (``pipeline.kept``): a restarted server does not score every draw
    again."""
    from neswap_core.choose.attack_columns import draws_columns

    from .pipeline import chunks_digest, kept

    def measure() -> pd.DataFrame:
        columns = draws_columns(_sweep, {kind: _att.scorer})
        return columns[[f"chunk_accuracy_mean.{kind}", f"document_accuracy_mean.{kind}"]].set_axis(
            ["chunk_accuracy", "document_accuracy"], axis=1)

    return kept("measured_axes", [key, kind, chunks_digest(_sweep.ctx.chunks)], measure)


def measured_table(stage, att: Attack, table: pd.DataFrame) -> pd.DataFrame:
    """The release table with the measured chunk and document accuracy of every release (mean
    over the M draws, ``choose.attack_columns``). They depend on the released text only, not on N:
    cached per sweep and attacker."""
    if len(table) == 0:
        return table
    measured = _measured_columns(digest([stage.sweep_key, att.key]), att.kind, stage.sweep(),
                                 table, att)
    return table.join(measured.drop(columns=[c for c in measured if c in table]), how="left")


# --- for the HTML report ---------------------------------------------------------------------------------
def protection_report(stage, release) -> tuple[dict[str, str], dict[str, pd.DataFrame]]:
    """The measured protection of a reviewed release for the HTML report: plain sentences and
    the Check page's tables (attack Tables 2 and 3, documents still named, the audit)."""
    changed = changed_chunks(release)
    att = attack(stage)
    before, after = measures(att, changed)
    pair = audit_pair(stage, changed)
    facts = {"attacker": att.note.replace("**", ""),
             "measured protection": accuracy_sentence(att, before, after),
             "changed passages (McNemar)": mcnemar_sentence(after),
             "divergence audit": audit_sentence(pair)}
    tables = {"Re-identification attack (the paper's Table 2)": accuracy_table(before, after),
              "Changed passages before/after (the paper's Table 3)": mcnemar_table(after),
              "Documents the attacker still names": todo_list(after),
              "Divergence audit per document (ε, δ)": comparison_view(pair)}
    return facts, tables
