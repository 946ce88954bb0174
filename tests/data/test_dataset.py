"""A data set is one object (privgame.data.Dataset) found by name; the built-ins are instances; plugins add theirs."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from privgame.data import Dataset, PublicDomain, check_data, dataset_names, get_dataset, register_dataset
from privgame.data.catalogue import unregister_dataset

DOMAIN = PublicDomain(
    "clinic",
    ("age", "bmi", "sex", "visits"),
    (("sex", ("F", "M")),),
    (("age", 18, 99), ("bmi", 10.0, 70.0), ("visits", 0, 3)),
    floats=("bmi",),
)


def clinic_rows() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "age": np.array([30, 40, 50, 60], dtype=np.int64),
            "bmi": [20.5, 31.25, 10.0, 70.0],
            "sex": pd.Categorical(["F", "M", "M", "F"], categories=["F", "M"]),
            "visits": np.array([0, 1, 2, 3], dtype=np.int64),
        }
    )


def other_rows() -> pd.DataFrame:
    return clinic_rows()


@pytest.fixture
def clinic():
    dataset = register_dataset(
        Dataset("test-clinic", DOMAIN, 4, clinic_rows, label="visits", serves={"table", "features"})
    )
    yield dataset
    unregister_dataset("test-clinic")


def test_the_builtins_are_instances_with_their_public_facts():
    adult, compas, digits = (get_dataset(n) for n in ("adult", "compas", "digits"))
    assert (adult.size, adult.label, adult.positive, adult.train_split) == (48_842, "income", ">50K", 32_561)
    assert (compas.size, compas.label, compas.n_classes) == (7_214, "two_year_recid", 2)
    assert (digits.n_classes, digits.image_shape, "images" in digits.serves) == (10, (8, 8), True)
    assert dataset_names("images") == ("digits",)
    assert dataset_names()[:3] == ("adult", "compas", "digits")


def test_a_registered_data_set_serves_tables_and_features_with_float_columns(clinic):
    assert get_dataset("test-clinic") is clinic and "test-clinic" in dataset_names("features")
    table = clinic.table()
    assert list(table.columns) == list(DOMAIN.columns) and table["bmi"].dtype == np.float64
    arrays = clinic.features()
    assert arrays.features == ("age", "bmi", "sex=F", "sex=M") and clinic.feature_count() == 4
    np.testing.assert_allclose(arrays.x[:, 1], (np.array([20.5, 31.25, 10.0, 70.0]) - 10.0) / 60.0, rtol=1e-6)
    assert arrays.y.tolist() == [0, 1, 2, 3] and arrays.n_classes == 4  # an integer label: its range's integers


def test_registering_again_replaces_from_the_same_origin_and_refuses_another(clinic):
    again = Dataset("test-clinic", DOMAIN, 4, clinic_rows, label="visits", serves={"table", "features"})
    with pytest.warns(UserWarning, match="data set 'test-clinic' registered again"):
        register_dataset(again)
    assert get_dataset("test-clinic") is again
    with pytest.raises(ValueError, match=r"data set name 'test-clinic' is already registered \(by .*clinic_rows\)"):
        register_dataset(Dataset("test-clinic", DOMAIN, 4, other_rows))
    with pytest.raises(ValueError, match="data set name 'adult' is already registered"):
        register_dataset(Dataset("adult", DOMAIN, 4, clinic_rows))
    with pytest.raises(ValueError, match="data set 'adult' is a built-in"):
        unregister_dataset("adult")
    with pytest.raises(TypeError, match=r"dataset must be a privgame\.data\.Dataset, got str"):
        register_dataset("adult")  # type: ignore[arg-type]


def test_check_data_names_the_data_sets_that_serve_what_is_asked(clinic):
    assert check_data("test-clinic", "features") is clinic
    with pytest.raises(ValueError, match=r"data must be one of digits \(data sets that serve images\), got 'adult'"):
        check_data("adult", "images")
    with pytest.raises(
        ValueError, match=r"data must be one of adult, compas, digits, test-clinic \(.*table\), got 'x'"
    ):
        check_data("x", "table")
    with pytest.raises(TypeError, match="data must be a data set name, got 3"):
        check_data(3, "table")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"name": ""}, ValueError, "name must be a non-empty string"),
        ({"size": 0}, ValueError, "size must be an integer >= 1, got 0"),
        ({"size": True}, ValueError, "size must be an integer >= 1, got True"),
        ({"rows": 5}, TypeError, "rows must be a callable"),
        ({"serves": {"tables"}}, ValueError, "serves must be a non-empty set among table, features, images"),
        ({"serves": {"features"}}, ValueError, "serves features: it needs a label column"),
        ({"label": "weight"}, ValueError, "label must be a column of 'c', got 'weight'"),
        ({"label": "bmi"}, ValueError, "label 'bmi' of 'c' must be categorical or integer, not float"),
        ({"serves": {"images"}, "label": "sex", "image_shape": (2, 2)}, ValueError, "image_shape"),
        ({"train_split": 4}, ValueError, r"train_split must be an integer in \[1, 4\)"),
        ({"domain": "adult"}, TypeError, "domain must be a PublicDomain, got str"),
    ],
)
def test_a_malformed_data_set_is_refused_in_one_line(kwargs, error, match):
    base = {"name": "c", "domain": DOMAIN, "size": 4, "rows": clinic_rows}
    with pytest.raises(error, match=match):
        Dataset(**{**base, **kwargs})


def test_rows_that_disagree_with_the_declared_size_or_columns_are_refused_when_loaded():
    def short() -> pd.DataFrame:
        return clinic_rows().iloc[:3]

    def renamed() -> pd.DataFrame:
        return clinic_rows().rename(columns={"age": "years"})

    with pytest.raises(ValueError, match="size is 4 but rows\\(\\) returned 3"):
        Dataset("short", DOMAIN, 4, short).table()
    with pytest.raises(ValueError, match="must return the columns of its domain"):
        Dataset("renamed", DOMAIN, 4, renamed).table()


def test_public_domain_floats_and_integer_bounds():
    assert DOMAIN.dtypes()["bmi"] == np.float64 and DOMAIN.dtypes()["age"] == np.int64
    with pytest.raises(ValueError, match="range of integer column 'age' must have integer bounds"):
        PublicDomain("d", ("age",), (), (("age", 0, 2.5),))
    with pytest.raises(ValueError, match="floats must name numeric columns, got 'sex'"):
        PublicDomain("d", ("sex",), (("sex", ("F",)),), (), floats=("sex",))
    with pytest.raises(ValueError, match="range of 'x' must be finite numbers"):
        PublicDomain("d", ("x",), (), (("x", 0.0, float("inf")),), floats=("x",))
    restricted = DOMAIN.restricted(("sex", "bmi"))
    assert restricted.columns == ("sex", "bmi") and restricted.floats == ("bmi",)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PublicDomain("d", ("x",), (), (("x", 0.0, 1.5),), bins=(("x", (0.5,)),), floats=("x",))  # float edges ok


def test_the_shipped_facts_spell_the_discretisers_integers_alike():
    from privgame.analysis.discretise import INTEGERS
    from privgame.data import shipped

    assert shipped.INTEGERS == INTEGERS


def _swap_rows_a() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    return pd.DataFrame({"x": rng.integers(0, 10, 600), "y": pd.Categorical(rng.choice(["a", "b"], 600))})


def _swap_rows_b() -> pd.DataFrame:
    return _swap_rows_a().assign(x=lambda t: 9 - t["x"])


def test_a_data_set_registered_again_under_its_name_is_read_anew_by_the_games():
    """The games' per-process caches are keyed by the data set object, not its name: a data set registered again
    under the same name (an edited file, a notebook cell) is never answered from the old one's rows (the n_jobs
    test of a user CSV once compared a parent holding an earlier test's 'clinic' with fresh workers)."""
    from privgame.games.record import RecordGames, _population, record_setup

    domain = PublicDomain("swap", ("x", "y"), (("y", ("a", "b")),), (("x", 0, 9),))
    sizes = {"dataset_size": 50, "auxiliary_size": 100, "evaluation_size": 100, "vulnerable_targets": 2}
    register_dataset(Dataset("test-swap", domain, 600, _swap_rows_a))
    first = _population("test-swap", None)["x"].tolist()
    game = RecordGames(data="test-swap", random_targets=0, **sizes)
    vulnerable_a = record_setup(game, 3).vulnerability
    unregister_dataset("test-swap")
    register_dataset(Dataset("test-swap", domain, 600, _swap_rows_b))
    assert _population("test-swap", None)["x"].tolist() == [9 - x for x in first]
    assert record_setup(game, 3).vulnerability is not vulnerable_a
