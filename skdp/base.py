"""Parameters, constraints and bookkeeping shared by every private estimator."""

from numbers import Real

import numpy as np

from .utils._sklearn_compat import Interval, StrOptions
from .utils.validation import check_data_norm

NEIGHBORING_RELATIONS = ("add_remove", "replace")


class PrivacyParamsMixin:
    """Shared privacy parameters: validation and spend bookkeeping.

    Subclasses compose ``_privacy_parameter_constraints`` into their own
    ``_parameter_constraints`` and call :meth:`_check_privacy_params` first in
    ``fit``, so every error is raised before any noise is drawn.
    """

    _privacy_parameter_constraints = {
        "epsilon": [Interval(Real, 0, None, closed="right")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "data_norm": [Interval(Real, 0, None, closed="neither"), None],
        "random_state": ["random_state", np.random.Generator],
    }

    def _check_privacy_params(self):
        check_data_norm(self.data_norm)

    def _claimed_spend(self):
        """``(epsilon, delta)`` that a successful fit with these parameters certifies.

        Read from the parameters alone, without fitting (composing reports such
        as :func:`~skdp.model_selection.privacy_cost_of_search` use it for fits
        they cannot see). Estimators whose options can void the guarantee (a
        research mode) override it to return ``(inf, delta)``.
        """
        return float(self.epsilon), float(self.delta)

    def _record_spend(self, epsilon, delta, neighboring):
        self.epsilon_spent_ = float(epsilon)
        self.delta_spent_ = float(delta)
        self.neighboring_ = neighboring


def neighboring_constraint():
    """Parameter constraint of ``neighboring``."""
    return [StrOptions(set(NEIGHBORING_RELATIONS))]
