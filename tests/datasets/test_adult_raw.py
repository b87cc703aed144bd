"""load_adult(as_frame=True) and adult_preprocessor: the raw-data route (issue 34)."""

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline, make_pipeline

from skdp import EpsilonForUtility, ObjPertLogisticRegression, PrivateGridSearchCV
from skdp.datasets import adult_preprocessor, load_adult
from skdp.datasets._loaders import (ADULT_CATEGORICAL, ADULT_CATEGORIES,
                                    ADULT_NUMERIC, ADULT_NUMERIC_BOUNDS)
from skdp.model_selection import check_public_preprocessing, is_public_step

from .test_loaders import SHARED, needs_data

RAW_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education-num",
               "marital-status", "occupation", "relationship", "race", "sex",
               "capital-gain", "capital-loss", "hours-per-week", "native-country"]


@pytest.fixture(scope="module")
def frames():
    return load_adult(data_home=SHARED, download_if_missing=False, as_frame=True)


@pytest.fixture(scope="module")
def unclipped():
    return load_adult(data_home=SHARED, download_if_missing=False, data_norm=np.inf)


def _synthetic_rows():
    """Two raw rows: one of listed values, one unlisted value and out-of-bound numbers."""
    row = {"age": 39.0, "workclass": "Never-worked", "fnlwgt": 77516.0,
           "education": "Bachelors", "education-num": 13.0,
           "marital-status": "Never-married", "occupation": "Adm-clerical",
           "relationship": "Not-in-family", "race": "White", "sex": "Male",
           "capital-gain": 2174.0, "capital-loss": 0.0, "hours-per-week": 40.0,
           "native-country": "United-States"}
    odd = dict(row, workclass="Unlisted", age=120.0, fnlwgt=-5.0,
               **{"hours-per-week": 168.0})
    return pd.DataFrame([row, odd], columns=RAW_COLUMNS)


# ------------------------------------------------------------ the preprocessor


def test_adult_preprocessor_is_public_and_unfitted():
    prep = adult_preprocessor()
    assert type(prep) is ColumnTransformer
    assert not hasattr(prep, "transformers_")
    check_public_preprocessing(prep)
    assert is_public_step(clone(prep))
    pipe = Pipeline([("prep", adult_preprocessor()),
                     ("clf", ObjPertLogisticRegression(data_norm=np.sqrt(14)))])
    check_public_preprocessing(pipe[:-1])
    encoder, scaler = (t for _, t, _ in prep.transformers)
    assert encoder.categories == [sorted(ADULT_CATEGORIES[c]) for c in ADULT_CATEGORICAL]
    assert encoder.handle_unknown == "ignore" and not encoder.sparse_output
    assert scaler.lower == 0.0
    assert scaler.upper == [ADULT_NUMERIC_BOUNDS[c] for c in ADULT_NUMERIC]


def test_adult_preprocessor_declared_rows_without_data():
    X = _synthetic_rows()
    prep = adult_preprocessor()
    Z = prep.fit_transform(X)
    names = list(prep.get_feature_names_out())
    assert Z.shape == (2, 105) and Z.dtype == np.float64
    assert len(names) == 105 and names[-6:] == list(ADULT_NUMERIC)
    assert names[:8] == [f"workclass={c}" for c in sorted(ADULT_CATEGORIES["workclass"])]
    assert Z[0, names.index("workclass=Never-worked")] == 1.0
    assert Z[1, :8].sum() == 0.0                  # an unlisted value: a zero block
    assert Z[0, 99:].tolist() == pytest.approx([39 / 90, 77516 / 1_490_400, 13 / 16,
                                                2174 / 99_999, 0.0, 40 / 99])
    assert Z[1, 99:].tolist() == pytest.approx([1.0, 0.0, 13 / 16, 2174 / 99_999,
                                                0.0, 1.0])   # clipped to [0, 1]
    assert np.linalg.norm(Z, axis=1).max() <= np.sqrt(14)
    # fitting learns nothing: another fit on other rows transforms alike
    other = adult_preprocessor().fit(X.iloc[[1]])
    np.testing.assert_array_equal(other.transform(X), Z)


