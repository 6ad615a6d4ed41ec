"""Entity review on the Entities page, in the manner of Presidio's review tools (issue 13):
click an entity in the table to change its category or mark it "not an entity" everywhere,
add a missed one, and see at once when a correction would match nothing.

Corrections are stored in the workspace from widget callbacks, which run before the script and
cannot be cut short by a second click; storing is idempotent, so a double-clicked *Save
correction* stores the correction once and says so, never an error.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from neswap_core import Chunk
from neswap_core.config import CATEGORIES
from neswap_core.text.corrections import EntityCorrection, passages_matched
from neswap_core.workspace.store import Workspace

from .pipeline import _Memo
from .views_prep import chunk_label
from .widgets import md_text

MESSAGE_KEY = "correction_message"


def entity_frame(chunks: Sequence[Chunk], numbers: dict[str, int]) -> pd.DataFrame:
    """One row per distinct (entity text, category): mentions, passages and documents."""
    rows: dict[tuple[str, str], dict] = {}
    for ch in chunks:
        for span in ch.entities:
            row = rows.setdefault((span.text, span.category), {
                "entity": span.text, "category": span.category, "mentions": 0,
                "passages": set(), "documents": set(), "added by you": False})
            row["mentions"] += 1
            row["passages"].add(ch.chunk_id)
            row["documents"].add(numbers.get(ch.doc_id, 0))
            row["added by you"] |= span.label == "MANUAL"
    out = [{**r, "passages": len(r["passages"]),
            "documents": ", ".join(str(d) for d in sorted(r["documents"]))}
           for r in rows.values()]
    frame = pd.DataFrame(out, columns=["entity", "category", "mentions", "passages",
                                       "documents", "added by you"])
    return frame.sort_values(["mentions", "entity"], ascending=[False, True], ignore_index=True)


#: Most passages the correction form offers to pick from (a select box of 100,000 passages
#: sent every passage's preview to the browser on each run); filter the list to reach others.
MAX_PICKABLE = 1000

_TABLES = _Memo(8)


def entity_tables(key: str, _chunks: Sequence[Chunk], _numbers: dict[str, int]
                  ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(z, the per-category summary, the entity table) of the chunks, once per chunks and
    corrections (``key``) and server process: each is a pass over every passage, together about
    1 s of every run of the Entities page at 100,000 passages (issue 21); kept on disk too (a
    restarted server made them again: 2.6 s of the page's first draw at 100,000)."""
    from neswap_core.text.contingency import contingency_table

    from .pipeline import chunks_digest, kept
    from .views_prep import entity_summary

    def compute():
        z = contingency_table(_chunks)
        return z, entity_summary(_chunks, z), entity_frame(_chunks, _numbers)

    def make():
        # the chunks' texts by content; their entities are named by ``key`` (the chunks' and
        # corrections' keys) and by ``kept``'s NER fingerprint (hashing 380,000 spans' reprs
        # took 0.7 s of the page's first draw at 100k passages)
        parts = [key, sorted(_numbers.items()), chunks_digest(_chunks)]
        return kept("entity_tables", parts, compute)

    return _TABLES.get(key, make)


def store_corrections(ws: Workspace, records: list[tuple[str, str, str, str | None]],
                      label: str) -> bool:
    """Store corrections (idempotent); True when at least one was new."""
    before = {(c["action"], c["category"], c["text"], c["chunk_id"]) for c in ws.corrections()}
    ws.add_corrections(records, undo_label=label)
    return any(tuple(r) not in before for r in records)


def _say(kind: str, text: str) -> None:
    st.session_state[MESSAGE_KEY] = (kind, text)


def _save_form(ws: Workspace, chunks: Sequence[Chunk], numbers: dict[str, int]) -> None:
    """Callback of *Save correction*: validate, warn on no match, store once."""
    state = st.session_state
    text = (state.get("corr_text") or "").strip()
    action, category = state["corr_action"], state["corr_category"]
    where = None if state["corr_scope"] == "everywhere" else state.get("corr_chunk")
    place = "any passage" if where is None else chunk_label(where, numbers)
    if not text:
        _say("error", "Type the entity's text exactly as it appears in the passage, e.g. iX.")
        return
    hits = passages_matched(chunks, EntityCorrection(action, category, text, where))
    if not hits:
        what = (f"“{md_text(text)}” does not occur as a whole word in {place}"
                if action == "add" else f"“{md_text(text)}” is not a {category} entity in {place}")
        _say("warning", f"{what}, so this correction would change nothing and was not saved. "
             "Check the spelling and the case.")
        return
    verb = "Add" if action == "add" else "Drop"
    new = store_corrections(ws, [(action, category, text, where)],
                            f"{verb.lower()} “{text}” as {category}")
    summary = (f"{verb} **{md_text(text)}** as {category} "
               f"{'everywhere' if where is None else 'in ' + place}: {hits} passage(s)")
    _say("success" if new else "info", ("Saved: " if new else "Already saved: ") + summary)


