"""The one decision of which preprocessing steps learn nothing from the rows."""

import numpy as np
import pytest
import scipy.special
from sklearn.base import clone
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.decomposition import PCA
from sklearn.impute import SimpleImputer
from sklearn.pipeline import FeatureUnion, Pipeline, make_pipeline
from sklearn.preprocessing import (Binarizer, FunctionTransformer, KBinsDiscretizer,
                                   MaxAbsScaler, MinMaxScaler, Normalizer, OneHotEncoder,
                                   OrdinalEncoder, PolynomialFeatures, SplineTransformer,
                                   StandardScaler, scale)

from skdp.model_selection import check_public_preprocessing, is_public_step
from skdp.preprocessing import BoundedScaler, Clipper

CATS = [["a", "b", "c"]]

PUBLIC = {
    "None": None,
    "passthrough": "passthrough",
    "drop": "drop",
    "Normalizer": Normalizer(),
    "Normalizer l1": Normalizer(norm="l1"),
    "Binarizer": Binarizer(threshold=0.5),
    "PolynomialFeatures": PolynomialFeatures(degree=3, interaction_only=True),
    "BoundedScaler": BoundedScaler(0, 90),
    "BoundedScaler per feature": BoundedScaler([0, 0], [90, 168], feature_range=(-1, 1)),
    "Clipper": Clipper(-np.inf, 5.0),
    "FunctionTransformer identity": FunctionTransformer(),
    "FunctionTransformer log1p": FunctionTransformer(np.log1p),
    "FunctionTransformer abs": FunctionTransformer(np.abs),
    "FunctionTransformer expit": FunctionTransformer(scipy.special.expit),
    "FunctionTransformer inverse ufunc": FunctionTransformer(np.log1p, np.expm1),
    "FunctionTransformer inverse not called": FunctionTransformer(
        np.log1p, lambda X: np.expm1(X), check_inverse=False),
    "FunctionTransformer empty kw_args": FunctionTransformer(np.log1p, kw_args={}),
    "OneHotEncoder declared": OneHotEncoder(categories=CATS),
    "OneHotEncoder drop first": OneHotEncoder(categories=CATS, drop="first"),
    "OneHotEncoder drop if_binary": OneHotEncoder(categories=[["a", "b"]], drop="if_binary"),
    "OneHotEncoder ignore": OneHotEncoder(categories=CATS, handle_unknown="ignore"),
    "OneHotEncoder warn": OneHotEncoder(categories=CATS, handle_unknown="warn"),
    "OneHotEncoder infrequent_if_exist": OneHotEncoder(
        categories=CATS, handle_unknown="infrequent_if_exist"),
    "OrdinalEncoder declared": OrdinalEncoder(categories=CATS),
    "OrdinalEncoder unknown value": OrdinalEncoder(
        categories=CATS, handle_unknown="use_encoded_value", unknown_value=-1,
        encoded_missing_value=-2),
    "SimpleImputer constant": SimpleImputer(strategy="constant", fill_value=0.0,
                                            keep_empty_features=True),
    "Pipeline": make_pipeline(Clipper(0, 1), "passthrough", Normalizer()),
    "FeatureUnion": FeatureUnion([("raw", "passthrough"), ("poly", PolynomialFeatures()),
                                  ("gone", "drop")]),
    "ColumnTransformer (the user guide's)": ColumnTransformer([
        ("cat", OneHotEncoder(categories=[["a", "b"]]), [0]),
        ("num", BoundedScaler(0, 90), [1])]),
    "ColumnTransformer dense always": ColumnTransformer([
        ("cat", OneHotEncoder(categories=CATS, handle_unknown="ignore"), ["c"]),
        ("num", Normalizer(), slice(1, 3))], remainder="passthrough", sparse_threshold=0),
    "ColumnTransformer dense encoder": ColumnTransformer([
        ("cat", OneHotEncoder(categories=CATS, sparse_output=False, drop="first"), ["c"]),
        ("ord", OrdinalEncoder(categories=CATS), [True, False, False]),
        ("num", make_pipeline(Clipper(0, 1), "passthrough"), ["x"])]),
    "ColumnTransformer name selector": ColumnTransformer([
        ("num", BoundedScaler(0, 1), make_column_selector(pattern="^x"))]),
    "nested": make_pipeline(
        ColumnTransformer([("num", make_pipeline(BoundedScaler(0, 1),
                                                 FunctionTransformer(np.sqrt)), [0])],
                          remainder=Clipper(0, 1), sparse_threshold=0),
        FeatureUnion([("n", Normalizer()), ("b", Binarizer())])),
}


