"""The run configuration: every setting of a run, in sections, validated before any work.

``RunConfig`` holds where the corpus is (``corpus``, ``protect``, ``out``), the ``roles`` of the
categories, and one section per stage of the data flow — ``prepare``, ``mixture``, ``sweep``,
``plans``, ``goal``, ``bundle`` — and the analyst's ``review`` (entity corrections, review
decisions, the pinned release) in its own object. Every setting has one name, unique across
sections (``n_components``, ``plan_rounds``, ``bundle_seed``…): the sections group them, the
name says what it is wherever it appears (TOML, the app's workspace, labels, messages).

Validation (issue 23 item 9) happens when a config is made or loaded, before any work: a value
of the wrong type is an error, never coerced (``shuffle_chunks = "no"``, ``n_components = 2.5``, a
string where a number belongs; an integer is accepted where a decimal number is asked for), and
each error is one sentence naming the setting, the value and what is allowed. Files written by
neswap 0.1 (every setting at the top level) still load: ``RunConfig.load_with_note`` reads them
into the sections and says so in one line.
"""

from __future__ import annotations

import copy
import json
import re
import tomllib
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

from ..errors import ConfigError
from .defaults import (
    CATEGORIES,
    DEFAULT_BUFFER,
    DEFAULT_COMBINATION_SIZE,
    DEFAULT_CONCENTRATION_FLOOR,
    DEFAULT_DOCUMENT_CANDIDATES,
    DEFAULT_DOCUMENT_FILL,
    DEFAULT_DOCUMENT_LEVELS,
    DEFAULT_DOCUMENT_MIN_Z,
    DEFAULT_DOCUMENT_TOP_K,
    DEFAULT_DRAWS,
    DEFAULT_EMBEDDING_BACKEND,
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_FAMILY,
    DEFAULT_K,
    DEFAULT_LABEL_MAP,
    DEFAULT_MAX_DOCUMENT_ACCURACY,
    DEFAULT_MAX_SWAPS,
    DEFAULT_MIN_WEIGHT,
    DEFAULT_PLAN_COVERAGE,
    DEFAULT_POPULATION,
    DEFAULT_PROTECT,
    DEFAULT_ROLES,
    DEFAULT_SIMILARITY_FLOOR,
    DEFAULT_SPACY_MODEL,
    DEFAULT_THRESHOLD,
    EMBEDDING_BACKENDS,
    LINEUP_COMPANIES,
    PANEL_CORE_FAMILIES,
    PANEL_EXTRA_FAMILIES,
    ROLES,
)

#: What a value of each type must look like, for the error sentences.
_ALLOWED = {bool: "true or false (a TOML boolean, without quotes)",
            int: "a whole number such as 10", float: "a number such as 0.5",
            str: "text in quotes"}  # fmt: skip


def _shown(value: Any) -> str:
    """A value as it reads in run.toml."""
    try:
        return _toml_value(value)
    except Exception:  # an object TOML cannot hold
        return repr(value)


def _error(where: str, value: Any, allowed: str) -> ConfigError:
    return ConfigError(f"Setting {where} = {_shown(value)} is not allowed: {allowed}.")


