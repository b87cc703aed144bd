"""skdp: differentially private empirical risk minimisation for scikit-learn."""

from .exceptions import PrivacyBudgetError, PrivacyLeakWarning
from .linear_model import ObjPertLogisticRegression

__version__ = "0.1.0.dev0"

__all__ = [
    "ObjPertLogisticRegression",
    "PrivacyBudgetError",
    "PrivacyLeakWarning",
    "__version__",
]
