"""Preprocessing that learns nothing from the rows: every number is declared.

A step fitted before a private estimator is released with it, outside the
estimator's guarantee. The transformers here read only the shape and column
names of the data when fitted; everything else comes from public parameters
(declared bounds), so they may precede a private estimator in a ``Pipeline``.
:func:`skdp.model_selection.check_public_preprocessing` lists which other
steps (scikit-learn's, with which parameters) qualify.
"""

from ._public import BoundedScaler, Clipper

__all__ = ["BoundedScaler", "Clipper"]
