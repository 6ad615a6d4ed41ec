"""Transcript layouts: which one a text is written in, and its participants, turns and sections.

``parse_transcript`` reads a plain-text earnings call into a ``ParsedTranscript`` that
``presentation`` (what to keep, SPEC §2.1) and ``people`` (who the executives are, SPEC §2.3)
both use. Layouts understood (issue 10), with the lines that are layout and never speech:

* ``motleyfool`` (fool.com): ``Prepared Remarks:`` / ``Questions and Answers:`` headings,
  ``Name -- Title`` and ``Operator`` speaker paragraphs, a trailing ``Call participants:`` list
  (``Name -- Firm -- Analyst`` for outsiders), ``Duration: N minutes``, a ``Contents:`` list.
* ``streetevents`` (Refinitiv/LSEG): a title block; ``Corporate Participants`` and
  ``Conference Call Participants`` lists at the top (`` * Name`` bullets with a ``Company -
  Title`` line or on one line); ``====`` / ``----`` separator lines; ``Presentation`` and
  ``Questions and Answers`` headings; speaker lines ``Name, Company - Title [3]`` / ``Operator [1]``.
  The list and the speaker lines may come without separators, headings in any case, the
  speaker line's name without the list's middle initial and its company without its period.
* ``brief`` (an event brief: a summary document): a title block, section headings such as
  ``OVERVIEW``, ``FINANCIAL DATA``, ``PRESENTATION SUMMARY`` (any case, optional colon), a
  ``QUESTIONS AND ANSWERS`` section and participant lists; no speaker lines. Each section is a
  speakerless turn; the sections before the Q&A are the management's content.
* ``capiq`` (S&P Capital IQ): ``Call Participants`` with ``EXECUTIVES`` / ``ANALYSTS`` /
  ``ATTENDEES`` lists of a name line then a title (or firm) line; ``Presentation`` and ``Question
  and Answer`` headings; speaker turns open with the name line and then the title line.
* ``seekingalpha``: ``Company Participants`` / ``Conference Call Participants`` lists of
  ``Name - Title`` lines, ``Operator``, ``Question-and-Answer Session``; speaker lines are the
  bare name.
* ``dash``: ``Name -- Title`` speaker paragraphs without section headings.
* ``colon``: ``Name: text`` (or ``Operator: text``) turns, at least two of them.
* ``prose``: no layout lines at all (the ECTSum remarks): one block of text.
* ``unknown``: layout lines the code does not understand (repeated short lines that are not
  sentences, separator lines): the caller keeps the whole text and warns.

Decisions where the issue is silent: a heading only counts when speech follows it before the next
heading (a ``Contents:`` list is not a section); a participant list ends at the next heading, at
an ``Operator`` line, or at the first line that reads as a sentence; listed corporate
participants are company-side, conference-call participants, analysts and attendees are not; a
speaker of a capiq / Seeking Alpha turn must be a listed participant (or the operator, or an
"Unidentified ..." speaker), since a bare name line is otherwise indistinguishable from a title.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from .furniture import blank_furniture
from .participants import (
    SENTENCE_LINE,
    SEPARATOR,
    UNIDENTIFIED,
    Participant,
    firm_key,
    heading_kind,
    is_company_side,
    looks_like_name,
    parse_participant,
    participants_block,
    person_key,
)

LAYOUTS: tuple[str, ...] = (
    "motleyfool",
    "streetevents",
    "brief",
    "capiq",
    "seekingalpha",
    "dash",
    "colon",
    "prose",
    "unknown",
)

_DASH_SPEAKER = re.compile(r"(?P<name>[^\n]{1,80}?)[ \t]+--[ \t]+(?P<role>[^\n]{1,200}?)")
_BRACKET_SPEAKER = re.compile(r"[ \t]*(?P<who>[^\[\n]{1,200}?)[ \t]*\[\d{1,3}\][ \t]*")
_COLON_SPEAKER = re.compile(
    r"(?P<name>[A-Z][\w.'’-]*(?:[ \t]+[A-Z][\w.'’-]*){0,4})[ \t]*(?:\((?P<role>[^)\n]{1,80})\))?"
    r":[ \t]+(?=\S)"
)
_DURATION = re.compile(r"[ \t]*duration:?[ \t]*\d+[ \t]*(?:minutes?|mins?)\.?[ \t]*", re.I)


@dataclass(frozen=True)
class Turn:
    """One speaker's turn: speech lines as (start, end) offsets into the text."""

    speaker: str  # "Operator", a name, or "" for text before any speaker line
    role: str
    company_side: bool
    section: str  # "title" (before any section), "presentation", "qa"
    start: int  # offset of the speaker line (or of the first speech line)
    lines: tuple[tuple[int, int], ...] = ()

    @property
    def is_operator(self) -> bool:
        return self.speaker.lower() == "operator"


