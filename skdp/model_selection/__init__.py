"""Model selection for private estimators, and what it costs in privacy."""

from ._epsilon_for_utility import EpsilonForUtility
from ._measure import smoothed_accuracy_derivative
from ._privacy_cost import privacy_cost_of_search
from ._public_steps import check_public_preprocessing, is_public_step

__all__ = ["EpsilonForUtility", "check_public_preprocessing", "is_public_step",
           "privacy_cost_of_search", "smoothed_accuracy_derivative"]
