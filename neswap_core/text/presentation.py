"""Presentation extraction: keep the management's prepared remarks, drop the Q&A (SPEC §2.1).

Two layouts are understood:

* **plain text** (a fool.com-style rendering or any transcript): the Q&A starts at a heading
  line such as ``Questions and Answers:`` / ``Question-and-Answer Session`` / ``Q&A``; without
  one, at the operator's or management's hand-over to questions ("We will now begin the
  question-and-answer session", "Our first question comes from ...", "let's open the lines for
  questions"). The cut is at the start of the sentence holding the hand-over. Agenda sentences
  ("after/before/following our prepared remarks we will open the line ...") never count, and
  management's phrasings only count past the first third of the text.
* **Motley Fool JSON** (``layout == "motleyfool"``): the loader already split the call into
  ``prepared_remarks`` (``Document.text``, rendered by ``render_motleyfool`` in the fool.com text
  layout) and ``q_and_a`` (``Document.q_and_a``); nothing is searched for.

Decisions where SPEC is silent:

* ``Name -- Role`` speaker lines, bare ``Operator`` lines, the ``Prepared Remarks:`` heading,
  ``Duration: N minutes`` and the trailing ``Call participants:`` list are layout, not speech:
  they are removed, so speaker names never reach the chunks as raw names (names spoken inside
  sentences are left to ``identifiers``). A speaker line is only recognised as its own paragraph
  (blank line before and after) so that sentences with dashes are never taken for one.
* Operator turns (greeting, "[Operator Instructions]", introductions) are dropped too
  (``keep_operator=False``): they are moderator boilerplate, and the bundled ECTSum texts were
  built the same way.
* When no marker is found the whole text is kept (minus layout lines) and ``found`` is False.

Call participants are parsed here as well (``parse_participant``, ``text_participants``):
a participant is company-side unless the role names an analyst or an outside investor, the entry
carries a firm (``Name -- Firm -- Analyst``), or the name is the operator or an unknown speaker.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import pandas as pd

from ..corpus import Corpus, Document
from ..errors import CorpusError

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

# --- layout lines -----------------------------------------------------------------------------
_LAYOUT_HEADING = re.compile(
    r"(?:prepared remarks|contents|presentation|management discussion section)[ \t]*:?", re.I
)
_DURATION = re.compile(r"duration:?\s*\d+\s*(?:minutes?|mins?)\.?", re.I)
_PARTICIPANTS_HEADING = re.compile(
    r"^[ \t]*(?:call participants|participants|corporate participants)[ \t]*:?[ \t]*$", re.I | re.M
)
_SPEAKER = re.compile(r"(?P<name>[^\n]{1,80}?)[ \t]+--[ \t]+(?P<role>[^\n]{1,200}?)")
_NAME_TOKEN = re.compile(
    r"(?:[A-Z][\w'’.-]*|[A-Z]\.(?:[A-Z]\.)*|von|van|de|der|den|da|di|du|del|della|la|le|bin|al)"
)
_NON_COMPANY_NAMES = re.compile(
    r"^(?:operator|moderator|unknown|unidentified|unknown speaker|unidentified (?:speaker|"
    r"participant|analyst|company representative)|call participant)\b",
    re.I,
)


@dataclass(frozen=True)
class PresentationResult:
    """The kept presentation ``text``; ``found`` whether a Q&A marker was seen, and which."""

    text: str
    found: bool
    marker: str | None
    dropped: str = ""  # the Q&A part that was cut off ("" when nothing was cut)
    speaker_lines: int = 0  # speaker lines removed
    operator_turns: int = 0  # operator turns removed


@dataclass(frozen=True)
class Participant:
    """A call participant as listed by the transcript: name, role and which side they are on."""

    name: str
    role: str
    company_side: bool


def is_company_side(name: str, role: str, affiliation: str = "") -> bool:
    """Whether a participant speaks for the company (an executive) rather than as an outsider."""
    name, role = name.strip(), role.strip().lower()
    if not name or _NON_COMPANY_NAMES.match(name):
        return False
    if affiliation.strip() or "analyst" in role or "anlyst" in role:
        return False
    return not ("investor" in role and "investor relation" not in role)


def parse_participant(entry: str) -> Participant:
    """Parse ``"Name--Role"`` / ``"Name -- Firm -- Analyst"`` (Motley Fool participant lists)."""
    parts = [p.strip() for p in re.split(r"\s*--\s*", entry.strip())]
    name = parts[0]
    role = " -- ".join(parts[1:])
    affiliation = " -- ".join(parts[1:-1]) if len(parts) > 2 else ""
    return Participant(
        name, role, is_company_side(name, parts[-1] if len(parts) > 1 else "", affiliation)
    )


def looks_like_name(text: str) -> bool:
    """A person's name as speaker lines write it: 1-6 capitalised tokens, no digits."""
    tokens = text.split()
    if not 1 <= len(tokens) <= 6 or any(ch.isdigit() for ch in text):
        return False
    return bool(re.match(r"[A-Z]", tokens[0])) and all(_NAME_TOKEN.fullmatch(t) for t in tokens)


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
    """Participants of a plain-text transcript, in the order of its ``Call participants:`` list
    when it has one, then in order of first speaker line (operator excluded)."""
    found: dict[str, Participant] = {}
    section = _PARTICIPANTS_HEADING.search(text)
    if section:
        for line in text[section.end() :].splitlines():
            match = _SPEAKER.fullmatch(line.strip())
            if match and looks_like_name(match["name"]):
                person = parse_participant(line)
                found.setdefault(person.name, person)
    lines = text.splitlines()
    for i in range(len(lines)):
        header = _speaker_header(lines, i)
        if header and header[0] != "Operator":
            found.setdefault(header[0], parse_participant(f"{header[0]} -- {header[1]}"))
    return list(found.values())


