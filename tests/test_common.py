"""scikit-learn's common estimator checks over every public estimator."""

import inspect

from sklearn.base import BaseEstimator
from sklearn.utils.estimator_checks import parametrize_with_checks

import skdp


def all_estimators():
    """Every public estimator class exported by ``skdp``."""
    return sorted(
        ((name, obj) for name, obj in inspect.getmembers(skdp, inspect.isclass)
         if issubclass(obj, BaseEstimator)),
        key=lambda pair: pair[0],
    )


# Constructor arguments for estimators that need them (meta-estimators).
INIT_PARAMS = {
    # private selection (the default) with a target the check data reach at the first rung
    "EpsilonForUtility": dict(target_utility=0.0, epsilon_start=5.0, tolerance=1.0,
                              random_state=0),
    # a short search: few trials on the checks' small data
    "PrivateGridSearchCV": dict(estimator=skdp.ObjPertLogisticRegression(),
                                param_grid={"C": [0.1, 1.0]}, mean_trials=2.0,
                                random_state=0),
    "PrivateRandomizedSearchCV": dict(estimator=skdp.ObjPertLogisticRegression(),
                                      param_distributions={"C": [0.1, 1.0]}, n_iter=2.0,
                                      random_state=0),
    # the squared loss needs public bounds on |y| and ||theta|| (no defaults on purpose)
    "NAPPLasso": dict(y_bound=10.0, coef_bound=100.0),
}

# Checks that cannot pass because of differential privacy itself, with the reason.
_N_ITER_LEAKS = {
    "check_non_transformer_estimators_n_iter":
        "the solver's iteration count depends on the private data and no guarantee covers "
        "it, so the perturbation estimators do not release n_iter_",
}
_DPSGD_WEIGHTS = {
    "check_sample_weight_equivalence_on_dense_data":
        "a row of weight k is one record, not k copies: it is counted once in the DP row "
        "count that normalises the steps, its gradient is clipped before it is weighted, "
        "and the check's weights (up to 4) are clipped to max_sample_weight=1",
    "check_sample_weight_equivalence_on_sparse_data":
        "as on dense data: weight k is one record, not k copies",
    "check_all_zero_sample_weights_error":
        "the weights are part of the private records: refusing when all are zero would "
        "tell that dataset from its neighbour with one positive weight; the fit releases "
        "noise instead",
    "check_class_weight_classifiers":
        "class weights are clipped to the public max_sample_weight (default 1), as the "
        "noise is scaled to it; the check's weight of 100 would need max_sample_weight=100 "
        "and a hundred times the noise",
}
EXPECTED_FAILED = {
    "DPSGDClassifier": _DPSGD_WEIGHTS,
    "ObjPertLogisticRegression": _N_ITER_LEAKS,
    "OutputPertSVM": _N_ITER_LEAKS,
    "NAPPLasso": _N_ITER_LEAKS,
    "NAPPLassoClassifier": _N_ITER_LEAKS,
}


def _instances():
    return [Est(**INIT_PARAMS.get(name, {})) for name, Est in all_estimators()] + [
        # the analytic mode too: one draw per measuring point to keep the checks fast
        skdp.EpsilonForUtility(selection="analytic", target_utility=0.99, n_draws=1,
                               random_state=0)]


@parametrize_with_checks(_instances(),
                         expected_failed_checks=lambda e: EXPECTED_FAILED.get(type(e).__name__, {}))
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_every_public_estimator_is_checked():
    names = {name for name, _ in all_estimators()}
    assert "ObjPertLogisticRegression" in names
