"""Where a common word names a company, and leaks that are shapes rather than names (SPEC §11).

Many company names are English words (Regions, Travelers, Principal, Target, Apple, Ball, Gap,
Crown…): matched everywhere they block every release of a financial corpus on "regions" and
"travelers" (issue 23 item 3). A one-word identifier that is common English (``wordfreq``,
``text.words.is_common_word``) is therefore a hit only where the text uses it as a name:

* it is written capitalised (or in capitals) — a lower-case "regions" is the word;
* and the place names a company: a possessive follows ("Travelers' combined ratio",
  "Target's"), a corporate suffix follows ("Regions Bank", "Crown Holdings", ``CORPORATE_
  SUFFIXES``), it sits in a participant or speaker line ("Jane Doe, Regions Financial - CFO"),
  or it is capitalised in the middle of a sentence ("at Regions we"). At the start of a sentence,
  of a line or in a heading (a line of capitalised words) a capital says nothing, so there it
  needs one of the other signs.

A ticker whose lower-case form is an everyday word ("ALL", "NOW", "KEY", "IT": zipf ≥
``TICKER_COMMON_ZIPF``) is a hit only in ticker context: in parentheses, after an exchange
prefix ("NYSE: ALL") or after "ticker"/"symbol".

Shapes that identify without naming (issue 20 item 3): social-media handles (``@AMDNews``),
residue around a placeholder that tells what the company is ("[Company Name] Inc",
"[Company Name] Bancorp", "[Company Name].com"), and analysts' participant or speaker lines
("Jane Doe, Big Bank Securities, Research Division - Analyst"). The text stages remove these
before chunking (``text.identifiers``, ``text.presentation``); the scan catches what got through.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..config import PLACEHOLDER_PATTERN
from ..text.corporate import CORPORATE_SUFFIX, HANDLE_PATTERN, LEGAL_SUFFIX_TAIL
from ..text.participants import is_participant_line
from ..text.sentences import ABBREVIATIONS

#: Zipf frequency from which a ticker's lower-case form is an everyday word (it 6.95, all 6.52,
#: key 5.12, gap 4.47, gm 4.16) rather than an acronym read as a name (ibm 3.93, wwe 3.97,
#: amd 3.52): tickers are written in capitals, so only a very common word is ambiguous.
TICKER_COMMON_ZIPF = 4.0

_ABBREVIATION_BEFORE = re.compile(
    rf"(?<![\w.])(?:{'|'.join(sorted(ABBREVIATIONS))}|[A-Z])\.$"
)
_OPENERS = "\"'“‘([{*•·–—-"
_SENTENCE_END = ".!?:;…"
_POSSESSIVE = re.compile(r"['’](?:s|S)?(?![\w'’])")
_SUFFIX_AFTER = re.compile(r",?[ \t]+")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
_EXCHANGE = re.compile(
    r"(?:\b(?:NYSE|NASDAQ|Nasdaq|NasdaqGS|NasdaqGM|AMEX|TSX|LSE|OTC|ticker|symbol|Ticker|Symbol)"
    r"[ \t]*:?[ \t]*)$"
)
_PLACEHOLDER = PLACEHOLDER_PATTERN
_TLDS = r"(?i:com|net|org|io|co|biz|info|us|uk|ca|de)"

#: Shapes found by ``shape_hits``: (kind, pattern); the identifier is the match, normalised.
SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("handle", re.compile(HANDLE_PATTERN)),
    (
        "residue",
        re.compile(
            rf"{_PLACEHOLDER}(?:{LEGAL_SUFFIX_TAIL.pattern}|\.{_TLDS}(?![\w-]))"
        ),
    ),
    (
        "participant line",
        re.compile(
            r"(?:(?:[A-Z&][\w&'’.-]*[ \t]+){0,5}[A-Z&][\w&'’.-]*,[ \t]+)?Research[ \t]+Division"
            r"(?:[ \t]+[-–—]{1,2}[ \t]+(?:[A-Z]\w*[ \t]+){0,3}Analyst(?![\w-]))?"
            r"|(?:[A-Z&][\w&'’.-]*[ \t]+){0,5}[A-Z&][\w&'’.-]*[ \t]+[-–—]{1,2}[ \t]+"
            r"(?:(?:Senior|Equity|Research|Managing|Lead)[ \t]+)?Analyst(?![\w-])"
            r"(?:[ \t]*\[\d{1,3}\])?"
        ),
    ),
)


def sentence_initial(text: str, start: int) -> bool:
    """Whether ``start`` opens a sentence, a line or a list item (quotes and bullets skipped)."""
    i = start
    while i > 0 and (text[i - 1] in " \t\u00a0" or text[i - 1] in _OPENERS):
        i -= 1
    if i == 0 or text[i - 1] in "\n\r":
        return True
    if text[i - 1] == "." and _ABBREVIATION_BEFORE.search(text, max(0, i - 12), i):
        return False  # "Ms. Doe", "Acme Corp. Regions": an abbreviation's period
    return text[i - 1] in _SENTENCE_END


def _line(text: str, start: int, end: int) -> str:
    a = text.rfind("\n", 0, start) + 1
    b = text.find("\n", end)
    return text[a : b if b >= 0 else len(text)]


def in_heading(text: str, start: int, end: int) -> bool:
    """Whether the match lies in a heading: a line of at least three words, all capitalised."""
    words = _WORD.findall(_line(text, start, end))
    return len(words) >= 3 and all(w[0].isupper() for w in words)


def in_participant_line(text: str, start: int, end: int) -> bool:
    """Whether the match lies in a participant or speaker line (``text.participants``)."""
    return is_participant_line(_line(text, start, end))


def names_company(text: str, start: int, end: int) -> bool:
    """Whether a one-word common identifier at ``text[start:end]`` is used as a name (module doc)."""
    if not text[start : start + 1].isupper():
        return False
    if _POSSESSIVE.match(text, end):
        return True
    gap = _SUFFIX_AFTER.match(text, end)
    if gap and CORPORATE_SUFFIX.match(text, gap.end()):
        return True
    if in_participant_line(text, start, end):
        return True
    return not sentence_initial(text, start) and not in_heading(text, start, end)


def ticker_context(text: str, start: int, end: int) -> bool:
    """Whether a ticker at ``text[start:end]`` is written as a ticker: "(ALL)", "NYSE: ALL"."""
    before = text[max(0, start - 24) : start]
    if before.rstrip(" \t").endswith("(") and text[end : end + 1] == ")":
        return True
    return bool(_EXCHANGE.search(before))


@lru_cache(maxsize=4096)
def ticker_is_word(ticker: str) -> bool:
    """Whether a ticker's lower-case form is an everyday English word (``TICKER_COMMON_ZIPF``)."""
    from wordfreq import zipf_frequency

    return zipf_frequency(ticker.lower(), "en") >= TICKER_COMMON_ZIPF


def shape_hits(text: str) -> list[tuple[int, int, str, str]]:
    """(start, end, kind, identifier) of every handle, placeholder residue and analyst
    participant line in ``text`` (module docstring), in order."""
    out = []
    for kind, pattern in SHAPES:
        for m in pattern.finditer(text):
            out.append((m.start(), m.end(), kind, " ".join(m.group(0).split())))
    return sorted(out)
