"""View helpers for the preparation pages (Corpus, Entities & roles, Clusters).

Small pure functions that turn neswap_core results into the tables, HTML and coordinates the
pages show; no method computation lives here (that is in neswap_core, SPEC §1–§4).
"""

from __future__ import annotations

import html
import re
import warnings
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from neswap_core import Chunk, Corpus, CorpusError
from neswap_core.config import (
    CATEGORIES,
    COMPANY_PLACEHOLDER,
    PLACEHOLDER_PATTERN,
    ROLE_NAMES,
    URL_PLACEHOLDER,
)
from neswap_core.text.contingency import EMPTY
from neswap_core.text.loading import load_uploaded

from .pipeline import _Memo, corpus_digest, kept, kept_ready
from .widgets import html_text

#: Metadata column every loaded document has, so loading with it never fails on ``protect``.
ID_COLUMN = "doc_id"

#: Colours of the direct-identifier placeholders on the Corpus page.
IDENTIFIER_COLORS: dict[str, str] = {
    "company": "#1f77b4",
    "url": "#2ca02c",
    "executive": "#d62728",
    "other": "#7f7f7f",
}

#: One-line explanations of the roles (selectbox help on the Entities page, SPEC §3).
ROLE_HELP = (
    "S — swap: exchanged between two similar passages of different companies.  \n"
    "F — fixed: never altered (e.g. dates keep the timeline intact).  \n"
    "C — must change: every mention is replaced by a placeholder such as [Event] before swapping."
    "  \nU — untouched: not swapped and left as it is."
)


#: Short role names that fit a narrow selectbox (the long ones are ``config.ROLE_NAMES``).
ROLE_SHORT: dict[str, str] = {"S": "swap", "F": "fixed", "C": "replace", "U": "untouched"}


def role_label(role: str) -> str:
    """``"S · swap"`` for the role selectboxes."""
    return f"{role} · {ROLE_SHORT.get(role, ROLE_NAMES[role])}"


def document_numbers(chunks: Sequence[Chunk]) -> dict[str, int]:
    """Document id -> its number in the corpus (1, 2, …, in corpus order)."""
    first_seen = dict.fromkeys(map(attrgetter("doc_id"), chunks))  # one C-level pass (0.1 s at 100k)
    return {doc_id: i for i, doc_id in enumerate(first_seen, start=1)}


def chunk_label(chunk_id: str, numbers: dict[str, int] | None = None) -> str:
    """``"document 3, passage 7"`` for ``"APH_q3_2021#0006"`` (both counted from 1).

    Messages never show internal chunk ids; without ``numbers`` the document is named by
    its file name instead of its number.
    """
    doc, _, index = chunk_id.rpartition("#")
    if not (doc and index.isdigit()):
        return "a passage"
    where = f"document {numbers[doc]}" if numbers and doc in numbers else f"document {doc}"
    return f"{where}, passage {int(index) + 1}"


# --- uploads -----------------------------------------------------------------------------------
TABLE_SUFFIXES = (".csv", ".jsonl")


def not_utf8(files: list[tuple[str, bytes]]) -> list[str]:
    """Names of the files that are neither UTF-8 nor BOM-marked UTF-16 (likely Windows-1252)."""
    bad = []
    for name, data in files:
        if data.startswith((b"\xff\xfe", b"\xfe\xff")) or b"\x00" in data[:8192]:
            continue
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            bad.append(name)
    return bad


def to_utf8(data: bytes) -> bytes:
    """Bytes in Windows-1252 (falling back to Latin-1 for its 5 undefined bytes) as UTF-8."""
    try:
        text = data.decode("cp1252")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return text.encode("utf-8")


def _read_table(name: str, data: bytes) -> pd.DataFrame:
    import io

    if name.lower().endswith(".jsonl"):
        return pd.read_json(io.BytesIO(data), lines=True, dtype=False)
    return pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)


def table_columns_without_text(files: list[tuple[str, bytes]]) -> dict[str, list[str]]:
    """CSV/JSONL files without a ``text`` column -> their columns (for the column chooser)."""
    out = {}
    for name, data in files:
        if not name.lower().endswith(TABLE_SUFFIXES) or name.lower() in (
            "manifest.csv", "aliases.csv", "executives.csv"):
            continue
        try:
            columns = [str(c) for c in _read_table(name, data).columns]
        except (ValueError, UnicodeDecodeError):
            continue  # the loader reports unreadable files with its own message
        if "text" not in columns:
            out[name] = columns
    return out


