"""Prose transcripts (SPEC §2.1): where the Q&A starts, and the layout lines to drop.

A text without speaker turns (the ECTSum remarks, a layout not understood) is cut at a Q&A
heading or a hand-over to questions ("We will now begin the question-and-answer session", "Our
first question comes from ...", management's "let's open the lines for questions" past the
first third, never an agenda sentence such as "after our prepared remarks we will open the line
..."), at the start of the sentence holding it. ``strip_layout`` removes what is layout in such a
text: ``Name -- Title`` speaker paragraphs, headings, durations, participant lists (at the top
or the end) and participant lines, and by default operator turns. ``presentation.py`` uses both.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from .participants import heading_kind, is_participant_line, looks_like_name, participants_block

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
_SPEAKER = re.compile(r"(?P<name>[^\n]{1,80}?)[ \t]+--[ \t]+(?P<role>[^\n]{1,200}?)")


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


def _sentence_start(ends: list[int], pos: int) -> int:
    """Offset where the sentence holding ``pos`` starts, from the sorted sentence ``ends``
    (one pass over the text for every candidate, not one per candidate: linear time)."""
    k = bisect_right(ends, pos)
    return ends[k - 1] if k else 0


def handover(text: str) -> tuple[int, str] | None:
    """(cut offset, marker) of the first hand-over to questions that is not an agenda sentence;
    management phrasings must also lie past the first third of the text."""
    matches = [(m, False) for m in _OPERATOR_RE.finditer(text)]
    matches += [(m, True) for m in _MANAGEMENT_RE.finditer(text)]
    ends: list[int] | None = None
    for match, management in sorted(matches, key=lambda item: item[0].start()):
        if management and match.start() < len(text) / 3:
            continue
        if ends is None:
            ends = [m.end() for m in _SENTENCE_END.finditer(text)]
        start = _sentence_start(ends, match.start())
        end = _SENTENCE_END.search(text, match.end())
        if not _AGENDA_WORDS.search(text[start : end.start() if end else len(text)]):
            return start, match.group(0)
    return None


def split_qa(text: str) -> tuple[str, str, str | None]:
    """Split a plain-text transcript into (presentation, Q&A, marker); marker None if not found."""
    heading = _QA_HEADING.search(text)
    if heading:
        return text[: heading.start()], text[heading.start() :], heading.group(0).strip()
    found = handover(text)
    if found:
        cut, marker = found
        return text[:cut], text[cut:], " ".join(marker.split())
    return text, "", None


def _list_lines(lines: list[str]) -> set[int]:
    """Indices of participant-list lines (heading and entries), wherever the lists stand."""
    norm = [" ".join(line.split()) for line in lines]
    out: set[int] = set()
    i = 0
    while i < len(norm):
        kind = heading_kind(norm[i]) if norm[i] else None
        if kind in ("corporate", "outside", "participants"):
            end, _, _ = participants_block(norm, i, kind)
            out.update(range(i, end))
            i = max(end, i + 1)
        else:
            i += 1
    return out


def strip_layout(text: str, keep_operator: bool = False) -> tuple[str, int, int]:
    """Remove speaker lines, layout headings, durations, participant lists and lines (at the
    top or the end), and (by default) operator turns. Returns (text, speaker lines removed,
    operator turns removed)."""
    lines = text.splitlines()
    listed = _list_lines(lines)
    kept: list[str] = []
    speaker: str | None = None
    n_speakers = n_operator = 0
    for i, line in enumerate(lines):
        if i in listed or is_participant_line(line):
            continue
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
