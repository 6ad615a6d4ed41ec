"""The state summary in the sidebar of every page (issues 13, 20): corpus, chosen release with
its risk and utility, its protection verdict, corrections and decisions, the next step as a
button, and Undo.

It reads the workspace and the caches only: it never starts a long computation itself (release
numbers appear once the candidate releases were built in this server process). It is drawn after
the page (app.py), so a fit, a pin or a verdict the page just made is already in it; the verdict
is the one a page measured for the release in use (``verdict_view.remembered``), else it says
where to measure it.
"""

from __future__ import annotations

import streamlit as st

from . import verdict_view as vv
from .state import corpus_fingerprint, open_workspace, settings, undo_button
from .views_entities import correction_count
from .widgets import fmt_number, md_text

#: (page file, button label) of each next step.
NEXT_STEPS: dict[str, tuple[str, str]] = {
    "fit": ("pages/3_clusters.py", "Next: fit the clusters (3)"),
    "build": ("pages/5_frontier.py", "Next: build and compare releases (5)"),
    "choose": ("pages/5_frontier.py", "Next: choose a release (5)"),
    "review": ("pages/4_swaps.py", "Next: review the swapped pairs (4)"),
    "export": ("pages/6_export.py", "Next: export the release (6)"),
}


def next_step(has_mixture: bool, has_releases: bool, pinned: bool, decisions: int) -> str:
    """The workflow step an analyst should do next, from what the workspace already holds."""
    if not has_mixture:
        return "fit"
    if not has_releases:
        return "build"
    if not pinned:
        return "choose"
    return "review" if decisions == 0 else "export"


def _release_lines(stage, chosen: str | None) -> tuple[list[str], bool, str | None]:
    """Lines about the release in use, if the releases are built; whether they are; its id.

    The release is the core's choice a page computed for these settings (``choice_view``:
    pinned, the goal's or the line's, as the CLI chooses); before any page did, the pinned
    release or, without a goal, the line's pick; with a goal, where to see its release."""
    from neswap_core.choose.chosen import GOAL, PINNED
    from neswap_core.choose.frontier import choose_release
    from neswap_core.choose.goals import Goal

    from .choice_view import kept_choice, last_choice
    from .pipeline import SWEEPS_READY

    if stage.sweep_key not in SWEEPS_READY:
        return ["Releases: not built yet"], False, None
    table = stage.table()
    if not len(table):
        return ["Releases: none possible with these settings"], True, None
    s = stage.settings
    app = last_choice(stage)
    if app is not None and app.release_id is not None:
        how = {PINNED: "pinned by you", GOAL: "chosen by your goal" if app.choice.goal_met
               else "the closest to your goal, which none meets"}.get(
                   app.choice.why, "picked by your trade-off line")
        pick, rows = app.release_id, app.candidates.table
    elif (kept := kept_choice(stage)) is not None and kept.release_id in table.index:
        # a restarted server: the release the last choice was, kept in the workspace
        how = {PINNED: "pinned by you", GOAL: "chosen by your goal" if kept.goal_met
               else "the closest to your goal, which none meets"}.get(kept.why, "picked by your trade-off line")
        pick, rows = kept.release_id, table
    elif chosen and (s.get("chosen_plan") or {}).get("release_id") == chosen:
        return [f"Release: **{md_text(chosen)}** (a plan release pinned by you)"], True, chosen
    elif chosen in table.index:
        pick, rows, how = chosen, table, "pinned by you"
    elif Goal.from_config(stage.config) is not None:
        return ["Release: chosen by your goal (open 5 · Risk–utility frontier to measure the "
                "candidates)"], True, None
    else:
        pick, rows = choose_release(table, float(s["trade_off_a"]), float(s["trade_off_c"])).index, table
        how = "picked by your trade-off line"
    if pick is None or pick not in rows.index:
        return ["Releases: open 5 · Risk–utility frontier"], True, None
    row = rows.loc[pick]
    lines = [f"Release: **{md_text(pick)}** ({how})",
             f"Model risk DR {fmt_number(row['dr'], 4)} · utility DU {fmt_number(row['du'], 4)} "
             "(as generated)"]
    return lines, True, pick


def verdict_line(ws, s, release_id: str | None) -> str:
    """The release's verdict as a page measured it, or where to measure it (never green)."""
    if release_id is None:
        return ":gray[**Protection:** no release yet.]"
    found = vv.remembered(ws, corpus_fingerprint(s), release_id)
    if found is None:
        return (":gray[**Protection not measured yet** for this release: open "
                "5 · Risk–utility frontier or 6 · Export.]")
    verdict, where = found
    return vv.sidebar_line(verdict) + (f" :gray[({md_text(where)})]" if where else "")


def state_summary() -> None:
    """Sidebar block: where the analysis stands and what to do next (cheap: no new fit)."""
    from .pipeline import Stage

    ws = open_workspace()
    if ws is None:
        return
    s = settings(ws)
    stage = Stage(s, ws)
    counts = ws.counts()
    source = ("bundled sample (10 earnings calls)" if s["corpus_source"] == "sample"
              else "your uploaded files")
    has_mixture = ws.get_artifact("mixture", stage.mixture_key) is not None
    try:
        release, has_releases, release_id = _release_lines(stage, s.get("chosen_release"))
    except Exception:  # noqa: BLE001 - the summary must never break a page
        release, has_releases, release_id = ["Releases: open 5 · Risk–utility frontier"], False, None
    lines = [f"Corpus: {source}, protecting **{md_text(s['protect'])}**",
             f"Clusters: {'fitted' if has_mixture else 'not fitted yet'}"
             f" ({s['n_components']} clusters)", *release, verdict_line(ws, s, release_id),
             f"Entity corrections: {correction_count(ws.corrections())} · review decisions: "
             f"{counts['decisions']}"]
    with st.container(border=True, key="state_summary"):
        st.markdown("  \n".join(lines))
        step = next_step(has_mixture, has_releases, s.get("chosen_release") is not None,
                         counts["decisions"])
        page, label = NEXT_STEPS[step]
        if st.button(label, key="next_step", type="primary", width="stretch"):
            st.switch_page(page)
        undo_button(ws)
    st.caption(f"Workspace: {md_text(ws.folder)}")
    stale_notice(str(ws.folder), analyst_revision(ws))


#: Seconds between two checks of whether another tab changed the workspace.
STALE_CHECK_S = 5


def analyst_revision(ws) -> str:
    """A fingerprint of what the analyst decided (settings but bookkeeping, corrections,
    decisions): it changes when any tab changes the workspace."""
    import hashlib
    import json

    from .state import CORPUS_STATES, QUIET_SETTINGS

    settings_now = {k: v for k, v in ws.settings().items()
                    if k not in QUIET_SETTINGS and k != CORPUS_STATES}
    state = [settings_now, [c["id"] for c in ws.corrections()], ws.counts()]
    return hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode()).hexdigest()


@st.fragment(run_every=STALE_CHECK_S)
def stale_notice(folder: str, seen: str) -> None:
    """Every few seconds: when another tab changed the workspace since this page was drawn, say
    so and offer to redraw (a tab is never silently showing another state than its sidebar)."""
    from neswap_core.workspace.store import Workspace

    try:
        now = analyst_revision(Workspace.open(folder))
    except Exception:  # noqa: BLE001 - a busy workspace: check again next time
        return
    if now != seen:
        st.warning("Another tab changed this workspace since this page was drawn: what you see "
                   "may be out of date.", icon=":material/sync_problem:")
        if st.button("Show the current state", key="stale_refresh", icon=":material/refresh:",
                     width="stretch"):
            st.rerun(scope="app")