def with_text_column(name: str, data: bytes, column: str) -> bytes:
    """The table with ``column`` renamed to ``text`` (the loader's column), same format."""
    frame = _read_table(name, data).rename(columns={column: "text"})
    if name.lower().endswith(".jsonl"):
        return frame.to_json(orient="records", lines=True, force_ascii=False).encode("utf-8")
    return frame.to_csv(index=False).encode("utf-8")


# --- corpus ------------------------------------------------------------------------------------
def check_upload(files: list[tuple[str, bytes]]) -> Corpus:
    """The uploaded files as a corpus keyed by ``doc_id`` (raises ``CorpusError`` if unusable).

    Loading with ``protect="doc_id"`` checks everything except the column to protect, which
    the analyst picks afterwards from the columns the files actually have.
    """
    if not files:
        raise CorpusError("Choose one or more files first (drag them onto the upload box).")
    return load_uploaded(files, protect=ID_COLUMN)


def metadata_columns(corpus: Corpus) -> dict[str, int]:
    """Metadata columns filled in for every document, with their number of distinct values."""
    if not len(corpus):
        return {}
    shared = set.intersection(
        *({k for k, v in d.metadata.items() if str(v).strip()} for d in corpus.documents)
    )
    order = [k for k in corpus.documents[0].metadata if k in shared]
    return {k: len({str(d.metadata[k]) for d in corpus.documents}) for k in order}


def default_protect(columns: Sequence[str], current: str) -> str | None:
    """Keep the current column to protect if the files have it, else ``company`` if present."""
    for name in (current, "company"):
        if name in columns:
            return name
    return None


_OVERVIEWS = _Memo(8)


def document_overview(key: str, threshold: float, _raw: Corpus, _clean, _chunked: Callable[[], Any]
                      ) -> tuple[int, int, pd.DataFrame]:
    """(chunks at ``threshold``, sentences, ``document_table``) once per corpus and threshold
    (``key``) and server process: both cut every document, about 1 s of each run of the Corpus
    page at 100,000 passages (issue 21); kept on disk too (1.4 s of the page's first draw after
    a restart), by the clean corpus's content. ``_chunked`` gives the sentence distances, read
    only when the overview is not kept (0.6 s at 100k: ``overview_ready``)."""
    def make() -> tuple[int, int, pd.DataFrame]:
        def compute() -> tuple[int, int, pd.DataFrame]:
            chunked = _chunked()
            return chunked.n_chunks(threshold), chunked.n_sentences, document_table(_raw, _clean, chunked, threshold)

        return kept("overview", _overview_parts(key, threshold, _raw), compute)

    return _OVERVIEWS.get(key, make)


def overview_ready(key: str, threshold: float, raw: Corpus) -> bool:
    """Whether ``document_overview`` answers without the sentence distances (in memory or kept):
    the Corpus page then prepares the corpus only up to its cleaning, with one progress display."""
    return _OVERVIEWS.has(key) or kept_ready("overview", _overview_parts(key, threshold, raw))


def _overview_parts(key: str, threshold: float, raw: Corpus) -> list:
    # the raw corpus by content; the clean one is made from it by the NER pipeline ``kept``
    # names and the library's code, so it need not be cleaned to know whether the overview is kept
    return [key, threshold, corpus_digest(raw)]


def document_table(raw: Corpus, clean, chunked, threshold: float) -> pd.DataFrame:
    """One row per document: protected value, sizes of the kept text, Q&A marker, chunks at t."""
    pres = clean.presentation.set_index("doc_id")
    rows = []
    for doc, kept_doc, cdoc in zip(
        raw.documents, clean.corpus.documents, chunked.documents, strict=True
    ):
        info = pres.loc[doc.doc_id]
        rows.append(
            {
                "document": doc.doc_id,
                raw.protect: raw.protected_value(doc),
                "words": len(kept_doc.text.split()),
                "sentences": len(cdoc.sentences),
                "chunks": len(cdoc.chunks(threshold)),
                "Q&A cut off": bool(info["found"]),
                "marker": info["marker"] or "none found: whole text kept",
                "share kept": info["chars_out"] / info["chars_in"] if info["chars_in"] else 0.0,
            }
        )
    return pd.DataFrame(rows)