def test_declared_categories_are_adult_names():
    widths = {c: len(v) for c, v in ADULT_CATEGORIES.items()}
    assert widths == {"workclass": 8, "education": 16, "marital-status": 7,
                      "occupation": 14, "relationship": 6, "race": 5, "sex": 2,
                      "native-country": 41}
    assert tuple(ADULT_CATEGORIES) == ADULT_CATEGORICAL
    path = Path(SHARED or "/nonexistent") / "adult" / "adult.names.gz"
    if not path.is_file():
        pytest.skip("adult.names.gz not found")
    listed = {}
    with gzip.open(path, "rt") as f:
        for line in f:
            name, sep, values = line.partition(":")
            if sep and name in ADULT_CATEGORIES:
                listed[name] = tuple(v.strip() for v in values.strip().rstrip(".")
                                     .split(","))
    assert listed == ADULT_CATEGORIES


# ------------------------------------------------------------------ the frames


@needs_data
def test_adult_as_frame(frames, unclipped):
    assert frames.X_train.shape == (30162, 14) and frames.X_test.shape == (15060, 14)
    assert list(frames.feature_names) == RAW_COLUMNS
    for X in (frames.X_train, frames.X_test):
        assert list(X.columns) == RAW_COLUMNS
        assert X.index.equals(pd.RangeIndex(len(X)))
        assert not X.isna().any().any()
        assert all(X[c].dtype == np.float64 for c in ADULT_NUMERIC)
        assert all(X[c].map(type).eq(str).all() for c in ADULT_CATEGORICAL)
    np.testing.assert_array_equal(frames.y_train, unclipped.y_train)
    np.testing.assert_array_equal(frames.y_test, unclipped.y_test)
    assert frames.y_train.dtype == np.int64
    assert frames.data_norm is None
    assert "No preprocessing is applied" in frames.DESCR
    assert "no row clipping" in frames.DESCR
    # the raw numbers, not scaled
    assert frames.X_train["age"].max() == 90 and frames.X_train["age"].min() == 17


@needs_data
def test_adult_preprocessor_reproduces_the_default_route(frames, unclipped):
    """Column for column, after matching by name: the declared lists add only
    all-zero indicators, every other column equals load_adult(data_norm=inf)."""
    prep = adult_preprocessor().fit(frames.X_train)
    names = list(prep.get_feature_names_out())
    default = list(unclipped.feature_names)
    extra = [n for n in names if n not in default]
    assert extra == ["workclass=Never-worked"]
    assert set(default) <= set(names)
    matched = [names.index(n) for n in default]
    for X_raw, X_default in ((frames.X_train, unclipped.X_train),
                             (frames.X_test, unclipped.X_test)):
        Z = prep.transform(X_raw)
        assert Z.shape == (len(X_raw), 105)
        assert not Z[:, [names.index(n) for n in extra]].any()
        np.testing.assert_allclose(Z[:, matched], X_default, rtol=0, atol=1e-12)
        assert np.linalg.norm(Z, axis=1).max() <= np.sqrt(14)


@needs_data
def test_adult_pipeline_in_the_private_searches(frames):
    rows = np.random.default_rng(0).choice(len(frames.y_train), 2000, replace=False)
    X, y = frames.X_train.iloc[rows], frames.y_train[rows]
    pipe = Pipeline([("prep", adult_preprocessor()),
                     ("clf", ObjPertLogisticRegression(data_norm=np.sqrt(14)))])
    grid = PrivateGridSearchCV(pipe, {"clf__C": [0.1, 1.0]}, random_state=0).fit(X, y)
    assert set(grid.best_params_) == {"clf__C"}
    assert grid.predict(frames.X_test.iloc[:50]).shape == (50,)
    search = EpsilonForUtility(pipe, target_utility=0.75, random_state=0).fit(X, y)
    assert np.isfinite(search.epsilon_)
    assert search.predict(frames.X_test.iloc[:50]).shape == (50,)
    model = make_pipeline(adult_preprocessor(),
                          ObjPertLogisticRegression(epsilon=np.inf, data_norm=np.sqrt(14)))
    assert model.fit(X, y).score(frames.X_test, frames.y_test) > 0.8


@pytest.mark.parametrize("as_frame", ["yes", 1, None])
def test_as_frame_must_be_a_bool(as_frame, tmp_path):
    with pytest.raises(ValueError, match="as_frame"):
        load_adult(data_home=tmp_path, download_if_missing=False, as_frame=as_frame)


def test_data_norm_still_validated_with_as_frame(tmp_path):
    with pytest.raises(ValueError, match="data_norm"):
        load_adult(data_home=tmp_path, download_if_missing=False, data_norm=-1.0,
                   as_frame=True)
