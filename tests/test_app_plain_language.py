"""Plain language on every page (issue 20 item 7): no setting's field name (``max_swaps``,
``min_weight``, ``trade_off_c``…), no e-notation, no "None" shown as a value, anywhere in the
text a page draws (markdown, captions, boxes, widget labels and help, options, table headers)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from neswap_core import RunConfig
from tests.app_workspace import small_workspace

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow
PAGES = ["1_corpus", "2_entities", "3_clusters", "4_swaps", "5_frontier", "6_export", "7_check"]
#: Field names: every setting with an underscore (one-word settings are English words) and the
#: app's own stored keys.
FIELD_NAMES = sorted({k for k in RunConfig().settings() if "_" in k}
                     | {"accepted_leaks", "chosen_release", "chosen_plan", "trade_off_c_auto",
                        "publishable_columns", "shuffle_chunks"})
FIELD = re.compile(r"(?<![\w/.-])(" + "|".join(map(re.escape, FIELD_NAMES)) + r")(?![\w/.-])")
E_NOTATION = re.compile(r"\b\d+(?:\.\d+)?e[-+]?\d+\b", re.IGNORECASE)
NONE_VALUE = re.compile(r"(?::|=)\s*None\b")


def texts(node) -> list[str]:
    """Every string a page shows: element values, labels, help, options, captions, headers."""
    out: list[str] = []
    if getattr(node, "type", "") == "code":  # run.toml and commands name settings on purpose
        return out
    proto = getattr(node, "proto", None)
    for attr in ("value", "label", "help", "body", "placeholder"):
        value = getattr(node, attr, None) if attr != "value" or proto is None else None
        if attr == "value":
            try:
                value = node.value
            except Exception:  # noqa: BLE001 - some elements have no readable value
                value = None
        if isinstance(value, str):
            out.append(value)
    for attr in ("options",):
        values = getattr(node, attr, None)
        if isinstance(values, (list, tuple)):
            out += [str(v) for v in values]
    if proto is not None and hasattr(proto, "help") and isinstance(proto.help, str):
        out.append(proto.help)
    for child in getattr(node, "children", {}).values() if isinstance(
            getattr(node, "children", None), dict) else []:
        out += texts(child)
    return out


def code_free(text: str) -> str:
    """Text outside code spans and blocks (run.toml and commands may name settings)."""
    return re.sub(r"`[^`]*`", "", text)


@pytest.mark.parametrize("page", PAGES)
def test_no_field_names_or_e_notation_on_any_page(page, tmp_path, monkeypatch):
    small_workspace(tmp_path, monkeypatch)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=900)
    at.switch_page(f"pages/{page}.py")
    at.run()
    assert not at.exception
    shown = [code_free(t) for t in texts(at._tree)]
    frames = [str(c) for df in at.dataframe for c in getattr(df.value, "columns", [])]
    problems = []
    for text in [*shown, *frames]:
        for pattern, what in ((FIELD, "field name"), (E_NOTATION, "e-notation"),
                              (NONE_VALUE, "None shown")):
            for m in pattern.finditer(text):
                problems.append(f"{what} {m.group(0)!r} in {text[max(m.start() - 60, 0):m.end() + 40]!r}")
    assert not problems, "\n".join(problems)
