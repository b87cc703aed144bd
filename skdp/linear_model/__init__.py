"""Private linear models."""

from ._dpsgd import DPSGDClassifier
from ._objective_perturbation import ObjPertLogisticRegression

__all__ = ["DPSGDClassifier", "ObjPertLogisticRegression"]
