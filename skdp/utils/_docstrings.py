"""Docstring fragments shared by every private estimator (``%(name)s`` substitution)."""

_SHARED_PARAMS = {
    "epsilon": """epsilon : float, default=1.0
        Privacy budget, in (0, inf]. Smaller is more private. ``np.inf`` adds no
        noise: a non-private baseline, useful as a reference and test oracle.""",
    "delta": """delta : float, default=0.0
        Probability with which the epsilon bound may fail, in [0, 1). ``0``
        selects the pure epsilon-DP mechanism; ``delta > 0`` the Gaussian one.
        Choose it well below ``1 / n_samples``.""",
    "neighboring": """neighboring : {"add_remove", "replace"}, default="add_remove"
        Neighbouring relation of the guarantee: datasets that differ by adding
        or removing one record, or by replacing one record (``n_samples`` public).
        Replacement doubles the gradient sensitivity.""",
    "data_norm": """data_norm : float, default=1.0
        Public bound on the L2 norm of each feature row; longer rows are clipped
        to it (a per-row operation, so it costs no privacy). It must not be
        computed from the private data: ``None`` is an error.""",
    "fit_intercept": """fit_intercept : bool, default=True
        Whether to fit an intercept. It is a constant column of value
        ``intercept_scaling`` appended to ``X`` and penalised like every other
        coefficient, so the privacy analysis uses the row bound
        ``sqrt(data_norm**2 + intercept_scaling**2)``.""",
    "intercept_scaling": """intercept_scaling : float, default=1.0
        Public value of the constant intercept column.""",
    "random_state": """random_state : int, RandomState instance, Generator or None, default=None
        Source of the privacy noise. ``None`` draws fresh entropy from the
        operating system (so ``np.random.seed`` cannot freeze the noise); an int
        makes fits reproducible.""",
    "privacy_attrs": """epsilon_spent_ : float
        Epsilon of the guarantee delivered by this fit.

    delta_spent_ : float
        Delta of the guarantee delivered by this fit.

    neighboring_ : str
        Neighbouring relation of the guarantee.""",
}


def fill_doc(obj):
    """Substitute the shared ``%(name)s`` fragments into ``obj.__doc__``."""
    if obj.__doc__:
        obj.__doc__ = obj.__doc__ % _SHARED_PARAMS
    return obj