def identifier_counts(identifiers: pd.DataFrame) -> pd.DataFrame:
    """Replacements per document (company names, URLs, executives) with a total column."""
    out = identifiers.rename(
        columns={
            "doc_id": "document",
            "company": "[Company Name]",
            "url": "[URL]",
            "executive": "[Executive #]",
        }
    )
    out["total"] = out[["[Company Name]", "[URL]", "[Executive #]"]].sum(axis=1)
    return out


def _identifier_kind(token: str) -> str:
    if token == COMPANY_PLACEHOLDER:
        return "company"
    if token == URL_PLACEHOLDER:
        return "url"
    return "executive" if token.startswith("[Executive") else "other"


def identifier_html(text: str) -> str:
    """HTML of a suppressed text with each placeholder coloured by what it replaced."""
    out, pos = [], 0
    for m in re.finditer(PLACEHOLDER_PATTERN, text):
        color = IDENTIFIER_COLORS[_identifier_kind(m.group())]
        out.append(html_text(text[pos : m.start()]))
        out.append(
            f"<span style='background:{color}26;border-bottom:3px solid {color};"
            f"border-radius:3px;padding:0 2px;font-weight:600'>{html_text(m.group())}</span>"
        )
        pos = m.end()
    out.append(html_text(text[pos:]))
    return "<div style='line-height:1.7;white-space:pre-wrap'>" + "".join(out) + "</div>"


def identifier_legend() -> str:
    """Legend of the placeholder colours."""
    names = {
        "company": "[Company Name]: company names, aliases, ticker",
        "url": "[URL]: web addresses, e-mails",
        "executive": "[Executive #]: company speakers",
    }
    return (
        "<div style='margin:4px 0 10px'>"
        + "".join(
            f"<span style='background:{IDENTIFIER_COLORS[k]}26;border-bottom:3px solid "
            f"{IDENTIFIER_COLORS[k]};padding:0 4px;margin-right:10px'>{html.escape(v)}</span>"
            for k, v in names.items()
        )
        + "</div>"
    )


# --- entities ----------------------------------------------------------------------------------
def entity_summary(chunks: Sequence[Chunk], z: pd.DataFrame) -> pd.DataFrame:
    """Per category: entity mentions, distinct values, chunks with ≥ 1 entity and their share."""
    n = len(chunks)
    rows = []
    for cat in CATEGORIES:
        spans = [s for ch in chunks for s in ch.entities if s.category == cat]
        with_entity = int((z[cat] != "").sum()) if n else 0
        rows.append(
            {
                "category": cat,
                "entities": len(spans),
                "distinct values": len({s.text for s in spans}),
                "chunks with ≥ 1": with_entity,
                "share of chunks": with_entity / n if n else 0.0,
            }
        )
    return pd.DataFrame(rows)


def top_values(entities: pd.DataFrame, category: str, k: int = 8) -> list[tuple[str, int]]:
    """The ``k`` most frequent entity strings of a category (mentions; ties alphabetical), read
    from the entity table (``views_entities.entity_frame``): a pass over every span per category
    took 0.3 s of each Entities page run at 100k passages."""
    rows = entities[entities["category"] == category].sort_values(
        ["mentions", "entity"], ascending=[False, True], kind="stable").head(k)
    return [(str(e), int(n)) for e, n in zip(rows["entity"], rows["mentions"], strict=True)]


def filter_chunks(
    chunks: Sequence[Chunk], categories: Sequence[str], doc_ids: Sequence[str], query: str
) -> list[Chunk]:
    """Chunks with an entity in ``categories`` (all if empty), in ``doc_ids`` (all if empty),
    and whose text or entity values contain ``query`` (case-insensitive; ignored if blank)."""
    cats, docs, q = set(categories), set(doc_ids), query.strip().lower()
    if not (cats or docs or q):
        return list(chunks)
    return [ch for ch in chunks
            if (not docs or ch.doc_id in docs)
            and (not cats or any(s.category in cats for s in ch.entities))
            and (not q or q in ch.text.lower())]


