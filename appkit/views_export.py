"""View helpers of the Export page: the chosen release written by the core's one writer (SPEC §11).

The page's release — the one pinned on **4 · Swaps** (a plan by its plan and stage) or picked on
the frontier — and the analyst's review decisions become a ``RunConfig`` (the run.toml the page
offers); ``finish_release`` (``choose/finish.py``) turns it, with the stage's cached candidates, into the
same ``ReleaseResult`` the CLI computes from that run.toml, and ``publish.writer`` makes the
``released/`` and ``key/`` files from it. So the app's downloads and the CLI's folders are the
same files. This module keeps the analyst's accepted leak-scan hits in the workspace.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd
import streamlit as st

import neswap_core
from neswap_core import (
    Corpus,
    ReleaseResult,
    key_files,
    release_bundle,
    report_html,
)
from neswap_core.choose.review import decision_rows
from neswap_core.choose.sources import PlanStage
from neswap_core.config import IDENTIFYING_COLUMNS, RunConfig
from neswap_core.publish.adaptive_attack import adaptive_applies, release_adaptive
from neswap_core.publish.bundle import Bundle
from neswap_core.publish.labels import ATTACKER_NAMES
from neswap_core.publish.leaks import LeakGroup, LeakHit, group_hits

from . import views_release as vr
from .pipeline import _Memo, digest
from .widgets import md_text, run_with_progress

ACCEPTED_SETTING = "accepted_leaks"


def publishable_options(corpus: Corpus) -> list[str]:
    """Metadata columns the analyst may mark publishable (never the protected or identifying ones)."""
    columns = dict.fromkeys(k for d in corpus.documents for k in d.metadata)
    return [c for c in columns if c != corpus.protect and c.lower() not in IDENTIFYING_COLUMNS
            and "path" not in c.lower()]


def hit_id(hit: LeakHit) -> str:
    """Workspace key of one hit: document|chunk|identifier|case."""
    return "|".join(hit.key)


def accepted_keys(stored: Sequence[str]) -> set[tuple[str, ...]]:
    return {tuple(s.split("|", 3)) for s in stored}


def hits_frame(hits: Sequence[LeakHit]) -> pd.DataFrame:
    return pd.DataFrame([{"document": h.document, "chunk": h.chunk, "identifier": h.identifier,
                          "kind": h.kind, "case": h.case, "own company": h.own_company,
                          "context": h.context} for h in hits])


# --- the leak gate: one decision per identifier (issue 20) ------------------------------------------
def group_ids(group: LeakGroup) -> list[str]:
    return ["|".join(key) for key in group.keys]


def set_accepted(ws, ids: Sequence[str], accept: bool) -> None:
    """Accept (or stop accepting) every hit of ``ids`` in one undoable step. Reads the stored
    acceptances when called: several boxes ticked before one rerun each add theirs."""
    from .state import save_settings

    stored = list(ws.get_setting(ACCEPTED_SETTING, []) or [])
    keep = [x for x in stored if x not in set(ids)] + (list(ids) if accept else [])
    save_settings(ws, **{ACCEPTED_SETTING: sorted(set(keep))})


def _toggle(ws, ids: list[str], widget: str) -> None:
    set_accepted(ws, ids, bool(st.session_state[widget]))


def leak_gate(ws, stored: list[str], hits: Sequence[LeakHit]) -> set[tuple[str, ...]]:
    """The scan's hits grouped by identifier (``publish.leaks.group_hits``) with counts, one
    checkbox per identifier (all its hits), *accept all* / *accept none*, and the hits' contexts
    on demand; returns the accepted keys."""
    groups = group_hits(hits)
    every = [i for g in groups for i in group_ids(g)]
    accepted = accepted_keys(stored)
    done = sum(all(k in accepted for k in g.keys) for g in groups)
    st.warning(f"The leak scan found **{len(hits)} hit(s) of {len(groups)} identifier(s)** in the "
               "released text. `released/` can be downloaded once you accept each identifier "
               "(all its hits at once) or remove it from the text (entity corrections on "
               f"**2 · Entities & roles**). Accepted so far: {done} of {len(groups)}.",
               icon=":material/policy:")
    left, right = st.columns(2)
    left.button("Accept every identifier", key="leak_accept_all", on_click=set_accepted,
                args=(ws, every, True), icon=":material/done_all:", width="stretch",
                disabled=done == len(groups))
    right.button("Accept none", key="leak_accept_none", on_click=set_accepted,
                 args=(ws, every, False), icon=":material/remove_done:", width="stretch",
                 disabled=not (accepted & {h.key for h in hits}))
    for k, group in enumerate(groups):
        ids, widget = group_ids(group), f"leak_{k}"
        st.session_state[widget] = all(key in accepted for key in group.keys)  # the workspace's
        box, more = st.columns([5, 1], vertical_alignment="center")
        whose = (f", {group.own_company} in its own company's documents" if group.own_company
                 else "")
        box.checkbox(f"Accept the {group.kind} **{md_text(group.identifier)}**: {group.hits} "
                     f"hit(s) in {group.documents} document(s){whose}", key=widget,
                     on_change=_toggle, args=(ws, ids, widget))
        with more.popover("Where", icon=":material/visibility:", width="stretch"):
            for example in group.examples:
                st.markdown(f"> …{md_text(example)}…")
            rows = hits_frame([h for h in hits if h.identifier == group.identifier
                               and h.kind == group.kind])
            st.dataframe(rows[["document", "chunk", "case", "context"]], hide_index=True)
    return accepted


# --- pinning a plan release ------------------------------------------------------------------------
def corpus_label(stage) -> str:
    """run.toml's corpus: the sample's path, or a placeholder for uploaded files."""
    return "data/sample" if stage.source == "sample" else "PATH/TO/YOUR/FILES"


def export_config(stage, release_id: str, candidates) -> RunConfig:
    """run.toml of the release ``release_id`` (a candidate of ``candidates``): the settings as
    the CLI runs them (``search_for_goal``), corrections, the review decisions that concern it
    and its identity (a plan by its plan and stage, ``PlanStage.identity``; a paper round or a
    document-defence level by its id)."""
    from neswap_core.choose.goals import search_for_goal
    from neswap_core.choose.sources import PaperRound

    from .state import run_config

    ws, s = stage.workspace, stage.settings
    source = candidates.source(release_id)
    if isinstance(source, PlanStage):
        identity = source.identity()
        decisions = ws.decisions(stage.review_key)
    elif isinstance(source, PaperRound):
        population = float(s["population"])
        release = vr.reviewed_release(stage.sweep(), stage.sweep_key, stage.table(population),
                                      release_id, ws.decisions, population)  # fmt: skip
        identity, decisions = {"release": release_id}, release.decisions
    else:  # a document-defence level: the app has no review of its changes yet
        identity, decisions = {"release": release_id}, {}
    config = run_config(s, corpus=corpus_label(stage), corrections=stage.corrections(),
                        decisions=decision_rows(decisions), **identity)
    return search_for_goal(config)[0]


_SCORERS = _Memo(4)


def _scorers(key: str, _chunks, _pre_swap, _reading, _corpus, seed: int,
             families: tuple[str, ...] = ("word",), _x=None, backend: str = "auto",
             lineup: int | None = None) -> dict:
    """The CLI's attackers: the attacker panel (on the corpus's reading) and the in-corpus one,
    trained once per corpus and roles (process-wide), with a progress bar and the time left."""
    from neswap_core import build_scorers  # the attackers bring scikit-learn: only to train them
    from neswap_core.measure.reading import reading_attacker

    from .pipeline import CACHE_DIR, embedder

    def train() -> dict:
        reading = (reading_attacker(_reading, _chunks, _corpus, cache_dir=CACHE_DIR, lineup=lineup)
                   if _reading is not None else None)  # fmt: skip
        return build_scorers(_pre_swap, reading, in_corpus=True, random_state=seed,
                             families=families, embed=embedder(backend).encode, vectors=_x,
                             cache_dir=str(CACHE_DIR), lineup=lineup)

    return _SCORERS.get(key, lambda: run_with_progress(
        "Training the attackers (once per corpus and roles)", train, "attackers",
        len(_pre_swap)))


def scorers(stage, seed: int) -> dict:
    """Every attacker the CLI's ``release`` trains for this corpus (cached)."""
    from . import views_check as vc

    reading, reading_key = vc.reading_of(stage)
    pre_swap, x = stage.pre_swap()
    families = tuple(stage.config.sweep.panel_families)
    return _scorers(scorers_key(stage, seed, reading_key), stage.chunks(), pre_swap, reading,
                    stage.corpus(), int(seed), families, x, stage.backend, stage.config.sweep.lineup)


