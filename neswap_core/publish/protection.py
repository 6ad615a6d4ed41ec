"""The measured protection of the written release: attack.json, attack.csv and audit.json.

* ``release_attack``: every attacker of the run on the written text (SPEC §8,
  ``attack_report``), with the spread over the paper's M draws when the release is a paper
  candidate as generated;
* ``release_audit``: the kNN Rényi divergence audit before and after (SPEC §9), per document and
  for the corpus (the largest ε), with the permutation floor; only the changed chunks are
  embedded again (through the cache). ``audit_summary`` turns an audit pair into audit.json's
  contents, so the app can pass the pair its Check page already computed.

Both are computed once per result (kept on it) and, for a run of ``run_release``, kept on disk
by the run's key and the written text (``choose.memo_keys``): a warm re-run reads them.
"""

from __future__ import annotations

import tempfile
from functools import partial
from pathlib import Path

import numpy as np

from .. import mapped_pickle
from ..choose.goals import Goal
from ..choose.memo_keys import changed_parts, derived_key, draws_parts
from ..choose.result import ReleaseResult
from ..choose.verdict import Verdict, figures_of_attack, protection_verdict
from ..disk_memo import DiskMemo
from ..measure.audit import (
    RenyiAudit,
    audit_comparison,
    audit_release,
    released_embeddings,
)
from ..models.embedding_pool import cache_in_processes
from ..models.fit_processes import InBackground
from ..paths import resolve_cache_dir
from .attack_report import attack_report

#: What audit.json says about reading ε.
AUDIT_NOTE = ("ε is read against the permutation floor (the estimator's bias at no true "
              "divergence), not against 0.")


def release_attack(result: ReleaseResult) -> tuple[dict, object]:
    """(attack.json's dict, attack.csv's frame) of the written release, computed once."""
    if result.attack is None:
        base = result.context.chunks
        draws = result.release.draws if result.release is not None else ()
        changed = result.changed()
        key = derived_key(result.candidates.key, "attack", sorted(result.scorers),
                          changed_parts(changed), draws_parts(draws))  # fmt: skip

        def report():
            embed_ahead(result.context.embed, changed)
            return attack_report(result.scorers, changed, [c.chunk_id for c in base], draws)

        summary, table = _memo(result, "attack_reports").get_or_compute(key, report)
        summary["release_id"] = result.choice.release_id
        result.attack = (summary, table)
    return result.attack


def embed_ahead(embed, changed: dict[int, str]) -> None:
    """The written release's changed passages embedded in worker processes first
    (``cache_in_processes``: the vectors serial ``embed`` would make, bit for bit), for the
    attack report's sentence-embedding attacker and the audit. Past the candidate sample
    (``measure/candidate_sample.py``) the sweep's prefetch never saw most of them, and at 100k
    passages they were embedded one call at a time on one core here (issue 21)."""
    if changed:
        cache_in_processes(embed, list(dict.fromkeys(changed.values())))


def _memo(result: ReleaseResult, kind: str) -> DiskMemo:
    """Where a measure of the written release is kept (``choose.memo_keys``: only a run whose
    candidates carry a key, i.e. ``run_release``'s)."""
    return DiskMemo(resolve_cache_dir(result.config.prepare.cache_dir), kind)


def release_verdict(result: ReleaseResult) -> Verdict:
    """The verdict of the written release (``choose.verdict``): every attacker of the run on the
    text as written (after the review), against the run's goal. The app's Export page and the
    report both show this one."""
    summary, _ = release_attack(result)
    return protection_verdict(figures_of_attack(summary), Goal.from_config(result.config))


def audit_summary(before: RenyiAudit, after: RenyiAudit) -> dict:
    """audit.json's contents from the audits before and after a release."""
    table = audit_comparison(before, after).reset_index()
    return {
        "before": before.to_dict(),
        "after": after.to_dict(),
        "corpus_epsilon_before": before.epsilon_,
        "corpus_epsilon_after": after.epsilon_,
        "documents": table.to_dict("records"),
        "note": AUDIT_NOTE,
    }


#: Passages from which the audit computes in a worker process while the writer goes on with the
#: attack report (fewer: here, when asked for; a worker's start costs about two seconds).
AUDIT_WORKER_MIN_CHUNKS = 500


#: The audit worker's niceness: it takes the cores the writer and the adaptive attacker leave idle
#: rather than slowing them (on the dev corpus the adaptive attacker is the write's longest part).
AUDIT_NICENESS = 10


def _audit_key(result: ReleaseResult) -> tuple[str | None, dict[int, str]]:
    changed = result.changed()
    return derived_key(result.candidates.key, "audit", changed_parts(changed)), changed


def _audit_inputs(result: ReleaseResult, changed: dict[int, str]) -> tuple:
    """(before, after, groups) of the audit: the changed passages embedded (through the cache)."""
    ctx = result.context
    embed_ahead(ctx.embed, changed)
    after = released_embeddings(ctx.embeddings, changed, ctx.embed)
    return np.asarray(ctx.embeddings), after, [c.doc_id for c in ctx.chunks]


def _audit_of(before, after, groups) -> dict:
    return audit_summary(*audit_release(before, after, groups))


def _audit_of_file(path: str) -> dict:
    """``_audit_of`` of the inputs ``audit_in_background`` left in ``path`` (arrays mapped: a
    sampled audit reads only its rows)."""
    return _audit_of(*mapped_pickle.load(path))


class PendingAudit:
    """The written release's audit computing in a worker (``audit_in_background``); its inputs
    sit in a temporary folder until ``result()`` or ``close()``."""

    def __init__(self, inputs: tuple) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="neswap-audit-")
        path = Path(self._folder.name) / "audit_inputs.map"
        mapped_pickle.dump(inputs, path)  # OSError on a full disk (the folder goes with self)
        self._work = InBackground(partial(_audit_of_file, str(path)), niceness=AUDIT_NICENESS)

    def result(self) -> dict:
        try:
            return self._work.result()
        finally:
            self.close()

    def close(self) -> None:
        self._work.close()
        self._folder.cleanup()


def audit_in_background(result: ReleaseResult) -> PendingAudit | None:
    """The written release's audit started in a worker process, for ``release_audit``, so the
    attack report and the audit (each about half a minute at 10,000 passages, one core each)
    run side by side (issue 21); None when it is known already or the corpus is small
    (``AUDIT_WORKER_MIN_CHUNKS``) or its inputs cannot be written to the temporary folder
    (``release_audit`` then computes it here). The same audit.json, bit for bit (its fits use
    one BLAS thread wherever they run)."""
    if result.audit is not None or result.release is None:
        return None
    if len(result.context.chunks) < AUDIT_WORKER_MIN_CHUNKS:
        return None
    key, changed = _audit_key(result)
    if key is not None and _memo(result, "audits").get(key)[0]:
        return None
    inputs = _audit_inputs(result, changed)
    try:
        return PendingAudit(inputs)
    except OSError:
        return None  # no room for the worker's inputs: release_audit computes it here


def release_audit(result: ReleaseResult, pending: PendingAudit | None = None) -> dict:
    """audit.json's contents for the written release (SPEC §9), computed once; ``pending``: the
    audit already started by ``audit_in_background``."""
    if result.audit is None:
        key, changed = _audit_key(result)
        compute = (pending.result if pending is not None else
                   lambda: _audit_of(*_audit_inputs(result, changed)))  # fmt: skip
        result.audit = _memo(result, "audits").get_or_compute(key, compute)
    return result.audit
