"""The maskable words of a text (SPEC §9): what redaction counts, masks and scores.

Words are maximal runs of letters/digits joined by an inner apostrophe, hyphen or dot
(``don't``, ``year-over-year``, ``3.5``, ``U.S``); punctuation, ``$``, ``%`` and white space are
not words, and nothing inside a placeholder (``[Company Name]``, ``[MASK]``, ...) is a word.
"""

from __future__ import annotations

import re

from ..config import PLACEHOLDER_PATTERN

WORD_PATTERN = r"[^\W_]+(?:['’.\-][^\W_]+)*"
_WORD_OR_PLACEHOLDER = re.compile(rf"(?P<ph>{PLACEHOLDER_PATTERN})|(?P<word>{WORD_PATTERN})")


def word_spans(text: str) -> list[tuple[int, int, str]]:
    """The maskable words of ``text`` as (start, end, word); placeholders are skipped."""
    return [m.span("word") + (m["word"],) for m in _WORD_OR_PLACEHOLDER.finditer(text) if m["word"]]


def text_words(text: str) -> list[str]:
    """Lower-cased maskable words: the TF-IDF analyzer, consistent with ``word_spans``."""
    return [m["word"].lower() for m in _WORD_OR_PLACEHOLDER.finditer(text) if m["word"]]
