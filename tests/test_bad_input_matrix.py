"""Bad input over every public estimator: a clear error, raised before any noise is drawn.

Each case passes a ``numpy.random.Generator`` as ``random_state`` and checks that its
state is unchanged after the error, so no noise (and no budget) was spent.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError
from sklearn.utils import get_tags

from skdp import (
    DPSGDClassifier,
    EpsilonForUtility,
    NAPPLasso,
    NAPPLassoClassifier,
    ObjPertLogisticRegression,
    OutputPertSVM,
    SSPLinearRegression,
)

RNG_DATA = np.random.default_rng(0)
X_OK = RNG_DATA.normal(size=(40, 3)) / 3
Y_CLASS = np.arange(40) % 2
Y_REG = X_OK @ [1.0, -2.0, 0.5]

ESTIMATORS = {
    "ObjPertLogisticRegression": lambda **p: ObjPertLogisticRegression(**p),
    "OutputPertSVM": lambda **p: OutputPertSVM(**p),
    "DPSGDClassifier": lambda **p: DPSGDClassifier(**p),
    "NAPPLasso": lambda **p: NAPPLasso(**{"y_bound": 5.0, "coef_bound": 10.0, **p}),
    "NAPPLassoClassifier": lambda **p: NAPPLassoClassifier(**p),
    "SSPLinearRegression": lambda **p: SSPLinearRegression(**{"y_bound": 5.0, **p}),
}
REGRESSORS = ("NAPPLasso", "SSPLinearRegression")


def _with(X=None, **changes):
    """A copy of the good design with ``changes`` at (row, column) positions."""
    X = X_OK.copy() if X is None else X
    for (i, j), value in changes.get("cells", {}).items():
        X[i, j] = value
    return X


# name, constructor parameters, X, y (None: the estimator's good target), error, message
DATA_CASES = [
    ("NaN in X", {}, _with(cells={(3, 1): np.nan}), None, ValueError, "NaN"),
    ("inf in X", {}, _with(cells={(0, 0): np.inf}), None, ValueError, "infinity"),
    ("-inf in X", {}, _with(cells={(5, 2): -np.inf}), None, ValueError, "infinity"),
    ("empty X", {}, np.empty((0, 3)), np.empty(0), ValueError, "0 sample"),
    ("no features", {}, np.empty((40, 0)), None, ValueError, "0 feature"),
    ("1-d X", {}, X_OK[:, 0], None, ValueError, "2D array"),
    ("3-d X", {}, X_OK[:, :, None], None, ValueError, "dim 3"),
    ("lengths differ", {}, X_OK, "short", ValueError, "inconsistent numbers of samples"),
    ("string features", {}, np.full((40, 3), "a", dtype=object), None, ValueError,
     "could not convert"),
    ("complex features", {}, X_OK + 1j, None, ValueError, "[Cc]omplex"),
    ("NaN in y", {}, X_OK, "nan", ValueError, "NaN"),
    ("2-column y", {}, X_OK, "two-columns", ValueError, "shape|1d|column"),
]
PARAM_CASES = [
    ("epsilon zero", {"epsilon": 0.0}, ValueError, "'epsilon'"),
    ("epsilon negative", {"epsilon": -1.0}, ValueError, "'epsilon'"),
    ("epsilon NaN", {"epsilon": np.nan}, ValueError, "'epsilon'"),
    ("epsilon string", {"epsilon": "1"}, TypeError, "'epsilon'"),
    ("epsilon None", {"epsilon": None}, ValueError, "'epsilon'"),
    ("delta one", {"delta": 1.0}, ValueError, "'delta'"),
    ("delta above one", {"delta": 1.5}, ValueError, "'delta'"),
    ("delta negative", {"delta": -1e-6}, ValueError, "'delta'"),
    ("delta NaN", {"delta": np.nan}, ValueError, "'delta'"),
    ("delta string", {"delta": "0"}, TypeError, "'delta'"),
    ("data_norm zero", {"data_norm": 0.0}, ValueError, "'data_norm'"),
    ("data_norm negative", {"data_norm": -1.0}, ValueError, "'data_norm'"),
    ("data_norm None", {"data_norm": None}, ValueError, "data_norm"),
    ("data_norm string", {"data_norm": "1"}, TypeError, "'data_norm'"),
    ("random_state string", {"random_state": "seed"}, ValueError, "random_state"),
]
CLASSIFIER_CASES = [
    ("single class", np.zeros(40), ValueError, "class"),
    ("continuous target", np.linspace(0, 1, 40), ValueError, "Unknown label type|continuous"),
]
SPECIFIC_CASES = {
    "ObjPertLogisticRegression": [
        ("huber_h zero", {"loss": "huber", "huber_h": 0.0}, "'huber_h'"),
        ("hinge loss (no Hessian)", {"loss": "hinge"}, "'loss'"),
        ("eps_jacobian_frac one", {"eps_jacobian_frac": 1.0}, "'eps_jacobian_frac'"),
        ("unknown relation", {"neighboring": "swap"}, "'neighboring'"),
        ("C zero", {"C": 0.0}, "'C'"),
        ("max_iter zero", {"max_iter": 0}, "'max_iter'"),
        ("tol above its bound", {"tol": 1e-3}, "'tol'"),
    ],
    "OutputPertSVM": [
        ("unknown kernel", {"kernel": "poly"}, "'kernel'"),
        ("gamma zero", {"kernel": "rbf", "gamma": 0.0}, "'gamma'"),
        ("no random features", {"kernel": "rbf", "n_components": 0}, "'n_components'"),
        ("C negative", {"C": -1.0}, "'C'"),
        ("unknown relation", {"neighboring": "swap"}, "'neighboring'"),
        ("squared loss", {"loss": "squared"}, "'loss'"),
        ("huber_h zero", {"loss": "huber", "huber_h": 0.0}, "'huber_h'"),
        ("max_iter zero", {"max_iter": 0}, "'max_iter'"),
        ("tol zero", {"tol": 0.0}, "'tol'"),
        ("tol one", {"tol": 1.0}, "'tol'"),
        ("gamma 'scale'", {"kernel": "rbf", "gamma": "scale"}, "'gamma'"),
        ("n_components float", {"kernel": "rbf", "n_components": 10.5}, "'n_components'"),
        ("feature seed string", {"kernel": "rbf", "feature_random_state": "a"},
         "'feature_random_state'"),
        ("Laplace noise with delta", {"noise": "laplace", "delta": 1e-5}, "delta=0"),
        ("unknown noise", {"noise": "gamma"}, "'noise'"),
    ],
    "DPSGDClassifier": [
        ("delta zero (pure DP impossible)", {"delta": 0.0}, "delta > 0"),
        ("sampling rate above one", {"sample_rate": 1.5}, "'sample_rate'"),
        ("max_grad_norm zero", {"max_grad_norm": 0.0}, "'max_grad_norm'"),
        ("learning_rate negative", {"learning_rate": -0.1}, "'learning_rate'"),
        ("epochs zero", {"epochs": 0}, "'epochs'"),
        ("epsilon too small for the training length", {"epsilon": 1e-7},
         "too small for this training length"),
    ],
    "NAPPLasso": [
        ("y_bound missing", {"y_bound": None}, "y_bound"),
        ("coef_bound missing", {"coef_bound": None}, "coef_bound"),
        ("bridge q outside (1, 2]", {"penalty": "bridge", "q": 2.5}, "'q'|q"),
        ("bridge q = 1", {"penalty": "bridge", "q": 1.0}, "'q'"),
        ("eps_jacobian_frac zero", {"eps_jacobian_frac": 0.0}, "eps_jacobian_frac"),
        ("poisson without coef_bound", {"loss": "poisson", "coef_bound": None}, "coef_bound"),
        ("poisson without y_bound", {"loss": "poisson", "y_bound": None}, "y_bound"),
        ("poisson with negative y", {"loss": "poisson"}, "negative"),
        ("y_bound zero", {"y_bound": 0.0}, "'y_bound'"),
        ("logistic loss (the classifier's)", {"loss": "logistic"}, "'loss'"),
    ],
    "NAPPLassoClassifier": [
        ("eps_jacobian_frac one", {"eps_jacobian_frac": 1.0}, "eps_jacobian_frac"),
        ("eps_jacobian_frac 1.5", {"eps_jacobian_frac": 1.5}, "'eps_jacobian_frac'"),
        ("unknown penalty", {"penalty": "l0"}, "'penalty'"),
        ("alpha negative", {"alpha": -1.0}, "'alpha'"),
        ("bridge q = 0.5", {"penalty": "bridge", "q": 0.5, "coef_bound": 5.0}, "'q'"),
        ("bridge without coef_bound", {"penalty": "bridge"}, "coef_bound"),
        ("l1_ratio above 1", {"penalty": "elasticnet", "l1_ratio": 1.5}, "'l1_ratio'"),
        ("stage1_frac 1", {"adaptive_two_stage": True, "stage1_frac": 1.0}, "'stage1_frac'"),
        ("exact moment too few rows", {"augmentation": "exact_moment", "n_aug": 4}, "n_aug"),
        ("negative threshold", {"threshold": -1.0}, "'threshold'"),
        ("coef_bound zero", {"coef_bound": 0.0}, "'coef_bound'"),
        ("max_iter zero", {"max_iter": 0}, "'max_iter'"),
    ],
    "SSPLinearRegression": [
        ("y_bound missing", {"y_bound": None}, "y_bound"),
        ("y_bound zero", {"y_bound": 0.0}, "'y_bound'"),
        ("alpha negative", {"alpha": -1.0}, "'alpha'"),
        ("alpha string", {"alpha": "large"}, "'alpha'"),
        ("unknown relation", {"neighboring": "swap"}, "'neighboring'"),
        ("max_rows_per_group zero", {"max_rows_per_group": 0.0}, "'max_rows_per_group'"),
    ],
}


def _target(name, y):
    regressor = name in REGRESSORS
    good = Y_REG if regressor else Y_CLASS
    if y is None:
        return good
    if isinstance(y, str):
        return {"short": good[:-1], "nan": np.where(np.arange(40) == 7, np.nan, good),
                "two-columns": np.column_stack([good, good])}[y]
    return y


def _cases():
    for name in ESTIMATORS:
        for case, params, X, y, error, match in DATA_CASES:
            yield pytest.param(name, params, X, y, error, match, id=f"{name}-{case}")
        for case, params, error, match in PARAM_CASES:
            if name == "DPSGDClassifier" and case == "data_norm None":
                continue  # DP-SGD's privacy comes from clipping gradients, not from data_norm
            yield pytest.param(name, params, X_OK, None, error, match, id=f"{name}-{case}")
        if name not in REGRESSORS:
            for case, y, error, match in CLASSIFIER_CASES:
                yield pytest.param(name, {}, X_OK, y, error, match, id=f"{name}-{case}")
                # the private bound's stream (from the same Generator) comes after too
                yield pytest.param(name, {"data_norm": "private"}, X_OK, y, error, match,
                                   id=f"{name}-{case}, private data_norm")
        yield pytest.param(name, {"data_norm": "private"}, _with(cells={(3, 1): np.nan}), None,
                           ValueError, "NaN", id=f"{name}-NaN in X, private data_norm")
        for case, params, match in SPECIFIC_CASES[name]:
            yield pytest.param(name, params, X_OK, None, (ValueError, TypeError), match,
                               id=f"{name}-{case}")


ALL_CASES = list(_cases())


@pytest.mark.parametrize("name, params, X, y, error, match", ALL_CASES)
def test_bad_input_raises_before_noise(name, params, X, y, error, match):
    rng = np.random.default_rng(42)
    before = rng.bit_generator.state
    estimator = ESTIMATORS[name](random_state=rng, **params) if "random_state" not in params \
        else ESTIMATORS[name](**params)
    with pytest.raises(error, match=match):
        estimator.fit(X, _target(name, y))
    assert rng.bit_generator.state == before, "noise was drawn before the error"


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_sparse_input_where_unsupported(name):
    estimator = ESTIMATORS[name](random_state=0)
    X = sp.csr_matrix(X_OK)
    if get_tags(estimator).input_tags.sparse:
        estimator.fit(X, _target(name, None))
    else:
        with pytest.raises(TypeError, match="[Ss]parse"):
            estimator.fit(X, _target(name, None))


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_predict_side(name):
    estimator = ESTIMATORS[name](random_state=0, epsilon=np.inf)
    with pytest.raises(NotFittedError):
        estimator.predict(X_OK)
    estimator.fit(X_OK, _target(name, None))
    with pytest.raises(ValueError, match="features"):
        estimator.predict(X_OK[:, :2])


META_CASES = [
    ("target string", {"target_utility": "high"}, TypeError, "'target_utility'"),
    ("no draws", {"n_draws": 0, "analytic": True}, ValueError, "'n_draws'"),
    ("negative measuring epsilon", {"measuring_epsilon": -1.0, "analytic": True}, ValueError,
     "'measuring_epsilon'"),
    ("bounds reversed", {"epsilon_bounds": (5.0, 1.0), "analytic": True}, ValueError,
     "epsilon_bounds"),
    ("unknown expansion", {"expansion": "cubic", "analytic": True}, ValueError, "'expansion'"),
    ("max_fits too small", {"max_fits": 2, "n_draws": 2, "analytic": True}, ValueError,
     "max_fits"),
    ("unknown scorer", {"scoring": "auc", "analytic": True}, ValueError, "'scoring'"),
    ("non-private estimator", {"estimator": "sklearn"}, ValueError, "'epsilon' parameter"),
    ("negative cap", {"epsilon_max": -1.0}, ValueError, "'epsilon_max'"),
    ("unknown steering", {"steering": "oracle"}, ValueError, "'steering'"),
    ("scaler fitted on private rows", {"estimator": "scaler pipeline"}, ValueError,
     "StandardScaler"),
    ("sampled rungs with the slow accountant", {"estimator": "dpsgd pld"}, ValueError,
     "accountant"),
    ("NaN target", {"target_utility": float("nan")}, ValueError, "target_utility"),
    ("target above the utility's range", {"target_utility": 1.5}, ValueError,
     "target_utility"),
    ("negative target", {"target_utility": -5.0}, ValueError, "target_utility"),
    ("batch function in a Pipeline", {"estimator": "scale pipeline"}, ValueError,
     "FunctionTransformer"),
    ("research mode", {"estimator": "research"}, ValueError, "no finite epsilon"),
    ("a Pipeline for the analytic method", {"estimator": "scaler pipeline", "analytic": True},
     ValueError, "Pipeline"),
]


@pytest.mark.parametrize("case, params, error, match", META_CASES, ids=[c[0] for c in META_CASES])
def test_epsilon_for_utility_bad_parameters(case, params, error, match):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer, StandardScaler, scale

    from skdp import AnalyticEpsilonForUtility, DPSGDClassifier
    from skdp.research import ResearchNAPPLassoClassifier

    named = {"sklearn": LogisticRegression(), "dpsgd pld": DPSGDClassifier(accountant="pld"),
             "scaler pipeline": make_pipeline(StandardScaler(), ObjPertLogisticRegression()),
             "scale pipeline": make_pipeline(FunctionTransformer(scale),
                                             ObjPertLogisticRegression()),
             "research": ResearchNAPPLassoClassifier()}
    if params.get("estimator") in named:
        params = {**params, "estimator": named[params["estimator"]]}
    params = dict(params)
    search = AnalyticEpsilonForUtility if params.pop("analytic", False) else EpsilonForUtility
    rng = np.random.default_rng(1)
    before = rng.bit_generator.state
    with pytest.raises(error, match=match):
        search(**{"target_utility": 0.8, "random_state": rng, **params}).fit(X_OK, Y_CLASS)
    assert rng.bit_generator.state == before


def test_data_norm_none_message_explains_the_choice():
    with pytest.raises(ValueError, match="public bound") as info:
        ObjPertLogisticRegression(data_norm=None).fit(X_OK, Y_CLASS)
    assert "voids the privacy guarantee" in str(info.value)


def test_missing_bounds_message_explains_the_choice():
    with pytest.raises(ValueError, match="public knowledge") as info:
        NAPPLasso().fit(X_OK, Y_REG)
    message = str(info.value)
    assert "y_bound" in message and "coef_bound" in message


def test_bridge_exponent_outside_range_is_rejected_by_the_penalty_object():
    from skdp.penalties import Bridge
    for q in (0.5, 1.0, 2.5):
        with pytest.raises(ValueError, match="q must be in"):
            Bridge(1.0, q)


def test_matrix_size():
    n = len(ALL_CASES) + 3 * len(ESTIMATORS) + len(META_CASES)
    print(f"bad-input matrix: {n} cases over {len(ESTIMATORS) + 1} estimators")
    assert n >= 40