class Normalizer_(Normalizer):
    """A subclass of sklearn's Normalizer whose fit learns the column means."""

    def fit(self, X, y=None):
        self.mean_ = np.mean(X, axis=0)
        return super().fit(X, y)


def _user_class_named_normalizer():
    class Normalizer(StandardScaler):           # noqa: D101 - the attack: a familiar name
        pass
    return Normalizer()


def _instance_replacing_fit():
    step = Normalizer()
    step.fit = lambda X, y=None: step
    return step


REFUSED = {
    # the attack: scale() standardises each column with its mean and deviation
    "FunctionTransformer(scale)": (FunctionTransformer(scale), "arbitrary callable"),
    "FunctionTransformer lambda": (FunctionTransformer(lambda X: X - X.mean(0)),
                                   "arbitrary callable"),
    "FunctionTransformer frompyfunc": (
        FunctionTransformer(np.frompyfunc(lambda v: v, 1, 1)), "arbitrary callable"),
    "FunctionTransformer kw_args": (FunctionTransformer(np.add, kw_args={"x2": 1.0}),
                                    "kw_args"),
    "FunctionTransformer inverse called in fit": (
        FunctionTransformer(np.log1p, lambda X: np.expm1(X)), "check_inverse"),
    "FunctionTransformer inverse kw_args": (
        FunctionTransformer(np.log1p, np.expm1, inv_kw_args={"out": None}),
        "check_inverse"),
    "user class named Normalizer": (_user_class_named_normalizer(), "exact type"),
    "subclass of Normalizer": (Normalizer_(), "exact type"),
    "instance replacing fit": (_instance_replacing_fit(), r"replaces the methods \['fit'\]"),
    "StandardScaler": (StandardScaler(), "not one of the steps"),
    "MinMaxScaler": (MinMaxScaler(), "not one of the steps"),
    "MaxAbsScaler": (MaxAbsScaler(), "not one of the steps"),
    "PCA": (PCA(), "not one of the steps"),
    "SplineTransformer": (SplineTransformer(), "not one of the steps"),
    "KBinsDiscretizer": (KBinsDiscretizer(), "not one of the steps"),
    "OneHotEncoder auto": (OneHotEncoder(), "categories='auto'"),
    "OneHotEncoder min_frequency": (OneHotEncoder(categories=CATS, min_frequency=5),
                                    "min_frequency"),
    "OneHotEncoder max_categories": (OneHotEncoder(categories=CATS, max_categories=2),
                                     "max_categories"),
    "OrdinalEncoder auto": (OrdinalEncoder(), "categories='auto'"),
    "OrdinalEncoder min_frequency": (OrdinalEncoder(categories=CATS, min_frequency=0.1),
                                     "min_frequency"),
    "SimpleImputer mean": (SimpleImputer(), "strategy='mean'"),
    "SimpleImputer callable": (SimpleImputer(strategy=np.nanmedian), "strategy="),
    "SimpleImputer drops empty columns": (SimpleImputer(strategy="constant"),
                                          "keep_empty_features=True"),
    "SimpleImputer indicator": (SimpleImputer(strategy="constant", keep_empty_features=True,
                                              add_indicator=True), "add_indicator"),
    "Pipeline with a scaler": (make_pipeline(Normalizer(), StandardScaler()),
                               r"step 'standardscaler' \(StandardScaler\)"),
    "FeatureUnion with PCA": (FeatureUnion([("pca", PCA(1))]),
                              r"transformer 'pca' \(PCA\)"),
    "ColumnTransformer with a leaky block": (
        ColumnTransformer([("num", StandardScaler(), [0])]),
        r"transformer 'num' \(StandardScaler\)"),
    "ColumnTransformer with a leaky remainder": (
        ColumnTransformer([("num", BoundedScaler(0, 1), [0])], remainder=MinMaxScaler()),
        r"transformer 'remainder' \(MinMaxScaler\)"),
    "ColumnTransformer callable selector": (
        ColumnTransformer([("num", BoundedScaler(0, 1), lambda X: [0])]),
        "callable"),
    # the share of non-zeros of these blocks depends on the rows: sparse_output_ would too
    "ColumnTransformer sparse choice, passthrough": (
        ColumnTransformer([("cat", OneHotEncoder(categories=CATS), [0])],
                          remainder="passthrough"), "sparse_threshold=0"),
    "ColumnTransformer sparse choice, unknown ignored": (
        ColumnTransformer([("cat", OneHotEncoder(categories=CATS, handle_unknown="ignore"),
                            [0])]), "sparse_threshold=0"),
    "ColumnTransformer sparse choice, dropped category": (
        ColumnTransformer([("cat", OneHotEncoder(categories=CATS, drop="first"), [0])]),
        "sparse_threshold=0"),
    "nested leak": (make_pipeline(ColumnTransformer([
        ("num", make_pipeline(Clipper(0, 1), PCA(1)), [0, 1])], sparse_threshold=0)),
        r"transformer 'num' \(Pipeline\) > step 'pca' \(PCA\)"),
}