def correction_form(ws: Workspace, chunks: Sequence[Chunk], shown: Sequence[Chunk],
                    numbers: dict[str, int]) -> None:
    """The add/drop form; the result of the last save is shown under it."""
    with st.form("correction_form", clear_on_submit=False):
        a, b, c = st.columns(3)
        a.radio("Action", ["add", "drop"], horizontal=True, key="corr_action",
                format_func=lambda v: {"add": "Add a missed entity",
                                       "drop": "Drop a wrong entity"}[v])
        b.selectbox("Category", CATEGORIES, key="corr_category")
        c.text_input("Entity text", key="corr_text", placeholder="e.g. iX",
                     help="Exactly as in the text (case-sensitive, whole words).")
        a.radio("Where", ["everywhere", "this passage"], horizontal=True, key="corr_scope")
        pickable = list(shown or chunks)
        previews = {ch.chunk_id: " ".join(ch.text.split())[:50] for ch in pickable[:MAX_PICKABLE]}
        b.selectbox("Passage (when “this passage”)", list(previews), key="corr_chunk",
                    format_func=lambda k: f"{chunk_label(k, numbers)}: {previews[k]}…",
                    help="The passages matching the filters above"
                    + (f" (the first {MAX_PICKABLE:,} of {len(pickable):,}: filter the list "
                       "to reach the others)." if len(pickable) > MAX_PICKABLE else "."))
        st.form_submit_button("Save correction", type="primary", on_click=_save_form,
                              args=(ws, chunks, numbers))
    message = st.session_state.get(MESSAGE_KEY)
    if message:
        getattr(st, message[0])(message[1])


def _bulk(ws: Workspace, text: str, category: str, new_category: str | None) -> None:
    """Change the category of ``text`` everywhere, or drop it everywhere (None)."""
    records = [("drop", category, text, None)]
    if new_category:
        records.append(("add", new_category, text, None))
        label = f"“{text}”: {category} → {new_category}"
    else:
        label = f"“{text}” is not an entity"
    store_corrections(ws, records, label)
    _say("success", f"Done: {md_text(label)} in every passage (Undo in the sidebar).")


def correction_count(corrections: Sequence[dict]) -> int:
    """Corrections as the analyst made them: a category change (a *drop* and an *add* of one
    text in one scope) is one, not two (issue 20)."""
    return len({(c["text"], c["chunk_id"]) for c in corrections})


def _fix_here(ws: Workspace, chunk_id: str, label: str, text: str, category: str,
              widget: str) -> None:
    """Callback of a passage's *Change here* / *Not an entity here*: one scoped correction."""
    new_category = st.session_state.get(widget) if widget else None
    records = [("drop", category, text, chunk_id)]
    if new_category:
        records.append(("add", new_category, text, chunk_id))
        what = f"“{text}”: {category} → {new_category} in {label}"
    else:
        what = f"“{text}” is not an entity in {label}"
    store_corrections(ws, records, what)
    _say("success", f"Done: {md_text(what)} (Undo in the sidebar).")
    st.session_state.pop(f"fix_{chunk_id}", None)


def passage_fixer(ws: Workspace, chunk: Chunk, label: str) -> None:
    """Click an entity of a passage to fix it there: another category, or not an entity (the
    change applies to this passage only; *Review the entities* changes every passage)."""
    options = list(dict.fromkeys(f"{e.text} · {e.category}" for e in chunk.entities))
    if not options:
        return
    key = f"fix_{chunk.chunk_id}"
    pick = st.pills("Click an entity to fix it in this passage", options, key=key,
                    selection_mode="single", label_visibility="collapsed")
    if pick is None:
        return
    text, category = pick.rsplit(" · ", 1)
    left, mid, right = st.columns([2, 1.3, 1.3], vertical_alignment="bottom")
    widget = f"fixcat_{chunk.chunk_id}"
    left.selectbox(f"Category of “{md_text(text)}” here", [c for c in CATEGORIES if c != category],
                   key=widget)
    mid.button("Change here", key=f"fixgo_{chunk.chunk_id}", on_click=_fix_here,
               args=(ws, chunk.chunk_id, label, text, category, widget))
    right.button("Not an entity here", key=f"fixdrop_{chunk.chunk_id}", on_click=_fix_here,
                 args=(ws, chunk.chunk_id, label, text, category, ""))


def entity_review(ws: Workspace, raw: Sequence[Chunk], chunks: Sequence[Chunk],
                  numbers: dict[str, int], frame: pd.DataFrame | None = None) -> None:
    """Table of every entity (``frame``: ``entity_frame``'s, when already made); click a row to
    change its category or drop it everywhere."""
    if frame is None:
        frame = entity_frame(chunks, numbers)
    query = st.text_input("Find an entity", key="entity_query", placeholder="e.g. Azure")
    if query.strip():
        frame = frame[frame["entity"].str.contains(query.strip(), case=False, regex=False)]
        frame = frame.reset_index(drop=True)
    st.caption(f"{len(frame)} distinct entities. Click a row to review it; the change applies "
               "to every passage (bulk action) and can be undone.")
    event = st.dataframe(frame, hide_index=True, on_select="rerun", selection_mode="single-row",
                         key="entity_table", height=260,
                         column_config={"documents": st.column_config.TextColumn(
                             help="Numbers of the documents it occurs in")})
    rows = list(getattr(getattr(event, "selection", None), "rows", []) or [])
    labels = [f"{r.entity} ({r.category})" for r in frame.itertuples()]
    if rows and rows[0] < len(labels):
        st.session_state["entity_pick"] = labels[rows[0]]
    if st.session_state.get("entity_pick") not in labels:
        st.session_state["entity_pick"] = None
    pick = st.selectbox("Entity to review", labels, key="entity_pick",
                        placeholder="Click a row above or choose here")
    if pick is None:
        return
    row = frame.iloc[labels.index(pick)]
    text, category = str(row["entity"]), str(row["category"])
    st.markdown(f"**{md_text(text)}** is a {category} in {row['passages']} passage(s) of "
                f"document(s) {row['documents']}.")
    left, mid, right = st.columns([2, 1.4, 1.4], vertical_alignment="bottom")
    others = [c for c in CATEGORIES if c != category]
    new = left.selectbox("Change its category to", others, key="entity_new_category")
    mid.button("Change everywhere", key="entity_change", on_click=_bulk,
               args=(ws, text, category, new))
    right.button("Not an entity", key="entity_drop", on_click=_bulk,
                 args=(ws, text, category, None),
                 help="Drop this string as a category entity in every passage.")
