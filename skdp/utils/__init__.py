"""Utilities shared by the skdp estimators."""

from ._random import check_rng
from .validation import augment_intercept, clip_rows_to_norm, effective_data_norm

__all__ = ["augment_intercept", "check_rng", "clip_rows_to_norm", "effective_data_norm"]
