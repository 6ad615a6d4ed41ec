"""Step 1 · Corpus: choose the transcripts, the column to protect and the chunking threshold."""

import streamlit as st

from appkit.corpus_checks import show_corpus_problems
from appkit.pipeline import digest, load_source, pack_uploads
from appkit.state import bind, current, save_settings
from appkit.views_prep import (
    ID_COLUMN,
    check_upload,
    default_protect,
    document_overview,
    identifier_counts,
    identifier_html,
    identifier_legend,
    metadata_columns,
    not_utf8,
    overview_ready,
    table_columns_without_text,
    to_utf8,
    with_text_column,
)
from appkit.widgets import md_text, user_errors
from neswap_core import CorpusError
from neswap_core.config import DEFAULT_PROTECT
from neswap_core.text.loading import check_swappable

st.title("1 · Corpus")
st.markdown(
    "Choose the earnings-call transcripts to anonymise and the metadata to protect (usually the "
    "company). Check that the Q&A was cut off, that company names, web addresses and executives "
    "were replaced by placeholders, and how many passages (*chunks*) the text is split into."
)

stage = current()
ws, s = stage.workspace, stage.settings


# --- source ------------------------------------------------------------------------------------
def use_sample() -> None:
    save_settings(ws, corpus_source="sample", protect=DEFAULT_PROTECT)


def accept_upload(files: list[tuple[str, bytes]], text_columns: dict) -> None:
    """Check the uploaded files (already converted to UTF-8 if asked), store them in the
    workspace and make them the corpus; the text column chosen is renamed ``text``."""
    progress = st.progress(0.0, text="Reading the uploaded files…")
    files = [(n, with_text_column(n, d, text_columns[n]) if n in text_columns else d)
             for n, d in files]
    progress.progress(0.3, text="Checking the transcripts (layout, metadata, text)…")
    try:
        probe = check_upload(files)
    except CorpusError as exc:
        progress.empty()
        st.error(f"These files cannot be used: {md_text(exc)}")
        return
    progress.progress(0.8, text="Storing them in the workspace…")
    key, payload = pack_uploads(files)
    ws.put_artifact("upload", key, payload)
    protect = default_protect(list(metadata_columns(probe)), s["protect"]) or s["protect"]
    save_settings(ws, corpus_source=key, protect=protect)
    progress.empty()
    st.rerun()


sample = stage.source == "sample"
with st.container(border=True):
    st.markdown(
        "**Current corpus:** "
        + (
            "the bundled sample — 10 earnings calls of Q3 2021 (ECTSum, text by The Motley Fool)"
            if sample
            else "your uploaded files (stored in the workspace, kept across reloads)"
        )
    )
    with st.expander("Use your own transcripts", expanded=not sample):
        st.markdown(
            "Accepted: **.txt** transcripts with a **manifest.csv** (one row per file: `doc_id` = "
            "file name without .txt, plus metadata columns such as `company`, `ticker`); **one "
            "CSV or JSONL table** (a text column plus metadata columns: you choose which column "
            "holds the text); or **Motley Fool JSON** calls. Optional `aliases.csv` / "
            "`executives.csv` improve identifier suppression. Text should be UTF-8; Windows-1252 "
            "/ Latin-1 files can be converted."
        )
        uploads = st.file_uploader(
            "Transcript files",
            type=["txt", "csv", "jsonl", "json"],
            accept_multiple_files=True,
            key="uploads",
        )
        chosen_files = [(f.name, f.getvalue()) for f in uploads or []]
        convert = False
        latin = not_utf8(chosen_files)
        if latin:
            st.warning(f"{len(latin)} file(s) are not UTF-8 ({md_text(', '.join(latin[:5]))}): "
                       "they are probably in Windows-1252 or Latin-1, as older Windows tools "
                       "save them.")
            convert = st.checkbox("Convert them from Windows-1252 / Latin-1 to UTF-8",
                                  key="convert_latin1",
                                  help="Read every byte as Windows-1252 (Latin-1 for the few "
                                  "bytes it leaves undefined). Check accents in the text below.")
        chosen_files = [(n, to_utf8(d) if convert and n in latin else d) for n, d in chosen_files]
        text_columns = {}
        for name, cols in table_columns_without_text(chosen_files).items():
            text_columns[name] = st.selectbox(
                f"Column with the transcript text in {md_text(name)}", cols,
                key=f"text_column::{name}",
                help="The table has no column named 'text'; choose the one holding the "
                "transcripts. The other columns become metadata.")
        if st.button("Use these files", type="primary", key="use_uploads"):
            accept_upload(chosen_files, text_columns)
    if not sample:
        st.button("Back to the bundled sample", on_click=use_sample, key="use_sample")

# --- column to protect --------------------------------------------------------------------------
with user_errors():
    payload = None if sample else ws.get_artifact("upload", stage.source)
    if not sample and payload is None:
        raise CorpusError(
            "The uploaded files are no longer in the workspace. Upload them again or go back "
            "to the bundled sample."
        )
    columns = metadata_columns(load_source(stage.source, ID_COLUMN, payload))

