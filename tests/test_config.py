"""RunConfig: sections, validation before any work (issue 23 item 9), the migration of flat files
written by neswap 0.1 (bc9925d), and an exact TOML round trip (bit-for-bit reruns need it)."""

from pathlib import Path

import pytest

from neswap_core import run_release
from neswap_core.cli import EXIT_ERROR, main
from neswap_core.config import DEFAULT_ROLES, SECTIONS, RunConfig
from neswap_core.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "fixtures" / "golden"


def test_toml_round_trip(tmp_path):
    cfg = RunConfig.of(threshold=80.5, min_weight=1e-10, population=1e30,
                       roles={**DEFAULT_ROLES, "Person": "U"}, corpus='data/"odd" path',
                       trade_off_a=0.5, plan_redaction_levels=[0.0, 0.05],
                       decisions=[{"key": "a|b", "decision": "reject", "note": 'say "no"\n'}],
                       release_plan={"steps": [{"kind": "redact", "level": 0.05}]})
    path = tmp_path / "run.toml"
    cfg.save(path)
    assert RunConfig.load(path) == cfg
    text = path.read_text()
    for name in SECTIONS:  # one table per section, in the order of the data flow
        assert f"\n[{name}]\n" in text
    assert text.index("[prepare]") < text.index("[mixture]") < text.index("[review]")


def test_settings_live_in_sections_and_keep_one_name():
    cfg = RunConfig.of(n_components=5, plan_rounds=2, bundle_seed=3, release="x @ 1")
    assert (cfg.mixture.n_components, cfg.plans.plan_rounds, cfg.bundle.bundle_seed) == (5, 2, 3)
    assert cfg.review.release == "x @ 1"  # the analyst's review in its own object
    assert cfg.settings()["n_components"] == 5 and cfg.replace(n_components=7).mixture.n_components == 7
    assert cfg.mixture.n_components == 5  # replace returns a copy
    with pytest.raises(ConfigError, match="Unknown setting 'colour'"):
        cfg.replace(colour="red")


@pytest.mark.parametrize("kwargs, sentence", [
    ({"shuffle_chunks": "no"},
     'Setting bundle.shuffle_chunks = "no" is not allowed: it must be true or false (a TOML '
     'boolean, without quotes).'),
    ({"n_components": 2.5},
     "Setting mixture.n_components = 2.5 is not allowed: it must be a whole number such as 10."),
    ({"max_swaps": "30"},
     'Setting sweep.max_swaps = "30" is not allowed: it must be a whole number such as 10.'),
    ({"threshold": "high"},
     'Setting prepare.threshold = "high" is not allowed: it must be a number such as 0.5.'),
    ({"draws": True}, "Setting sweep.draws = true is not allowed: it must be a whole number"),
    ({"plan_redaction_levels": [0.0, "0.1"]},
     'Setting plans.plan_redaction_levels[1] = "0.1" is not allowed: it must be a number'),
    ({"threshold": 120}, "Setting prepare.threshold = 120.0 is not allowed: it is a percentile"),
    ({"roles": {"Organization": "X"}}, 'Setting roles.Organization = "X" is not allowed: a role '
                                       'is one of "S", "F", "C", "U".'),
    ({"roles": {"Company": "S"}}, "Setting roles.Company"),
    ({"family": "vmf"}, 'Setting mixture.family = "vmf" is not allowed: it must be one of "pkb"'),
    ({"population": 1}, "Setting sweep.population = 1.0 is not allowed: the population N"),
    ({"trade_off_a": -1}, "Setting goal.trade_off_a = -1.0 is not allowed: the slope"),
    ({"require": "some"}, 'Setting sweep.require = "some" is not allowed'),
    ({"max_chunk_accuracy": 30}, "Setting goal.max_chunk_accuracy = 30.0 is not allowed"),
    ({"release_plan": {"steps": "all"}}, "Setting review.release_plan = "),
])
def test_bad_values_are_one_sentence_naming_the_setting_the_value_and_what_is_allowed(kwargs,
                                                                                      sentence):
    with pytest.raises(ConfigError) as info:
        RunConfig.of(**kwargs)
    message = str(info.value)
    assert message.startswith(sentence) and message.count(". ") == 0 and message.endswith(".")


def test_types_are_never_coerced_silently():
    assert RunConfig.of(threshold=80).prepare.threshold == 80.0  # a whole number is a number
    for bad in ({"shuffle_chunks": 0}, {"n_init": 1.0}, {"corpus": 3}, {"not_entities": "Apple"}):
        with pytest.raises(ConfigError):
            RunConfig.of(**bad)


