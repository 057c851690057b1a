"""``--param KEY=VALUE`` is parsed once, into the policy's parameter dataclass, for every
registered policy: an unknown key or a value of the wrong type is one error naming the key, and
make_policy takes only the parsed object."""

from __future__ import annotations

import dataclasses
import typing

import numpy as np
import pytest

from schedlab.errors import ConfigError
from schedlab.policies.registry import POLICIES, make_policy

NOT_A_VALUE = "not-a-value"  # no int, float, true/false, none or list of numbers reads it


def _typed_fields(cls: type) -> list[str]:
    """Fields whose type text can fail to convert to (everything but free text)."""
    hints = typing.get_type_hints(cls)
    return [f.name for f in dataclasses.fields(cls) if hints[f.name] is not str]


@pytest.mark.parametrize("name", list(POLICIES))
def test_unknown_key_is_one_error_naming_it(name: str) -> None:
    with pytest.raises(ConfigError, match="no_such_key") as info:
        POLICIES[name].parse({"no_such_key": "1"})
    assert name in str(info.value)


@pytest.mark.parametrize("name", [n for n, info in POLICIES.items() if info.params is not None])
def test_a_wrong_type_names_the_key(name: str) -> None:
    info = POLICIES[name]
    assert info.params is not None
    defaults = info.parse({})
    assert isinstance(defaults, info.params)
    for key in _typed_fields(info.params):
        with pytest.raises(ConfigError, match=f"parameter '{key}'"):
            info.parse({key: NOT_A_VALUE})


@pytest.mark.parametrize("name", list(POLICIES))
def test_make_policy_takes_the_parsed_parameters_only(name: str) -> None:
    info = POLICIES[name]
    rng = np.random.default_rng(0)
    if info.params is not None:
        text_values = {f.name: str(getattr(info.parse({}), f.name)) for f in dataclasses.fields(info.params)}
        with pytest.raises(ConfigError, match="takes"):
            make_policy(name, rng=rng, params=text_values)
    with pytest.raises(ConfigError, match="takes"):
        make_policy(name, rng=rng, params=object())
