"""Private linear models."""

from ._dpsgd import DPSGDClassifier
from ._napp import NAPPLasso, NAPPLassoClassifier
from ._objective_perturbation import ObjPertLogisticRegression
from ._output_perturbation import OutputPertSVM

__all__ = ["DPSGDClassifier", "NAPPLasso", "NAPPLassoClassifier", "ObjPertLogisticRegression",
           "OutputPertSVM"]
