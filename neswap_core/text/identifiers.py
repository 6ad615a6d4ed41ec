"""Direct-identifier suppression (SPEC §2.3): companies, URLs and executives become placeholders.

Order: URLs / e-mail addresses / web domains / social-media handles → ``[URL]``; company names
and aliases → ``[Company Name]`` (a legal suffix left after it is absorbed: "[Company Name] Inc"
→ "[Company Name]"); executive names → ``[Executive #]`` (# = 1-based position of the executive
in ``Document.executives``); the full names of listed analysts → ``[Analyst #]``. Text already
inside a placeholder is never touched, so the function is idempotent. Matching rules, where SPEC
is silent:

* **Company aliases** match as whole words, longest first, and case-sensitively ("TE", "The
  Times", "Global" are words too), with three relaxations: an alias with a capital inside a word
  ("ServiceNow", "FleetCor") also matches in any case; an alias of 4+ letters also matches in
  ALL CAPS; a leading "The" also matches "the". Possessives keep their ending: "Amphenol's" →
  "[Company Name]'s". An alias that is a web domain ("amphenol.com", "dxc.technology") is a URL.
* **Aliases derived from the company name** (``derive_aliases``): the name itself; without legal
  suffixes, punctuation and a leading "The" ("Dolby Laboratories, Inc." → "Dolby Laboratories");
  without trailing descriptors such as Laboratories, Group, Technologies ("Dolby", "Omnicom",
  "Hewlett Packard"), but a one-word remainder only when it has 3+ characters and is not a common
  word ("World Wrestling" is kept, "Global" or "3D" alone are not). The ticker is added unless it
  is one letter or an ordinary upper-case word ("IT", "NOW", "ALL"); a ticker listed in
  aliases.csv is always used.
* **URLs**: scheme or ``www.`` URLs, e-mail addresses, and bare domains with a lower-case common
  top-level domain (jabil.com, investors.x.com, dolby.io), so "U.S." or "revenue.Net" are not.
* **Executives**: the full name; the name without middle initials, titles and suffixes ("Craig
  Lampo" for "Craig A. Lampo", "Adam Norwitt" for "R. Adam Norwitt"); given name or a usual
  nickname plus surname ("Vince McMahon", "Andy Simanek"); the surname alone ("Mr. Chew"); and the
  given name alone ("As Craig mentioned", "Thanks, Lloyd") — in these transcripts first names
  are how executives hand over to each other, so leaving them would leak who spoke. A given name
  alone is skipped when a capitalised word follows ("Adam Tindle" is someone else). When two
  executives share a surname or first name, the first listed wins (full names still resolve
  correctly). Names that are common words (Mark, Sharp, Main, Will) are not replaced at the
  start of a sentence, where they are usually the word; a name is never the start of a
  contraction ("Don't" stays, "Don, that concludes" is replaced). Nicknames come from the one table in
  ``nicknames.py`` ("Marty" for Martin, "Randy" for Randal). Possessives keep their ending
  ("Smith's" -> "[Executive 1]'s").
* **Near-miss spellings** (transcription errors): a capitalised word of the document within one
  edit (insertion, deletion, substitution, transposition) of an executive's surname of 5+
  letters, with the same first letter, not a common word and never written in lower case in
  the same document ("Sales" is not a misspelt "Salen"), is that surname too, alone and
  after the executive's given names ("Norwit", "Adam Norwit" for Adam Norwitt).
* Executives may come from ``executives.csv``, from the transcript's participant lists and
  speaker lines, or be detected in the text (``people.py``); here they are just a list of names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

import pandas as pd

from ..config import (
    ANALYST_PLACEHOLDER,
    COMPANY_PLACEHOLDER,
    EXECUTIVE_PLACEHOLDER,
    PLACEHOLDER_PATTERN,
    URL_PLACEHOLDER,
)
from ..corpus import Corpus
from .corporate import HANDLE_PATTERN, absorb_residue
from .nicknames import FORMAL, NICKNAMES

# --- word lists -------------------------------------------------------------------------------
#: Capitalised words that are also ordinary English words: never a one-word derived alias, and
#: a name equal to one of them is not replaced at the start of a sentence.
COMMON_WORDS = frozenset(
    """
    global united american national general first world western eastern northern southern
    international applied digital advanced universal standard pacific atlantic continental central
    federal royal union public new great best big smart square target total prime premier
    summit pioneer frontier liberty heritage alliance allied capital core key main meta alpha
    omega delta apex vertex focus fusion vision insight signal energy power life health care
    american express first solar apple amazon oracle shell visa block match zoom box slack
    mark will bill grant chase guy rich sharp price young king cook wood hill rose hope faith joy
    may june april august summer winter ray art pat sue drew gene jack frank earnest berry
    chew wren cherry brown green white black gray grey long short little small strong street bank
    banks bell page case lane field ford hunt fox wolf lamb bush park marsh parks rice stone swift
    cross early fair bond gold silver sterling hall wall gates post mills waters rivers lake
    """.split()
)
#: Upper-case tokens too common to be used as an auto-added ticker alias.
COMMON_TICKER_WORDS = frozenset(
    """
    A I IT AI US UK EU ON GO ALL ARE AN AT BE DO HE IF IN IS ME MY NO OF OK OR SO TO UP WE CAN
    FOR HAS NEW NOW ONE OUT SEE TV PC HR PR CEO CFO COO GDP EPS USA ESG API KEY LOW HIGH BIG
    """.split()
)
_LEGAL_SUFFIX = re.compile(
    r"[\s,]+(?:inc|incorporated|corp|corporation|co|company|companies|ltd|limited|plc|llc|"
    r"l\.l\.c|lp|l\.p|n\.v|nv|s\.a|sa|ag|se|holdings?|of\s+companies)\.?$",
    re.I,
)
_DESCRIPTORS = frozenset(
    """
    group laboratories labs technologies technology solutions systems holdings holding enterprise
    enterprises electronics international industries communications networks partners brands
    entertainment media software services therapeutics pharmaceuticals semiconductor
    semiconductors interactive worldwide
    """.split()
)
# --- patterns ---------------------------------------------------------------------------------
_TLDS = (
    "com|net|org|edu|gov|io|co|ai|biz|info|ca|de|fr|eu|uk|tv|app|dev|tech|technology|cloud|"
    "online|site|news|media|global|digital|jobs|ly|gl"
)
_URL = (
    r"[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+"  # e-mail
    r"|(?i:(?:https?|ftp)://|www\.)[^\s<>\"'\[\]]*[^\s<>\"'\[\].,;:!?)]"  # URL with scheme / www
    r"|(?<![\w@.-])(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+(?:" + _TLDS + r")"
    r"(?:/[^\s<>\"'\[\]]*[^\s<>\"'\[\].,;:!?)])?(?![\w-])"  # bare domain, optional path
)
_URL += "|" + HANDLE_PATTERN
_DOMAIN_ALIAS = re.compile(r"[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
_INITIAL = re.compile(r"[A-Z]\.?(?:[A-Z]\.?)*")
_TITLE = re.compile(r"^(?:Dr|Mr|Mrs|Ms|Prof|Sir)(?:\.\s*|\s+)")
_SUFFIX = {"jr", "jr.", "sr", "sr.", "ii", "iii", "iv", "phd", "ph.d.", "cpa", "esq", "esq."}
_PARTICLES = {"von", "van", "de", "der", "den", "da", "di", "du", "del", "della", "la", "le"}
_NEXT_NAME = re.compile(r"[ \t]+(?:[A-Z]\.\s+)?[A-Z][a-z]")  # "Adam Tindle", "Adam B. Tindle"
_TITLES_BEFORE = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof)\.)$")


@dataclass(frozen=True)
class SuppressionResult:
    """Suppressed text and how many replacements of each kind were made."""

    text: str
    counts: dict[str, int]
    #: every executive mention replaced: (the text replaced, its placeholder), in order
    executive_mentions: tuple[tuple[str, str], ...] = ()


def is_domain(alias: str) -> bool:
    """Whether an alias is a web domain (``amphenol.com``), to be replaced by ``[URL]``."""
    return bool(_DOMAIN_ALIAS.fullmatch(alias)) and alias.rsplit(".", 1)[1].isalpha()


def derive_aliases(company: str) -> tuple[str, ...]:
    """The company name plus the shorter forms analysts and executives say (module docstring)."""
    name = " ".join(company.split())
    if not name:
        return ()
    out = [name]
    legal = name
    while (stripped := _LEGAL_SUFFIX.sub("", legal).strip(" ,")) != legal and stripped:
        legal = stripped
    legal = re.sub(r"^the\s+", "", legal, flags=re.I).strip(" ,")
    out.append(legal)
    words = legal.split()
    while len(words) > 1 and words[-1].lower() in _DESCRIPTORS:
        words = words[:-1]
    core = " ".join(words)
    if len(words) > 1 or (len(core) >= 3 and core.lower() not in COMMON_WORDS):
        out.append(core)
    return tuple(dict.fromkeys(a for a in out if a))


def document_aliases(
    metadata: dict[str, str], listed: tuple[str, ...] | list[str] = ()
) -> tuple[str, ...]:
    """All aliases of a document's company: listed ones (aliases.csv), the names in the
    ``company``/``company_name`` metadata with their derived forms, and the ticker."""
    out = list(listed)
    for key in ("company", "company_name"):
        if metadata.get(key):
            out.extend(derive_aliases(str(metadata[key])))
    for key in ("ticker", "symbol"):
        ticker = str(metadata.get(key, "")).strip()
        if len(ticker) > 1 and ticker.upper() not in COMMON_TICKER_WORDS:
            out.append(ticker)
    return tuple(dict.fromkeys(a.strip() for a in out if a and a.strip()))


def _alias_regex(alias: str) -> str:
    tokens = alias.split()
    body = r"\s+".join(re.escape(t) for t in tokens)
    if tokens[0] == "The" and len(tokens) > 1:
        body = r"[Tt]he\s+" + r"\s+".join(re.escape(t) for t in tokens[1:])
    if any(t[1:] != t[1:].lower() and t != t.upper() for t in tokens):
        body = f"(?i:{body})"  # a capital inside a word: distinctive in any case
    variants = [body]
    if sum(ch.isalpha() for ch in alias) >= 4 and alias.upper() != alias:
        variants.append(r"\s+".join(re.escape(t) for t in alias.upper().split()))
    return "|".join(variants)


def _compile(alternatives: list[str]) -> re.Pattern[str] | None:
    if not alternatives:
        return None
    return re.compile(
        rf"(?P<ph>{PLACEHOLDER_PATTERN})|(?<!\w)(?P<hit>{'|'.join(alternatives)})(?!\w|['’]t\b)"
    )


@lru_cache(maxsize=512)
def _company_patterns(aliases: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str] | None]:
    ordered = sorted(set(aliases), key=lambda a: (-len(a), a))
    domains = [f"(?i:{re.escape(a)})" for a in ordered if is_domain(a)]
    url = re.compile(rf"(?P<ph>{PLACEHOLDER_PATTERN})|(?P<hit>{'|'.join(domains + [_URL])})")
    company = _compile([_alias_regex(a) for a in ordered if not is_domain(a)])
    return url, company


def _name_parts(name: str) -> tuple[str, list[str], list[str], list[str]]:
    """(normalised full name, given names, surname forms, middle initials) of one executive."""
    full = " ".join(_TITLE.sub("", " ".join(name.split())).split())
    tokens = [t.strip(",") for t in full.split()]
    while tokens and tokens[-1].lower() in _SUFFIX:
        tokens.pop()
    core = [t for t in tokens if not _INITIAL.fullmatch(t)]
    initials = [t for t in tokens[1:-1] if _INITIAL.fullmatch(t)]
    if len(core) < 2:
        return " ".join(tokens), core, [], initials
    surnames = [core[-1]]
    if core[-2].lower() in _PARTICLES:
        surnames.insert(0, f"{core[-2]} {core[-1]}")
    elif len(core) >= 3:
        surnames.insert(0, f"{core[-2]} {core[-1]}")
    return " ".join(tokens), [core[0]], surnames, initials


def _executive_table(
    executives: tuple[str, ...], misspelt: tuple[tuple[int, str], ...] = ()
) -> dict[str, tuple[int, str]]:
    """variant -> (1-based executive index, kind); kinds: full, surname, given, nickname.

    ``misspelt``: (0-based executive index, surname spelt otherwise in this document)."""
    table: dict[str, tuple[int, str]] = {}
    parts = [_name_parts(n) for n in executives]
    for index, surname in misspelt:
        parts[index][2].append(surname)
    for index, (full, given, surnames, initials) in enumerate(parts, start=1):
        if " " in full:
            table.setdefault(full, (index, "full"))
        for g in given:
            forms = [g, *NICKNAMES.get(g, ()), *FORMAL.get(g, ())]
            for form in forms:
                for s in surnames:
                    table.setdefault(f"{form} {s}", (index, "full"))
                    if initials:
                        table.setdefault(f"{form} {' '.join(initials)} {s}", (index, "full"))
    for kind, position in (("surname", 2), ("given", 1), ("nickname", 1)):
        for index, part in enumerate(parts, start=1):
            if kind == "nickname":
                names = [n for g in part[1] for n in NICKNAMES.get(g, ())]
            else:
                names = list(part[position])
            for n in names:
                table.setdefault(n, (index, kind))
    return table


_CAPITALISED = re.compile(r"(?<![\w.])[A-Z][A-Za-z'’-]{3,}(?!\w)")


def _within_one_edit(a: str, b: str) -> bool:
    """Whether ``a`` != ``b`` differ by one insertion, deletion, substitution or transposition."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [k for k in range(len(a)) if a[k] != b[k]]
        return len(diff) == 1 or (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )
    short, long = (a, b) if len(a) < len(b) else (b, a)
    k = next((k for k in range(len(short)) if short[k] != long[k]), len(short))
    return short[k:] == long[k + 1 :]


