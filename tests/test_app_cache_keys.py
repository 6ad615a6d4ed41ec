"""The app's cache keys name every setting their value depends on (issue 20: state never leaks).

Each key is a digest of settings; a setting missing from it serves one run's chunks, sweep or
candidates to another. These were found by order-dependent failures: after another app test in
the same process, the golden export got chunks cut with another backend's distances, and the
goal's export got candidates built without the document defence's levels."""

from __future__ import annotations

import pytest

from appkit import pipeline as ap
from appkit.state import DEFAULT_SETTINGS
from neswap_core.workspace.store import Workspace

BASE = {**DEFAULT_SETTINGS, "corpus_source": "sample"}


@pytest.fixture
def stage(tmp_path):
    workspace = Workspace.open(tmp_path / "ws")  # a real, empty one: no corrections

    def make(**changes):
        return ap.Stage({**BASE, **changes}, workspace)

    return make


@pytest.mark.parametrize("setting, value", [
    ("document_levels", [0.1, 0.3]), ("document_fill", "mask"), ("document_candidates", 50),
    ("document_defender", False), ("dp_epsilons", [5.0]), ("plan_rounds", 3),
])
def test_candidates_key_names_the_document_defence_and_every_plan_setting(stage, setting, value):
    assert stage().config.to_dict() != stage(**{setting: value}).config.to_dict()  # a real change
    assert stage().plans_key != stage(**{setting: value}).plans_key, setting


def test_sweep_key_names_every_setting_the_sweep_reads_and_not_the_population(stage):
    assert stage().sweep_key != stage(suppress_leftovers=True).sweep_key
    assert stage().sweep_key != stage(max_swaps=7).sweep_key
    assert stage().sweep_key == stage(population=1e6).sweep_key  # the slider re-reads tables
    # N moves only DR: the candidates are kept once and given their DR at each N
    # (``pipeline.at_population``; a change of N measured them all again, issue 21)
    assert stage().plans_key == stage(population=1e6).plans_key


def test_chunks_key_names_the_distances_buffer_and_backend(stage):
    assert stage().chunks_key != stage(buffer=2).chunks_key
    assert stage(embedding_backend="onnx").chunks_key != stage(embedding_backend="torch").chunks_key


def test_measured_candidates_key_names_the_attacker_reading(stage):
    """The candidates' measured columns were keyed by the attackers' names only: after an
    attacker reading was uploaded, the goal chose on what the previous attackers measured."""
    from appkit import views_check as vc
    from appkit.views_export import scorers_key

    current = stage()
    before = scorers_key(current, 0)
    current.workspace.put_artifact(vc.READING_ARTIFACT, current.source, b"a packed reading")
    assert scorers_key(current, 0) != before
    assert scorers_key(current, 0) != scorers_key(current, 1)


def test_check_page_attacker_is_trained_as_the_release_trains_it(stage):
    """The Check and Frontier pages' attacker was trained with seed 0 and the default line-ups
    whatever the settings, so with another swap seed its in-corpus folds (and its figures)
    differed from the Export page's and key/report.html's for the same release."""
    from appkit import views_check as vc
    from appkit.views_export import scorers
    from neswap_core.choose.attack_columns import IN_CORPUS

    current = stage(seed=3)
    assert current.config.sweep.seed == 3
    att = vc.attack(current)
    assert att.kind == IN_CORPUS
    release_side = scorers(current, 3)[IN_CORPUS]
    assert att.scorer.attacker.folds_.tolist() == release_side.attacker.folds_.tolist()
    assert (att.scorer.log_proba_ == release_side.log_proba_).all()
    assert att.key != vc.attack(stage()).key  # another seed, another attacker