def _checked(where: str, value: Any, hint: Any) -> Any:
    """``value`` if it has type ``hint`` (an int is a float), else a ``ConfigError``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _error(where, value, f"it must be {_ALLOWED[float]}")
        return float(value)
    if hint in (bool, int, str):
        if isinstance(value, bool) != (hint is bool) or not isinstance(value, hint):
            raise _error(where, value, f"it must be {_ALLOWED[hint]}")
        return value
    if origin is list:
        if not isinstance(value, (list, tuple)):
            raise _error(where, value, "it must be a list in brackets such as [0.0, 0.1]")
        return [_checked(f"{where}[{i}]", v, args[0]) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, Mapping):
            raise _error(where, value, "it must be a table of names and values")
        return {str(k): _checked(f"{where}.{k}", v, args[1]) for k, v in value.items()}
    return value


class _Section:
    """Type checks of a section's fields (``_checked``) and its range checks (``check``)."""

    name = ""
    __dataclass_fields__: ClassVar[dict[str, Any]]  # every section is a dataclass

    def __post_init__(self) -> None:
        hints = typing.get_type_hints(type(self))
        for f in fields(self):
            setattr(self, f.name, _checked(f"{self.name}.{f.name}", getattr(self, f.name), hints[f.name]))
        self.check()

    def check(self) -> None:
        """Ranges and choices; a ``ConfigError`` names the setting, the value and what is allowed."""

    def as_params(self, prefix: str = "", renamed: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The section's settings as keyword arguments of the object they configure (the one
        place that maps settings to parameters): names without ``prefix`` or as ``renamed``,
        lists as tuples."""
        renamed = renamed or {}
        return {renamed.get(f.name, f.name.removeprefix(prefix)):
                tuple(v) if isinstance(v := getattr(self, f.name), list) else v
                for f in fields(self)}  # fmt: skip

    def bad(self, key: str, allowed: str) -> ConfigError:
        return _error(f"{self.name}.{key}", getattr(self, key), allowed)

    def choice(self, key: str, options) -> None:
        if getattr(self, key) not in options:
            raise self.bad(key, "it must be one of " + ", ".join(f'"{o}"' for o in options))


@dataclass
class PrepareSettings(_Section):
    """How the corpus is read, chunked and tagged (SPEC §1–§2)."""

    name = "prepare"
    text_column: str = "text"  # the column holding the text in a CSV/JSONL corpus
    threshold: float = DEFAULT_THRESHOLD  # percentile 0-100 of the breakpoint chunker
    buffer: int = DEFAULT_BUFFER
    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    embedding_backend: str = DEFAULT_EMBEDDING_BACKEND
    spacy_model: str = DEFAULT_SPACY_MODEL
    cache_dir: str = ""  # "" = $NESWAP_CACHE_DIR or the per-user cache folder (paths.py)
    label_map: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_LABEL_MAP))
    # entity filter (issue 10): exact strings / regexes that are never entities, on top of
    # DEFAULT_NOT_ENTITIES (which ``default_not_entities = false`` switches off)
    not_entities: list[str] = field(default_factory=list)
    not_entity_patterns: list[str] = field(default_factory=list)
    default_not_entities: bool = True

    def check(self) -> None:
        if not 0 <= self.threshold <= 100:
            raise self.bad("threshold", "it is a percentile in 0-100")
        if self.buffer < 0:
            raise self.bad("buffer", "it is a number of sentences, 0 or more")
        self.choice("embedding_backend", EMBEDDING_BACKENDS)
        bad = {k: v for k, v in self.label_map.items() if v not in CATEGORIES}
        if bad:
            raise self.bad("label_map", f"each label maps to one of {', '.join(CATEGORIES)}")
        for pattern in self.not_entity_patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise self.bad("not_entity_patterns",
                               f"{pattern!r} is not a valid regular expression ({exc})") from exc


@dataclass
class MixtureSettings(_Section):
    """The spherical mixture (SPEC §4)."""

    name = "mixture"
    family: str = DEFAULT_FAMILY
    n_components: int = DEFAULT_K
    min_weight: float = DEFAULT_MIN_WEIGHT
    n_init: int = 4
    max_iter: int = 100
    tol: float = 1e-6
    mixture_seed: int = 0

    def check(self) -> None:
        self.choice("family", ("pkb", "scauchy"))
        for key in ("n_components", "n_init", "max_iter"):
            if getattr(self, key) < 1:
                raise self.bad(key, "it must be at least 1")
        if not 0 <= self.min_weight < 1:
            raise self.bad("min_weight", "it is a proportion in [0, 1)")
        if self.tol <= 0:
            raise self.bad("tol", "it must be above 0")


@dataclass
class SweepSettings(_Section):
    """The paper's candidate releases R_cand (SPEC §3, §5) and the population N."""

    name = "sweep"
    combination_size: int = DEFAULT_COMBINATION_SIZE
    max_swaps: int = DEFAULT_MAX_SWAPS
    draws: int = DEFAULT_DRAWS
    require: str = "all"
    suppress_leftovers: bool = False
    seed: int = 0
    population: float = DEFAULT_POPULATION
    # the attacker panel fitted on the reading (measure/panel.py); its worst case is the risk
    panel_families: list[str] = field(default_factory=lambda: list(PANEL_CORE_FAMILIES))
    # attackers and defender name a text among at most this many companies (0: all of them)
    lineup: int = LINEUP_COMPANIES
    # the word-level DP baseline (generate/dp_words.py): one candidate per ε ([] = none)
    dp_epsilons: list[float] = field(default_factory=list)

    def check(self) -> None:
        for key in ("combination_size", "max_swaps", "draws"):
            if getattr(self, key) < 1:
                raise self.bad(key, "it must be at least 1")
        known = PANEL_CORE_FAMILIES + PANEL_EXTRA_FAMILIES
        if any(f not in known for f in self.panel_families) or "word" not in self.panel_families:
            raise self.bad("panel_families", "it lists attacker families among "
                           + ", ".join(known) + ', and always "word" (the reading attacker)')
        self.choice("require", ("all", "any"))
        if self.lineup == 1 or self.lineup < 0:
            raise self.bad("lineup", "a line-up holds at least 2 companies (0: every company at once)")
        if any(not e > 0 for e in self.dp_epsilons):
            raise self.bad("dp_epsilons", "each ε is a positive number")
        if self.population <= 1:
            raise self.bad("population", "the population N must be above 1")