@pytest.mark.parametrize("step", PUBLIC.values(), ids=PUBLIC.keys())
def test_public_steps_are_accepted(step):
    check_public_preprocessing(step)
    assert is_public_step(step)


@pytest.mark.parametrize("step, match", REFUSED.values(), ids=REFUSED.keys())
def test_other_steps_are_refused_with_the_remedy(step, match):
    assert not is_public_step(step)
    with pytest.raises(ValueError, match=match) as error:
        check_public_preprocessing(step, name="Pipeline step 'prep'")
    message = str(error.value)
    assert message.startswith("Pipeline step 'prep' (")
    assert "outside any privacy guarantee" in message
    for remedy in ("skdp.preprocessing.BoundedScaler", "OneHotEncoder(categories=",
                   "strategy='constant'"):
        assert remedy in message


def test_the_attacked_steps_are_refused():
    """The steps of the attack finding, each by what actually decides: type and params."""
    assert type(_user_class_named_normalizer()).__name__ == "Normalizer"
    for step in (FunctionTransformer(scale), _user_class_named_normalizer(), Normalizer_(),
                 OneHotEncoder()):
        assert not is_public_step(step)
    assert is_public_step(ColumnTransformer([
        ("cat", OneHotEncoder(categories=[["a", "b"]]), [0]),
        ("num", BoundedScaler(0, 90), [1])]))


FIT_DATA = {
    "Pipeline": np.array([[0.2, 0.5], [0.9, 0.1]]),
    "ColumnTransformer (the user guide's)": np.array([["a", 30.0], ["b", 95.0]],
                                                     dtype=object),
    "nested": np.array([[0.2, 0.5], [0.9, 0.1]]),
    "OneHotEncoder declared": np.array([["a"], ["c"]], dtype=object),
}


@pytest.mark.parametrize("key", FIT_DATA)
def test_fitted_steps_stay_public(key):
    """A fitted step (as privacy_cost_of_search sees a list of fitted Pipelines) keeps
    its parameters; its fitted attributes do not make it look like something else."""
    step = PUBLIC[key]
    fitted = clone(step).fit(FIT_DATA[key])
    assert is_public_step(fitted)


