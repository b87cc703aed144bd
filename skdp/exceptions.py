"""Warnings and errors specific to differential privacy."""


class PrivacyLeakWarning(UserWarning):
    """The fitted model's differential-privacy guarantee does not hold.

    Raised when an option computes something from the private data that the
    privacy analysis assumes to be public, or when a research mode that is not
    differentially private is used.
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
    """