def chunks_with_categories(z: pd.DataFrame, categories: Sequence[str]) -> int:
    """Number of chunks holding at least one entity of any of ``categories``, from the
    contingency table z (one row per chunk; ``""`` = none): a pass over every span took
    0.5 s of each Entities page run at 100k passages."""
    cats = [c for c in categories if c in z.columns]
    return int((z[cats] != EMPTY).to_numpy().any(axis=1).sum()) if cats and len(z) else 0


# --- clusters ----------------------------------------------------------------------------------
def fit_with_warnings(stage, progress=None) -> tuple[object, list[str]]:
    """The stage's fitted mixture and the texts of warnings raised while fitting it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fitted = stage.mixture(progress)
    return fitted, sorted({str(w.message) for w in caught})


def cluster_table(
    mixture, labels: np.ndarray, chunks: Sequence[Chunk], protect: str = "protected"
) -> pd.DataFrame:
    """One row per fitted component: chunks (MAP labels), weight π, concentration ρ, documents
    and distinct values of the protected column (swaps need two of them in a cluster). Grouped
    once (a pass over every chunk per component took 0.6 s of each Clusters page run at 100k)."""
    k = int(mixture.n_components_)
    members = pd.DataFrame({"label": np.asarray(labels, dtype=np.int64),
                            "doc": list(map(attrgetter("doc_id"), chunks)),
                            "value": list(map(attrgetter("protected"), chunks))}).groupby("label")
    sizes, documents, values = (members.size(), members["doc"].nunique(), members["value"].nunique())
    index = pd.RangeIndex(k)
    return pd.DataFrame({
        "cluster": np.arange(k),
        "chunks": sizes.reindex(index, fill_value=0).to_numpy(dtype=np.int64),
        "weight π": np.asarray(mixture.weights_[:k], dtype=float),
        "concentration ρ": np.asarray(mixture.concentrations_[:k], dtype=float),
        "documents": documents.reindex(index, fill_value=0).to_numpy(dtype=np.int64),
        f"distinct {protect}": values.reindex(index, fill_value=0).to_numpy(dtype=np.int64),
    })


def pca_2d(x: np.ndarray) -> np.ndarray:
    """The first two principal-component scores of the rows of ``x`` (numpy SVD)."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2 or len(x) == 0:
        return np.zeros((0, 2))
    centred = x - x.mean(axis=0)
    u, s, _ = np.linalg.svd(centred, full_matrices=False)
    scores = u[:, :2] * s[:2]
    if scores.shape[1] < 2:
        scores = np.pad(scores, ((0, 0), (0, 2 - scores.shape[1])))
    return scores


def map_frame(chunks: Sequence[Chunk], coords: np.ndarray, labels: np.ndarray) -> pd.DataFrame:
    """Points of the 2-D chunk map: coordinates, cluster, document and a text preview."""
    return pd.DataFrame(
        {
            "PC 1": coords[:, 0],
            "PC 2": coords[:, 1],
            "cluster": [str(int(lab)) for lab in labels],
            "document": [html_text(ch.doc_id) for ch in chunks],
            "chunk": [ch.chunk_id for ch in chunks],
            "preview": [html_text(_preview(ch.text)) for ch in chunks],
        }
    )


#: Most points the chunk map draws: plotly serialises every point with its preview on each run
#: (2.8 s for 100,990 points, and some 30 MB sent to the browser, unreadable anyway).
MAP_POINTS = 5_000


def map_sample(points: pd.DataFrame, limit: int = MAP_POINTS, floor: int = 20) -> pd.DataFrame:
    """At most about ``limit`` rows of the chunk map, drawn at random (seed 0: the same map on
    every run) within each cluster in proportion to its size, at least ``floor`` of each (all of a
    smaller cluster), so small clusters stay visible; every row when there are few."""
    n = len(points)
    if n <= limit:
        return points
    rng = np.random.default_rng(0)
    keep = []
    for _, rows in points.groupby("cluster", sort=True).indices.items():
        take = min(len(rows), max(floor, int(round(limit * len(rows) / n))))
        keep.append(rng.choice(rows, size=take, replace=False))
    return points.iloc[np.sort(np.concatenate(keep))]


