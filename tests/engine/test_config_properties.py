"""Property: a wrong-typed or out-of-range parameter of any registered component is refused with one error naming it.

For every registered game, mechanism and attack and every parameter, random TOML values (strings, integers,
floats with NaN and infinities, booleans, dates, times, date-times, inline tables, arrays) of the wrong type or
out of range go through :func:`privgame.engine.config.parse_config` — the path a config file takes, sweeps and all — one
parameter at a time, the component's other parameters at the defaults or the contract suite's example values
(``EXCLUDES``: without one that must not come with it) and the other sections valid.  The config must raise
:class:`privgame.engine.config.ConfigError` (a ValueError: the component's own ValueError or TypeError, re-raised with
the section) whose message, after the ``[section] name:`` prefix, names the parameter; any other exception fails the
test.  A component that accepts such a value, refuses it without naming the parameter or crashes with another
exception fails it (``test_the_property_catches_a_component_that_breaks_it``).

What counts as "out of range" is what no parameter of that type accepts here: a negative integer for an integer
(every integer parameter is a size, a count, an index or a seed), NaN, −inf or a negative number for a float
(every float is a scale, a rate, a noise or a privacy parameter), a string outside the choices for a ``Literal``
or for a string parameter whose default is a string (a choice such as ``data = "adult"``), negative ids in a list
of integers.  Each example draws one value of every kind that applies (``_strategies``); hypothesis is
derandomised with 4 examples per parameter, so the test is fast (13 s of CPU, imports included) and cannot flake.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_registry_contract import EXAMPLES

from privgame.engine.config import ConfigError, component_base, parse_config
from privgame.engine.registry import ATTACKS, GAMES, MECHANISMS
from privgame.mechanisms import Mechanism

BASE = {
    "game": {"name": "one-run", "m": 100, "k_pos": 10, "k_neg": 10},
    "mechanism": {"name": "randomized-response", "epsilon": 1.0},
    "attack": {"name": "identity"},
}
SCALARS: dict[type, st.SearchStrategy[Any]] = {
    bool: st.booleans(),
    int: st.integers(-(2**63), 2**63 - 1),  # TOML integers are 64-bit
    float: st.floats(allow_nan=True, allow_infinity=True),
    str: st.text(max_size=12),
}
OTHER_TOML = st.one_of(
    st.dates(),
    st.times(),
    st.datetimes(),
    st.dictionaries(st.text(max_size=4), st.integers(-5, 5), max_size=2),  # an inline table
)
ANY_SCALAR = st.one_of(*SCALARS.values(), OTHER_TOML)
# a parameter that must not be given together with the one under test: the example's is dropped, so that the
# error is about the value, not about the pair (DP-SGD takes a target ε or a noise multiplier, never both)
EXCLUDES = {"epsilon": ("noise_multiplier",)}


def _options(hint: Any) -> tuple[Any, ...]:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return tuple(h for h in typing.get_args(hint) if h is not type(None))
    return (hint,)


def _strategies(cls: type, field: dataclasses.Field[Any]) -> dict[str, st.SearchStrategy[Any]]:
    """Kinds of values a config could give ``field`` that it must refuse (of a type it does not take, or out of
    range), by name: every kind is drawn in every example."""
    options = _options(typing.get_type_hints(cls)[field.name])
    origins = {typing.get_origin(h) or h for h in options}
    takes_list = bool(origins & {tuple, list})
    takes_table = any(isinstance(o, type) and issubclass(o, Mapping) for o in origins) or bool(
        origins & {Mapping, dict}
    )
    literal = [a for h in options if typing.get_origin(h) is typing.Literal for a in typing.get_args(h)]
    takes = {int} if int in origins else set()
    if bool in origins:  # a flag (LiRA's online, fpc): true and false are its values, not bad ones
        takes.add(bool)
    if float in origins:
        takes |= {int, float}
    if str in origins or literal:
        takes.add(str)
    kinds = {f"a {t.__name__}": s for t, s in SCALARS.items() if t not in takes}
    kinds["a date or time"] = st.one_of(st.dates(), st.times(), st.datetimes())
    if not takes_table:
        kinds["a table"] = st.dictionaries(st.text(max_size=4), st.integers(-5, 5), max_size=2)
    else:  # a table whose values no such parameter takes (a column's bounds, bins, predictors or method)
        values = st.one_of(
            st.booleans(), st.dates(), st.times(), st.datetimes(), st.dictionaries(st.text(), st.integers())
        )
        kinds["a table of wrong values"] = st.dictionaries(
            st.text(min_size=1, max_size=4), values, min_size=1, max_size=2
        )
    if not takes_list:  # a list of one list is a one-value sweep whose value is an array
        kinds["an array"] = st.lists(ANY_SCALAR, min_size=1, max_size=3).map(lambda v: [v])
    if int in takes and float not in takes:
        kinds["a negative integer"] = st.integers(-(2**63), -1)
    if float in takes:
        kinds["NaN or -inf"] = st.sampled_from([math.nan, -math.inf])
        kinds["a negative number"] = st.one_of(st.floats(max_value=-1e-300), st.integers(-(2**63), -1))
    if literal:
        kinds["another string"] = st.text(max_size=12).filter(lambda s: s not in literal)
    elif str in origins and isinstance(field.default, str):  # a choice such as data = "adult"
        kinds["another string"] = st.text(max_size=12).map(lambda s: f"no-such-{s}")
    for h in options:
        args = typing.get_args(h)
        if typing.get_origin(h) is tuple and len(args) == 2 and args[1] is Ellipsis:  # tuple[X, ...]: a flat array
            element = args[0]
            bad = [s for t, s in SCALARS.items() if t is not element and not (element is float and t is int)]
            kinds["an array of wrong elements"] = st.lists(st.one_of(*bad, OTHER_TOML), min_size=1, max_size=3)
            if element is int:
                kinds["an array of negative ids"] = st.lists(st.integers(-(2**63), -1), min_size=1, max_size=3)
    return kinds


def _parameters() -> list[Any]:
    params = []
    for section, registry in (("game", GAMES), ("mechanism", MECHANISMS), ("attack", ATTACKS)):
        for name in registry.names():
            cls = registry.get(name)
            for field in dataclasses.fields(cls):
                if field.init:
                    params.append(pytest.param(section, name, field.name, id=f"{section}:{name}.{field.name}"))
    return params


def _example_table(section: str, name: str, key: str) -> dict[str, Any]:
    """The example's parameters that differ from their defaults (the others are left to the defaults), without
    ``key`` and the parameters that exclude it."""
    example = EXAMPLES[(section, name)]
    table: dict[str, Any] = {"name": name}
    for field in dataclasses.fields(example):
        value = getattr(example, field.name)
        default = field.default if field.default_factory is dataclasses.MISSING else field.default_factory()
        if field.init and value != default and field.name != key and field.name not in EXCLUDES.get(key, ()):
            table[field.name] = value
    return table


@pytest.mark.parametrize(("section", "name", "key"), _parameters())
@settings(
    max_examples=4,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(data=st.data())
def test_a_bad_parameter_is_refused_naming_it(section, name, key, data):
    cls = {"game": GAMES, "mechanism": MECHANISMS, "attack": ATTACKS}[section].get(name)
    field = next(f for f in dataclasses.fields(cls) if f.name == key)
    for kind, strategy in _strategies(cls, field).items():
        _assert_refused_naming(section, _example_table(section, name, key), key, data.draw(strategy, f"{key}: {kind}"))


def _assert_refused_naming(section: str, table: Mapping[str, Any], key: str, value: Any) -> None:
    """``parse_config`` refuses ``value`` for ``key`` of the component ``table`` names with a ConfigError from the
    component that names ``key`` (any other exception propagates)."""
    config = {"experiment": {"name": "property", "seed": 0, "repetitions": 1}, **BASE, section: {**table, key: value}}
    with pytest.raises(ConfigError) as info:
        parse_config(config)
    message = str(info.value)
    cls = {"game": GAMES, "mechanism": MECHANISMS, "attack": ATTACKS}[section].get(table["name"])
    if component_base(cls, key) is not None:  # a nested component: the config resolves its table, naming both
        nested = (f"[{section}] {key} must be a table naming", f"[{section}.{key}] ", f"[{section}] {table['name']}: ")
        assert message.startswith(nested), message
        return
    prefix = f"[{section}] {table['name']}: "
    assert message.startswith(prefix), message  # the component refused it, not the config's own checks
    assert key in message.removeprefix(prefix), message


@dataclass(frozen=True, slots=True)
class _Lax(Mechanism):
    """Stores sigma unchecked."""

    name: ClassVar[str] = "test-lax"
    input_kind: ClassVar[str] = "canary-bits"
    release_kind: ClassVar[str] = "per-canary-values"

    sigma: float = 1.0

    def release(self, data: Any, *, rng: Any) -> Any:
        return data

    def privacy_claim(self) -> None:
        return None


@dataclass(frozen=True, slots=True)
class _Vague(_Lax):
    """Refuses a bad sigma with math's message, which does not name it."""

    name: ClassVar[str] = "test-vague"

    def __post_init__(self) -> None:
        math.sqrt(self.sigma)


