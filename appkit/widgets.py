"""Shared presentation helpers: safe text, one number format, entity highlighting, colours,
errors without tracebacks.

Safety (issue 13): every string that comes from the corpus or an upload goes through
``md_text`` (inside Markdown: captions, labels, st.markdown) or ``html_text`` (inside HTML we
build ourselves, and in plotly hover text), so it is always shown as text, never as a link,
formatting or markup.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import numpy as np
import streamlit as st

from neswap_core import NeswapError
from neswap_core.config import CATEGORIES, PLACEHOLDER_PATTERN
from neswap_core.corpus import EntitySpan

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


#: ASCII punctuation that Markdown, GitHub autolinks, Streamlit directives (``:red[…]``,
#: ``:material/…:``) or LaTeX (``$…$``) could interpret.
_MARKDOWN_SPECIALS = frozenset("\\`*_{}[]()<>#+-.!|:~$&=\"'^%@/")
#: The same characters as numeric HTML entities (a blank line inside our HTML would otherwise
#: end the HTML block and let Markdown parse the rest of the text).
_HTML_ENTITIES = {ord(ch): f"&#{ord(ch)};" for ch in _MARKDOWN_SPECIALS} | {
    ord("\n"): "&#10;",
    ord("\r"): "",
}


def md_text(value: object) -> str:
    """``value`` as literal text inside Markdown: every special character backslash-escaped.

    Use for any corpus or upload string placed in ``st.markdown``, ``st.caption``, a widget
    label, a metric, an expander or a tab title. Newlines become spaces.
    """
    flat = " ".join(str(value).split())
    return "".join("\\" + ch if ch in _MARKDOWN_SPECIALS else ch for ch in flat)


def html_text(value: object) -> str:
    """``value`` as literal text inside HTML we build (``unsafe_allow_html``) or plotly labels.

    Escapes ``< > & " '`` and every Markdown-significant character as a numeric entity, and
    newlines as ``&#10;`` (shown as line breaks under ``white-space: pre-wrap``).
    """
    return str(value).translate(_HTML_ENTITIES)


def fmt_number(value: float | int | None, digits: int = 3) -> str:
    """One number format for the whole app: ``digits`` significant digits, thousands separators,
    and powers of ten (``2.8 × 10¹⁷``) instead of ``e`` notation for very large or small values."""
    if value is None:
        return "–"
    x = float(value)
    if x != x:  # NaN
        return "–"
    if x in (float("inf"), float("-inf")):
        return "∞" if x > 0 else "−∞"
    if x == int(x) and abs(x) < 1e6:
        return f"{int(x):,}"
    if x != 0 and not 1e-3 <= abs(x) < 1e6:
        mantissa, exponent = f"{x:.{max(digits - 1, 0)}e}".split("e")
        return f"{mantissa} × 10{_superscript(int(exponent))}"
    magnitude = 0 if x == 0 else int(np.floor(np.log10(abs(x))))
    decimals = max(digits - 1 - magnitude, 0)
    return f"{x:,.{decimals}f}"


def delta(change: float | int | None, digits: int = 4, unit: str = "", scale: float = 1.0
          ) -> str | None:
    """A metric's delta as shown ("+0.0123", "+2.5 points"), or None — no arrow — when the change
    is not a number or rounds to zero at the digits shown (a "no change" is never drawn as a
    red ↑ nor written as ``8.01 × 10⁻¹²``)."""
    if change is None:
        return None
    x = float(change) * scale
    if x != x or round(x, digits) == 0:
        return None
    return f"{x:+,.{digits}f}{unit}"


def fmt_share(value: float, digits: int = 1) -> str:
    """A proportion in [0, 1] as a percentage (``0.237`` → ``23.7 %``)."""
    return f"{100 * float(value):.{digits}f} %"


_SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _superscript(exponent: int) -> str:
    return str(exponent).translate(_SUPERSCRIPTS)


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
        out.append(html_text(text[pos:start]))
        border = "2px solid #111" if (start, end) in strong else "none"
        out.append(
            f"<span title='{html_text(title)}' style='background:{color}33;border-bottom:3px solid {color};"
            f"outline:{border};border-radius:3px;padding:0 2px'>{html_text(text[start:end])}</span>"
        )
        pos = end
    out.append(html_text(text[pos:]))
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
    """Show a NeswapError as ``st.error`` (its message says what to do) instead of a traceback.

    The message is shown as plain text: it may quote file names or values from the corpus.
    """
    try:
        yield
    except NeswapError as exc:
        st.error(md_text(exc))
        if stop:
            st.stop()


def progress_display(label: str, quiet_for: float = 0.0):
    """A ``progress(fraction, message)`` callback drawing stage, percent and time left.

    Time left is extrapolated from the elapsed time once 5 % is done; the bar disappears at
    1.0. The bar's slot is made where ``progress_display`` is called and drawn in that call's
    context (``contextvars``), so a cached computation that reports progress never records the
    bar: a later cache hit shows no stale bar and cannot fail to replay it. Used for every
    step that can take more than two seconds. Nothing is drawn during the first
    ``quiet_for`` seconds, so work that turns out to be cached shows no bar at all.
    """
    import contextvars
    import time

    slot = st.empty()
    context = contextvars.copy_context()  # outside any cached function: nothing is recorded
    start = time.perf_counter()

    def draw(fraction: float, message: str) -> None:
        elapsed = time.perf_counter() - start
        if fraction >= 1.0:
            slot.empty()
        elif elapsed >= quiet_for:
            slot.progress(fraction, text=progress_text(label, message, fraction, elapsed))

    def progress(fraction: float, message: str) -> None:
        fraction = min(max(float(fraction), 0.0), 1.0)
        context.run(draw, fraction, message)

    return progress


#: Seconds per unit (e.g. per passage) of the last run of each long step in this process: the
#: next run's "time left" (a first run shows the time so far).
_RATES: dict[str, float] = {}


def run_with_progress(label: str, work, step: str, units: int):
    """``work()`` in a worker thread while the page shows a bar with the time left (issue 20: a
    bare spinner for a minute while the attacker trains). The estimate is the last run's seconds
    per unit of ``step`` (``_RATES``) times ``units``; ``work`` must not draw anything."""
    import threading
    import time

    expected = _RATES[step] * units if step in _RATES else None
    result: dict = {}

    def target() -> None:
        try:
            result["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - raised again on the script thread
            result["error"] = exc

    start = time.perf_counter()
    thread = threading.Thread(target=target, name=f"neswap-{step}", daemon=True)
    thread.start()
    slot = st.empty()
    while thread.is_alive():
        thread.join(0.25)
        elapsed = time.perf_counter() - start
        if not thread.is_alive() or elapsed < 1.0:
            continue
        if expected is None:
            slot.progress(0.0, text=f"{label} — {elapsed:.0f} s so far (the first time on this "
                          "server: no estimate yet)")
        elif elapsed < expected:
            slot.progress(min(elapsed / expected, 0.95),
                          text=f"{label} — about {max(expected - elapsed, 1):.0f} s left")
        else:
            slot.progress(0.95, text=f"{label} — {elapsed:.0f} s, longer than the "
                          f"{expected:.0f} s expected")
    slot.empty()
    if "error" in result:
        raise result["error"]
    _RATES[step] = (time.perf_counter() - start) / max(int(units), 1)
    return result["value"]


def progress_text(label: str, message: str, fraction: float, elapsed: float) -> str:
    """"Stage: message — 40 % · about 12 s left" (time left once 5 % is done and 1 s passed)."""
    left = ""
    if fraction >= 0.05 and elapsed > 1.0:
        seconds = max(elapsed / fraction * (1 - fraction), 1)
        left = (f" · about {seconds:.0f} s left" if seconds < 120
                else f" · about {seconds / 60:.0f} min left")
    return f"{label}: {message} — {100 * fraction:.0f} %{left}"


def confirm_button(label: str, key: str, on_confirm, question: str, **kwargs) -> None:
    """A destructive action behind a popover that asks first (undo stays possible)."""
    with st.popover(label, **kwargs):
        st.markdown(question)
        st.button(f"Yes, {label[0].lower()}{label[1:]}", key=key, on_click=on_confirm,
                  type="primary")


def page_bounds(n_items: int, page: int, page_size: int) -> tuple[int, int, int]:
    """(first, end, pages) of 1-based ``page`` of ``n_items`` shown ``page_size`` at a time;
    a page past the end shows the last one (the list may have shrunk since it was chosen)."""
    pages = max(1, -(-n_items // max(page_size, 1)))
    page = min(max(int(page), 1), pages)
    first = (page - 1) * page_size
    return first, min(first + page_size, n_items), pages


def paginate(items, key: str, page_size: int, what: str = "chunks", container=None):
    """The slice of ``items`` (a list or a DataFrame) on the page the analyst picked (issue 14).

    Draws a page number input (only when there is more than one page) and a caption
    "rows a–b of n"; a big corpus is never sent to the browser whole.
    """
    where = container or st
    n = len(items)
    state = st.session_state.get(key, 1)
    first, end, pages = page_bounds(n, state if isinstance(state, int) else 1, page_size)
    if pages > 1:
        if isinstance(state, int) and state > pages:
            st.session_state[key] = pages
        start = {} if key in st.session_state else {"value": 1}  # no value beside a set state
        page = where.number_input(f"Page (1–{pages:,})", 1, pages, key=key, **start)
        first, end, _ = page_bounds(n, page, page_size)
    where.caption(f"{what} {first + 1:,}–{end:,} of {n:,}" if n else f"no {what}")
    return items.iloc[first:end] if hasattr(items, "iloc") else items[first:end]