def test_the_user_guide_column_transformer_output_is_dense_whatever_the_rows():
    """Why its default sparse_threshold is accepted: the share of non-zeros is fixed."""
    step = PUBLIC["ColumnTransformer (the user guide's)"]
    rng = np.random.default_rng(0)
    for _ in range(5):
        X = np.array([[rng.choice(["a", "b"]), rng.choice([0.0, 45.0])] for _ in range(20)],
                     dtype=object)
        assert clone(step).fit(X).sparse_output_ is False


def test_the_sparse_choice_of_a_refused_column_transformer_does_depend_on_the_rows():
    """The premise of refusing them: one changed row flips sparse_output_."""
    step = ColumnTransformer([("cat", OneHotEncoder(categories=[[0.0, 1.0]],
                                                    handle_unknown="ignore"), [0])],
                             sparse_threshold=0.5)
    assert not is_public_step(step)
    X = np.array([[0.0], [1.0], [1.0], [0.0]])
    assert step.fit(X).sparse_output_ is False        # density 1/2
    X[3] = 7.0                                        # an unknown category: no 1 in its row
    assert step.fit(X).sparse_output_ is True         # density 3/8


def test_name_defaults_to_step():
    with pytest.raises(ValueError, match=r"^step \(StandardScaler\) would be fitted"):
        check_public_preprocessing(StandardScaler())


def test_refuses_a_pipeline_subclass():
    class MyPipeline(Pipeline):
        pass

    assert not is_public_step(MyPipeline([("n", Normalizer())]))


NUMERIC = ["Normalizer", "Binarizer", "PolynomialFeatures", "BoundedScaler", "Clipper",
           "FunctionTransformer log1p", "FunctionTransformer inverse ufunc",
           "SimpleImputer constant", "Pipeline", "FeatureUnion", "nested"]


def _fitted_output(step, X, probe):
    out = clone(step).fit(X).transform(probe)
    return out.toarray() if hasattr(out, "toarray") else np.asarray(out, dtype=float)


@pytest.mark.parametrize("key", NUMERIC)
def test_accepted_steps_learn_nothing_from_the_values(key, seed):
    """Fitted on two datasets of the same shape, an accepted step transforms new rows
    alike (for the imputer, the second has a column missing in every row)."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.0, 1.0, size=(30, 2))
    b = rng.uniform(0.0, 50.0, size=(30, 2))
    probe = rng.uniform(0.0, 2.0, size=(5, 2))
    if key == "SimpleImputer constant":
        b[:, 1] = probe[0, 1] = np.nan
    np.testing.assert_array_equal(_fitted_output(PUBLIC[key], a, probe),
                                  _fitted_output(PUBLIC[key], b, probe))


def test_the_refused_imputer_does_learn_from_the_rows():
    """The premise of keep_empty_features=True: without it a column missing in every
    row is dropped, so the output's width reveals it."""
    X = np.array([[1.0, np.nan], [2.0, np.nan]])
    refused = SimpleImputer(strategy="constant")
    with pytest.warns(UserWarning, match="Skipping features"):
        assert refused.fit(X).transform(X).shape == (2, 1)
    X[0, 1] = 3.0
    assert refused.fit(X).transform(X).shape == (2, 2)


@pytest.mark.parametrize("key", ["OneHotEncoder declared", "OneHotEncoder ignore",
                                 "OrdinalEncoder declared", "OneHotEncoder drop first"])
def test_declared_encoders_learn_nothing_from_the_values(key):
    few = np.array([["a"], ["a"]], dtype=object)
    other = np.array([["b"], ["c"]], dtype=object)
    probe = np.array([["c"], ["a"], ["b"]], dtype=object)
    np.testing.assert_array_equal(_fitted_output(PUBLIC[key], few, probe),
                                  _fitted_output(PUBLIC[key], other, probe))
