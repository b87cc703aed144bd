"""skdp: differentially private empirical risk minimisation for scikit-learn."""

from .exceptions import (ConvergenceError, DataNormWarning, InferenceError, LargeDeltaWarning,
                         NoiseDominanceWarning, PrivacyBudgetError, PrivacyLeakWarning,
                         SampleWeightWarning, UnreachableUtilityWarning)
from .linear_model import (
    DPSGDClassifier,
    NAPPLasso,
    NAPPLassoClassifier,
    ObjPertLogisticRegression,
    OutputPertSVM,
    SSPLinearRegression,
)
from .model_selection import (AnalyticEpsilonForUtility, EpsilonForUtility, PrivacyLedger,
                              PrivateGridSearchCV, PrivateRandomizedSearchCV)

__version__ = "0.1.0.dev0"

__all__ = [
    "AnalyticEpsilonForUtility",
    "ConvergenceError",
    "DPSGDClassifier",
    "DataNormWarning",
    "EpsilonForUtility",
    "InferenceError",
    "LargeDeltaWarning",
    "NAPPLasso",
    "NAPPLassoClassifier",
    "NoiseDominanceWarning",
    "ObjPertLogisticRegression",
    "OutputPertSVM",
    "PrivacyBudgetError",
    "PrivacyLeakWarning",
    "PrivacyLedger",
    "PrivateGridSearchCV",
    "PrivateRandomizedSearchCV",
    "SSPLinearRegression",
    "SampleWeightWarning",
    "UnreachableUtilityWarning",
    "__version__",
]