options = [c for c in columns if c != ID_COLUMN] + [ID_COLUMN]


def save_protect() -> None:
    if st.session_state["protect"] is not None:
        save_settings(ws, protect=st.session_state["protect"])


bind("protect", s["protect"] if s["protect"] in options else None)
chosen = st.selectbox(
    f"Metadata column to protect ({len(load_source(stage.source, ID_COLUMN, payload))} "
    "documents)",
    options,
    format_func=lambda c: f"{c} ({columns[c]} distinct value{'s' if columns[c] != 1 else ''})",
    placeholder="Choose a column",
    help="The value swapping must hide (c_i in the paper), usually the company. Swaps only "
    "exchange entities between passages of documents with different values of this column.",
    key="protect",
    on_change=save_protect,
)
if chosen is None or chosen not in columns:
    st.error(
        f"The column to protect, {md_text(repr(s['protect']))}, is not in these files. Choose "
        f"one of their metadata columns above ({md_text(', '.join(options))})."
    )
    st.stop()

# Everything above needs only the files: it is usable while the models load below (issue 13).
with user_errors():
    raw = stage.corpus()
    try:
        check_swappable(raw)
    except CorpusError as exc:
        st.warning(f"{md_text(exc)} You can still inspect the text below.")
    # The sentence distances (0.6 s to read back at 100k passages) only when the overview of
    # this threshold is neither in memory nor kept: one progress display either way.
    threshold = int(round(float(s["threshold"])))
    ready = overview_ready(digest([stage.chunks_key, threshold]), threshold, raw)
    show_corpus_problems(stage, documents=False, entities=False, upto="clean" if ready else "chunked")
    clean = stage.clean()

# --- chunking threshold --------------------------------------------------------------------------
st.subheader("Documents and chunks")
left, right = st.columns([3, 1])
bind("threshold", int(round(float(s["threshold"]))))
threshold = left.slider(
    "Chunking threshold (percentile 0–100)",
    min_value=0,
    max_value=100,
    step=1,
    key="threshold",
    on_change=lambda: save_settings(ws, threshold=float(st.session_state["threshold"])),
    help="A new chunk starts where the meaning of consecutive sentences changes more than this "
    "percentile of all such changes in the document. Higher → fewer, longer chunks. The paper "
    "uses 75.",
)
n_chunks, n_sentences, docs = document_overview(digest([stage.chunks_key, threshold]), threshold, raw,
                                                clean, stage.chunked)
right.metric(
    "Chunks at this threshold",
    f"{n_chunks:,}",
    help=f"Total over {len(raw)} documents and {n_sentences:,} sentences.",
)
if n_chunks:
    right.caption(f"≈ {n_sentences / n_chunks:.1f} sentences per chunk")
scoped = sum(1 for c in ws.corrections() if c["chunk_id"] is not None)
if scoped:
    left.caption(
        f"{scoped} entity correction(s) apply to a single chunk; chunks are renumbered "
        "when the threshold changes, so check them on page 2."
    )

st.dataframe(
    docs,
    hide_index=True,
    column_config={
        "words": st.column_config.NumberColumn(help="Words in the kept presentation part"),
        "sentences": st.column_config.NumberColumn(help="Sentences in the kept part"),
        "chunks": st.column_config.NumberColumn(help="Chunks at the chosen threshold"),
        "Q&A cut off": st.column_config.CheckboxColumn(
            help="Whether the start of the Q&A was found; if not, the whole text is kept"
        ),
        "marker": st.column_config.TextColumn("Q&A marker", help="Where the Q&A was detected"),
        "share kept": st.column_config.ProgressColumn(
            help="Share of the transcript's characters kept (the prepared remarks)",
            format="percent",
            min_value=0.0,
            max_value=1.0,
        ),
    },
)
missing = int((~docs["Q&A cut off"]).sum())
if missing:
    st.info(
        f"No Q&A marker found in {missing} of {len(docs)} document(s), so their whole text "
        "is kept. That is right when the files hold the prepared remarks only (as the bundled "
        "ECTSum sample does); otherwise check where their Q&A starts."
    )

# --- direct identifiers ------------------------------------------------------------------------
st.subheader("Direct identifiers suppressed")
st.caption("Replaced before anything else sees the text; the counts are replacements per document.")
counts = identifier_counts(clean.identifiers)
st.dataframe(counts, hide_index=True)
doc_id = st.selectbox(
    "Show the text of",
    list(docs["document"]),
    key="identifier_doc",
    help="The kept presentation part after suppression, placeholders highlighted.",
)
text = next(d.text for d in clean.corpus.documents if d.doc_id == doc_id)
st.markdown(identifier_legend(), unsafe_allow_html=True)
with st.container(height=420, border=True):
    st.markdown(identifier_html(text), unsafe_allow_html=True)
