"""NAPP: the noise-augmented private lasso (Li & Liu), in forms whose guarantee holds."""

from ._estimators import NAPPLasso, NAPPLassoClassifier

__all__ = ["NAPPLasso", "NAPPLassoClassifier"]
