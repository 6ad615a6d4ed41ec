"""Shared presentation helpers: entity highlighting, colours, errors without tracebacks."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import streamlit as st

from neswap_core.config import CATEGORIES, PLACEHOLDER_PATTERN
from neswap_core.corpus import EntitySpan
from neswap_core.errors import NeswapError

#: One colour per category (colour-blind-safe palette), used by every page and chart.
CATEGORY_COLORS: dict[str, str] = {
    "Organization": "#4e79a7",
    "Person": "#f28e2b",
    "Event": "#b07aa1",
    "Product": "#59a14f",
    "Location": "#e15759",
    "Date": "#9c755f",
}
PLACEHOLDER_COLOR = "#bab0ac"


def highlight(text: str, spans: Iterable[EntitySpan], emphasis: Iterable[tuple[int, int]] = ()) -> str:
    """HTML of ``text`` with entity spans in their category colour and placeholders in grey.

    ``emphasis`` (start, end) ranges get a thick outline: used for swapped entities.
    """
    marks: list[tuple[int, int, str, str]] = []
    for s in sorted(spans, key=lambda s: s.start):
        color = CATEGORY_COLORS.get(s.category, "#888")
        marks.append((s.start, s.end, color, s.category))
    for m in re.finditer(PLACEHOLDER_PATTERN, text):
        if not any(a < m.end() and m.start() < b for a, b, _, _ in marks):
            marks.append((m.start(), m.end(), PLACEHOLDER_COLOR, "placeholder"))
    marks.sort()
    strong = {(a, b) for a, b in emphasis}
    out, pos = [], 0
    for start, end, color, title in marks:
        if start < pos:
            continue
        out.append(html.escape(text[pos:start]))
        border = "2px solid #111" if (start, end) in strong else "none"
        out.append(
            f"<span title='{html.escape(title)}' style='background:{color}33;border-bottom:3px solid {color};"
            f"outline:{border};border-radius:3px;padding:0 2px'>{html.escape(text[start:end])}</span>"
        )
        pos = end
    out.append(html.escape(text[pos:]))
    return "<div style='line-height:1.7;white-space:pre-wrap'>" + "".join(out) + "</div>"


def legend() -> str:
    """A one-line colour legend of the categories."""
    items = [
        f"<span style='background:{CATEGORY_COLORS[c]}33;border-bottom:3px solid {CATEGORY_COLORS[c]};"
        f"padding:0 4px;margin-right:8px'>{c}</span>"
        for c in CATEGORIES
    ]
    items.append(f"<span style='background:{PLACEHOLDER_COLOR}33;padding:0 4px'>[placeholder]</span>")
    return "<div style='margin:4px 0 10px'>" + "".join(items) + "</div>"


@contextmanager
def user_errors(stop: bool = True) -> Iterator[None]:
    """Show a NeswapError as ``st.error`` (its message says what to do) instead of a traceback."""
    try:
        yield
    except NeswapError as exc:
        st.error(str(exc))
        if stop:
            st.stop()
