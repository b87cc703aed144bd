"""Warnings and errors specific to differential privacy."""


class PrivacyLeakWarning(UserWarning):
    """The fitted model's differential-privacy guarantee does not hold.

    Raised when an option computes something from the private data that the
    privacy analysis assumes to be public, or when a research mode that is not
    differentially private is used.
    """


class DataNormWarning(UserWarning):
    """``data_norm`` was left at its default.

    Raised at ``fit`` from the parameter alone, never from the data: rows are then
    clipped to L2 norm 1, which suits rows scaled into the unit ball and shrinks raw
    features (ages, amounts) to their direction. Pass a public bound, or
    ``data_norm="private"`` to choose one with a differentially private quantile,
    or ``data_norm=1.0`` to keep the default without the warning.
    """


class SampleWeightWarning(UserWarning):
    """``sample_weight`` was passed with ``max_sample_weight`` left at 1.

    Raised at ``fit`` from the parameters alone, never from the weights (whether or not
    any weight exceeds 1): the weights are clipped into ``[0, max_sample_weight]``, so
    with the default bound every weight above 1 is lowered to 1 without an error (a
    refusal that depended on a weight would tell it). Pass a public bound on the
    weights as ``max_sample_weight``, or silence the warning with
    ``warnings.filterwarnings`` when the weights are known to lie in ``[0, 1]``.
    """


class LargeDeltaWarning(UserWarning):
    """``delta`` is too large for the guarantee to protect anyone.

    A mechanism that publishes each record whole with probability ``delta`` is
    ``(0, delta)``-DP, so ``delta`` at or above ``1 / n`` allows publishing a record
    of an ``n``-row dataset. Raised from public quantities only (see each estimator's
    ``delta``).
    """


class NoiseDominanceWarning(UserWarning):
    """The noise of the mechanism dominates, or is likely to dominate, the fitted model.

    Never from the private number of rows. Either before any noise, from public
    quantities only (``NAPPLassoClassifier``'s one-vs-rest fits: the shape of the
    design, the number of classes, the budget and the parameters; the message names
    an estimator that measured better at that shape), or after the fit, when a count
    the guarantee allows reading is below the fit's ``noise_floor_``: the number of
    rows under ``neighboring="replace"`` (public there), or DP-SGD's differentially
    private row count. Silence it with ``warnings.filterwarnings`` when the data are
    known to be large enough.
    """


class PrivacyBudgetError(ValueError):
    """The requested privacy budget cannot be met with the given settings."""


class UnreachableUtilityWarning(UserWarning):
    """The target utility cannot be met inside the allowed range of epsilon."""


class ConvergenceError(RuntimeError):
    """The solver did not reach the public tolerance that the guarantee needs.

    Raised instead of releasing anything: the privacy proofs cover a point within
    the public tolerance of the exact minimiser, and a fit that cannot certify one
    releases no coefficients. The message holds no statistic of the data.

    The raise itself is an observable event that the guarantee does not cover, so it
    must not depend on the data in practice. The certificate no longer fails with the
    number of rows: where the cheap rounding estimate (linear in ``n``) is
    inconclusive, the gradient is recomputed in double-double with a proven error
    bound, and the point refined (``skdp/solvers/_accurate.py``). What can still raise:
    a solver that does not bring its computed gradient norm down to ``max(tol,
    estimate)`` within ``max_iter`` steps; coefficients so large (norm above about
    ``1.8e16 tol`` over the ridge) that float64 cannot hold them within ``tol``; a
    user's loss without ``dz_accurate``; values beyond float64's range; and, for the
    hinge loss, a duality gap whose own rounding exceeds the target (a few ``1e-8``
    of distance on ordinary data: far below the default ``tol * Delta``). See
    ``docs/privacy/objective_perturbation.rst``.
    """


class InferenceError(ValueError):
    """Valid confidence intervals are impossible for this fit.

    Raised by a fit with ``inference=True`` instead of releasing a wrong interval,
    for example when the noisy information matrix is not positive definite (the
    privacy noise outweighs the design at this size and budget). The decision is
    a function of the released statistics alone (a post-processing, covered by the
    guarantee), and the message holds no statistic of the data.
    """