class LazyScorers(Mapping):
    """``scorers(stage, seed)``, trained or read back on first use: a page whose attackers'
    figures are all kept on disk never loads them (a restarted server's Frontier page spent
    0.6–0.8 s of its first draw on it for nothing, issue 21). Never empty (the in-corpus
    attacker is always there), so ``scorers or None`` does not load it. Their names (in the
    order ``build_scorers`` gives them) are kept on disk by their key: the keys of what they
    measured list them, which loaded every attacker after a restart (the Export page's verdict)."""

    def __init__(self, stage, seed: int) -> None:
        self._load = lambda: scorers(stage, seed)
        self.key = scorers_key(stage, seed)  # what they are, known without loading them

    @functools.cached_property
    def _found(self) -> dict:
        return self._load()

    @functools.cached_property
    def _names(self) -> list[str]:
        from .pipeline import kept

        return kept("scorer_names", [self.key], lambda: list(self._found))

    def __getitem__(self, name: str):
        return self._found[name]

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __bool__(self) -> bool:
        return True


def scorers_key(stage, seed: int, reading_key: str | None = None) -> str:
    """Key of ``scorers``: the pre-swap data, the attacker reading, the seed and the families
    (also the key of what they measured: ``choice_view.app_choice``)."""
    from . import views_check as vc

    if reading_key is None:
        reading_key = vc.reading_key_of(stage)
    return digest([stage.roles_key, reading_key, int(seed), tuple(stage.config.sweep.panel_families),
                   int(stage.config.sweep.lineup)])