@dataclass(frozen=True)
class ParsedTranscript:
    """A transcript read by its layout; offsets index the text that was parsed."""

    layout: str
    participants: tuple[Participant, ...] = ()
    turns: tuple[Turn, ...] = ()
    qa_start: int | None = None  # offset of the first Q&A heading, if any
    qa_heading: str | None = None
    headings: tuple[str, ...] = ()  # every section heading seen, in order
    layout_lines: int = 0  # speaker, heading, separator and participant-list lines
    notes: tuple[str, ...] = field(default=())


def _norm(line: str) -> str:
    return " ".join(line.split())


def _line_spans(text: str) -> list[tuple[int, int]]:
    spans, pos = [], 0
    for line in text.split("\n"):
        spans.append((pos, pos + len(line)))
        pos += len(line) + 1
    return spans


def _bracket_line(line: str) -> bool:
    """A StreetEvents speaker line: ``Operator [1]`` or ``Name, Company - Title [3]``."""
    m = _BRACKET_SPEAKER.fullmatch(line)
    if not m:
        return False
    who = m["who"].strip()
    return bool(UNIDENTIFIED.fullmatch(who)) or looks_like_name(who.partition(",")[0].strip())


def _is_brief(lines: list[str]) -> bool:
    """A summary document (event brief): two or more of its section headings, one of them
    OVERVIEW, FINANCIAL DATA or PRESENTATION SUMMARY, and no speaker lines."""
    found = {line.lower().rstrip(": ") for line in lines if line and heading_kind(line) == "brief"}
    core = {"overview", "financial data", "presentation summary"}
    return len(found) >= 2 and bool(found & core)


def detect_layout(text: str) -> str:
    """Name of the layout ``text`` is written in (module docstring)."""
    return _detect([_norm(line) for line in blank_furniture(text).split("\n")])


def _detect(lines: list[str]) -> str:
    """``detect_layout`` on the normalised lines of a text whose furniture is blanked."""
    kinds = {heading_kind(line) for line in lines if line} - {None}
    low = {line.lower().rstrip(":") for line in lines}
    separators = sum(bool(SEPARATOR.fullmatch(line)) for line in lines if line)
    brackets = sum(_bracket_line(line) for line in lines if line)
    if brackets >= 2 or (separators >= 2 and (brackets >= 1 or "corporate participants" in low)):
        return "streetevents"
    if "brief" in kinds and _is_brief(lines):
        return "brief"
    if {"executives", "analysts"} & low and "call participants" in low:
        return "capiq"
    if "question and answer" in low and "presentation" in low:
        return "capiq"
    if "company participants" in low or "question-and-answer session" in low:
        return "seekingalpha"
    dash = sum(1 for i in range(len(lines)) if _dash_line(lines, i))
    if "prepared remarks" in low or (dash and "qa" in kinds):
        return "motleyfool"
    if dash:
        return "dash"
    colon = [m["name"] for line in lines if (m := _COLON_SPEAKER.match(line))]
    colon = [n for n in colon if looks_like_name(n) and len(n.split()) <= 4]
    if len(colon) >= 2 and (len(set(colon)) >= 2 or "Operator" in colon):
        return "colon"
    return "unknown" if _looks_structured(lines, separators) else "prose"


