"""The HTML release report (publish/export.py, publish/labels.py): plain labels, readable
settings, escaped corpus text, examples with their changes marked, a layout that fits."""

from __future__ import annotations

import re

import pandas as pd

from neswap_core.config import RunConfig
from neswap_core.corpus import Chunk
from neswap_core.publish.export import before_after_examples, html_report
from neswap_core.publish.labels import column_label, labelled, readable_value, settings_frame


def chunk(cid: str, text: str) -> Chunk:
    return Chunk(chunk_id=cid, doc_id=cid.split("#")[0], index=0, text=text, protected="X")


def test_columns_get_plain_labels_and_unknown_ones_read_as_words():
    assert column_label("du_sd") == "DU s.d. over draws"
    assert column_label("p_hat").endswith("(p̂)")
    assert column_label("chunk_accuracy.reading") == "passages the attacker names (outside reader (words))"
    assert column_label("chunk_accuracy_mean.in-corpus") == (
        "passages named, mean over draws (in-corpus attacker)")
    assert column_label("some_new_column") == "some new column"
    assert list(labelled(pd.DataFrame(columns=["dr", "swaps"])).columns) == [
        "disclosure risk DR", "pairs swapped (t)"]


def test_settings_read_as_text_not_python_reprs():
    roles = RunConfig().roles
    assert readable_value("roles", roles).startswith("Organization: swap; Person: swap")
    assert readable_value("label_map", {"ORG": "Organization"}) == "ORG → Organization"
    assert readable_value("plan_terms", [False, True]) == "no, yes"
    assert readable_value("publishable_columns", []) == "none"
    frame = settings_frame(RunConfig().settings(), skip=("corrections",))
    assert not frame["value"].str.contains(r"^\{|^\[|': '", regex=True).any()
    assert "clusters K" in set(frame["setting"]) and "corrections" not in set(frame["setting"])


def test_report_escapes_corpus_text_marks_changes_and_fits_the_page():
    evil = "[HPE](https://evil.example) **Enterprise** <script>alert(1)</script> grew"
    base = [chunk("A#0", evil), chunk("B#0", "unchanged"), chunk("C#0", "Apple sells phones")]
    released = [chunk("A#0", evil.replace("HPE", "Acme")), base[1],
                chunk("C#0", "Globex sells phones")]
    examples = before_after_examples(base, released)
    assert [e["passage"] for e in examples] == ["A#0", "C#0"]
    decisions = pd.DataFrame([{"pair": 1, "chunk a": "A#0", "decision": "reject",
                               "note": "<b>keep</b>"}])
    html = html_report(
        "report", "Organization @ 2", {"review": "1 of 2 pairs kept"},
        {"Releases": pd.DataFrame({"release_id": ["x"], "du_sd": [0.1], "p_hat": [2.8e17]})},
        settings=RunConfig().settings(),
        corrections=[{"action": "drop", "category": "Organization", "text": "<i>HPE</i>",
                      "chunk_id": ""}],
        decisions=decisions, examples=examples)
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<b>keep</b>" not in html and "&lt;b&gt;keep&lt;/b&gt;" in html
    assert "<i>HPE</i>" not in html and "every passage" in html
    assert "href" not in html  # Markdown stays text
    assert "<del>Apple</del>" in html and "<ins>Globex</ins>" in html
    headers = re.findall(r"<th[^>]*>(.*?)</th>", html)
    assert "DU s.d. over draws" in headers and "du_sd" not in headers and "p_hat" not in headers
    assert "Organization: swap" in html and "{'Organization'" not in html
    assert "table-layout:fixed" in html and "max-width:1100px" in html


def test_every_setting_has_a_plain_label():
    """The report's settings table named three plan settings by their raw field names."""
    from neswap_core.publish.labels import SETTING_LABELS

    assert [name for name in RunConfig().settings() if name not in SETTING_LABELS] == []