@dataclass(frozen=True, slots=True)
class _Crashes(_Lax):
    """Looks sigma up in a table: a KeyError."""

    name: ClassVar[str] = "test-crashes"

    def __post_init__(self) -> None:
        _ = {1.0: "one"}[self.sigma]


@pytest.mark.parametrize(
    ("cls", "value", "fault"),
    [
        (_Lax, -1.0, pytest.fail.Exception),  # DID NOT RAISE
        (_Vague, -1.0, AssertionError),  # "math domain error" names no parameter
        (_Crashes, "abc", KeyError),
    ],
)
def test_the_property_catches_a_component_that_breaks_it(cls, value, fault):
    MECHANISMS.register(cls)
    try:
        with pytest.raises(fault):
            _assert_refused_naming("mechanism", {"name": cls.name}, "sigma", value)
    finally:
        MECHANISMS.unregister(cls.name)


def test_every_parameter_is_covered():
    """Each registered component's parameters all take part (a new component is covered without an edit)."""
    keys = {p.values for p in _parameters()}
    assert ("mechanism", "gaussian", "sigma") in keys and ("game", "record", "columns") in keys
    assert len(keys) == sum(
        len([f for f in dataclasses.fields(r.get(n)) if f.init])
        for r in (GAMES, MECHANISMS, ATTACKS)
        for n in r.names()
    )
