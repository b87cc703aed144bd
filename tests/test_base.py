"""The private-estimator contract: privacy tags, fit_release and with_coefficients."""

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.datasets import make_classification
from sklearn.utils import get_tags

from skdp import (
    AnalyticEpsilonForUtility,
    DPSGDClassifier,
    NAPPLassoClassifier,
    ObjPertLogisticRegression,
    OutputPertSVM,
)
from skdp.base import (EpsilonRelease, PrivacyTags, PrivateTags, get_privacy_tags,
                       with_privacy_tags)
from skdp.model_selection._measure import _scorer_derivative, smoothed_accuracy_derivative
from skdp.research import ResearchNAPPLasso, ResearchNAPPLassoClassifier

X, y = make_classification(n_samples=400, n_features=4, n_informative=2, n_redundant=0,
                           random_state=0)
X /= np.linalg.norm(X, axis=1).max()

ESTIMATORS = [
    (ObjPertLogisticRegression(C=1.0, random_state=0), "log"),
    (OutputPertSVM(C=0.5, random_state=0), "inverse"),
    (DPSGDClassifier(epochs=3, learning_rate=4.0, random_state=0), "inverse"),
    (NAPPLassoClassifier(alpha=1.0, random_state=0), "log"),
]


@pytest.mark.parametrize("estimator, expansion", ESTIMATORS,
                         ids=lambda e: type(e).__name__ if not isinstance(e, str) else e)
def test_every_estimator_declares_its_privacy_tags(estimator, expansion):
    tags = get_tags(estimator)
    assert isinstance(tags, PrivateTags)
    assert tags.privacy_tags == PrivacyTags(epsilon_derivative=True,
                                            epsilon_expansion=expansion)


def test_configurations_without_a_derivative_say_so_in_their_tags():
    for estimator in (NAPPLassoClassifier(adaptive_two_stage=True),
                      ResearchNAPPLassoClassifier(research_mode="moor"),
                      ResearchNAPPLasso(research_mode="vs_plus", y_bound=1.0, coef_bound=1.0)):
        assert not get_privacy_tags(estimator).epsilon_derivative
        with pytest.raises(NotImplementedError, match="no derivative in epsilon"):
            clone(estimator).fit_release(X, y)


def test_estimators_that_declare_nothing_get_the_defaults():
    from sklearn.linear_model import LogisticRegression

    assert get_privacy_tags(LogisticRegression()) == PrivacyTags()
    assert PrivacyTags() == PrivacyTags(epsilon_derivative=False, epsilon_expansion="inverse")


@pytest.mark.parametrize("estimator, expansion", ESTIMATORS,
                         ids=lambda e: type(e).__name__ if not isinstance(e, str) else e)
def test_fit_release_is_fit_plus_the_derivative(estimator, expansion):
    fitted = clone(estimator).fit(X, y)
    released = clone(estimator)
    release = released.fit_release(X, y)
    assert isinstance(release, EpsilonRelease)
    # the same seed: the same fit, and the release holds exactly the fitted coefficients
    assert_array_equal(release.coef, fitted.coef_)
    assert_array_equal(release.intercept, fitted.intercept_)
    assert_array_equal(released.coef_, fitted.coef_)
    assert released.epsilon_spent_ == fitted.epsilon_spent_
    assert release.coef_derivative.shape == fitted.coef_.shape
    assert release.intercept_derivative.shape == np.shape(fitted.intercept_)
    assert np.any(release.coef_derivative != 0)


def test_with_coefficients_copies_and_leaves_the_model_alone():
    model = ObjPertLogisticRegression(random_state=0).fit(X, y)
    coef, intercept = model.coef_.copy(), model.intercept_.copy()
    moved = model.with_coefficients(np.ones_like(coef), [2.0])
    assert moved is not model
    assert_array_equal(moved.coef_, np.ones_like(coef))
    assert_array_equal(moved.intercept_, [2.0])
    assert_array_equal(model.coef_, coef)
    assert_array_equal(model.intercept_, intercept)
    # the decision function of the copy (rows inside the norm ball: not clipped)
    assert_array_equal(moved.decision_function(X[:3]), X[:3] @ np.ones(4) + 2.0)


