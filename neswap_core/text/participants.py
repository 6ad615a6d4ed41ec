"""Call participants: who is listed, and on which side (the company's or an outsider's).

Parses the participant lists of transcript layouts (``layouts.py``): Motley Fool ``Name --
Title`` / ``Name -- Firm -- Analyst`` lines, StreetEvents `` * Name`` bullets with a ``Company -
Title`` line, Capital IQ name-then-title pairs under ``EXECUTIVES`` / ``ANALYSTS``, Seeking Alpha
``Name - Title`` lines. A participant is company-side unless the role names an analyst or an
outside investor, the entry carries a firm, the name is the operator or an unknown speaker, or
the list is of conference-call participants, analysts or attendees (issue 10).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SEPARATOR = re.compile(r"[ \t]*(?:={4,}|-{4,}|_{4,}|\*{4,}|~{4,})[ \t]*")
_HEADINGS = {
    "presentation": (
        "prepared remarks|presentation|management discussion section|prepared remarks section"
    ),
    "qa": (
        r"questions?[ -]?(?:and|&)[ -]?answers?(?:[ -]session)?|q ?& ?a(?: session)?"
        r"|question[- ]and[- ]answer[ -]session"
    ),
    "corporate": "corporate participants|company participants|executives|company representatives",
    "outside": r"conference call particip(?:ia|a)nts|analysts|attendees|other participants",
    "participants": "call participants|participants",
    "noise": "contents|table of contents|definitions|disclaimer",
    # sections of a summary document (an event brief) that hold the management's content
    "brief": (
        "overview|financial data|presentation summary|summary|key points|highlights|"
        "guidance|outlook"
    ),
}
_HEADING = {
    kind: re.compile(rf"[ \t]*(?:{body})[ \t]*:?[ \t]*", re.I) for kind, body in _HEADINGS.items()
}
UNIDENTIFIED = re.compile(
    r"(?:unidentified|unknown)[ \t]+(?:speaker|analyst|executive|participant|company "
    r"representative|operator)|operator",
    re.I,
)
_BULLET = re.compile(r"^[ \t]*[*•·-][ \t]+")
_ENTRY_SPLIT = re.compile(r"[ \t]+[-–—][ \t]+|,[ \t]+|[ \t]*;[ \t]*")
SENTENCE_LINE = re.compile(r".{100,}|.*[.!?]['\"”’)]?[ \t]*$")


_NAME_TOKEN = re.compile(
    r"(?:[A-Z][\w'’.-]*|[A-Z]\.(?:[A-Z]\.)*|von|van|de|der|den|da|di|du|del|della|la|le|bin|al)"
)
_NON_COMPANY_NAMES = re.compile(
    r"^(?:operator|moderator|unknown|unidentified|unknown speaker|unidentified (?:speaker|"
    r"participant|analyst|company representative)|call participant)\b",
    re.I,
)


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


#: Words of page furniture and document structure that are never part of a person's name:
#: "EDITED TRANSCRIPT" in a footer is not an executive (issue 20 item 3).
_NOT_NAME_WORDS = re.compile(
    r"\b(?:transcripts?|edited|unedited|corrected|preliminary|copyright|reserved|disclaimer|"
    r"streetevents|refinitiv|factset|callstreet|webcast|earnings|conference|participants?|"
    r"presentation|questions?|answers?|overview|summary|brief|highlights|data|results|"
    r"quarter|fiscal|event|page|contents|call|session|remarks|division)\b|©",
    re.I,
)


def looks_like_name(text: str) -> bool:
    """A person's name as speaker lines write it: 1-6 capitalised tokens, no digits, no word of
    page furniture or document structure ("EDITED TRANSCRIPT", "FINANCIAL DATA")."""
    tokens = text.split()
    if not 1 <= len(tokens) <= 6 or any(ch.isdigit() for ch in text):
        return False
    if _NOT_NAME_WORDS.search(text):
        return False
    return bool(re.match(r"[A-Z]", tokens[0])) and all(_NAME_TOKEN.fullmatch(t) for t in tokens)


_TITLE_WORDS = re.compile(
    r"\b(?:CEO|CFO|COO|CTO|CIO|CAO|CRO|EVP|SVP|VP|IR|Chief|Officer|President|Chairman|Chair|"
    r"Director|Treasurer|Controller|Head|Founder|Counsel|Secretary|Investor Relations|"
    r"Executive|Manager|Partner|Analyst|Strategist|Economist|Associate|Principal)\b"
)
_SPEAKER_TAIL = re.compile(r"[ \t]*\[\d{1,3}\][ \t]*$")
_AFFILIATED = re.compile(
    r"^(?P<name>[^,\[\]]{2,60}?),[ \t]*(?P<firm>[^\[\]]{2,140}?)[ \t]+[-–—]{1,2}[ \t]+"
    r"(?P<title>[^\[\].!?]{2,80}?)$"
)
_FIRM_TITLE = re.compile(r"^[A-Z][^\[\]!?]{1,140}?[ \t]+[-–—]{1,2}[ \t]+(?P<title>[^\[\].!?]{2,80})$")
_SMALL_WORDS = frozenset({"and", "of", "for", "the", "&", "to", "in", "on"})


def _is_title(title: str) -> bool:
    """A job title as lists write it: at most 10 words, a title word, the rest capitalised."""
    words = title.replace(",", " ").replace("/", " ").split()
    return (
        0 < len(words) <= 10
        and bool(_TITLE_WORDS.search(title))
        and all(w[0].isupper() or w in _SMALL_WORDS for w in words)
    )


def without_participant_lines(text: str) -> str:
    """``text`` without its participant and speaker lines (``is_participant_line``)."""
    return "\n".join(line for line in text.split("\n") if not is_participant_line(line))


def is_participant_line(line: str) -> bool:
    """Whether ``line`` is a participant-list entry or a speaker line, never speech: "Jane Doe,
    Big Bank Securities, Research Division - Analyst [10]", "Big Bank Securities - Analyst",
    "Acme Widgets Inc. - CFO", "Operator [1]"."""
    line = _BULLET.sub("", " ".join(line.split()))
    if not line or len(line) > 220:
        return False
    if "Research Division" in line:
        return True
    tail = _SPEAKER_TAIL.search(line)
    head = line[: tail.start()] if tail else line
    if tail and (UNIDENTIFIED.fullmatch(head) or looks_like_name(head.partition(",")[0])):
        return True
    m = _AFFILIATED.match(head) or _FIRM_TITLE.match(head)
    if m is None or not _is_title(m["title"]):
        return False
    return "name" not in m.groupdict() or looks_like_name(m["name"].strip())


_KEY_DROP = re.compile(r"^(?:[A-Za-z]\.?|dr\.?|mr\.?|mrs\.?|ms\.?|jr\.?|sr\.?|ii|iii|iv)$", re.I)
_LEGAL = re.compile(
    r"\b(?:inc|incorporated|corp|corporation|co|company|ltd|limited|plc|llc|lp|holdings?|group)\b"
)


def person_key(name: str) -> tuple[str, ...]:
    """A name without initials, titles and suffixes, lower-cased: "Ingrid M. Solberg" and
    "Ingrid Solberg" are one person in a participant list and a speaker line."""
    tokens = [t.strip(",") for t in name.split()]
    return tuple(t.lower() for t in tokens if t and not _KEY_DROP.match(t))


def firm_key(company: str) -> str:
    """A company as lists write it, without punctuation and legal form: "Acme Widgets Inc."
    and "Acme Widgets Inc" are one firm."""
    words = re.sub(r"[^\w&]+", " ", company.lower())
    return " ".join(_LEGAL.sub(" ", words).split())


def heading_kind(line: str) -> str | None:
    """The kind of section heading ``line`` is, or None."""
    for kind, pattern in _HEADING.items():
        if pattern.fullmatch(line):
            return kind
    return None


# --- participant lists --------------------------------------------------------------------------
def _entry(line: str, next_line: str) -> tuple[str, str, bool] | None:
    """(name, role, uses next line) of one participant-list entry, or None."""
    line = _BULLET.sub("", line).strip()
    if " -- " in line or "--" in line:
        person = parse_participant(line)
        return (person.name, person.role, False) if looks_like_name(person.name) else None
    if looks_like_name(line):
        takes_next = bool(next_line) and not looks_like_name(_BULLET.sub("", next_line).strip())
        return line, (next_line.strip() if takes_next else ""), takes_next
    parts = _ENTRY_SPLIT.split(line, maxsplit=1)
    if len(parts) == 2 and looks_like_name(parts[0].strip()):
        return parts[0].strip(), parts[1].strip(), False
    return None


#: Consecutive lines a participant list may hold that are no entry (a stray caption): more, and
#: the list has ended (a table of figures after a list is not part of it).
MAX_SKIPPED = 2


def participants_block(lines: list[str], i: int, side: str) -> tuple[int, list[Participant], str]:
    """Parse a list starting after heading line ``i``; returns (next line, people, side)."""
    people: list[Participant] = []
    j = i + 1
    misses, last_miss = 0, -2
    while j < len(lines):
        line = lines[j]
        kind = heading_kind(line) if line else None
        if not line or (SEPARATOR.fullmatch(line) and not people):
            j += 1
            continue
        if kind in ("corporate", "outside"):
            side = kind
            j += 1
            continue
        if kind or SEPARATOR.fullmatch(line) or line.lower().rstrip(":") == "operator":
            break
        nxt = lines[j + 1] if j + 1 < len(lines) else ""
        entry = _entry(line, "" if heading_kind(nxt) or SEPARATOR.fullmatch(nxt) else nxt)
        if entry is None:
            misses = (misses if j == last_miss + 1 else 0) + 1
            last_miss = j
            if SENTENCE_LINE.match(line) or misses > MAX_SKIPPED:
                j -= misses - 1  # the list ended at the first of these lines
                break
            j += 1
            continue
        name, role, takes_next = entry
        company = side == "corporate" or (side == "participants" and is_company_side(name, role))
        if side == "participants" and " -- " not in line and "--" not in line:
            company = is_company_side(name, role.split(" - ")[-1])
        people.append(Participant(name, role, company and not UNIDENTIFIED.fullmatch(name)))
        j += 2 if takes_next else 1
    return j, people, side
