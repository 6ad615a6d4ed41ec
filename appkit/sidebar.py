"""The state summary in the sidebar of every page (issue 13): corpus, chosen release with its
risk and utility, corrections and decisions, the next step as a button, and Undo.

It reads the workspace and the caches only: it never starts a long computation itself (release
numbers appear once the candidate releases were built in this server process).
"""

from __future__ import annotations

import streamlit as st

from .state import open_workspace, settings, undo_button
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


def _release_lines(stage, chosen: str | None) -> tuple[list[str], bool]:
    """Lines about the release in use, if the releases are built; and whether they are."""
    from neswap_core.choose.frontier import choose_release

    from .pipeline import SWEEPS_READY

    if stage.sweep_key not in SWEEPS_READY:
        return ["Releases: not built yet"], False
    table = stage.table()
    if not len(table):
        return ["Releases: none possible with these settings"], True
    s = stage.settings
    if chosen and (s.get("chosen_plan") or {}).get("release_id") == chosen:
        return [f"Release: **{md_text(chosen)}** (a plan release pinned by you)"], True
    pick = chosen if chosen in table.index else choose_release(
        table, float(s["trade_off_a"]), float(s["trade_off_c"])).index
    row = table.loc[pick]
    how = "pinned by you" if chosen in table.index else "picked by your trade-off line"
    lines = [f"Release: **{md_text(pick)}** ({how})",
             f"Risk DR {fmt_number(row['dr'], 6)} · utility DU {fmt_number(row['du'], 7)}"]
    measured = [c for c in table.columns if "accuracy" in str(c).lower()]
    for col in measured[:2]:
        lines.append(f"{md_text(col)}: {fmt_number(row[col])}")
    return lines, True


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
        release, has_releases = _release_lines(stage, s.get("chosen_release"))
    except Exception:  # noqa: BLE001 - the summary must never break a page
        release, has_releases = ["Releases: open 5 · Risk–utility frontier"], False
    lines = [f"Corpus: {source}, protecting **{md_text(s['protect'])}**",
             f"Clusters: {'fitted' if has_mixture else 'not fitted yet'}"
             f" (K = {s['n_components']})", *release,
             f"Entity corrections: {counts['corrections']} · review decisions: "
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
