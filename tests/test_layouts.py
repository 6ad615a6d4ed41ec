"""Transcript layouts and presentation extraction on them (issue 10 item 4, SPEC §2.1)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from neswap_core.corpus import Corpus, Document
from neswap_core.prepare.pipeline import clean_corpus
from neswap_core.text.entities import load_ner
from neswap_core.text.layouts import detect_layout, parse_transcript
from neswap_core.text.loading import load_corpus
from neswap_core.text.presentation import (
    MIN_CHARS_KEPT,
    extract_presentation,
    extract_presentations,
    text_participants,
)
from tests.layout_fixtures import (
    ANALYSTS,
    EXECUTIVES,
    LAYOUTS,
    OPERATOR_INTRO,
    PRESENTATION,
    render,
    unknown_layout,
)

FULL = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "full" / "motleyfool"


@pytest.fixture(scope="module")
def nlp():
    return load_ner()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_each_layout_keeps_exactly_the_management_presentation(layout):
    text = render(layout)
    assert detect_layout(text) == layout
    result = extract_presentation(Document("d", text))
    assert result.status == "extracted" and result.found and result.layout == layout
    assert result.text == PRESENTATION  # first management remark ... last one before the Q&A
    assert OPERATOR_INTRO[:40] not in result.text
    for name in (*EXECUTIVES, *ANALYSTS, "Operator"):
        assert not re.search(rf"^{name}\b", result.text, re.M)  # no speaker or list lines
    assert "====" not in result.text and "----" not in result.text
    assert "Priyanka Desai" in result.message


@pytest.mark.parametrize("layout", ["motleyfool", "streetevents", "capiq", "seekingalpha", "dash"])
def test_participants_and_their_side_come_from_lists_and_speaker_lines(layout):
    people = {p.name: p.company_side for p in text_participants(render(layout))}
    assert {n for n, side in people.items() if side} == set(EXECUTIVES)
    assert {n for n, side in people.items() if not side} <= set(ANALYSTS)


def test_streetevents_participants_at_the_top_are_not_a_trailing_section():
    """The defect: the list heading at the top was taken for the end, keeping the title only."""
    result = extract_presentation(Document("d", render("streetevents")))
    assert result.text == PRESENTATION and result.status == "extracted"
    parsed = parse_transcript(render("streetevents"))
    assert [t.speaker for t in parsed.turns if t.section == "qa"][:2] == ["Operator", "Gordon Vale"]


def test_an_unknown_layout_keeps_its_whole_text_with_a_warning():
    text = unknown_layout()
    result = extract_presentation(Document("d", text))
    assert result.status == "unknown_layout" and not result.found
    assert result.text == text.strip()
    assert "not recognised" in result.message


def test_too_little_kept_falls_back_to_the_whole_text_and_says_why():
    text = (
        "Prepared Remarks:\n\nOperator\n\nWelcome to the call.\n\n"
        "Jane Roe -- Chief Executive Officer\n\nThank you all for joining.\n\n"
        "Questions and Answers:\n\nOperator\n\nOur first question comes from Al Kim.\n\n"
        "Al Kim -- Fenwick Securities -- Analyst\n\n" + "Can you talk about demand? " * 40 + "\n\n"
        "Jane Roe -- Chief Executive Officer\n\n" + "Demand is strong across regions. " * 30
    )
    result = extract_presentation(Document("d", text))
    assert result.status == "whole_text" and not result.found
    assert "Thank you all for joining." in result.text and "Can you talk" in result.text
    assert "-- Analyst" not in result.text and "Welcome to the call." not in result.text
    assert "would keep only" in result.message and str(MIN_CHARS_KEPT) in result.message


def test_no_management_turn_keeps_the_whole_text_and_says_what_to_check():
    text = "\n\n".join(
        ["Operator", "Welcome. " * 30, "Al Kim -- Fenwick Securities -- Analyst", "Hi. " * 200]
    )
    result = extract_presentation(Document("d", text))
    assert result.status == "whole_text" and "no management turn" in result.message
    assert result.text.startswith("Hi.") and "Fenwick" not in result.text


def test_report_has_layout_status_and_message_per_document():
    docs = [Document(f"d{k}", render(layout)) for k, layout in enumerate(LAYOUTS)]
    docs.append(Document("u", unknown_layout()))
    _, report = extract_presentations(Corpus(tuple(docs)))
    assert report["layout"].tolist() == [*LAYOUTS, "unknown"]
    assert report["status"].tolist() == ["extracted"] * len(LAYOUTS) + ["unknown_layout"]
    assert report["message"].str.len().gt(20).all()


@pytest.mark.skipif(not FULL.is_dir(), reason="shared full transcripts not available")
def test_real_motleyfool_transcripts_start_at_the_first_management_remark():
    for path in sorted(FULL.glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        parsed = parse_transcript(text)
        first = next(t for t in parsed.turns if t.company_side and t.speaker)
        result = extract_presentation(Document(path.stem, text))
        assert result.status == "extracted" and result.layout == "motleyfool", path.name
        opening = text[first.lines[0][0] : first.lines[0][1]].strip()
        assert result.text.startswith(opening[:200]), path.name
        qa = text.index("Questions and Answers:")
        last_line = result.text.splitlines()[-1]
        assert text.find(last_line) < qa, path.name  # ends before the Q&A
        assert "[Operator Instructions]" not in result.text and " -- " not in "\n".join(
            line for line in result.text.splitlines() if len(line) < 120
        )


@pytest.mark.parametrize("layout", LAYOUTS)
def test_loaded_transcript_of_each_layout_loses_its_executives_names(tmp_path, layout, nlp):
    """Loader (participants, speaker lines) + detection + suppression on every layout."""
    (tmp_path / "BWI_q3_2021.txt").write_text(render(layout), encoding="utf-8")
    (tmp_path / "manifest.csv").write_text(
        "doc_id,company,ticker\nBWI_q3_2021,Brightwater Instruments Inc.,BWI\n", encoding="utf-8"
    )
    clean = clean_corpus(load_corpus(tmp_path), nlp=nlp)
    (doc,) = clean.corpus.documents
    for name in ("Ellison", "Raskin", "Desai", "Meg", "Tom", "Priyanka", "Brightwater"):
        assert not re.search(rf"\b{name}\b", doc.text), (layout, name)
    assert doc.text.startswith("Thank you, operator, and good morning")
    assert clean.presentation.loc[0, "status"] == "extracted"
