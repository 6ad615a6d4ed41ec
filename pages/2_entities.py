"""Step 2 · Entities & roles: what NER found, what each category's role is, and corrections."""

import plotly.express as px
import streamlit as st

from appkit.corpus_checks import show_corpus_problems
from appkit.pipeline import digest
from appkit.state import bind, current, save_settings
from appkit.views_entities import correction_form, entity_review, entity_tables, passage_fixer
from appkit.views_prep import (
    ROLE_HELP,
    chunk_label,
    chunks_with_categories,
    document_numbers,
    filter_chunks,
    role_label,
    top_values,
)
from appkit.widgets import CATEGORY_COLORS, highlight, legend, md_text, paginate, user_errors
from neswap_core import NeswapError
from neswap_core.config import CATEGORIES, ROLES
from neswap_core.generate.releases import category_combinations
from neswap_core.text.contingency import marginal_table
from neswap_core.text.corrections import corrections_from_config, passages_changed

PAGE_SIZE = 6
Z_PAGE_ROWS = 1000  # rows of z sent to the browser at a time (100k chunks: 100 pages)

st.title("2 · Entities & roles")
st.markdown(
    "Named entities (organisations, people, products, places, events, dates) can reveal the "
    "company even after its name is gone. Decide what happens to each category, check what "
    "was detected, and fix mistakes: your corrections are used by every later step."
)

stage = current()
ws, s = stage.workspace, stage.settings
show_corpus_problems(stage, upto="raw_chunks")

with user_errors():
    raw = stage.raw_chunks()
records = ws.corrections()


numbers = document_numbers(raw)


def remove_correction(correction_id: int) -> None:
    ws.remove_correction(correction_id)
    st.toast("Correction removed (Undo in the sidebar brings it back).")


def show_corrections(matches: list[int] | None) -> None:
    """The stored corrections, each with its effect and a remove button."""
    if not records:
        st.caption("No corrections yet.")
    for i, rec in enumerate(records):
        where = ("everywhere" if rec["chunk_id"] is None
                 else f"in {chunk_label(rec['chunk_id'], numbers)}")
        verb = "Add" if rec["action"] == "add" else "Drop"
        effect = "" if matches is None else f" — changes {matches[i]} passage(s)"
        left, right = st.columns([6, 1])
        left.markdown(f"{verb} **{md_text(rec['text'])}** as {rec['category']} {where}{effect}")
        if matches is not None and matches[i] == 0:
            left.warning("This correction matches nothing in the current passages: check the "
                         "spelling and case, or remove it.")
        right.button(
            "Remove",
            key=f"remove_correction_{rec['id']}",
            on_click=remove_correction,
            args=(rec["id"],),
        )


try:
    chunks = stage.chunks()
except NeswapError as exc:
    st.error(f"Your entity corrections cannot be applied: {md_text(exc)}")
    show_corrections(None)
    st.stop()

z, summary, entities = entity_tables(digest([stage.chunks_key, stage.corrections_key]), chunks, numbers)

# --- counts -------------------------------------------------------------------------------------
st.subheader("Entities found")
left, right = st.columns([3, 2])
left.dataframe(
    summary,
    hide_index=True,
    column_config={
        "entities": st.column_config.NumberColumn(help="Mentions found by NER (after corrections)"),
        "distinct values": st.column_config.NumberColumn(help="Different entity strings"),
        "chunks with ≥ 1": st.column_config.NumberColumn(
            help=f"Chunks (of {len(chunks)}) with at least one entity of the category"
        ),
        "share of chunks": st.column_config.NumberColumn(format="percent"),
    },
)
fig = px.bar(
    summary,
    x="category",
    y="chunks with ≥ 1",
    color="category",
    color_discrete_map=CATEGORY_COLORS,
    title=f"Chunks with ≥ 1 entity (of {len(chunks)})",
)
fig.update_layout(showlegend=False, height=300, margin=dict(l=10, r=10, t=40, b=10))
right.plotly_chart(fig, key="entity_bar")

# --- roles --------------------------------------------------------------------------------------
st.subheader("Role of each category")
st.caption(
    "Defaults follow the paper's application: Organization, Person, Product and Location "
    "are swapped, Event is replaced by a placeholder, Date stays fixed."
)


def save_roles() -> None:
    save_settings(ws, roles={c: st.session_state[f"role_{c}"] for c in CATEGORIES})


roles = {}
for col, cat in zip(st.columns(len(CATEGORIES)), CATEGORIES, strict=True):
    bind(f"role_{cat}", s["roles"].get(cat, "U"))
    roles[cat] = col.selectbox(
        cat,
        ROLES,
        format_func=role_label,
        key=f"role_{cat}",
        on_change=save_roles,
        help=ROLE_HELP,
    )