def _preview(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit].rstrip() + "…"


def typical_chunks(
    chunks: Sequence[Chunk], labels: np.ndarray, proba: np.ndarray | None, cluster: int, k: int = 5
) -> list[Chunk]:
    """Up to ``k`` chunks of a cluster, most typical first (highest posterior), one per document
    where possible so the sample shows the cluster's spread across companies."""
    idx = np.flatnonzero(np.asarray(labels) == cluster)
    if proba is not None and len(idx):
        idx = idx[np.argsort(-proba[idx, cluster], kind="stable")]
    picked, seen = [], set()
    for i in idx:
        if chunks[i].doc_id not in seen:
            picked.append(i)
            seen.add(chunks[i].doc_id)
        if len(picked) == k:
            break
    for i in idx:
        if len(picked) == k:
            break
        if i not in picked:
            picked.append(i)
    return [chunks[i] for i in picked]


def memberships(key: str, _mixture, _x: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The mixture's cluster of each pre-swap passage and, when it has them, the posteriors:
    once per mixture (``key``) and server process, not on every run of the page (two passes
    over every passage: about 0.4 s a run at 100,000)."""
    from .pipeline import array_digest, kept

    def compute() -> tuple[np.ndarray, np.ndarray | None]:
        labels = np.asarray(_mixture.predict(_x))
        proba = _mixture.predict_proba(_x) if hasattr(_mixture, "predict_proba") else None
        return labels, proba

    # kept on disk too: a restarted server predicted every passage again (0.9 s at 100,000)
    return _MEMBERSHIPS.get(key, lambda: kept("memberships", [key, array_digest(_x)], compute))


def cached_map(key: str, _chunks: Sequence[Chunk], _x: np.ndarray, _labels: np.ndarray) -> pd.DataFrame:
    """``map_frame`` of the chunk map (``cached_pca`` coordinates), once per mixture (``key``)
    and server process: escaping and previewing every passage took about 0.5 s of each run of
    the page at 100,000), and on disk (a restarted server made it again: 1.9 s at 100,000)."""
    from .pipeline import array_digest, chunks_digest, kept

    def make() -> pd.DataFrame:
        parts = [key, array_digest(_x), np.asarray(_labels), chunks_digest(_chunks)]
        return kept("map", parts, lambda: map_frame(_chunks, cached_pca(key, _x), _labels))

    return _MAPS.get(key, make)


_MEMBERSHIPS = _Memo(4)
_MAPS = _Memo(4)


@st.cache_data(show_spinner=False, max_entries=8)
def cached_pca(key: str, _x: np.ndarray) -> np.ndarray:
    """``pca_2d`` cached by the embeddings' key, and on disk by their content (``kept``: the SVD
    of 100,000 passages takes seconds, and a restarted server made it again)."""
    from .pipeline import array_digest, kept

    return kept("pca", [array_digest(_x)], lambda: pca_2d(_x))


@st.cache_data(show_spinner=False, max_entries=8)
def cluster_descriptions(key: str, _texts: Sequence[str], _x: np.ndarray, _labels: np.ndarray,
                         _means: np.ndarray):
    """``describe_clusters`` (characteristic words, typical passage) cached by the mixture's key,
    and on disk by the texts, the labels and the means (``kept``; the vectors are the mixture's)."""
    from neswap_core.disk_memo import texts_digest
    from neswap_core.models.cluster_description import describe_clusters

    from .pipeline import kept

    return kept("clusters", [key, texts_digest(_texts), np.asarray(_labels), np.asarray(_means)],
                lambda: describe_clusters(_texts, _x, _labels, _means))


_FIGURES = _Memo(16)


def kept_figure(key: str, name: str, make: Callable[[], Any]):
    """The plotly figure ``name`` of the fit ``key`` (``Stage.mixture_key``: it names the chunks,
    roles and mixture), built once per server process. Plotly Express rebuilt the Clusters
    page's four charts on every run (0.38 s of each click on the dev corpus, issue 21); the page
    hands the same figure to ``st.plotly_chart``, which only reads it."""
    return _FIGURES.get(f"{key}|{name}", make)
