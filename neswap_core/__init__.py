"""neswap: anonymise a corpus by named entity swapping (SPEC.md in the project's documents).

The public API, in the order the data flows (each name is imported from its module on first
use, so ``import neswap_core`` loads no model and no heavy package)::

    config = RunConfig.load("run.toml")              # settings in sections, checked
    prepared = prepare_release(config)               # load, refuse what cannot be released, prepare
    result = run_release(prepared, config, embedder.encode, reading=reading)   # a ReleaseResult
    write_release(result, "out")                     # released/ and key/, whole or nothing

``release_from_config(config, embedder)`` does the first three steps with the reading attacker of
the corpus's ``attacker/`` folder; ``finish_release`` is the last step alone (the app calls it
with its cached candidates). ``evaluate_release`` attacks an existing release folder;
``build_scorers`` trains the attackers and ``RenyiAudit`` is the divergence audit (SPEC §8, §9).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .version import __version__

#: Public name -> the module that owns it.
_OWNERS: dict[str, str] = {
    # settings and inputs
    "RunConfig": "config",
    "Corpus": "corpus", "Chunk": "corpus",
    "load_corpus": "text.loading",
    "Prepared": "prepare.pipeline",
    "Embedder": "models.embedding",
    # the release path
    "prepare_release": "run_release", "run_release": "run_release",
    "finish_release": "choose.finish", "release_from_config": "run_release",
    "ReleaseResult": "choose.result", "Candidates": "choose.candidates",
    "build_candidates": "choose.candidates", "describe_candidate": "choose.candidates",
    "Choice": "choose.chosen", "ChosenRelease": "choose.review",
    "Goal": "choose.goals", "Constraint": "choose.goals",
    # writing
    "write_release": "publish.writer", "release_bundle": "publish.writer",
    "key_files": "publish.writer", "report_html": "publish.report",
    # measuring
    "build_scorers": "choose.scorers", "evaluate_release": "publish.evaluate",
    "RenyiAudit": "measure.audit",
    # errors
    "NeswapError": "errors", "ConfigError": "errors", "CorpusError": "errors",
    "LeakError": "errors",
}  # fmt: skip

__all__ = [
    "__version__",
    "RunConfig", "Corpus", "Chunk", "load_corpus", "Prepared", "Embedder",
    "prepare_release", "run_release", "finish_release", "release_from_config",
    "ReleaseResult", "Candidates", "build_candidates", "describe_candidate", "Choice",
    "ChosenRelease", "Goal", "Constraint",
    "write_release", "release_bundle", "key_files", "report_html",
    "build_scorers", "evaluate_release", "RenyiAudit",
    "NeswapError", "ConfigError", "CorpusError", "LeakError",
]  # fmt: skip

#: Packages loaded only when first needed (inside the functions that use them), because each
#: takes seconds to import or is optional: the one list of imports allowed inside functions.
#: SciPy's optimizers and statistics take 0.2–0.5 s each where SciPy itself is needed anyway.
LAZY_PACKAGES = ("torch", "spacy", "sentence_transformers", "transformers", "ray", "onnxruntime",
                 "tokenizers", "safetensors", "wordfreq", "scipy.optimize", "scipy.stats")


def __getattr__(name: str) -> Any:
    if name not in _OWNERS:
        raise AttributeError(f"module 'neswap_core' has no attribute {name!r}")
    module = importlib.import_module(f".{_OWNERS[name]}", __name__)
    # ``run_release`` is both a module and its function: the callable module (run_release.py)
    # stays the package's attribute, so patching the function in the module reaches every caller
    value = module if _OWNERS[name].rsplit(".", 1)[-1] == name else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:  # for type checkers and editors; at run time ``__getattr__`` loads each name
    from .choose.candidates import Candidates, build_candidates, describe_candidate
    from .choose.chosen import Choice
    from .choose.finish import finish_release
    from .choose.goals import Constraint, Goal
    from .choose.result import ReleaseResult
    from .choose.review import ChosenRelease
    from .choose.scorers import build_scorers
    from .config import RunConfig
    from .corpus import Chunk, Corpus
    from .errors import ConfigError, CorpusError, LeakError, NeswapError
    from .measure.audit import RenyiAudit
    from .models.embedding import Embedder
    from .prepare.pipeline import Prepared
    from .publish.evaluate import evaluate_release
    from .publish.report import report_html
    from .publish.writer import key_files, release_bundle, write_release
    from .run_release import prepare_release, release_from_config, run_release
    from .text.loading import load_corpus
