"""Sentence splitting with character offsets, the first step of the chunker (SPEC §2.2).

A small rule-based splitter (no model): transcripts come either one sentence a line (the
ECTSum files) or as paragraphs (uploads, the Motley Fool layout), and both must work.

Rules, in order:
- a blank line always ends a sentence (paragraph or speaker-block break);
- a line break ends a sentence when the line ends in ``. ! ? …`` or ``:`` (possibly followed by
  closing quotes or brackets); otherwise the line is taken as hard-wrapped and continues;
- inside a line, ``. ! ? …`` followed by a space ends a sentence when the next word starts
  like a sentence (capital letter, digit, ``$``, an opening quote or bracket, or a camel-cased
  word such as "iPhone"), except after a period that closes an abbreviation ("Mr.", "Inc.",
  "St.", a month), a single initial ("Craig A. Lampo") or a dotted acronym ("U.S.", "e.g."),
  which in this corpus are followed by proper nouns far more often than by a new sentence.
Decimals ("3.5%", "$0.67") never split because no space follows their period.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """A stretch of a text with offsets: ``text == source[start:end]``."""

    start: int
    end: int
    text: str


#: Words that end in a period without ending the sentence (case-sensitive, without the period).
ABBREVIATIONS: frozenset[str] = frozenset(
    """Mr Mrs Ms Mx Dr Prof Sr Jr St Mt Ft Gen Gov Sen Rep Rev Hon Capt Lt Col Sgt Messrs
    Inc Corp Co Ltd Bros Cos Assn Dept Univ No Nos Nr vs approx Fig Figs Vol Ed
    Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec""".split()
)

_CLOSERS = "\"'”’)]"
_TERMINAL = re.compile(r"(?:[.!?…]+)[\"'”’)\]]*(?=\s)")
_SENTENCE_START = re.compile(r"[\"'“‘(\[]?(?:[A-Z0-9$£€]|[a-z]+[A-Z])")
_BLANK_LINE = re.compile(r"\n[^\S\n]*\n")
_LINE_END = re.compile(r"[.!?…:][\"'”’)\]]*[^\S\n]*$")
_INITIAL_OR_ACRONYM = re.compile(r"[A-Z]|(?:[A-Za-z]\.)+[A-Za-z]")


def split_sentences(text: str) -> list[Span]:
    """Split ``text`` into sentences with offsets; whitespace between sentences is dropped.

    Every non-whitespace character of ``text`` lies in exactly one returned span, in order.
    """
    cuts = sorted(set(_paragraph_cuts(text)) | set(_line_cuts(text)) | set(_inline_cuts(text)))
    spans: list[Span] = []
    start = 0
    for cut in [*cuts, len(text)]:
        span = _stripped(text, start, cut)
        if span is not None:
            spans.append(span)
        start = cut
    return spans


def _stripped(text: str, start: int, end: int) -> Span | None:
    """The span ``text[start:end]`` without surrounding whitespace, or None when blank."""
    piece = text[start:end]
    lead = len(piece) - len(piece.lstrip())
    trail = len(piece) - len(piece.rstrip())
    if lead == len(piece):
        return None
    return Span(start + lead, end - trail, piece.strip())


def _paragraph_cuts(text: str) -> list[int]:
    return [m.start() for m in _BLANK_LINE.finditer(text)]


def _line_cuts(text: str) -> list[int]:
    """Line breaks that end a sentence: the line ends in terminal punctuation or a colon."""
    cuts = []
    pos = 0
    for line in text.split("\n")[:-1]:
        if _LINE_END.search(line):
            cuts.append(pos + len(line))
        pos += len(line) + 1
    return cuts


def _inline_cuts(text: str) -> list[int]:
    """Sentence ends followed by spaces on the same line (abbreviations excepted)."""
    cuts = []
    for m in _TERMINAL.finditer(text):
        gap_end = m.end()
        while gap_end < len(text) and text[gap_end] in " \t\u00a0":
            gap_end += 1
        if gap_end == m.end() or gap_end >= len(text) or text[gap_end] in "\r\n":
            continue  # line ends are handled by _line_cuts
        if not _SENTENCE_START.match(text, gap_end):
            continue
        if m.group().rstrip(_CLOSERS) == "." and _is_abbreviation(text, m.start()):
            continue
        cuts.append(m.end())
    return cuts


def _is_abbreviation(text: str, period: int) -> bool:
    """Whether the word ending just before the period at ``period`` is an abbreviation."""
    word_start = period
    while word_start > 0 and not text[word_start - 1].isspace():
        word_start -= 1
    word = text[word_start:period].lstrip("\"'“‘([")
    return word in ABBREVIATIONS or _INITIAL_OR_ACRONYM.fullmatch(word) is not None
