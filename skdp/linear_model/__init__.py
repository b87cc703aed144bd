"""Private linear models."""

from ._dpsgd import DPSGDClassifier
from ._napp import NAPPLasso, NAPPLassoClassifier
from ._objective_perturbation import ObjPertLogisticRegression
from ._output_perturbation import OutputPertSVM
from ._sufficient_statistics import SSPLinearRegression

__all__ = ["DPSGDClassifier", "NAPPLasso", "NAPPLassoClassifier", "ObjPertLogisticRegression",
           "OutputPertSVM", "SSPLinearRegression"]