def near_miss_surnames(text: str, executives: tuple[str, ...]) -> tuple[tuple[int, str], ...]:
    """(executive index, word) for words of ``text`` one edit from a 5+ letter surname."""
    parts = [(k, _name_parts(n)[2]) for k, n in enumerate(executives)]
    surnames = [(k, s[-1]) for k, s in parts if s and len(s[-1]) >= 5]
    if not surnames:
        return ()
    words = set(_CAPITALISED.findall(text)) - {s for _, s in surnames}
    lower = set(re.findall(r"(?<![\w'’-])[a-z][a-z'’-]+", text))
    found = []
    for word in sorted(words):
        if word.lower() in COMMON_WORDS or word.lower() in lower:  # "Sales" is a word here
            continue
        for k, surname in surnames:
            if word[0] == surname[0] and _within_one_edit(word, surname):
                found.append((k, word))
                break
    return tuple(found)


@lru_cache(maxsize=512)
def _executive_pattern(
    executives: tuple[str, ...], misspelt: tuple[tuple[int, str], ...] = ()
) -> tuple[re.Pattern[str] | None, dict[str, tuple[int, str]]]:
    table = _executive_table(executives, misspelt)
    ordered = sorted(table, key=lambda v: (-len(v), v))
    alternatives = [r"\s+".join(re.escape(t) for t in v.split()) for v in ordered]
    pattern = _compile(alternatives)
    lookup = {" ".join(v.split()): entry for v, entry in table.items()}
    return pattern, lookup


