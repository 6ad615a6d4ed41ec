"""Presentation extraction: prepared remarks kept, Q&A and layout lines dropped (SPEC §2.1)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from neswap_core.corpus import Corpus, Document
from neswap_core.text.loading import load_corpus
from neswap_core.text.presentation import (
    extract_presentation,
    extract_presentations,
    is_company_side,
    parse_participant,
    split_qa,
    text_participants,
)

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SHARED = ROOT.parent / "shared" / "corpus"
CALL = (FIXTURES / "quillfeather_call.txt").read_text(encoding="utf-8")

PRESENTED = """\
Thank you, operator. Joining me today are Dana M. Whitlock, our Chief Executive Officer, and \
Bob Okafor, our Chief Financial Officer. After our prepared remarks, we will open the line for \
your questions. Our slides are on investors.quillfeather.com, and you can reach us at \
ir@quillfeather.com.
With that, I will turn the call over to Dana.

Thanks, Priya. Quillfeather's second quarter was strong -- revenue grew 14% to $212 million. \
Our Harbor line of warehouse robots shipped to 40 new sites in Ohio and Bavaria.
As Robert will explain, margins expanded. Whitlock family ownership is unchanged.

Thank you, Dana. Gross margin was 41.2%, up 180 basis points. We expect third-quarter revenue \
of $220 million to $230 million.
Operator, please open the lines for questions."""


def _doc(text: str, **kw) -> Document:
    return Document(doc_id=kw.pop("doc_id", "d"), text=text, **kw)


def test_fixture_keeps_exactly_the_prepared_remarks():
    result = extract_presentation(_doc(CALL))
    assert result.found and result.marker == "Questions and Answers:"
    assert result.text == PRESENTED
    assert (result.speaker_lines, result.operator_turns) == (4, 1)
    assert result.dropped.startswith("Questions and Answers:") and "Tom Berringer" in result.dropped


def test_without_heading_the_handover_to_questions_is_the_marker():
    no_heading = CALL.replace("Questions and Answers:\n", "")
    result = extract_presentation(_doc(no_heading))
    assert result.found and result.marker == "open the lines for questions"
    # the management hand-over sentence goes with the Q&A; nothing else changes
    assert result.text == PRESENTED.removesuffix("\nOperator, please open the lines for questions.")
    # and with the management hand-over gone too, the operator's announcement is the marker
    operator_only = no_heading.replace("Operator, please open the lines for questions.\n", "")
    result = extract_presentation(_doc(operator_only))
    assert result.marker == "begin the question-and-answer session"
    assert result.text == PRESENTED.removesuffix("\nOperator, please open the lines for questions.")


def test_agenda_sentences_and_dashes_are_not_markers():
    text = (
        "After our prepared remarks, we will open the line for your questions.\n"
        "Revenue -- excluding currency -- grew 4%.\n"
        "A question-and-answer session will follow the formal presentation.\n"
        "Margins -- Strong Growth\n"  # looks like a speaker line but is inside a paragraph
        "We are pleased with the quarter.\n"
    )
    result = extract_presentation(_doc(text))
    assert not result.found and result.marker is None
    assert result.text == text.strip() and result.speaker_lines == 0


def test_no_marker_keeps_every_bundled_document_whole():
    corpus = load_corpus(ROOT / "data" / "sample")
    presented, report = extract_presentations(corpus)
    assert list(report.columns) == [
        "doc_id",
        "layout",
        "status",
        "found",
        "marker",
        "chars_in",
        "chars_out",
        "speaker_lines",
        "operator_turns",
        "message",
    ]
    assert not report["found"].any()  # ECTSum texts hold the prepared remarks only
    assert set(report["layout"]) == {"prose"} and set(report["status"]) == {"no_qa"}
    for before, after in zip(corpus.documents, presented.documents, strict=True):
        assert after.text == before.text.strip() and after.q_and_a is None
    assert (report["chars_out"] == report["chars_in"] - 1).all()  # only the final newline


def test_keep_operator_keeps_the_operator_turns():
    result = extract_presentation(_doc(CALL), keep_operator=True)
    assert result.text.startswith("Good morning, and welcome to the Quillfeather Robotics")
    assert result.operator_turns == 1 and result.text.endswith(PRESENTED[-60:])


def test_json_layout_uses_the_split_of_the_file(tmp_path):
    shutil.copy(FIXTURES / "quillfeather_call.json", tmp_path / "QFR_q2_2024.json")
    corpus = load_corpus(tmp_path, protect="ticker")
    presented, report = extract_presentations(corpus)
    (doc,) = presented.documents
    assert report.loc[0, "found"] and report.loc[0, "marker"] == "prepared_remarks (JSON layout)"
    assert doc.text.startswith("Thank you, operator.") and "Halvorsen" not in doc.text
    assert "I lead our Harbor product line" in doc.text  # unlisted presenter kept
    assert " -- " not in doc.text.replace("strong -- revenue", "")
    assert "Tom Berringer" in doc.q_and_a


def test_extract_presentations_reports_and_keeps_the_qa():
    corpus = Corpus((_doc(CALL, doc_id="a"), _doc("Plain remarks.\n", doc_id="b")))
    presented, report = extract_presentations(corpus)
    assert report["found"].tolist() == [True, False]
    assert report["chars_out"].tolist() == [len(PRESENTED), len("Plain remarks.")]
    assert presented.documents[0].q_and_a.startswith("Questions and Answers:")
    assert presented.documents[1].q_and_a is None


@pytest.mark.parametrize(
    ("entry", "name", "company_side"),
    [
        (
            "Craig A. Lampo--Senior Vice President and Chief Financial Officer",
            "Craig A. Lampo",
            True,
        ),
        ("Amit Daryanani--Evercore ISI -- Analyst", "Amit Daryanani", False),
        ("Joseph Cardoso--J.P. Morgan -- Anlyst", "Joseph Cardoso", False),  # typo in the source
        ("Andrew Simanek -- Vice President, Investor Relations", "Andrew Simanek", True),
        ("Maya Lind--Private Investor", "Maya Lind", False),
        ("Operator", "Operator", False),
        ("Unknown speaker--", "Unknown speaker", False),
        ("Millie Wu--Analyst", "Millie Wu", False),
    ],
)
def test_participants(entry, name, company_side):
    person = parse_participant(entry)
    assert (person.name, person.company_side) == (name, company_side)


def test_text_participants_follow_the_participant_list():
    people = text_participants(CALL)
    assert [p.name for p in people if p.company_side] == [
        "Priya Natarajan",
        "Dana M. Whitlock",
        "Robert Okafor",
    ]
    assert [p.name for p in people if not p.company_side] == ["Tom Berringer"]
    assert not is_company_side("Unidentified Participant", "")


# --- real transcripts (skipped when the shared corpus is absent) ------------------------------
FULL = SHARED / "full" / "motleyfool"
needs_full = pytest.mark.skipif(not FULL.is_dir(), reason="shared full transcripts not available")


@needs_full
def test_all_full_transcripts_have_their_marker_found():
    paths = sorted(FULL.glob("*.txt"))
    assert len(paths) == 10
    for path in paths:
        text = path.read_text(encoding="utf-8")
        result = extract_presentation(_doc(text))
        assert result.found and result.marker == "Questions and Answers:", path.name
        assert " -- " not in "\n".join(line for line in result.text.splitlines() if len(line) < 120)
        assert "[Operator Instructions]" not in result.text
        # the hand-over fallback cuts within the last few sentences before the heading
        heading = text.index("Questions and Answers:")
        body, _, marker = split_qa(text[:heading] + text[heading + len("Questions and Answers:") :])
        assert marker is not None and heading - 2600 < len(body) <= heading + 40, path.name


@needs_full
def test_json_and_text_layouts_give_the_same_presentation(tmp_path):
    for path in sorted(FULL.glob("*.json")):
        shutil.copy(path, tmp_path / path.name)
    presented, report = extract_presentations(load_corpus(tmp_path, protect="ticker"))
    assert report["found"].all()
    for doc in presented.documents:
        text = (FULL / f"{doc.doc_id}.txt").read_text(encoding="utf-8")
        assert doc.text.split() == extract_presentation(_doc(text)).text.split(), doc.doc_id


@pytest.mark.skipif(
    not (SHARED / "dev" / "docs").is_dir(), reason="shared dev corpus not available"
)
def test_ectsum_texts_rarely_trigger_the_fallback():
    """The dev texts hold prepared remarks only: a marker may only cut a closing hand-over."""
    for path in sorted((SHARED / "dev" / "docs").glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        body, dropped, marker = split_qa(text)
        if marker is not None:
            assert len(dropped) < 250 and dropped.count("\n") <= 3, (path.name, dropped)
