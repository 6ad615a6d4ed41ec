"""One regex for many strings, as a prefix tree: what a longest-first alternation matches, at the
cost of one string instead of all of them (issue 21).

``"|".join(longest first)`` makes the regex engine try every alternative at every position of
the text: the leak scan's pattern holds every company's names, aliases and executives, so its
cost grew as text × identifiers, both proportional to the corpus (460 s of the 100k release's
write). ``alternation(bodies)`` shares common prefixes ("Acme(?:\\s+Corp(?:oration)?)?"): at each
position the engine follows one path, one character at a time. It matches what the
longest-first alternation matches, whatever follows: at a branch the longer continuation is
tried first and dropped for the shorter when what follows fails (greedy ``?``), and siblings
start with different characters, so at most one of them can match.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_END = ""  # the key that marks the end of a string in the tree
_SPACE = "  "  # the unit of a run of white space (never a single character)


def _units(body: str, whitespace: bool) -> list[str]:
    if not whitespace:
        return list(body)
    out: list[str] = []
    for i, word in enumerate(body.split()):
        if i:
            out.append(_SPACE)
        out.extend(word)
    return out


def _emit(node: dict) -> str:
    branches = [(r"\s+" if unit == _SPACE else re.escape(unit)) + _emit(child)
                for unit, child in sorted(node.items()) if unit != _END]  # fmt: skip
    if not branches:
        return ""
    body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    if _END in node:  # a string ends here: longer first, this one if they fail
        return (body if len(branches) > 1 else f"(?:{body})") + "?"
    return body


def alternation(bodies: Iterable[str], *, whitespace: bool = False, fold: bool = False) -> str | None:
    """A regex source matching any of ``bodies`` as ``"|".join`` of them longest first would
    (None for none). ``whitespace``: each run of white space in a body matches ``\\s+`` (the
    bodies are split on it); ``fold``: for a pattern compiled with ``re.IGNORECASE`` (the tree
    is built on lower case, so two bodies differing only in case share their path)."""
    root: dict = {}
    count = 0
    for body in bodies:
        units = _units(body, whitespace)
        if fold:  # one character each (a lower case of two, "İ" → "i̇", stays as written)
            units = [u if u == _SPACE or len(u.lower()) != 1 else u.lower() for u in units]
        if not units:
            continue
        node = root
        for unit in units:
            node = node.setdefault(unit, {})
        node[_END] = {}
        count += 1
    return _emit(root) if count else None
