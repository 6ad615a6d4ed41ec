"""The maskable words of a text (SPEC §9): what redaction counts, masks and scores.

Words are maximal runs of letters/digits joined by an inner apostrophe, hyphen or dot
(``don't``, ``year-over-year``, ``3.5``, ``U.S``); punctuation, ``$``, ``%`` and white space are
not words, and nothing inside a placeholder (``[Company Name]``, ``[MASK]``, ...) is a word.
``is_common_word`` tells whether a word is common English (``wordfreq`` frequencies), e.g. a
company name that is also a noun ("Regions", "Travelers").
"""

from __future__ import annotations

import re
from functools import lru_cache

from ..config import PLACEHOLDER_PATTERN

WORD_PATTERN = r"[^\W_]+(?:['’.\-][^\W_]+)*"
_WORD_OR_PLACEHOLDER = re.compile(rf"(?P<ph>{PLACEHOLDER_PATTERN})|(?P<word>{WORD_PATTERN})")


def word_spans(text: str) -> list[tuple[int, int, str]]:
    """The maskable words of ``text`` as (start, end, word); placeholders are skipped."""
    return [m.span("word") + (m["word"],) for m in _WORD_OR_PLACEHOLDER.finditer(text) if m["word"]]


def text_words(text: str) -> list[str]:
    """Lower-cased maskable words: the TF-IDF analyzer, consistent with ``word_spans``."""
    return [m["word"].lower() for m in _WORD_OR_PLACEHOLDER.finditer(text) if m["word"]]


#: Zipf frequency (log10 of occurrences per billion words in ``wordfreq``'s English data) from
#: which a word counts as common English: 3.0 is once per million words. Measured with
#: wordfreq 3.1.1: regions 4.53, travelers 3.84, principal 4.52, target 4.82, ball 5.04,
#: hershey 3.04 (common); corning 2.90, dolby 2.96, amphenol 1.45, cardtronics 0 (not common).
#: wordfreq has no case: "microsoft" (4.36) counts as common too, so a common word is never
#: treated as a non-word, only searched where it names something (``publish.leaks``).
COMMON_ZIPF = 3.0


@lru_cache(maxsize=65536)
def is_common_word(word: str) -> bool:
    """Whether every word of ``word`` is common English by ``wordfreq`` (``COMMON_ZIPF``).

    Decided from word-frequency data, never from a hand list; ``wordfreq`` ships its data in
    the wheel (nothing is downloaded). An empty string is not a common word.
    """
    from wordfreq import zipf_frequency

    words = [w for w in re.split(r"\s+", word.strip().lower()) if w]
    return bool(words) and all(zipf_frequency(w, "en") >= COMMON_ZIPF for w in words)