def test_derivatives_of_utility_never_write_into_the_fitted_model():
    model = ObjPertLogisticRegression(C=1.0, random_state=0)
    release = model.fit_release(X, y)
    before = {k: v for k, v in vars(model).items()}
    coef = model.coef_.copy()
    smoothed_accuracy_derivative(model, X, y, release.coef_derivative,
                                 release.intercept_derivative)
    from sklearn.metrics import check_scoring

    _scorer_derivative(check_scoring(model, "neg_log_loss"), model, X, y,
                       release.coef_derivative, release.intercept_derivative)
    assert {k: id(v) for k, v in vars(model).items()} == {k: id(v) for k, v in before.items()}
    assert_array_equal(model.coef_, coef)


class _ThirdPartyMeanClassifier(ClassifierMixin, BaseEstimator):
    """A toy private linear classifier outside skdp that implements the contract.

    ``coef_`` is the mean of ``y_i x_i`` over rows of norm at most 1 (add/remove:
    sensitivity about ``2 / n``, ignored here: the test is about the protocol) plus
    Gaussian noise of scale ``1 / (n epsilon)``; with the standard normal draw held
    fixed its derivative in epsilon is ``-noise / epsilon``.
    """

    def __init__(self, epsilon=1.0, random_state=None):
        self.epsilon = epsilon
        self.random_state = random_state

    def __sklearn_tags__(self):
        return with_privacy_tags(super().__sklearn_tags__(),
                                 PrivacyTags(epsilon_derivative=True,
                                             epsilon_expansion="inverse"))

    def fit_release(self, X, y):
        self.classes_ = np.unique(y)
        signs = np.where(y == self.classes_[1], 1.0, -1.0)
        z = np.random.default_rng(self.random_state).standard_normal(X.shape[1])
        noise = z / (len(y) * self.epsilon)
        self.coef_ = (signs @ X / len(y) + noise)[None, :]
        self.intercept_ = np.zeros(1)
        self.epsilon_spent_, self.delta_spent_ = float(self.epsilon), 0.0
        self.release_calls_ = getattr(self, "release_calls_", 0) + 1
        return EpsilonRelease(self.coef_.copy(), self.intercept_.copy(),
                              (-noise / self.epsilon)[None, :], np.zeros(1))

    def fit(self, X, y):
        self.fit_release(X, y)
        return self

    def with_coefficients(self, coef, intercept):
        model = clone(self)
        model.classes_ = self.classes_
        model.coef_, model.intercept_ = np.asarray(coef), np.asarray(intercept)
        return model

    def decision_function(self, X):
        return (X @ self.coef_.T + self.intercept_).ravel()

    def predict(self, X):
        return self.classes_[(self.decision_function(X) > 0).astype(int)]


@pytest.mark.filterwarnings("ignore::skdp.UnreachableUtilityWarning")
def test_a_third_party_estimator_takes_the_analytic_path():
    search = AnalyticEpsilonForUtility(_ThirdPartyMeanClassifier(), target_utility=0.8, n_draws=2,
                                       measuring_epsilon=(0.5, 2.0), random_state=0).fit(X, y)
    purposes = [f["purpose"] for f in search.privacy_report_["fits"]]
    # one fit per draw (no common-noise reruns) plus the refit; the draws compose
    assert purposes == ["measure"] * 4 + ["refit (released model)"]
    assert np.isfinite(search.privacy_report_["total_epsilon"])
    assert all(np.isfinite(m["derivative"]) for m in search.measurements_)
    assert search.expansion_ == "inverse"


def test_the_derivatives_are_not_private():
    """Documented: for pure output perturbation the noise is ``-epsilon`` times the
    derivative, so a release together with its derivative gives back the non-private
    minimiser. Only the fitted model may be published."""
    release = OutputPertSVM(epsilon=1.0, C=0.5, random_state=0).fit_release(X, y)
    recovered = release.coef + 1.0 * release.coef_derivative
    exact = OutputPertSVM(epsilon=np.inf, C=0.5).fit(X, y)
    np.testing.assert_allclose(recovered, exact.coef_, atol=1e-10)
    assert not np.allclose(release.coef, exact.coef_, atol=1e-3)
