"""RunConfig: validation messages and an exact TOML round trip (bit-for-bit reruns need it)."""

import pytest

from neswap_core.config import DEFAULT_ROLES, RunConfig
from neswap_core.errors import ConfigError


def test_toml_round_trip(tmp_path):
    cfg = RunConfig(threshold=80.5, min_weight=1e-10, population=1e30, roles={**DEFAULT_ROLES, "Person": "U"},
                    corpus='data/"odd" path', trade_off_a=0.5)
    path = tmp_path / "run.toml"
    cfg.save(path)
    assert RunConfig.load(path) == cfg


@pytest.mark.parametrize("kwargs, needle", [
    ({"threshold": 120}, "percentile"),
    ({"roles": {"Organization": "X"}}, "Roles must be one of"),
    ({"roles": {"Company": "S"}}, "Unknown categories"),
    ({"family": "vmf"}, "family"),
    ({"population": 1}, "population"),
    ({"trade_off_a": -1}, "slope"),
    ({"require": "some"}, "require"),
])
def test_bad_values_are_refused_with_a_message(kwargs, needle):
    with pytest.raises(ConfigError, match=needle):
        RunConfig(**kwargs)


def test_unknown_key_and_bad_toml(tmp_path):
    with pytest.raises(ConfigError, match="Unknown settings"):
        RunConfig.from_dict({"colour": "red"})
    bad = tmp_path / "bad.toml"
    bad.write_text("threshold = = 3")
    with pytest.raises(ConfigError, match="not valid TOML"):
        RunConfig.load(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        RunConfig.load(tmp_path / "missing.toml")


def test_swap_categories_follow_roles_in_canonical_order():
    assert RunConfig().swap_categories == ["Organization", "Person", "Product", "Location"]