def _looks_structured(lines: list[str], separators: int) -> bool:
    """Layout lines we do not know: separators, or short non-sentence lines that repeat."""
    short = Counter(
        line for line in lines if line and len(line) < 80 and not SENTENCE_LINE.match(line)
    )
    repeated = [line for line, count in short.items() if count >= 2]
    return separators >= 2 or len(repeated) >= 2


def _dash_line(lines: list[str], i: int) -> bool:
    line = lines[i]
    if not line or (i > 0 and lines[i - 1]) or (i + 1 < len(lines) and lines[i + 1]):
        return False
    m = _DASH_SPEAKER.fullmatch(line)
    return bool(m and looks_like_name(m["name"].strip()))


# --- speaker lines --------------------------------------------------------------------------------
def _alone(lines: list[str], i: int) -> bool:
    """Line ``i`` stands after a blank or separator line (or at the start)."""
    return i == 0 or not lines[i - 1] or bool(SEPARATOR.fullmatch(lines[i - 1]))


_KEYED = "\x00"  # prefix of the keys of ``known`` that are names without initials


def _bracket_who(
    who: str, known: dict[str, Participant], firms: set[str]
) -> tuple[str, str, bool]:
    """(name, role, company side) of a StreetEvents speaker ``Name, Company - Title``.

    A listed participant is matched without initials ("Ingrid Solberg" is the listed "Ingrid M.
    Solberg", whose name and side the turn takes); otherwise the speaker is company-side when
    the line's company is a listed executive's (punctuation and legal form ignored), and, with
    no list at all, when the title is not an analyst's or an investor's."""
    name, _, affiliation = (part.strip() for part in who.partition(","))
    company, _, title = affiliation.rpartition(" - ")
    title = title or affiliation
    if UNIDENTIFIED.fullmatch(name):
        return name, affiliation, False
    listed = known.get(name) or known.get(_KEYED + " ".join(person_key(name)))
    if listed is not None:
        return listed.name, affiliation, listed.company_side
    if company and firm_key(company) in firms:
        return name, affiliation, is_company_side(name, title)
    return name, affiliation, not firms and is_company_side(name, title)


def _speaker(
    layout: str, lines: list[str], i: int, known: dict[str, Participant], corporate: set[str]
) -> tuple[str, str, bool, int, int] | None:
    """(name, role, company side, lines used, speech offset in the line) if a turn opens at ``i``."""
    line = lines[i]
    if layout in ("motleyfool", "dash"):
        if line.lower().rstrip(":") == "operator" and _alone(lines, i):
            return "Operator", "", False, 1, -1
        if _dash_line(lines, i):
            parsed = parse_participant(line)
            known_side = known.get(parsed.name)
            side = known_side.company_side if known_side else parsed.company_side
            return parsed.name, parsed.role, side, 1, -1
        return None
    if layout == "streetevents":
        m = _BRACKET_SPEAKER.fullmatch(line)
        if not m:
            return None
        name, role, side = _bracket_who(m["who"], known, corporate)
        return name, role, side, 1, -1
    if layout == "colon":
        m = _COLON_SPEAKER.match(line)
        if not m or not looks_like_name(m["name"]) or len(m["name"].split()) > 4:
            return None
        if m["name"] not in known and m["name"] != "Operator" and not _alone(lines, i):
            return None
        person = known.get(m["name"])
        role = m["role"] or (person.role if person else "")
        side = person.company_side if person else is_company_side(m["name"], role)
        return m["name"], role, side, 1, m.end()
    if layout in ("capiq", "seekingalpha") and _alone(lines, i):
        name = line.rstrip(":")
        if name not in known and not UNIDENTIFIED.fullmatch(name):
            return None
        person = known.get(name)
        role = person.role if person else ""
        used = 1
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if layout == "capiq" and nxt and not SENTENCE_LINE.match(nxt) and len(nxt) < 100:
            role, used = nxt, 2  # the title line under the name
        side = person.company_side if person else False
        return name, role, side, used, -1
    return None


