"""The only module that imports private scikit-learn API."""

from sklearn.base import _fit_context
from sklearn.model_selection._search import BaseSearchCV
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, _get_feature_names

__all__ = ["_check_sample_weight", "_fit_context", "_get_feature_names", "BaseSearchCV",
           "HasMethods", "Interval", "StrOptions"]
