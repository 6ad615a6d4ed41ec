"""The release the app uses, chosen by the core's one chooser (issue 20: the app and the CLI
choose the same release).

``choose.chosen.choose`` is what ``run_release`` ends with: the release pinned (here: by the
analyst, on the Frontier or the Swaps page), else the goal's release (``max_chunk_accuracy`` /
``max_document_accuracy``: the most useful candidate the worst attacker names little enough of,
or the closest one, flagged), else the trade-off line's. The app calls it on the same candidates
as the CLI (the paper's, the plans', the document defence's; measured by every attacker when a
goal needs the figures), after the same ``search_for_goal``, so its ★ release, its verdict and
its Export download are the CLI's for the same settings. Every page and the sidebar read the
choice from here; the last one computed is kept per settings so the sidebar never computes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from neswap_core import Candidates, Choice
from neswap_core.choose.chosen import GOAL, LINE, PINNED, choose
from neswap_core.choose.goals import Goal, search_for_goal
from neswap_core.config import RunConfig

from .pipeline import _Memo, candidates, digest, measured
from .reading import reading_units_of
from .widgets import md_text

#: The last choice per settings (``AppChoice.key``): the sidebar reads it, never computes it.
_LAST = _Memo(16)
#: Workspace artifact keeping, per ``choice_key``, which release the last computed choice was
#: (``KeptChoice``): a restarted server's Swaps and Check pages show that release, not the line's.
CHOICE_ARTIFACT = "release_in_use"


@dataclass(frozen=True)
class KeptChoice:
    """What a page's choice said, kept in the workspace: its release, why, and its reason."""

    release_id: str | None
    why: str
    goal_met: bool | None
    reason: str


@dataclass
class AppChoice:
    """The core's ``Choice`` for the app's settings, with the config and candidates it used."""

    config: RunConfig  # the app's settings after ``search_for_goal``, with the analyst's pin
    candidates: Candidates
    choice: Choice
    scorers: Mapping  # every attacker (``views_export.LazyScorers``: loaded on first use)
    note: str = ""  # what ``search_for_goal`` changed ("" when nothing)

    @property
    def release_id(self) -> str | None:
        return self.choice.release_id

    @property
    def goal_missed(self) -> bool:
        return self.choice.goal_met is False

    def why_sentence(self) -> str:
        """Why this release, in one sentence (pinned / the goal / the line), as the CLI says it."""
        c = self.choice
        if c.release_id is None:
            return f"No release can be chosen: {c.reason}"
        rid = md_text(c.release_id)
        if c.why == PINNED:
            text = (f"**{rid}** is in use because you pinned it (the command line writes a "
                    "release pinned in run.toml)")
        elif c.why == GOAL:
            text = (f"**{rid}** is in use because of your goal: it is "
                    + ("the most useful candidate that meets it" if c.goal_met else
                       "the closest candidate to it, which no candidate meets")
                    + f" ({md_text(c.goal.goal.describe())})")
        else:
            text = (f"**{rid}** is in use because it is your trade-off line's choice (no goal is "
                    "set and nothing is pinned)")
        if c.why != LINE and c.line.index is not None and c.line.index != c.release_id:
            text += f"; the trade-off line alone would pick {md_text(str(c.line.index))}"
        return text + "."


def plain(text: str) -> str:
    """A core sentence for the screen: the CLI names run.toml's settings ("more plan_rounds",
    "max_document_accuracy to 0.5"); the app names them in words (``state.SETTING_NAMES``)."""
    import re

    from .state import SETTING_NAMES, plain_message

    names = set(RunConfig().settings()) | set(SETTING_NAMES)
    return re.sub(r"\b([a-z]+(?:_[a-z]+)+)\b",
                  lambda m: SETTING_NAMES.get(m[1], m[1].replace("_", " ")) if m[1] in names
                  else m[1], plain_message(text))


def _pin(stage, table) -> dict:
    """run.toml's pin for the analyst's pinned release: a plan by its plan and stage (as
    ``views_plans.pin_plan`` stored them), any other candidate of these settings by its id."""
    from .views_plans import PLAN_SETTING

    s = stage.settings
    chosen = s.get("chosen_release")
    plan = s.get(PLAN_SETTING) or {}
    if chosen and plan.get("release_id") == chosen and plan.get("plan"):
        return {"release": chosen, "release_plan": plan["plan"],
                "release_stage": int(plan.get("stage_index", 0))}
    return {"release": chosen} if chosen and chosen in table.index else {}


def settings_config(stage) -> tuple[RunConfig, str]:
    """The app's RunConfig as the CLI runs it: ``search_for_goal`` applied (its note)."""
    stage.settings["trade_off_c"]  # the default line, resolved and stored (state.Settings)
    return search_for_goal(stage.config)


def choice_key(stage) -> str:
    """The settings a choice depends on: the plans' key, the whole config and the pin."""
    s = stage.settings
    return digest([stage.plans_key, stage.config.to_dict(), s.get("chosen_release"),
                   s.get("chosen_plan")])


