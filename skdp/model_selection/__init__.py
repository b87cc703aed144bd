"""Model selection for private estimators, and what it costs in privacy."""

from ._analytic_epsilon import AnalyticEpsilonForUtility
from ._epsilon_for_utility import EpsilonForUtility
from ._ledger import PrivacyLedger
from ._measure import smoothed_accuracy_derivative
from ._privacy_cost import privacy_cost_of_search
from ._private_search import PrivateGridSearchCV, PrivateRandomizedSearchCV

__all__ = ["AnalyticEpsilonForUtility", "EpsilonForUtility", "PrivacyLedger",
           "PrivateGridSearchCV", "PrivateRandomizedSearchCV", "check_public_preprocessing", "is_public_step", "privacy_cost_of_search",
           "smoothed_accuracy_derivative"]


def __getattr__(name):
    # the checker imports scikit-learn's composite and preprocessing modules: loaded on
    # first use, so that importing skdp stays cheap
    if name in ("check_public_preprocessing", "is_public_step"):
        from . import _public_steps

        return getattr(_public_steps, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
