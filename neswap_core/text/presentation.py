"""Presentation extraction: keep the management's prepared remarks, drop the Q&A (SPEC §2.1).

The layout of each text is read by ``layouts.parse_transcript`` (Motley Fool, Refinitiv/LSEG
StreetEvents, S&P Capital IQ, Seeking Alpha, plain ``Name -- Title`` and ``Name: text``). For a
layout with speaker turns the kept text is the speech of the non-operator turns from the first
**management** (company-side) turn up to the Q&A: the first non-empty Q&A heading, or else the
first outsider's (analyst's) turn or the hand-over to questions, whichever comes first.
Participant lists, title blocks, separator lines, headings, speaker lines and operator turns
never reach the kept text. Turns are joined by a blank line, the lines of one turn by a newline.

**Prose** (no layout lines: the ECTSum remarks) keeps the text up to a Q&A heading or hand-over
("We will now begin the question-and-answer session", "Our first question comes from ...",
management's "let's open the lines for questions" past the first third, never an agenda
sentence such as "after our prepared remarks we will open the line ..."). The cut is at the start
of the sentence holding the hand-over. **Motley Fool JSON** (``layout == "motleyfool"`` with
``Document.q_and_a``) was already split by the loader: nothing is searched for.

Sanity rule (issue 10): when the kept text would be under ``MIN_SHARE_KEPT`` (20 %) of the
document's characters or under ``MIN_CHARS_KEPT`` (500) characters, or no management turn is
found, the document keeps its whole text (still without layout lines and operator turns) and its
report row says what was found and what to check (``status`` "whole_text"). A text whose layout
lines the code does not understand keeps its whole text too, with ``status`` "unknown_layout".
Statuses: "extracted" (Q&A found and cut), "no_qa" (management section kept to the end of the
text: no Q&A marker), "whole_text", "unknown_layout".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import pandas as pd

from ..corpus import Corpus, Document
from .layouts import ParsedTranscript, Turn, parse_transcript
from .participants import Participant, is_company_side, looks_like_name, parse_participant

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

# --- markers ----------------------------------------------------------------------------------
_QA_HEADING = re.compile(
    r"^[ \t]*(?P<h>questions?[ \t]*(?:and|&)[ \t]*answers?(?:[ \t]+session)?"
    r"|question[- ]and[- ]answer[ \t]+session|q[ \t]*&[ \t]*a(?:[ \t]+session)?)[ \t]*:?[ \t]*$",
    re.I | re.M,
)
_Q_AND_A = r"question[- ]and[- ]answer"
#: Operator hand-overs (anywhere in the text).
_OPERATOR_MARKERS = (
    rf"\b(?:begin|start|open|conduct|commence)\w*\s+(?:with\s+)?(?:the\s+|our\s+|a\s+)?"
    rf"{_Q_AND_A}\s+(?:session|portion|period|segment)",
    r"\b(?:our|the|your)\s+first\s+question\s+(?:today\s+|this\s+\w+\s+)?"
    r"(?:comes|is\s+coming|will\s+come|will\s+be\s+coming|is|goes|will\s+be)\s+(?:from|coming)",
    r"\b(?:take|have)\s+(?:our|the)\s+first\s+question\b",
    r"\bfirst,?\s+we(?:'ll|\s+will)\s+(?:go|turn)\s+to\s+(?-i:[A-Z][\w'-]*)"
    r"(?:\s+(?-i:[A-Z][\w'-]*))?\s+(?:with|from|at|of)\b",
)
#: Management hand-overs (only past the first third: agendas announce them early).
_MANAGEMENT_MARKERS = (
    r"\bopen(?:ing)?\s+(?:up\s+)?(?:the\s+)?(?:call|line|lines|floor|phone\s+lines?)\s+"
    r"(?:up\s+)?(?:for|to)\s+(?:your\s+|any\s+|the\s+)?questions",
    rf"\b(?:move|go|turn|proceed)\s+(?:on\s+)?(?:now\s+)?(?:to|into)\s+(?:the\s+)?"
    rf"(?:Q\s*&\s*A|{_Q_AND_A})",
)
_OPERATOR_RE = re.compile("|".join(_OPERATOR_MARKERS), re.I)
_MANAGEMENT_RE = re.compile("|".join(_MANAGEMENT_MARKERS), re.I)
_AGENDA_WORDS = re.compile(r"\b(?:after|before|following|follow|later|at the end)\b", re.I)
_SENTENCE_END = re.compile(r"(?:[.!?]['\"”’)\]]*[ \t]+|\n)")

# --- layout lines of prose ----------------------------------------------------------------------
_LAYOUT_HEADING = re.compile(
    r"(?:prepared remarks|contents|presentation|management discussion section)[ \t]*:?", re.I
)
_DURATION = re.compile(r"duration:?\s*\d+\s*(?:minutes?|mins?)\.?", re.I)
_PARTICIPANTS_HEADING = re.compile(
    r"^[ \t]*(?:call participants|participants|corporate participants)[ \t]*:?[ \t]*$", re.I | re.M
)
_SPEAKER = re.compile(r"(?P<name>[^\n]{1,80}?)[ \t]+--[ \t]+(?P<role>[^\n]{1,200}?)")


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


def _speaker_header(lines: list[str], i: int) -> tuple[str, str] | None:
    """(name, role) if line ``i`` is a speaker line standing as its own paragraph."""
    line = lines[i].strip()
    if (
        not line
        or (i > 0 and lines[i - 1].strip())
        or (i + 1 < len(lines) and lines[i + 1].strip())
    ):
        return None
    if line.rstrip(":").lower() == "operator":
        return "Operator", ""
    match = _SPEAKER.fullmatch(line)
    if match and looks_like_name(match["name"]):
        return match["name"].strip(), match["role"].strip()
    return None


def text_participants(text: str) -> list[Participant]:
    """Participants of a plain-text transcript: its participant lists in order, then the
    speakers of its turns in order of first appearance (operator excluded)."""
    parsed = parse_transcript(text)
    found: dict[str, Participant] = {p.name: p for p in parsed.participants}
    for turn in parsed.turns:
        if turn.speaker and not turn.is_operator and turn.speaker not in found:
            found[turn.speaker] = Participant(turn.speaker, turn.role, turn.company_side)
    return list(found.values())


def _sentence_start(text: str, pos: int) -> int:
    """Offset where the sentence holding ``pos`` starts."""
    start = 0
    for match in _SENTENCE_END.finditer(text, 0, pos):
        start = match.end()
    return start


def _handover(text: str) -> tuple[int, str] | None:
    """(cut offset, marker) of the first hand-over to questions that is not an agenda sentence;
    management phrasings must also lie past the first third of the text."""
    matches = [(m, False) for m in _OPERATOR_RE.finditer(text)]
    matches += [(m, True) for m in _MANAGEMENT_RE.finditer(text)]
    for match, management in sorted(matches, key=lambda item: item[0].start()):
        if management and match.start() < len(text) / 3:
            continue
        start = _sentence_start(text, match.start())
        end = _SENTENCE_END.search(text, match.end())
        if not _AGENDA_WORDS.search(text[start : end.start() if end else len(text)]):
            return start, match.group(0)
    return None


def split_qa(text: str) -> tuple[str, str, str | None]:
    """Split a plain-text transcript into (presentation, Q&A, marker); marker None if not found."""
    heading = _QA_HEADING.search(text)
    if heading:
        return text[: heading.start()], text[heading.start() :], heading.group(0).strip()
    handover = _handover(text)
    if handover:
        cut, marker = handover
        return text[:cut], text[cut:], " ".join(marker.split())
    return text, "", None


def strip_layout(text: str, keep_operator: bool = False) -> tuple[str, int, int]:
    """Remove speaker lines, layout headings, durations, participant lists and (by default)
    operator turns. Returns (text, speaker lines removed, operator turns removed)."""
    section = _PARTICIPANTS_HEADING.search(text)
    if section:
        text = text[: section.start()]
    lines = text.splitlines()
    kept: list[str] = []
    speaker: str | None = None
    n_speakers = n_operator = 0
    for i, line in enumerate(lines):
        header = _speaker_header(lines, i)
        if header:
            speaker = header[0]
            n_speakers += 1
            n_operator += speaker == "Operator"
            continue
        stripped = line.strip()
        if _LAYOUT_HEADING.fullmatch(stripped) or _DURATION.fullmatch(stripped):
            continue
        if speaker == "Operator" and not keep_operator:
            continue
        kept.append(line.rstrip())
    out = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()
    return out, n_speakers, n_operator


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
    handover = _handover(text[begin:end])
    if handover is not None:
        cuts.append((begin + handover[0], " ".join(handover[1].split())))
    return min(cuts) if cuts else None


def _from_turns(text: str, parsed: ParsedTranscript, keep_operator: bool) -> PresentationResult:
    turns = list(parsed.turns)
    n_speakers, n_operator = _counts(turns, len(text))
    whole = _join(text, [t for t in turns if t.speaker or t.section != "title"], len(text), False)
    first = next(
        (k for k, t in enumerate(turns) if t.company_side and t.section != "qa" and t.speaker),
        None,
    )
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


def _sane(result: PresentationResult, whole: str, chars_in: int) -> PresentationResult:
    """The sanity rule of the module docstring: too little kept -> the whole text, with a note."""
    kept = len(result.text)
    if kept >= len(whole) or (kept >= MIN_SHARE_KEPT * chars_in and kept >= MIN_CHARS_KEPT):
        return result
    message = (
        f"{result.layout}: the presentation found ({result.message}) would keep only {kept} of "
        f"{chars_in} characters ({kept / max(chars_in, 1):.0%}; the minimum is "
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
    parsed = parse_transcript(text)
    if parsed.layout == "unknown":
        message = (
            "Layout not recognised: some short lines repeat like speaker tags or separators, but "
            "they match no known layout, so the whole text is kept, those lines included. Check "
            "the file, or rewrite its speaker lines as 'Name -- Title' paragraphs."
        )
        whole = text.strip()
        return PresentationResult(
            whole, False, None, "", 0, 0, "unknown", "unknown_layout", message
        )
    if parsed.layout == "prose":
        return _sane(
            _from_prose(text, keep_operator), strip_layout(text, keep_operator)[0], len(text)
        )
    result = _from_turns(text, parsed, keep_operator)
    whole = _join(
        text, [t for t in parsed.turns if t.speaker or t.section != "title"], len(text), False
    )
    return _sane(result, whole, len(text))


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