def app_choice(stage, progress: Callable | None = None, *, measure: bool | None = None) -> AppChoice:
    """The core's choice for the app's settings (module docstring). ``measure``: add every
    attacker's columns to the candidates (None: only when a goal needs them; the Export page
    always measures, as the CLI's key/candidates.csv)."""
    from .views_export import LazyScorers, scorers_key

    config, note = settings_config(stage)
    searched = config != stage.config
    key = digest([stage.plans_key, config.to_dict()["plans"]]) if searched else stage.plans_key
    found = candidates(key, stage.sweep(), config, progress, reading_units_of(stage))
    goal = Goal.from_config(config)
    attackers: Mapping = {}
    if measure or (measure is None and goal is not None):
        attackers = LazyScorers(stage, config.sweep.seed)  # loaded only if not kept
        # the attackers' key names their reading: another reading measures the candidates again
        mkey = digest([key, scorers_key(stage, config.sweep.seed), "measured"])
        found = measured(mkey, found, config, attackers, progress)
    pinned = _pin(stage, found.table)
    chosen_config = config.replace(**pinned) if pinned else config
    found, choice = choose(found, chosen_config, attackers or None)
    out = AppChoice(chosen_config, found, choice, attackers, note)
    key = choice_key(stage)
    with _LAST.lock:
        before = _LAST.values.get(key)
        _LAST.values[key] = out
    if before is None or _kept(before) != _kept(out):
        _keep_choice(stage, key, out)
    return out


def _kept(app: AppChoice) -> KeptChoice:
    c = app.choice
    return KeptChoice(c.release_id, str(c.why), c.goal_met, str(c.reason))


def _keep_choice(stage, key: str, app: AppChoice) -> None:
    import json
    from dataclasses import asdict

    payload = json.dumps(asdict(_kept(app)), sort_keys=True).encode("utf-8")
    if stage.workspace.get_artifact(CHOICE_ARTIFACT, key) != payload:
        stage.workspace.put_artifact(CHOICE_ARTIFACT, key, payload)


def kept_choice(stage) -> KeptChoice | None:
    """The release the last choice computed for the current settings was, in this process or
    (after a restart) as kept in the workspace; None when no page computed it yet."""
    import json

    app = last_choice(stage)
    if app is not None:
        return _kept(app)
    payload = stage.workspace.get_artifact(CHOICE_ARTIFACT, choice_key(stage))
    if not payload:
        return None
    try:
        return KeptChoice(**json.loads(payload))
    except (TypeError, ValueError):
        return None  # written by another version: the pages compute it again


def last_choice(stage) -> AppChoice | None:
    """The choice a page last computed for the current settings, or None (for the sidebar)."""
    return _LAST.values.get(choice_key(stage))


#: The release in use's texts, per choice, release and decisions (``changed_texts``).
_CHANGED = _Memo(8)


def changed_texts(stage, app: AppChoice) -> dict[int, str]:
    """{position: released text} of the release in use after the analyst's review: a paper round
    with its pair decisions (``views_release``), a plan with the content-keyed ones, a
    document-defence level as generated (the app does not review its changes yet). Made once per
    candidates, release and decisions: the Frontier page re-made it on every run (0.3–0.7 s of
    each slider move on the dev corpus, issue 21)."""
    from neswap_core.choose.sources import PaperRound, PlanStage

    from . import views_check as vc
    from . import views_release as vr

    source = app.candidates.source(str(app.release_id))
    ws = stage.workspace
    if isinstance(source, PaperRound):
        population = float(stage.settings["population"])
        key = vr.release_key(stage.sweep_key, str(app.release_id))
        decided = ws.decisions(key)

        def make() -> dict[int, str]:
            release = vr.reviewed_release(stage.sweep(), stage.sweep_key, stage.table(population),
                                          str(app.release_id), lambda _: decided, population)  # fmt: skip
            return vc.changed_chunks(release)
    else:
        decided = ws.decisions(stage.review_key) if isinstance(source, PlanStage) else {}

        def make() -> dict[int, str]:
            return source.review(decided).changed(app.candidates.ctx.chunks)

    # the candidates' key (and the plan settings ``search_for_goal`` may have changed), not the
    # whole config: the line, the goal and N choose a release but make no text
    return _CHANGED.get(digest([stage.plans_key, app.config.to_dict()["plans"], type(source).__name__,
                                str(app.release_id), sorted(decided.items())]), make)  # fmt: skip


def release_in_use(stage, table) -> tuple[str | None, str]:
    """(the paper round the Swaps and Check pages show as the release in use, a note when it is
    not the app's release). The core's choice a page computed for these settings when it is a
    paper round, else the analyst's pin or the line's pick (``views_release.pick_release``);
    never computes the choice itself (a goal would measure every candidate). The choice is
    ``kept_choice``'s: after a restart these pages showed the line's pick instead of the goal's
    release until the Frontier or Export page computed it again (issue 21's 2k app benchmark:
    the fresh Check page audited another release)."""
    from . import views_release as vr

    s = stage.settings
    fallback, _ = vr.pick_release(table, s.get("chosen_release"), s["trade_off_a"], s["trade_off_c"])
    app = kept_choice(stage)
    if app is None and Goal.from_config(stage.config) is not None and not s.get("chosen_release"):
        return fallback, ("Your goal's release is chosen on 5 · Risk–utility frontier, which has "
                          f"not measured the candidates yet: shown here, the line's pick {md_text(str(fallback))}.")
    if app is None or app.release_id is None or app.release_id in table.index:
        return (fallback if app is None or app.release_id is None else app.release_id), ""
    return fallback, (f"The release in use, {md_text(app.release_id)} ({md_text(plain(app.reason))}), "
                      "is not a swap round of the paper: its verdict is on 5 · Risk–utility "
                      f"frontier and 6 · Export. Shown here: {md_text(str(fallback))}.")