@dataclass
class PlanSettings(_Section):
    """The plan grid (SPEC §10): ``plan_rounds = 0`` builds only the paper's candidates."""

    name = "plans"
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

    def check(self) -> None:
        if self.plan_rounds < 0:
            raise self.bad("plan_rounds", "it must be 0 (no plans) or more")
        if any(c not in CATEGORIES for c in self.plan_categories):
            raise self.bad("plan_categories", f"each is one of {', '.join(CATEGORIES)}")
        if any(not 0 <= v <= 1 for v in self.plan_redaction_levels):
            raise self.bad("plan_redaction_levels", "each is a proportion of words in [0, 1]")
        self.choice("plan_redaction_method", ("targeted", "smarter", "ranker"))
        self.choice("plan_redaction_fill", ("mask", "decoy"))
        if self.plan_redaction_fill == "decoy" and self.plan_redaction_method != "targeted":
            raise self.bad("plan_redaction_fill", 'a "decoy" fill needs plan_redaction_method = '
                           '"targeted"')
        self.choice("plan_require", ("all", "any"))
        if not 0 < self.plan_coverage <= 1:
            raise self.bad("plan_coverage", "it is a proportion in (0, 1]")
        if not -1 <= self.plan_similarity_floor <= 1:
            raise self.bad("plan_similarity_floor", "it is a cosine in [-1, 1]")
        if not 0 <= self.plan_concentration_floor < 1:
            raise self.bad("plan_concentration_floor", "it is a ρ in [0, 1)")


@dataclass
class DocumentSettings(_Section):
    """The document defence (SPEC §12, generate/document.py): one candidate per level, each a
    share of every document's words exchanged with a similar document of another company.
    ``document_levels = []`` builds none. With an attacker reading, the defender is cross-fitted
    on its two halves; without one, types are ranked by the corpus's own log-odds.
    ``document_adaptive_check``: the written release is also measured by the adaptive attacker
    (``publish/adaptive_attack.py``), which never changes what is written."""

    name = "document"
    document_levels: list[float] = field(default_factory=lambda: list(DEFAULT_DOCUMENT_LEVELS))
    document_fill: str = DEFAULT_DOCUMENT_FILL
    document_min_z: float = DEFAULT_DOCUMENT_MIN_Z
    document_top_k: int = DEFAULT_DOCUMENT_TOP_K
    document_candidates: int = DEFAULT_DOCUMENT_CANDIDATES
    document_round_figures: bool = False
    document_defender: bool = True  # rank types with the reading's cross-fitted defender
    # measure the written document-defence release against the adaptive attacker too
    # (publish/adaptive_attack.py: key/adaptive.json and the report; about a minute cold on dev)
    document_adaptive_check: bool = True

    def check(self) -> None:
        if any(not 0 < v <= 1 for v in self.document_levels):
            raise self.bad("document_levels", "each is a share of a document's words in (0, 1]")
        self.choice("document_fill", ("pair", "mask", "generic", "pair+generic"))
        for key in ("document_top_k", "document_candidates"):
            if getattr(self, key) < 1:
                raise self.bad(key, "it must be at least 1")