def _sentence_initial(text: str, start: int) -> bool:
    """Whether position ``start`` begins a sentence (looks back 40 characters at most)."""
    before = text[max(0, start - 40) : start].rstrip(" \t\"'“‘(")
    if not before:
        return start <= 40
    if before[-1] == "\n":
        return True
    return before[-1] in ".!?:;" and not _TITLES_BEFORE.search(before)


def _substitute(text: str, pattern: re.Pattern[str] | None, replacement) -> tuple[str, int]:
    """Replace every ``hit`` of ``pattern`` outside placeholders; ``replacement(match)`` returns
    the new text or None to keep the match. Returns (text, number of replacements)."""
    if pattern is None:
        return text, 0
    count = 0

    def repl(match: re.Match[str]) -> str:
        nonlocal count
        if match.group("ph") is not None:
            return match.group(0)
        new = replacement(match)
        if new is None:
            return match.group(0)
        count += 1
        return new

    return pattern.sub(repl, text), count


@lru_cache(maxsize=512)
def _analyst_pattern(
    analysts: tuple[str, ...],
) -> tuple[re.Pattern[str] | None, dict[str, int]]:
    """Full-name forms of the listed analysts (with and without initials, nicknames) → index."""
    table = {v: index for v, (index, kind) in _executive_table(analysts).items() if kind == "full"}
    ordered = sorted(table, key=lambda v: (-len(v), v))
    pattern = _compile([r"\s+".join(re.escape(t) for t in v.split()) for v in ordered])
    return pattern, {" ".join(v.split()): i for v, i in table.items()}


