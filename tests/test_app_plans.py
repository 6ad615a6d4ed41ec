"""AppTests of plan review on the Swaps page (SPEC §10) and the CLI/app shared candidates."""

from __future__ import annotations

import pytest

from neswap_core.choose import candidates as candidates_mod
from tests.test_app_release import run_page, stage_for, workspace  # noqa: F401 (fixture)

pytestmark = pytest.mark.slow
PLANS = {"plan_rounds": 2, "plan_terms": [True], "plan_redaction_levels": [0.0]}


def test_cli_and_app_build_candidates_with_the_same_function(monkeypatch, tmp_path):
    from appkit import pipeline
    from neswap_core import run_release

    assert pipeline.build_candidates is run_release.build_candidates is candidates_mod.build_candidates
    calls = []

    class Stop(Exception):
        pass

    def spy(sweep, config, scorers=None, **kwargs):
        calls.append(config.plans.plan_rounds)
        raise Stop

    monkeypatch.setattr(run_release, "build_candidates", spy)
    from neswap_core.cli import main
    from neswap_core.config import RunConfig

    cfg = tmp_path / "run.toml"
    RunConfig.of(corpus="data/sample", plan_rounds=1, max_swaps=3, n_components=5, n_init=1,
              out=str(tmp_path / "out")).save(cfg)  # fmt: skip
    with pytest.raises(Stop):
        main(["release", "--config", str(cfg)])
    assert calls == [1]


def test_plan_changes_are_reviewed_by_content_and_rejection_leaves_the_release(workspace):  # noqa: F811
    workspace.update_settings(PLANS)
    at = run_page("4_swaps")
    stage = stage_for(workspace)
    plans = stage.candidates().plans
    release_id = plans.table.index[-1]
    at.selectbox(key="swaps_release").set_value(release_id).run()
    assert not at.exception, [e.value for e in at.exception]
    keys = [r.key for r in at.radio if r.key and r.key.startswith("pdec::")]
    assert keys
    change_key = keys[0].split("::", 1)[1]
    at.radio(key=keys[0]).set_value("reject").run()
    assert workspace.decisions(stage.review_key)[change_key][0] == "reject"

    from appkit.views_plans import ReviewedPlan, after_label

    review = ReviewedPlan(plans, release_id, workspace.decisions(stage.review_key))
    rejected = next(c for c in review.changes if c.key == change_key)
    assert not review.in_release(rejected)
    assert "as released" not in after_label(review, rejected)
    assert rejected.key not in {c.key for c in review.released_changes}
    kept = next(m.value for m in at.metric if m.label == "Changes in the release")
    assert kept.startswith(f"{len(review.released_changes)} of ")
    # The decision is keyed by content: the round-1 release holding the same change has it
    # rejected too, without any decision stored for that release.
    first_id = plans.table.index[0]
    first = ReviewedPlan(plans, first_id, workspace.decisions(stage.review_key))
    generated, stage_first = first.generated
    if any(c.key == change_key for c in generated.changes[: stage_first.n_changes]):
        assert first.decision(rejected) == "reject"
        assert change_key not in {c.key for c in first.released_changes}
