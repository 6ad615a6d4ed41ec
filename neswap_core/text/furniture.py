"""Page furniture: the headers, footers and boilerplate lines a wire service repeats on every page.

A transcript exported page by page repeats its running header ("Oct. 28. 2021 / 12:30PM, BWI -
Q3 2021 Brightwater Instruments Inc Earnings Call"), its footer ("THOMSON REUTERS STREETEVENTS |
www.streetevents.com | Contact Us", "©2021 Thomson Reuters. All Rights Reserved.") and marks
such as "EDITED TRANSCRIPT". Those lines are neither speech nor people: left in, "EDITED
TRANSCRIPT" inside a participant list became an executive and 67 false leak hits (issue 20).

Rule (decision): a line is furniture when it occurs at least ``MIN_REPEATS`` times (case and
spacing ignored; a line that differs only in its figures is a table row, not a header) in the text, is at most ``MAX_CHARS`` long, is not a person's name or a
speaker line of any layout (capiq and Seeking Alpha repeat the bare speaker name at every turn,
Motley Fool its ``Name -- Title`` line), a participant line or a heading, and either carries
publishing words (©, copyright, rights reserved, transcript, page N of M) or is not a sentence
and holds digits or a ``|`` (a running header's date, a page number, a footer's links); so a
repeated "Thank you." or an unknown layout's speaker tag stays. A line holding only a publishing
mark ("EDITED TRANSCRIPT") is furniture even once.
``blank_furniture`` replaces furniture by spaces, so every offset into the text stays valid.
"""

from __future__ import annotations

import re
from collections import Counter

from .participants import (
    SENTENCE_LINE,
    UNIDENTIFIED,
    heading_kind,
    is_participant_line,
    looks_like_name,
)

MIN_REPEATS = 3
MAX_CHARS = 160
_PUBLISHING = re.compile(
    r"©|\bcopyright\b|\brights\s+reserved\b|\btranscripts?\b|\bstreetevents\b|\brefinitiv\b"
    r"|\bfactset\b|\bcallstreet\b|\bcontact\s+us\b|\bpage\s+\d+\s+of\s+\d+\b",
    re.I,
)
#: A line that is nothing but a publishing mark ("EDITED TRANSCRIPT", "CORRECTED TRANSCRIPT").
_MARK = re.compile(
    r"(?:(?:thomson\s+reuters\s+)?(?:streetevents\s+)?(?:final|edited|unedited|corrected|raw|"
    r"preliminary)?\s*transcript|page\s+\d+(?:\s+of\s+\d+)?)",
    re.I,
)
_DIGITS = re.compile(r"\d+")
_SPEAKER_TAIL = re.compile(r"\[\d{1,3}\]\s*$")
_LEAD_NAME = re.compile(r"(?P<name>[^:\n]{1,80}?)(?:\s+--?\s+|\s*:\s)")


def _speaker_like(line: str) -> bool:
    """A bare name, a speaker line of any layout or a participant line (they repeat by nature)."""
    bare = line.rstrip(":")
    if looks_like_name(bare) or UNIDENTIFIED.fullmatch(bare) or _SPEAKER_TAIL.search(line):
        return True
    lead = _LEAD_NAME.match(line)
    return bool(lead and looks_like_name(lead["name"])) or is_participant_line(line)


def _key(line: str) -> str:
    return " ".join(line.split()).lower()


def _is_furniture(line: str, repeats: int) -> bool:
    if _MARK.fullmatch(line):
        return True
    if repeats < MIN_REPEATS or len(line) > MAX_CHARS or heading_kind(line):
        return False
    if _speaker_like(line):
        return False
    if _PUBLISHING.search(line):
        return True
    return not SENTENCE_LINE.match(line) and bool(_DIGITS.search(line) or "|" in line)


def furniture_lines(text: str) -> set[int]:
    """Indices (0-based, in ``text.split("\\n")``) of the lines that are page furniture."""
    lines = [" ".join(line.split()) for line in text.split("\n")]
    counts = Counter(_key(line) for line in lines if line)
    return {i for i, line in enumerate(lines) if line and _is_furniture(line, counts[_key(line)])}


def blank_furniture(text: str) -> str:
    """``text`` with every furniture line replaced by spaces (offsets unchanged)."""
    found = furniture_lines(text)
    if not found:
        return text
    lines = text.split("\n")
    return "\n".join(" " * len(line) if i in found else line for i, line in enumerate(lines))