def test_unknown_key_and_bad_toml(tmp_path):
    with pytest.raises(ConfigError, match="Unknown setting 'colour'"):
        RunConfig.from_dict({"colour": "red"})
    with pytest.raises(ConfigError, match=r"Unknown setting mixture.colour; \[mixture\] holds"):
        RunConfig.from_dict({"mixture": {"colour": "red"}})
    bad = tmp_path / "bad.toml"
    bad.write_text("threshold = = 3")
    with pytest.raises(ConfigError, match="not valid TOML"):
        RunConfig.load(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        RunConfig.load(tmp_path / "missing.toml")


@pytest.mark.parametrize("case", ["cli_plan", "app_plan"])
def test_a_flat_file_written_by_bc9925d_loads_with_a_one_line_note(case, tmp_path):
    """run.toml / key/config.toml as neswap 0.1 wrote them (every setting at the top level, a
    [release_plan] table): the same settings, in sections, and one line saying so."""
    path = GOLDEN / case / "run.toml"
    config, note = RunConfig.load_with_note(path)
    assert note.startswith(f"{path}: ") and "\n" not in note and "flat layout" in note
    assert config.plans.plan_rounds == 2 and config.plans.plan_redaction_levels == [0.0, 0.05]
    assert config.mixture.n_components == 5 and config.sweep.max_swaps == 10
    if case == "app_plan":
        assert config.review.release == "plan 3 · 5 % masked"
        assert config.review.release_plan["steps"][0]["kind"] == "redact"
        assert config.review.decisions[0]["decision"] == "reject"
    saved = tmp_path / "run.toml"
    config.save(saved)
    again, note = RunConfig.load_with_note(saved)
    assert again == config and note == ""  # written again: sections, no note


def test_the_cli_refuses_bad_settings_before_any_work(tmp_path, capsys, monkeypatch):
    def no_work(*args, **kwargs):
        raise AssertionError("preprocessing started before the settings were checked")

    monkeypatch.setattr(run_release, "prepare", no_work)
    for text, needle in (('[bundle]\nshuffle_chunks = "no"\n', "bundle.shuffle_chunks"),
                         ("[mixture]\nn_components = 2.5\n", "mixture.n_components = 2.5"),
                         ('[sweep]\nmax_swaps = "many"\n', 'sweep.max_swaps = "many"'),
                         ('[review]\nrelease_plan = { steps = [{ kind = "fly" }] }\n',
                          "Unknown plan step kind 'fly'")):
        (tmp_path / "run.toml").write_text(f'corpus = "{ROOT / "data" / "sample"}"\n{text}')
        code = main(["release", "--config", str(tmp_path / "run.toml"), "--out",
                     str(tmp_path / "out")])
        err = capsys.readouterr().err
        assert code == EXIT_ERROR and needle in err, err
        assert err.startswith("error: ") and "Traceback" not in err and err.count("\n") == 1


def test_a_one_document_corpus_is_refused_before_preprocessing(tmp_path, capsys, monkeypatch):
    def no_work(*args, **kwargs):
        raise AssertionError("preprocessing started on a one-document corpus")

    monkeypatch.setattr(run_release, "prepare", no_work)
    corpus = tmp_path / "one.csv"
    corpus.write_text("doc_id,company,text\nd1,Acme,We sold widgets in Ohio.\n")
    RunConfig.of(corpus=str(corpus)).save(tmp_path / "run.toml")
    code = main(["release", "--config", str(tmp_path / "run.toml"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == EXIT_ERROR and "1 document" in err and "Traceback" not in err


def test_a_csv_without_a_text_column_names_the_option_to_use(tmp_path, capsys, monkeypatch):
    """The advice names what the CLI offers (--text-column), and following it works."""
    corpus = tmp_path / "calls.csv"
    corpus.write_text("doc_id,company,body\nd1,Acme,We sold widgets.\nd2,Globex,We sold gadgets.\n")
    RunConfig.of(corpus=str(corpus)).save(tmp_path / "run.toml")
    args = ["release", "--config", str(tmp_path / "run.toml"), "--out", str(tmp_path / "o")]
    assert main(args) == EXIT_ERROR
    err = capsys.readouterr().err
    assert "no column 'text'" in err and "--text-column NAME" in err

    loaded = []

    def stop(corpus, config, **kwargs):  # the corpus loaded with the column named: stop there
        loaded.append([d.text for d in corpus.documents])
        raise ConfigError("stop here")

    monkeypatch.setattr(run_release, "prepare", stop)
    assert main([*args, "--text-column", "body"]) == EXIT_ERROR
    assert loaded == [["We sold widgets.", "We sold gadgets."]]


def test_swap_categories_follow_roles_in_canonical_order():
    assert RunConfig().swap_categories == ["Organization", "Person", "Product", "Location"]


def test_a_section_gives_its_settings_as_parameters_renamed_and_lists_as_tuples():
    config = RunConfig.of(n_components=7, mixture_seed=3, family="scauchy",
                          plan_redaction_levels=[0, 0.5], plan_terms=[True])
    assert config.mixture.as_params(renamed={"mixture_seed": "random_state"}) == {
        "family": "scauchy", "n_components": 7, "min_weight": config.mixture.min_weight,
        "n_init": config.mixture.n_init, "max_iter": config.mixture.max_iter,
        "tol": config.mixture.tol, "random_state": 3}
    plans = config.plans.as_params(prefix="plan_")
    assert plans["redaction_levels"] == (0.0, 0.5) and plans["terms"] == (True,)
    assert set(plans) == {f.removeprefix("plan_") for f in vars(config.plans)}