def suppress_identifiers(
    text: str,
    aliases: tuple[str, ...] | list[str],
    executives: tuple[str, ...] | list[str],
    analysts: tuple[str, ...] | list[str] = (),
) -> SuppressionResult:
    """Replace URLs, company aliases, executive and analyst names in ``text`` (SPEC §2.3,
    module doc). Analysts (the outside participants a transcript lists) are replaced by their
    full name only — "[Analyst #]" — after the executives, who win when a name is in both."""
    url_re, company_re = _company_patterns(tuple(a for a in aliases if a.strip()))
    text, n_url = _substitute(text, url_re, lambda m: URL_PLACEHOLDER)
    text, n_company = _substitute(text, company_re, lambda m: COMPANY_PLACEHOLDER)
    text, n_domains = absorb_residue(text)
    n_company, n_url = n_company - n_domains, n_url + n_domains
    executives = tuple(e for e in executives if e.strip())
    exec_re, lookup = _executive_pattern(executives, near_miss_surnames(text, executives))
    mentions: list[tuple[str, str]] = []

    def executive(match: re.Match[str]) -> str | None:
        found = match.group("hit")
        index, kind = lookup[" ".join(found.split())]
        if kind in ("given", "nickname") and _NEXT_NAME.match(match.string, match.end()):
            return None  # "Adam Tindle": another person with the same first name
        if (
            kind != "full"
            and found.lower() in COMMON_WORDS
            and _sentence_initial(match.string, match.start())
        ):
            return None
        placeholder = EXECUTIVE_PLACEHOLDER.format(index=index)
        mentions.append((found, placeholder))
        return placeholder

    text, n_exec = _substitute(text, exec_re, executive)
    analyst_re, analyst_index = _analyst_pattern(tuple(a for a in analysts if a.strip()))
    text, n_analyst = _substitute(
        text,
        analyst_re,
        lambda m: ANALYST_PLACEHOLDER.format(index=analyst_index[" ".join(m.group("hit").split())]),
    )
    counts = {"company": n_company, "url": n_url, "executive": n_exec, "analyst": n_analyst}
    return SuppressionResult(text, counts, tuple(mentions))


def suppress_corpus(corpus: Corpus) -> tuple[Corpus, pd.DataFrame]:
    """Suppress direct identifiers in every document; one report row per document.

    Aliases are the document's own plus those derived from its ``company`` metadata and ticker
    (``document_aliases``); the merged list is stored back in ``Document.aliases``. Only the
    kept text is suppressed: ``Document.q_and_a`` (dropped Q&A, for display) is left as is.
    """
    documents, rows = [], []
    for doc in corpus.documents:
        aliases = document_aliases(doc.metadata, doc.aliases)
        result = suppress_identifiers(doc.text, aliases, doc.executives, doc.analysts)
        documents.append(replace(doc, text=result.text, aliases=aliases))
        rows.append({"doc_id": doc.doc_id, **result.counts})
    columns = ["doc_id", "company", "url", "executive", "analyst"]
    return corpus.with_documents(documents), pd.DataFrame(rows, columns=columns)