# --- the parse -------------------------------------------------------------------------------------
def parse_transcript(text: str, layout: str | None = None) -> ParsedTranscript:
    """Read ``text`` in its layout (detected when not given): participants, turns, sections.

    Page furniture (``furniture.py``) is read as blank lines; offsets index ``text`` itself."""
    text = blank_furniture(text)
    spans = _line_spans(text)
    lines = [_norm(text[a:b]) for a, b in spans]
    layout = layout or _detect(lines)
    if layout in ("prose", "unknown"):
        return ParsedTranscript(layout)
    participants: list[Participant] = []
    headings: list[str] = []
    list_lines: set[int] = set()
    i = 0
    while i < len(lines):  # participant lists first: their names make speaker lines known
        kind = heading_kind(lines[i]) if lines[i] else None
        if kind in ("corporate", "outside", "participants"):
            end, people, _ = participants_block(lines, i, kind)
            participants += people
            list_lines.update(range(i, end))
            i = end
        else:
            i += 1
    known = {p.name: p for p in participants}  # and by name without initials (speaker lines)
    known |= {_KEYED + " ".join(person_key(p.name)): p for p in participants}
    corporate = {  # the listed executives' firms (normalised), for speaker lines
        firm_key(p.role.rpartition(" - ")[0])
        for p in participants
        if p.company_side and " - " in p.role
    } - {""}
    turns: list[Turn] = []
    current: dict | None = None
    section = "title" if layout in ("motleyfool", "streetevents", "capiq", "brief") else "presentation"
    qa_start = qa_heading = None
    n_layout = len(list_lines)

    def close() -> None:
        if current is not None:
            turns.append(Turn(**current))

    i = 0
    while i < len(lines):
        line = lines[i]
        if i in list_lines or not line:
            i += 1
            continue
        kind = heading_kind(line)
        if SEPARATOR.fullmatch(line) or _DURATION.fullmatch(line) or kind is not None:
            n_layout += 1
            sections = ("presentation", "qa", "brief") if layout == "brief" else ("presentation", "qa")
            if kind in sections and _speech_follows(lines, i, list_lines):
                headings.append(line)
                section = "qa" if kind == "qa" else "presentation"
                if kind == "qa" and qa_start is None:
                    qa_start, qa_heading = spans[i][0], line
                close()
                current = None
            i += 1
            continue
        who = _speaker(layout, lines, i, known, corporate)
        if who is not None:
            close()
            name, role, side, used, speech_at = who
            n_layout += used
            current = dict(
                speaker=name,
                role=role,
                company_side=side,
                section=section,
                start=spans[i][0],
                lines=(),
            )
            if speech_at >= 0:  # "Name: speech" on the same line
                offset = (
                    spans[i][0]
                    + len(text[spans[i][0] : spans[i][1]])
                    - len(text[spans[i][0] : spans[i][1]].lstrip())
                )
                current["lines"] = ((offset + speech_at, spans[i][1]),)
            i += used
            continue
        if current is None:
            current = dict(
                speaker="",
                role="",
                company_side=False,
                section=section,
                start=spans[i][0],
                lines=(),
            )
        current["lines"] = current["lines"] + (spans[i],)
        i += 1
    close()
    return ParsedTranscript(
        layout, tuple(participants), tuple(turns), qa_start, qa_heading, tuple(headings), n_layout
    )


def _speech_follows(lines: list[str], i: int, list_lines: set[int]) -> bool:
    """Whether a non-heading line follows heading ``i`` before the next heading (not a contents list)."""
    for j in range(i + 1, len(lines)):
        line = lines[j]
        if not line or SEPARATOR.fullmatch(line):
            continue
        return j not in list_lines and heading_kind(line) is None
    return False