swap = [c for c in CATEGORIES if roles[c] == "S"]
changed = [c for c in CATEGORIES if roles[c] == "C"]
st.markdown(f"**Swap-eligible categories (S):** {', '.join(swap) or 'none'}")
if changed:
    hit = chunks_with_categories(z, changed)
    st.caption(
        f"{', '.join(changed)} mentions will be replaced by a placeholder in {hit} chunk(s)."
    )
if not swap:
    st.warning(
        "No category has role S, so nothing will be swapped. Give at least one category the role S."
    )
elif chunks_with_categories(z, swap) == 0:
    st.warning(
        "No entities in the chosen categories: give another category role S or add entities below."
    )
else:
    try:
        combos = category_combinations(swap, int(s["combination_size"]))
        st.caption(
            f"Candidate releases swap {s['combination_size']} categories at a time: "
            f"{len(combos)} combination(s), e.g. {' + '.join(combos[0])}."
        )
    except NeswapError as exc:
        st.warning(str(exc))

# --- browse -------------------------------------------------------------------------------------
st.subheader("Chunks with their entities")
f1, f2, f3 = st.columns([2, 2, 2])
cats = f1.multiselect(
    "Category",
    CATEGORIES,
    key="filter_categories",
    help="Show chunks with at least one entity of these categories (all if empty).",
)
docs = f2.multiselect("Document", list(numbers), key="filter_documents",
                      format_func=lambda d: f"document {numbers[d]} · {d}")
query = f3.text_input(
    "Text or value contains",
    key="filter_query",
    placeholder="e.g. Azure",
    help="Case-insensitive search in the chunk text.",
)
shown = filter_chunks(chunks, cats, docs, query)
p1, p2 = st.columns([1, 4], vertical_alignment="bottom")
on_page = paginate(shown, "chunk_page", PAGE_SIZE, "matching chunks", container=p1)
p2.caption(
    f"{len(shown)} of {len(chunks)} chunks match; {PAGE_SIZE} per page, scroll inside the box."
)
st.markdown(legend(), unsafe_allow_html=True)
with st.container(height=640, border=False):
    for ch in on_page:
        with st.container(border=True):
            st.caption(f"**{chunk_label(ch.chunk_id, numbers)}** ({md_text(ch.doc_id)}) · "
                       f"{md_text(stage.protect)}: {md_text(ch.protected)}")
            st.markdown(highlight(ch.text, ch.entities), unsafe_allow_html=True)
            passage_fixer(ws, ch, chunk_label(ch.chunk_id, numbers))

# --- review and corrections ----------------------------------------------------------------------
st.subheader("Review the entities")
entity_review(ws, raw, chunks, numbers, entities)
st.subheader("Add a missed entity or drop a wrong one")
correction_form(ws, chunks, shown, numbers)
st.markdown("**Your corrections** (used by every later step; Undo in the sidebar)")
show_corrections([passages_changed(raw, chunks, fix) for fix in corrections_from_config(records)])

# --- z ------------------------------------------------------------------------------------------
st.subheader("Contingency table z")
st.caption(
    "One row per chunk, one column per category: the chunk's distinct entity strings. "
    "The disclosure risk (page 5) is estimated from how often each combination occurs."
)
st.dataframe(paginate(z, "z_page", Z_PAGE_ROWS, "rows of z"), height=280, key="z_table")
default_j = list(swap[: int(s["combination_size"])]) or list(CATEGORIES[:2])
j = st.multiselect(
    "Categories J of the marginal table z_J",
    CATEGORIES,
    default=default_j,
    key="marginal_categories",
    help="Groups chunks by their values in J; chunks with no entity in J are left "
    "out, as in the risk model.",
)
if j:
    zj = marginal_table(z, j)
    uniques = int((zj["chunks"] == 1).sum()) if len(zj) else 0
    st.caption(
        f"z_J has {len(zj)} distinct combinations over {int(zj['chunks'].sum()) if len(zj) else 0} "
        f"chunks; {uniques} occur in exactly one chunk (*sample uniques*: the combinations "
        "that could point to a single company, which swapping must hide)."
    )
    st.dataframe(zj, hide_index=True, height=240, key="marginal_table")
    with st.expander("Most frequent values per category"):
        for cat in j:
            st.markdown(
                f"**{cat}:** "
                + (", ".join(f"{md_text(v)} ({n})" for v, n in top_values(entities, cat))
                   or "none")
            )
