"""Utilities shared by the skdp estimators."""

from ._format import format_figure, format_guarantee
from ._random import (check_rng, noise_generator, noise_independence, privacy_streams,
                      public_generator)
from .validation import augment_intercept, clip_rows_to_norm, effective_data_norm

__all__ = ["augment_intercept", "check_rng", "clip_rows_to_norm", "effective_data_norm",
           "format_figure", "format_guarantee", "noise_generator", "noise_independence",
           "privacy_streams", "public_generator"]