@dataclass
class GoalSettings(_Section):
    """How the release is chosen: the trade-off line DR = c + a·DU (SPEC §7) and the goal
    "the most useful release whose measured risks are at most …" (choose/goals.py)."""

    name = "goal"
    trade_off_a: float = 0.0
    trade_off_c: float = 0.97
    max_chunk_accuracy: float = 1.0  # 1.0 = no goal
    #: The default goal (issue 23, README): at most half of the documents named by the primary
    #: (worst-case) attacker; 1.0 = no goal.
    max_document_accuracy: float = DEFAULT_MAX_DOCUMENT_ACCURACY
    goal_utility: str = "words_unchanged"

    def check(self) -> None:
        if self.trade_off_a < 0:
            raise self.bad("trade_off_a", "the slope a of the line must be 0 or more (SPEC §7)")
        for key in ("max_chunk_accuracy", "max_document_accuracy"):
            if not 0 <= getattr(self, key) <= 1:
                raise self.bad(key, "it is a proportion in [0, 1] (1 = no goal)")
        self.choice("goal_utility", ("words_unchanged", "du", "mean_cosine", "clusters_unchanged"))


@dataclass
class BundleSettings(_Section):
    """The released bundle (SPEC §11, publish/bundle.py)."""

    name = "bundle"
    publishable_columns: list[str] = field(default_factory=list)  # metadata columns in released/
    shuffle_chunks: bool = False  # shuffle the chunk order within each released document
    bundle_seed: int = 0  # seed of the pseudonymous document ids (and of the shuffle)


@dataclass
class Review(_Section):
    """The analyst's review: entity corrections, review decisions, the pinned release.

    ``corrections``: {action = "drop"|"add", category, text, chunk_id} in order (text/entities.py);
    ``decisions``: {key, decision = "accept"|"reject", note}, keyed by content ("chunk_a|chunk_b"
    of a pair, a plan change's key; choose/review.py); ``release``: the candidate to write ("" =
    the goal's or the trade-off line's choice); a plan release is found by its plan
    (``release_plan``, Plan.to_dict) and stage index (``release_stage``), not by its id."""

    name = "review"
    corrections: list[dict[str, str]] = field(default_factory=list)
    decisions: list[dict[str, str]] = field(default_factory=list)
    release: str = ""
    release_plan: dict[str, Any] = field(default_factory=dict)
    release_stage: int = 0

    def check(self) -> None:
        bad = [c for c in self.corrections if c.get("action") not in ("drop", "add")]
        if bad:
            raise self.bad("corrections", 'each is a table with action = "drop" or "add", '
                           "category, text and chunk_id")
        bad = [d for d in self.decisions if not d.get("key") or d.get("decision") not in
               ("accept", "reject")]  # fmt: skip
        if bad:
            raise self.bad("decisions", 'each is a table with key, decision = "accept" or '
                           '"reject" and an optional note')
        if self.release_stage < 0:
            raise self.bad("release_stage", "it is a stage index, 0 or more")
        steps = self.release_plan.get("steps", [])
        if self.release_plan and (not isinstance(steps, list) or not steps
                                  or not all(isinstance(s, Mapping) and s.get("kind") for s in steps)):
            raise self.bad("release_plan", "it is a plan as the app exports it: a table with "
                           "steps = [ { kind = …, … }, … ]")


#: Section name -> its class, in the order of the data flow (and of run.toml).
SECTIONS: dict[str, type[_Section]] = {
    cls.name: cls for cls in (PrepareSettings, MixtureSettings, SweepSettings, PlanSettings,
                              DocumentSettings, GoalSettings, BundleSettings, Review)
}
#: Settings at the top level of run.toml (besides the [roles] table and the sections).
TOP_LEVEL = ("corpus", "protect", "out")
#: Every setting name -> its section.
SECTION_OF: dict[str, str] = {f.name: name for name, cls in SECTIONS.items() for f in fields(cls)}