def release_figures(stage, changed: dict[int, str]) -> dict:
    """Verdict figures of a release (``changed``: {position: released text}) by every attacker
    the CLI trains, as key/report.html measures the written release."""
    from . import verdict_view as vv
    from . import views_check as vc
    from .pipeline import chunks_digest, kept

    seed = int(stage.settings["seed"])
    key = scorers_key(stage, seed)

    def measure() -> dict:
        return {name: sc.score(changed) for name, sc in scorers(stage, seed).items()}

    def make() -> dict:
        # kept on disk too: after a restart the Frontier page's first draw loaded every
        # attacker and scored the release again (2–4 s of its 8 on the dev corpus, issue 21)
        parts = [key, chunks_digest(stage.pre_swap()[0]), vc.changes_key(changed)]
        return vv.figures_of_measures(kept("release_measures", parts, measure, backend=stage.backend))

    # once per attackers and text: the Frontier page scored the release in use with every
    # attacker on each of its runs (0.4 s of every slider move on the dev corpus, issue 21)
    return _FIGURES.get(digest([key, sorted(changed.items())]), make)


_FIGURES = _Memo(8)


@dataclass
class Export:
    """The release the Export page writes: its run.toml and the core's result for it."""

    config: RunConfig
    result: ReleaseResult
    cache_key: str

    @property
    def release_id(self) -> str:
        return str(self.result.choice.release_id)

    @property
    def pinned_plan(self) -> bool:
        return bool(self.config.review.release_plan)

    def review_sentence(self) -> str:
        return self.result.release.review_sentence()

    def with_bundle_options(self, **options) -> Export:
        """The same release with other bundle settings (``publishable_columns``,
        ``shuffle_chunks``): they change how released/ is laid out, not what is released."""
        if all(self.config.settings()[k] == v for k, v in options.items()):
            return self
        config = self.config.replace(**options)
        result = dataclasses.replace(self.result, config=config, attack=None, audit=None)
        return Export(config, result, digest([self.cache_key, options]))


def export_for(stage, app) -> Export:
    """The ``Export`` of the app's release (``choice_view.app_choice`` with ``measure=True``:
    every candidate measured by the CLI's attackers); see the module docstring."""
    release_id = str(app.release_id)
    config = export_config(stage, release_id, app.candidates)
    options = {k: config.settings()[k] for k in BUNDLE_OPTIONS}
    base = config.replace(publishable_columns=[], shuffle_chunks=False)
    # the attackers by their key, not their names: listing them loaded them (a restarted
    # server's Export page trained or read back every attacker to draw kept figures, issue 21)
    named = app.scorers.key if isinstance(app.scorers, LazyScorers) else sorted(app.scorers)
    cache_key = digest([stage.plans_key, stage.roles_key, named, base.to_dict()])

    def make() -> Export:
        # through the package, which imports the release runner (and with it the attackers and
        # scikit-learn, 1.5 s) on this first call, not when a page draws kept figures (issue 21)
        result = neswap_core.finish_release(base, stage.corpus(), stage.clean().corpus, app.candidates,
                                            app.scorers, notes=[app.note] if app.note else [])  # fmt: skip
        return Export(base, result, cache_key)

    # once per release, review and settings (the key names them all but the bundle's layout,
    # which ``with_bundle_options`` sets without finishing again): the page reviewed the
    # release again on each of its runs (0.65 s of every click on dev, issue 21)
    return _EXPORTS.get(cache_key, make).with_bundle_options(**options)


