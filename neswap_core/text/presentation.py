"""Presentation extraction: keep the management's prepared remarks, drop the Q&A (SPEC §2.1).

The layout of each text is read by ``layouts.parse_transcript`` (Motley Fool, Refinitiv/LSEG
StreetEvents, event briefs, S&P Capital IQ, Seeking Alpha, plain ``Name -- Title`` and ``Name:
text``; page furniture blanked first, ``furniture.py``). For a
layout with speaker turns the kept text is the speech of the non-operator turns from the first
**management** (company-side) turn up to the Q&A: the first non-empty Q&A heading, or else the
first outsider's (analyst's) turn or the hand-over to questions, whichever comes first.
Participant lists, title blocks, separator lines, headings, speaker lines and operator turns
never reach the kept text. Turns are joined by a blank line, the lines of one turn by a newline.

An **event brief** keeps its sections (OVERVIEW, FINANCIAL DATA, PRESENTATION SUMMARY, …) up to
its QUESTIONS AND ANSWERS heading, without the headings. **Prose** (no layout lines: the ECTSum
remarks) keeps the text up to a Q&A heading or hand-over (``prose.py``). **Motley Fool JSON** (``layout == "motleyfool"`` with
``Document.q_and_a``) was already split by the loader: nothing is searched for.

Sanity rule (issues 10, 23): when the kept text would be under ``MIN_SHARE_KEPT`` (20 %) of the
document's text (its characters outside layout lines; the whole document when the layout lines
would take over 80 % of it) or under ``MIN_CHARS_KEPT`` (500) characters, or no management turn
is found, the document keeps its whole text (still without layout lines and operator turns) and
its
report row says what was found and what to check (``status`` "whole_text"). A text whose layout
lines the code does not understand keeps its whole text too, with ``status`` "unknown_layout".
Statuses: "extracted" (Q&A found and cut), "no_qa" (management section kept to the end of the
text: no Q&A marker), "whole_text", "unknown_layout".
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from ..corpus import Corpus, Document
from .furniture import blank_furniture
from .layouts import ParsedTranscript, Turn, parse_transcript
from .participants import (
    Participant,
    heading_kind,
    is_company_side,
    looks_like_name,
    parse_participant,
    without_participant_lines,
)
from .prose import handover, split_qa, strip_layout

__all__ = [
    "Participant",
    "PresentationResult",
    "extract_presentation",
    "extract_presentations",
    "is_company_side",
    "looks_like_name",
    "parse_participant",
    "split_qa",
    "strip_layout",
    "text_participants",
]

MIN_SHARE_KEPT = 0.20  # proportion of the document's characters, in [0, 1]
MIN_CHARS_KEPT = 500  # characters

@dataclass(frozen=True)
class PresentationResult:
    """The kept presentation ``text``; ``found`` whether a Q&A marker was seen, and which."""

    text: str
    found: bool
    marker: str | None
    dropped: str = ""  # the Q&A part that was cut off ("" when nothing was cut)
    speaker_lines: int = 0  # speaker lines removed
    operator_turns: int = 0  # operator turns removed
    layout: str = "prose"
    status: str = "no_qa"
    message: str = ""


def text_participants(text: str) -> list[Participant]:
    """Participants of a plain-text transcript: its participant lists in order, then the
    speakers of its turns in order of first appearance (operator excluded)."""
    parsed = parse_transcript(text)
    found: dict[str, Participant] = {p.name: p for p in parsed.participants}
    for turn in parsed.turns:
        if turn.speaker and not turn.is_operator and turn.speaker not in found:
            found[turn.speaker] = Participant(turn.speaker, turn.role, turn.company_side)
    return list(found.values())


# --- layouts with speaker turns -----------------------------------------------------------------
def _turn_text(text: str, turn: Turn, cut: int) -> str:
    pieces = [text[a : min(b, cut)].strip() for a, b in turn.lines if a < cut]
    return "\n".join(p for p in pieces if p)


def _join(text: str, turns: list[Turn], cut: int, keep_operator: bool) -> str:
    bodies = [
        _turn_text(text, t, cut)
        for t in turns
        if t.start < cut and (keep_operator or not t.is_operator)
    ]
    return "\n\n".join(b for b in bodies if b)


def _counts(turns: list[Turn], cut: int) -> tuple[int, int]:
    """(speaker lines, operator turns) before offset ``cut``."""
    before = [t for t in turns if t.start < cut and t.speaker]
    return len(before), sum(1 for t in before if t.is_operator)


def _qa_cut(text: str, parsed: ParsedTranscript, first: int) -> tuple[int, str] | None:
    """(offset, marker) where the Q&A starts after management turn ``first``."""
    turns = parsed.turns
    begin = turns[first].start
    if parsed.qa_start is not None and parsed.qa_start > begin:
        return parsed.qa_start, str(parsed.qa_heading)
    cuts = []
    outsider = next(
        (t for t in turns[first:] if t.speaker and not t.company_side and not t.is_operator), None
    )
    if outsider is not None:
        cuts.append((outsider.start, f"first turn of an outside participant ({outsider.speaker})"))
    end = cuts[0][0] if cuts else len(text)
    found = handover(text[begin:end])
    if found is not None:
        cuts.append((begin + found[0], " ".join(found[1].split())))
    return min(cuts) if cuts else None


def _from_turns(text: str, parsed: ParsedTranscript, keep_operator: bool) -> PresentationResult:
    turns = list(parsed.turns)
    n_speakers, n_operator = _counts(turns, len(text))
    whole = _join(text, [t for t in turns if t.speaker or t.section != "title"], len(text), False)
    first = next(
        (k for k, t in enumerate(turns) if t.company_side and t.section != "qa" and t.speaker),
        None,
    )
    if first is None and parsed.qa_start is not None and any(
        heading_kind(h) == "presentation" for h in parsed.headings
    ):
        return _presentation_section(text, parsed, keep_operator)
    if first is None:
        speakers = sorted({t.speaker for t in turns if t.speaker})[:5]
        message = (
            f"{parsed.layout}: no management turn found (speakers: {speakers or 'none'}, "
            f"headings: {list(parsed.headings) or 'none'}); whole text kept. Check that the "
            "executives are in the participant list or have a title on their speaker line."
        )
        return PresentationResult(
            whole, False, None, "", n_speakers, n_operator, parsed.layout, "whole_text", message
        )
    start = first
    if keep_operator:
        while start > 0 and turns[start - 1].is_operator and turns[start - 1].section != "title":
            start -= 1
    qa = _qa_cut(text, parsed, first)
    cut = qa[0] if qa else len(text)
    n_speakers, n_operator = _counts(turns, cut)
    kept = _join(text, turns[start:], cut, keep_operator)
    speaker = turns[first].speaker
    if qa is None:
        message = (
            f"{parsed.layout}: kept from the first management remark ({speaker}) to the end: no "
            "Q&A heading or hand-over found. Check that the end of the text holds no questions."
        )
        return PresentationResult(
            kept, False, None, "", n_speakers, n_operator, parsed.layout, "no_qa", message
        )
    message = f"{parsed.layout}: kept the first management remark ({speaker}) up to {qa[1]!r}."
    return PresentationResult(
        kept, True, qa[1], text[cut:], n_speakers, n_operator, parsed.layout, "extracted", message
    )


def _from_prose(text: str, keep_operator: bool) -> PresentationResult:
    body, dropped, marker = split_qa(text)
    kept, n_speakers, n_operator = strip_layout(body, keep_operator)
    if marker is None:
        message = "prose: no speaker lines, headings or hand-over to questions; whole text kept."
        status = "no_qa"
    else:
        message = f"prose: kept the text up to {marker!r}."
        status = "extracted"
    return PresentationResult(
        kept, marker is not None, marker, dropped, n_speakers, n_operator, "prose", status, message
    )


def _presentation_section(
    text: str, parsed: ParsedTranscript, keep_operator: bool
) -> PresentationResult:
    """The turns under the Presentation heading up to the Q&A heading, when no speaker can be
    told apart as management: the headings found are used (issue 23 item 4), not ignored."""
    cut = int(parsed.qa_start or len(text))
    section = [t for t in parsed.turns if t.section == "presentation" and t.start < cut]
    kept = _join(text, section, cut, keep_operator)
    n_speakers, n_operator = _counts(list(parsed.turns), cut)
    heading = next(h for h in parsed.headings if heading_kind(h) == "presentation")
    message = (
        f"{parsed.layout}: kept the {heading!r} section up to {parsed.qa_heading!r}; no speaker "
        "could be told apart as management, so operator turns only were left out. Check that "
        "the executives are in the participant list or have a title on their speaker line."
    )
    return PresentationResult(kept, True, parsed.qa_heading, text[cut:], n_speakers, n_operator,
                              parsed.layout, "extracted", message)


def _from_brief(text: str, parsed: ParsedTranscript) -> PresentationResult:
    """An event brief: its sections before the Q&A heading, without the headings."""
    cut = parsed.qa_start if parsed.qa_start is not None else len(text)
    sections = [t for t in parsed.turns if t.section == "presentation"]
    kept = _join(text, sections, cut, True)
    used = [h for h in parsed.headings if heading_kind(h) != "qa"]
    if parsed.qa_start is None:
        message = f"brief: kept the sections {used} to the end: no Q&A heading found."
        return PresentationResult(kept, False, None, "", 0, 0, "brief", "no_qa", message)
    message = f"brief: kept the sections {used} up to {parsed.qa_heading!r}."
    return PresentationResult(
        kept, True, parsed.qa_heading, text[cut:], 0, 0, "brief", "extracted", message
    )


def _sane(result: PresentationResult, whole: str, text: str) -> PresentationResult:
    """The sanity rule of the module docstring: an extraction that keeps too little of a long
    document is never a success; it falls back to the whole text, with a note."""
    chars_in = len(text)
    if len(whole) < MIN_SHARE_KEPT * chars_in and chars_in >= MIN_CHARS_KEPT:
        whole = without_participant_lines(text.strip())
    kept, content = len(result.text), len(whole)
    if kept >= MIN_SHARE_KEPT * content and kept >= min(MIN_CHARS_KEPT, content):
        return result
    message = (
        f"{result.layout}: the presentation found ({result.message}) would keep only {kept} of "
        f"{content} characters of text ({kept / max(content, 1):.0%}; the minimum is "
        f"{MIN_SHARE_KEPT:.0%} and {MIN_CHARS_KEPT} characters), so the whole text is kept. "
        "Check where its Q&A starts and whether the management's speaker lines were recognised."
    )
    return replace(
        result, text=whole, found=False, dropped="", status="whole_text", message=message
    )


def extract_presentation(document: Document, keep_operator: bool = False) -> PresentationResult:
    """Keep the prepared remarks of one document (SPEC §2.1); see the module docstring."""
    text = document.text.replace("\r\n", "\n").replace("\r", "\n")
    if document.layout == "motleyfool" and document.q_and_a is not None:
        parsed = parse_transcript(text, "motleyfool")
        kept = _join(text, list(parsed.turns), len(text), keep_operator)
        n_speakers = sum(1 for t in parsed.turns if t.speaker)
        n_operator = sum(1 for t in parsed.turns if t.is_operator)
        return PresentationResult(
            kept,
            True,
            "prepared_remarks (JSON layout)",
            document.q_and_a,
            n_speakers,
            n_operator,
            "motleyfool-json",
            "extracted",
            "motleyfool-json: the file's prepared_remarks are kept, its q_and_a dropped.",
        )
    text = blank_furniture(text)
    parsed = parse_transcript(text)
    if parsed.layout == "unknown":
        message = (
            "Layout not recognised: some short lines repeat like speaker tags or separators, but "
            "they match no known layout, so the whole text is kept, those lines included. Check "
            "the file, or rewrite its speaker lines as 'Name -- Title' paragraphs."
        )
        whole = without_participant_lines(text.strip())
        return PresentationResult(
            whole, False, None, "", 0, 0, "unknown", "unknown_layout", message
        )
    if parsed.layout == "prose":
        return _sane(
            _from_prose(text, keep_operator), strip_layout(text, keep_operator)[0], text
        )
    whole = _join(
        text, [t for t in parsed.turns if t.speaker or t.section != "title"], len(text), False
    )
    if parsed.layout == "brief":
        return _sane(_from_brief(text, parsed), whole, text)
    return _sane(_from_turns(text, parsed, keep_operator), whole, text)


REPORT_COLUMNS = [
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


def extract_presentations(
    corpus: Corpus, keep_operator: bool = False
) -> tuple[Corpus, pd.DataFrame]:
    """Apply ``extract_presentation`` to every document; report one row per document
    (``REPORT_COLUMNS``: layout read, status, Q&A marker, characters in and out, layout lines
    removed, and the message that tells the analyst what was found and what to check).
    The dropped Q&A is kept in ``Document.q_and_a`` for display only."""
    documents, rows = [], []
    for doc in corpus.documents:
        result = extract_presentation(doc, keep_operator)
        documents.append(replace(doc, text=result.text, q_and_a=result.dropped or None))
        rows.append(
            {
                "doc_id": doc.doc_id,
                "layout": result.layout,
                "status": result.status,
                "found": result.found,
                "marker": result.marker,
                "chars_in": len(doc.text),
                "chars_out": len(result.text),
                "speaker_lines": result.speaker_lines,
                "operator_turns": result.operator_turns,
                "message": result.message,
            }
        )
    return corpus.with_documents(documents), pd.DataFrame(rows, columns=REPORT_COLUMNS)