@dataclass
class RunConfig:
    """Everything needed to rerun an analysis (module docstring): corpus, roles, the sections."""

    corpus: str = "data/sample"
    protect: str = DEFAULT_PROTECT
    out: str = "neswap-out"
    roles: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_ROLES))
    prepare: PrepareSettings = field(default_factory=PrepareSettings)
    mixture: MixtureSettings = field(default_factory=MixtureSettings)
    sweep: SweepSettings = field(default_factory=SweepSettings)
    plans: PlanSettings = field(default_factory=PlanSettings)
    document: DocumentSettings = field(default_factory=DocumentSettings)
    goal: GoalSettings = field(default_factory=GoalSettings)
    bundle: BundleSettings = field(default_factory=BundleSettings)
    review: Review = field(default_factory=Review)

    def __post_init__(self) -> None:
        for key in TOP_LEVEL:
            _checked(key, getattr(self, key), str)
        self.roles = _checked("roles", self.roles, dict[str, str])
        for name, cls in SECTIONS.items():
            if not isinstance(getattr(self, name), cls):
                raise ConfigError(f"[{name}] must be a table of settings, got "
                                  f"{_shown(getattr(self, name))}.")
        unknown = sorted(set(self.roles) - set(CATEGORIES))
        if unknown:
            raise _error(f"roles.{unknown[0]}", self.roles[unknown[0]],
                         f"the categories are {', '.join(CATEGORIES)}")
        bad = sorted(c for c, r in self.roles.items() if r not in ROLES)
        if bad:
            raise _error(f"roles.{bad[0]}", self.roles[bad[0]],
                         "a role is one of " + ", ".join(f'"{r}"' for r in ROLES))
        if self.protect in self.bundle.publishable_columns:
            raise _error("bundle.publishable_columns", self.bundle.publishable_columns,
                         f"the protected column {self.protect!r} can never be published "
                         "(SPEC §11); remove it")

    # --- one name per setting ------------------------------------------------------------------
    @property
    def swap_categories(self) -> list[str]:
        """Categories eligible for swapping (role S), in the canonical order."""
        return [c for c in CATEGORIES if self.roles.get(c) == "S"]

    def settings(self) -> dict[str, Any]:
        """Every setting by its name (top level, ``roles`` and each section's), copied."""
        out = {key: getattr(self, key) for key in TOP_LEVEL}
        out["roles"] = dict(self.roles)
        for name in SECTIONS:
            section = getattr(self, name)
            out.update({f.name: copy.deepcopy(getattr(section, f.name)) for f in fields(section)})
        return out

    @classmethod
    def of(cls, **settings: Any) -> RunConfig:
        """A config from settings given by name (e.g. ``RunConfig.of(n_components=5)``)."""
        return cls().replace(**settings)

    def replace(self, **settings: Any) -> RunConfig:
        """A validated copy with the named settings changed (``ConfigError`` for an unknown name)."""
        unknown = sorted(k for k in settings if k not in SECTION_OF and k not in (*TOP_LEVEL, "roles"))
        if unknown:
            raise ConfigError(f"Unknown setting {unknown[0]!r}; the settings are listed by "
                              "`python -m neswap_core config`.")
        data = self.to_dict()
        for key, value in settings.items():
            target = data[SECTION_OF[key]] if key in SECTION_OF else data
            target[key] = value
        return type(self).from_dict(data)

    # --- dictionaries and TOML -----------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Nested: the top-level settings, ``roles`` and one table per section."""
        out: dict[str, Any] = {key: getattr(self, key) for key in TOP_LEVEL}
        out["roles"] = dict(self.roles)
        for name in SECTIONS:
            section = getattr(self, name)
            out[name] = {f.name: copy.deepcopy(getattr(section, f.name)) for f in fields(section)}
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunConfig:
        config, _ = cls.from_dict_with_note(data)
        return config

    @classmethod
    def from_dict_with_note(cls, data: Mapping[str, Any]) -> tuple[RunConfig, str]:
        """(config, a one-line note when ``data`` had the flat layout of neswap 0.1, else "")."""
        data, note = _migrated(dict(data))
        unknown = sorted(set(data) - {*TOP_LEVEL, "roles", *SECTIONS})
        if unknown:
            raise ConfigError(f"Unknown setting {unknown[0]!r} in the configuration; the settings "
                              "are listed by `python -m neswap_core config`.")
        kwargs: dict[str, Any] = {k: data[k] for k in (*TOP_LEVEL, "roles") if k in data}
        for name, section_cls in SECTIONS.items():
            table = data.get(name, {})
            if not isinstance(table, Mapping):
                raise ConfigError(f"[{name}] must be a table of settings, got {_shown(table)}.")
            known = {f.name for f in fields(section_cls)}
            extra = sorted(set(table) - known)
            if extra:
                raise ConfigError(f"Unknown setting {name}.{extra[0]}; [{name}] holds "
                                  f"{', '.join(sorted(known))}.")
            kwargs[name] = section_cls(**dict(table))
        return cls(**kwargs), note

    @classmethod
    def from_toml_text(cls, text: str, name: str = "the configuration") -> RunConfig:
        return cls.from_toml_text_with_note(text, name)[0]

    @classmethod
    def from_toml_text_with_note(cls, text: str, name: str = "the configuration"
                                 ) -> tuple[RunConfig, str]:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"Config file {name} is not valid TOML: {exc}.") from exc
        config, note = cls.from_dict_with_note(data)
        return config, (f"{name}: {note}" if note else "")

    @classmethod
    def load(cls, path: str | Path) -> RunConfig:
        return cls.load_with_note(path)[0]

    @classmethod
    def load_with_note(cls, path: str | Path) -> tuple[RunConfig, str]:
        """(config, a one-line note when the file has the flat layout of neswap 0.1, else "")."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError as exc:
            raise ConfigError(f"Config file {path} does not exist.") from exc
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"Config file {path} cannot be read ({exc}).") from exc
        return cls.from_toml_text_with_note(text, str(path))

    def to_toml(self) -> str:
        """run.toml: the top-level settings, then ``[roles]`` and one table per section."""
        data = self.to_dict()
        lines = [f"{key} = {_toml_value(data[key])}" for key in TOP_LEVEL]
        lines += ["", "[roles]"] + [f"{_toml_value(k)} = {_toml_value(v)}" for k, v in self.roles.items()]
        for name in SECTIONS:
            lines += ["", f"[{name}]"]
            tables = []
            for key, value in data[name].items():
                if isinstance(value, Mapping) and all(not isinstance(v, (Mapping, list))
                                                      for v in value.values()):  # fmt: skip
                    tables.append((key, value))
                else:
                    lines.append(f"{key} = {_toml_value(value)}")
            for key, table in tables:
                lines += ["", f"[{name}.{key}]"]
                lines += [f"{_toml_value(k)} = {_toml_value(v)}" for k, v in table.items()]
        return "\n".join(lines) + "\n"

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_toml(), encoding="utf-8")


def _migrated(data: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A flat neswap 0.1 configuration (every setting at the top level) in sections, and a note."""
    flat = [k for k in data if k in SECTION_OF]
    if not flat:
        return data, ""
    out = {k: v for k, v in data.items() if k not in flat}
    for key in flat:
        section = out.setdefault(SECTION_OF[key], {})
        if not isinstance(section, dict):
            raise ConfigError(f"[{SECTION_OF[key]}] must be a table of settings.")
        if key in section:
            raise ConfigError(f"{key} is set twice: at the top level and in [{SECTION_OF[key]}].")
        section[key] = data[key]
    return out, (f"{len(flat)} settings at the top level (the flat layout of neswap 0.1) were read "
                 "into the sections [prepare], [mixture], [sweep], [plans], [document], [goal], [bundle] and "
                 "[review]; save the file again (the app's Export, or RunConfig.save) to update it.")


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