#: Bundle settings that lay released/ out without changing what is released.
BUNDLE_OPTIONS = ("publishable_columns", "shuffle_chunks")


_EXPORTS = _Memo(4)


def verdict_of(export: Export):
    """The verdict of the release as written (``publish.protection.release_verdict``: the one
    key/report.html shows), once per release and review."""
    return _verdict(export.cache_key, export)


@st.cache_resource(show_spinner="Measuring the release with every attacker…", max_entries=8)
def _verdict(key: str, _export: Export):
    from neswap_core.publish.protection import release_verdict

    return release_verdict(_export.result)


def adaptive_applies_to(export: Export) -> bool:
    """Whether the release can be measured by the adaptive attacker (a document-defence release
    with an attacker reading: ``publish.adaptive_attack``). Kept on disk by the export's key
    (the release, review, settings and attackers): the rule reads the reading attacker's units,
    which loaded every attacker at a restarted server's first draw of the page (issue 21)."""
    from .pipeline import kept

    return kept("adaptive_applies", [export.cache_key], lambda: adaptive_applies(export.result))


def adaptive_of(export: Export) -> dict | None:
    """key/adaptive.json of the release (the one the download writes), once per release."""
    return _adaptive(export.cache_key, export)


@st.cache_resource(show_spinner="Training the adaptive attacker on the defended reading (about a "
                   "minute the first time, then kept)…", max_entries=8)
def _adaptive(key: str, _export: Export) -> dict | None:
    return release_adaptive(_export.result)


def adaptive_frame(figures: dict) -> pd.DataFrame:
    """One row per family of the adaptive attacker, in plain words, the worst marked."""
    worst = {figures["worst"][level]["attacker"] for level in ("chunk", "document")}
    rows = [{"attacker": ATTACKER_NAMES.get(name, name) + (" (worst)" if name in worst else ""),
             "passages named": f"{100 * f['chunk_accuracy']:.0f} %",
             "documents named": f"{f['documents_named']} of {f['n_documents']}"}
            for name, f in sorted(figures["families"].items())]  # fmt: skip
    return pd.DataFrame(rows)


def release_bundle_of(export: Export) -> Bundle:
    """The bundle of the release to export (released/ and the key tables; the other key/ files
    are made on download). Cached on the release, its decisions and the bundle settings: the
    leak scan and the TAB diff run once per change, not on every rerun of the page."""
    return _bundle(export.cache_key, export)


@st.cache_resource(show_spinner="Scanning the release for leaks…", max_entries=8)
def _bundle(key: str, _export: Export) -> Bundle:
    from .pipeline import kept

    # kept on disk by the export's key as well: a restarted server laid the release out, read
    # the key tables back by their digests and matched the leak scan again (1.7 s of the 100k
    # Export page's first draw, issue 21) where reading the bundle back takes a tenth of that
    return kept("bundle", [key], lambda: release_bundle(_export.result, with_key_files=False))



# --- key/ and the report ---------------------------------------------------------------------------
def _measured_protection(export: Export, stage) -> None:
    """The audit of the release from the Check page's cache (the same computation as the core's
    ``release_audit``), so downloading key/ after checking the release does not audit it again."""
    from neswap_core.publish.protection import audit_summary

    from . import views_check as vc

    if export.result.audit is None:
        pair = vc.audit_pair(stage, export.result.changed())
        export.result.audit = audit_summary(pair.before, pair.after)


def chart_html(figure) -> str:
    """The frontier chart as a report section (a fixed id: the same release gives the same file)."""
    return "<h2>Risk–utility frontier</h2>" + figure.to_html(
        include_plotlyjs=True, full_html=False, default_width="100%", config={"responsive": True},
        div_id="neswap-frontier")


def report_with_chart(export: Export, stage, figure) -> str:
    """key/report.html (the core's report) with the frontier chart."""
    _measured_protection(export, stage)
    return report_html(export.result, [chart_html(figure)])


def key_files_of(export: Export, stage, figure) -> dict[str, bytes]:
    """Every key/ file besides the bundle's (``publish.writer.key_files``), the report with its chart."""
    _measured_protection(export, stage)
    return key_files(export.result, [chart_html(figure)])
