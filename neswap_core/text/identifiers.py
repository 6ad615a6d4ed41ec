"""Direct-identifier suppression (SPEC §2.3): companies, URLs and executives become placeholders.

Order: URLs / e-mail addresses / web domains → ``[URL]``; company names and aliases →
``[Company Name]``; executive names → ``[Executive #]`` (# = 1-based position of the executive in
``Document.executives``). Text already inside a placeholder is never touched, so the function is
idempotent. Matching rules, where SPEC is silent:

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
  start of a sentence, where they are usually the word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

import pandas as pd

from ..config import (
    COMPANY_PLACEHOLDER,
    EXECUTIVE_PLACEHOLDER,
    PLACEHOLDER_PATTERN,
    URL_PLACEHOLDER,
)
from ..corpus import Corpus

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
    may june april august summer winter don ray art pat sue drew gene jack frank earnest berry
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
#: Usual nicknames of formal given names (both directions are used with a surname; only
#: formal → nickname for a given name alone, so "Michael" alone is never taken for "Mike X").
NICKNAMES: dict[str, tuple[str, ...]] = {
    "Michael": ("Mike", "Mick"),
    "Robert": ("Rob", "Bob", "Bobby"),
    "William": ("Will", "Bill"),
    "James": ("Jim", "Jimmy", "Jamie"),
    "Richard": ("Rich", "Rick"),
    "Thomas": ("Tom", "Tommy"),
    "Joseph": ("Joe",),
    "Charles": ("Charlie", "Chuck"),
    "Christopher": ("Chris",),
    "Daniel": ("Dan", "Danny"),
    "Matthew": ("Matt",),
    "Anthony": ("Tony",),
    "Antonio": ("Tony",),
    "Andrew": ("Andy", "Drew"),
    "Steven": ("Steve",),
    "Stephen": ("Steve",),
    "Edward": ("Ed", "Ted"),
    "Edmund": ("Ed",),
    "Kenneth": ("Ken", "Kenny"),
    "Timothy": ("Tim",),
    "Gregory": ("Greg",),
    "Jeffrey": ("Jeff",),
    "Geoffrey": ("Geoff", "Jeff"),
    "Philip": ("Phil",),
    "Phillip": ("Phil",),
    "Nicholas": ("Nick",),
    "David": ("Dave",),
    "Donald": ("Don",),
    "Ronald": ("Ron",),
    "Terrence": ("Terry",),
    "Terence": ("Terry",),
    "Vincent": ("Vince",),
    "Benjamin": ("Ben",),
    "Samuel": ("Sam",),
    "Alexander": ("Alex",),
    "Patrick": ("Pat",),
    "Peter": ("Pete",),
    "Douglas": ("Doug",),
    "Gerald": ("Gerry", "Jerry"),
    "Lawrence": ("Larry",),
    "Bradley": ("Brad",),
    "Frederick": ("Fred",),
    "Jonathan": ("Jon",),
    "Raymond": ("Ray",),
    "Catherine": ("Cathy", "Kate"),
    "Katherine": ("Kathy", "Kate", "Katy"),
    "Elizabeth": ("Liz", "Beth"),
    "Jennifer": ("Jen", "Jenny"),
    "Margaret": ("Maggie", "Meg"),
    "Susan": ("Sue",),
    "Stephanie": ("Steph",),
    "Patricia": ("Pat", "Trish"),
    "Rebecca": ("Becky",),
    "Deborah": ("Deb",),
    "Kristina": ("Kris",),
    "Christina": ("Chris",),
    "Alexandra": ("Alex",),
    "Samantha": ("Sam",),
    "Zachary": ("Zach",),
    "Nathaniel": ("Nate",),
}
_FORMAL: dict[str, set[str]] = {}
for _formal, _nicks in NICKNAMES.items():
    for _nick in _nicks:
        _FORMAL.setdefault(_nick, set()).add(_formal)

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
        rf"(?P<ph>{PLACEHOLDER_PATTERN})|(?<!\w)(?P<hit>{'|'.join(alternatives)})(?!\w)"
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


def _executive_table(executives: tuple[str, ...]) -> dict[str, tuple[int, str]]:
    """variant -> (1-based executive index, kind); kinds: full, surname, given, nickname."""
    table: dict[str, tuple[int, str]] = {}
    parts = [_name_parts(n) for n in executives]
    for index, (full, given, surnames, initials) in enumerate(parts, start=1):
        if " " in full:
            table.setdefault(full, (index, "full"))
        for g in given:
            forms = [g, *NICKNAMES.get(g, ()), *sorted(_FORMAL.get(g, ()))]
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


@lru_cache(maxsize=512)
def _executive_pattern(
    executives: tuple[str, ...],
) -> tuple[re.Pattern[str] | None, dict[str, tuple[int, str]]]:
    table = _executive_table(executives)
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


def suppress_identifiers(
    text: str, aliases: tuple[str, ...] | list[str], executives: tuple[str, ...] | list[str]
) -> SuppressionResult:
    """Replace URLs, company aliases and executive names in ``text`` (SPEC §2.3, module doc)."""
    url_re, company_re = _company_patterns(tuple(a for a in aliases if a.strip()))
    text, n_url = _substitute(text, url_re, lambda m: URL_PLACEHOLDER)
    text, n_company = _substitute(text, company_re, lambda m: COMPANY_PLACEHOLDER)
    exec_re, lookup = _executive_pattern(tuple(e for e in executives if e.strip()))

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
        return EXECUTIVE_PLACEHOLDER.format(index=index)

    text, n_exec = _substitute(text, exec_re, executive)
    return SuppressionResult(text, {"company": n_company, "url": n_url, "executive": n_exec})


def suppress_corpus(corpus: Corpus) -> tuple[Corpus, pd.DataFrame]:
    """Suppress direct identifiers in every document; one report row per document.

    Aliases are the document's own plus those derived from its ``company`` metadata and ticker
    (``document_aliases``); the merged list is stored back in ``Document.aliases``. Only the
    kept text is suppressed: ``Document.q_and_a`` (dropped Q&A, for display) is left as is.
    """
    documents, rows = [], []
    for doc in corpus.documents:
        aliases = document_aliases(doc.metadata, doc.aliases)
        result = suppress_identifiers(doc.text, aliases, doc.executives)
        documents.append(replace(doc, text=result.text, aliases=aliases))
        rows.append({"doc_id": doc.doc_id, **result.counts})
    columns = ["doc_id", "company", "url", "executive"]
    return corpus.with_documents(documents), pd.DataFrame(rows, columns=columns)