def _render_turns(turns: object, roles: dict[str, str], name: str, key: str) -> str:
    """Motley Fool turns rendered as fool.com text: ``Name -- Role`` line, blank line, speech."""
    if not isinstance(turns, list):
        raise CorpusError(f"{name}: {key!r} must be a list of {{speaker, speech}} turns.")
    parts = []
    for turn in turns:
        if not isinstance(turn, dict):
            raise CorpusError(f"{name}: every turn in {key!r} must have 'speaker' and 'speech'.")
        speaker, speech = str(turn.get("speaker", "")).strip(), str(turn.get("speech", "")).strip()
        if not speech:
            continue  # e.g. the "Duration: 58 minutes" pseudo-turn
        if speaker.lower() == "operator":
            parts.append(f"Operator\n\n{speech}")
        elif speaker:
            parts.append(f"{speaker} -- {roles.get(speaker) or 'Call Participant'}\n\n{speech}")
        else:
            parts.append(speech)
    return "\n\n".join(parts)


def render_motleyfool(obj: dict, name: str) -> tuple[str, str, list[Participant]]:
    """A Motley Fool JSON call as (prepared remarks text, Q&A text, participants).

    Both texts use the fool.com rendering (``Prepared Remarks:`` heading, ``Name -- Role`` speaker
    lines); presenters missing from ``participants`` are added as company-side.
    """
    entries = obj.get("participants") or []
    if not isinstance(entries, list):
        raise CorpusError(f"{name}: 'participants' must be a list of 'Name--Role' strings.")
    participants = [parse_participant(str(e)) for e in entries if str(e).strip()]
    roles = {p.name: p.role for p in participants}
    prepared = _render_turns(obj.get("prepared_remarks"), roles, name, "prepared_remarks")
    if not prepared.strip():
        raise CorpusError(f"{name} has no prepared remarks (empty 'prepared_remarks').")
    q_and_a = _render_turns(obj.get("q_and_a") or [], roles, name, "q_and_a")
    known = {p.name for p in participants}
    for turn in obj["prepared_remarks"]:
        speaker = str(turn.get("speaker", "")).strip()
        if speaker and speaker not in known and is_company_side(speaker, ""):
            participants.append(Participant(speaker, "", True))
            known.add(speaker)
    q_and_a = ("Questions and Answers:\n\n" + q_and_a) if q_and_a else ""
    return "Prepared Remarks:\n\n" + prepared, q_and_a, participants


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


def extract_presentation(document: Document, keep_operator: bool = False) -> PresentationResult:
    """Keep the prepared remarks of one document (SPEC §2.1); see the module docstring."""
    text = document.text.replace("\r\n", "\n").replace("\r", "\n")
    if document.layout == "motleyfool" and document.q_and_a is not None:
        body, dropped, marker = text, document.q_and_a, "prepared_remarks (JSON layout)"
    else:
        body, dropped, marker = split_qa(text)
    kept, n_speakers, n_operator = strip_layout(body, keep_operator)
    return PresentationResult(kept, marker is not None, marker, dropped, n_speakers, n_operator)


def extract_presentations(
    corpus: Corpus, keep_operator: bool = False
) -> tuple[Corpus, pd.DataFrame]:
    """Apply ``extract_presentation`` to every document; report one row per document.

    The report has ``doc_id, layout, found, marker, chars_in, chars_out, speaker_lines,
    operator_turns``; the dropped Q&A is kept in ``Document.q_and_a`` for display only.
    """
    documents, rows = [], []
    for doc in corpus.documents:
        result = extract_presentation(doc, keep_operator)
        documents.append(replace(doc, text=result.text, q_and_a=result.dropped or None))
        rows.append(
            {
                "doc_id": doc.doc_id,
                "layout": doc.layout,
                "found": result.found,
                "marker": result.marker,
                "chars_in": len(doc.text),
                "chars_out": len(result.text),
                "speaker_lines": result.speaker_lines,
                "operator_turns": result.operator_turns,
            }
        )
    columns = [
        "doc_id",
        "layout",
        "found",
        "marker",
        "chars_in",
        "chars_out",
        "speaker_lines",
        "operator_turns",
    ]
    return corpus.with_documents(documents), pd.DataFrame(rows, columns=columns)
