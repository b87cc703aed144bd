"""Private linear models."""

from ._objective_perturbation import ObjPertLogisticRegression

__all__ = ["ObjPertLogisticRegression"]
