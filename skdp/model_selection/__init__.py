"""Model selection for private estimators, and what it costs in privacy."""

from ._epsilon_for_utility import EpsilonForUtility
from ._measure import smoothed_accuracy_derivative
from ._privacy_cost import privacy_cost_of_search

__all__ = ["EpsilonForUtility", "privacy_cost_of_search", "smoothed_accuracy_derivative"]
