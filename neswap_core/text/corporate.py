"""What surrounds a company's name: legal and corporate suffixes, residue, social handles.

Used by the suppression of direct identifiers (``identifiers.py``, SPEC §2.3) and by the leak
scan (``publish.leak_context``, SPEC §11): a suffix after a common word shows it names a
company ("Regions Bank"); a legal suffix left after ``[Company Name]`` ("[Company Name] Inc",
issue 20 item 3) is residue that says what kind of firm it is and is absorbed into the
placeholder; a social-media handle (``@AMDNews``) names its owner and becomes ``[URL]``.
"""

from __future__ import annotations

import re

from ..config import COMPANY_PLACEHOLDER, URL_PLACEHOLDER

#: Legal forms ("[Company Name] Inc", "… Bancorp"): after ``[Company Name]`` they are residue
#: and are absorbed into the placeholder. Not words that may start a segment's name ("HPE
#: Financial Services" keeps "[Company Name] Financial Services").
LEGAL_SUFFIXES = frozenset(
    """
    Inc Incorporated Corp Corporation Co Company Companies Cos Ltd Limited Plc PLC LLC LP NV
    SA AG SE Holdings Holding Group Bancorp Bancshares
    """.split()
)
#: Words that follow a company's name in its legal or usual form ("Regions Financial", "Crown
#: Holdings"), written capitalised or in capitals: what shows that a common word names a company.
CORPORATE_SUFFIXES = LEGAL_SUFFIXES | frozenset(
    """
    Bank Banks Financial Insurance Trust Partners Capital Brands Industries International Worldwide
    Enterprises Technologies Technology Systems Solutions Laboratories Labs Networks
    Communications Electronics Entertainment Media Software Services Therapeutics
    Pharmaceuticals Semiconductor
    """.split()
)


def _words_pattern(words: frozenset[str]) -> str:
    alternatives = "|".join(sorted(words | {w.upper() for w in words}, key=lambda w: (-len(w), w)))
    return rf"(?:{alternatives})(?![\w-])"


#: One corporate suffix word (``CORPORATE_SUFFIXES`` as written or in capitals), whole word.
CORPORATE_SUFFIX = re.compile(_words_pattern(CORPORATE_SUFFIXES))
#: One legal suffix word (``LEGAL_SUFFIXES``), whole word.
LEGAL_SUFFIX = re.compile(_words_pattern(LEGAL_SUFFIXES))

#: A social-media handle (``@AMDNews``): an account that names its owner, suppressed as a URL.
#: An e-mail address is matched before it (the ``@`` of an address follows a word character).
HANDLE_PATTERN = r"(?<![\w@.])@[A-Za-z_][A-Za-z0-9_]{1,30}(?![\w@])"

_RESIDUE = re.compile(
    rf"{re.escape(COMPANY_PLACEHOLDER)}(?:"
    rf"(?P<suffix>(?:,?[ \t]+{LEGAL_SUFFIX.pattern}(?:\.(?=[ \t]*[a-z,;:)]|,))?)+)"
    r"|(?P<domain>\.(?i:com|net|org|io|co|biz|info)(?![\w-])))"
)


#: Legal suffix words right after a span (" Group", ", Inc", " Holdings Limited"): the shape the
#: leak scan's residue pattern looks for after any placeholder (``publish.leak_context.SHAPES``).
LEGAL_SUFFIX_TAIL = re.compile(rf"(?:,?[ \t]+{LEGAL_SUFFIX.pattern})+")


def legal_suffix_end(text: str, end: int) -> int:
    """Where a mask of ``text[…:end]`` must end so that it takes the legal suffix words that
    follow ("ANZ Banking| Group" → ``end`` after "Group"): "[…] Group" says what kind of firm
    was masked, and the leak scan rightly blocks it as residue (issue 21: the 100k release)."""
    m = LEGAL_SUFFIX_TAIL.match(text, end)
    return m.end() if m else end


def absorb_residue(text: str) -> tuple[str, int]:
    """``[Company Name]`` swallows the legal suffix that followed the alias ("Acme Widgets Inc"
    when only "Acme Widgets" is known) and becomes ``[URL]`` before a top-level domain
    ("[Company Name].com"): left in, they say what kind of firm it is or point at its site.
    The period of "Inc." stays when it ends the sentence. Returns (text, placeholders that
    became ``[URL]``)."""
    domains = 0

    def repl(m: re.Match[str]) -> str:
        nonlocal domains
        domains += bool(m.group("domain"))
        return URL_PLACEHOLDER if m.group("domain") else COMPANY_PLACEHOLDER

    return _RESIDUE.sub(repl, text), domains
