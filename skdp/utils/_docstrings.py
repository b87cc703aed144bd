"""Docstring fragments shared by every private estimator (``%(name)s`` substitution)."""

_SHARED_PARAMS = {
    "epsilon": """epsilon : float, default=1.0
        Privacy budget, in (0, inf]. Smaller is more private. ``np.inf`` adds no
        noise: a non-private baseline, useful as a reference and test oracle.""",
    "delta": """delta : float, default=0.0
        Probability with which the epsilon bound may fail, in [0, 1). ``0``
        selects the pure epsilon-DP mechanism; ``delta > 0`` the Gaussian one.
        Choose it well below ``1 / n`` for a public upper bound ``n`` on the
        number of rows. ``delta`` above 1e-3 raises a
        :class:`~skdp.LargeDeltaWarning` at ``fit``: it is at least ``1 / n``
        for every dataset of 1,000 rows or more, so the guarantee would allow
        publishing a record whole. The test reads ``delta`` alone, because the
        number of rows is private under add/remove (a warning that compared
        ``delta`` with it would tell neighbouring datasets apart); a smaller
        ``delta`` that is still above ``1 / n`` on a small dataset is not
        caught.""",
    "neighboring": """neighboring : {"add_remove", "replace"}, default="add_remove"
        Neighbouring relation of the guarantee: datasets that differ by adding
        or removing one record, or by replacing one record (``n_samples`` public).
        Replacement doubles the gradient sensitivity.""",
    "data_norm": """data_norm : float, "private" or "warn", default="warn"
        Public bound on the L2 norm of each feature row; longer rows are clipped
        to it (a per-row operation, so it costs no privacy). It must not be
        computed from the private data: ``None`` is an error. ``"private"``
        chooses it inside the guarantee: the exponential mechanism picks about
        the 0.9 quantile of the row norms in the public range ``[2**-10,
        2**30]`` (about 1e-3 to 1e9), spending 10 % of ``epsilon``; the fit runs at the
        other 90 %, ``epsilon_spent_`` is the total and ``data_norm_epsilon_``
        the bound's share (``docs/privacy/data_norm.rst``); with probability
        0.95 at least it lands between the 0.8 and 1.0 quantiles when
        ``n_samples * epsilon`` is above about 1,600. ``"warn"``
        (the default) clips to 1.0 and raises a :class:`~skdp.DataNormWarning`
        from the parameter alone (never from the data): 1.0 suits rows scaled
        into the unit ball, not raw features. The bound used is
        ``data_norm_``.""",
    "fit_intercept": """fit_intercept : bool, default=True
        Whether to fit an intercept. It is a constant column of value
        ``intercept_scaling`` appended to ``X`` and penalised like every other
        coefficient, so the privacy analysis uses the row bound
        ``sqrt(data_norm**2 + intercept_scaling**2)``.""",
    "intercept_scaling": """intercept_scaling : float, default=1.0
        Public value of the constant intercept column.""",
    "random_state": """random_state : None, int, RandomState instance or Generator, default=None
        Source of the privacy noise. ``None`` (the default, the only setting
        for a model you publish) draws the noise from a ChaCha20 stream keyed
        with fresh bits from Python's ``secrets`` module, new for every fit, so nothing
        released lets anyone regenerate it. An int, a ``RandomState`` or a
        ``Generator`` is reproducibility mode, for tests, benchmarks and
        teaching: never publish the model together with that value (whoever
        has it can regenerate the noise), and fits seeded alike share their
        noise, so their spends do not compose (with one seed and a fixed ``C``,
        a public combination of two output perturbation releases is the
        noise-free point, and two objective perturbation releases tell
        neighbouring datasets apart). ``sklearn.clone`` copies a
        ``Generator``, so every clone in a search draws the same noise. See the
        user guide page on randomness and seeds (``docs/randomness.rst``).""",
    "verbose": """verbose : int, default=0
        ``0``: silent. ``1`` or more: print one line when the fit starts (the
        number of problems, the budget of each and the public tolerance) and one
        when each problem (a one-vs-rest class, the binary or the softmax
        problem) is solved, with the elapsed time. The lines hold public
        quantities only (parameters, ``classes_``, shapes): never a statistic of
        the rows, an iteration count or an objective value, which the release
        does not cover. The elapsed times depend on the data, as the fit's
        duration does: they are for whoever runs the fit, not for publication
        with the model.""",
    "classes": """classes : array-like of shape (n_classes,) or None, default=None
        The public set of class labels. ``None`` takes it from ``y``: the set
        of labels present is then treated as public. When given, labels
        outside it are an error and a declared class absent from ``y`` still
        gets its coefficients (and, for one-vs-rest, its share of the budget).""",
    "class_weight": """class_weight : dict or None, default=None
        Public weight of each class's rows, ``{label: weight}`` with positive
        weights (a class missing from the dict weighs 1); it multiplies
        ``sample_weight``. The noise is calibrated for the largest weight a record
        can carry, the largest class weight over the label set (``classes``, or the
        labels present, then treated as public) times ``max_sample_weight``
        (``weight_bound_``), so large class weights cost accuracy.
        ``"balanced"`` is refused before any data is read: it divides by the class
        counts of the private labels, which no budget pays for. Choose the
        weights from public knowledge (a published prevalence, the cost of each
        error) and pass them as a dict. A label of the dict outside the label set
        is refused as scikit-learn refuses it.""",
    "max_rows_per_group": """max_rows_per_group : float, default=1.0
        Public bound ``M`` on how many rows one person counts as, > 0, used when
        ``fit`` is given ``groups``: each of a person's ``k`` rows is weighted
        ``min(1, M / k)``, so a person with at most ``M`` rows keeps them whole and
        one with more has their rows averaged down to ``M`` rows in all. The
        mechanism is calibrated to a person of total weight ``M``
        (``weight_bound_``): a larger ``M`` keeps more of the heavy persons' rows
        and costs accuracy everywhere. The default 1 makes each person's loss the
        mean over their rows. No row is dropped and no person's size is released.""",
    "max_sample_weight": """max_sample_weight : float, default=1.0
        Public bound ``W`` on a row's ``sample_weight``, > 0. The weights passed to
        ``fit`` are clipped into ``[0, max_sample_weight]``, never refused for
        their size (a refusal would depend on a private weight); negative, nan or
        inf weights are an input error, raised before any noise. A row's weight
        multiplies its loss, so every sensitivity grows linearly with the largest
        weight: the fit is calibrated as the unweighted one with ``W`` times the
        loss (``C W`` where the estimator has a ``C``; see Notes). A row of
        weight 2 is one record of weight 2, not two records: the guarantee
        protects one record with its weight. Read only when ``sample_weight``
        is passed; without it every row weighs 1. Left at 1 with ``sample_weight``
        passed, ``fit`` raises a :class:`~skdp.SampleWeightWarning` (from the
        parameter alone, whatever the weights): weights above 1 are then lowered
        to 1.""",
    "no_incremental_fits": """No ``warm_start`` or ``partial_fit``: the release is the minimiser of one
    perturbed objective over all the rows given (to a certified tolerance),
    whatever the starting point, so a warm start could change only the run
    time, and a fit on a further batch would be a new mechanism with its own
    noise, not an update of this one. For incremental or streamed data use
    :class:`~skdp.DPSGDClassifier`, whose ``partial_fit`` composes its calls in
    one accountant.""",
    "inference_attrs": """bse_ : ndarray of shape (n_coefficients,)
        With ``inference=True``: the standard errors of ``intercept_`` (first,
        when fitted) and ``coef_``, covering the sampling variability and the
        privacy noise (:meth:`conf_int`, :meth:`summary`).

    bootstrap_deviations_ : ndarray of shape (n_draws, n_coefficients)
        With ``inference=True`` and noise: draws of the estimate minus the
        covered parameter from a parametric bootstrap with the noise's exact law
        (a post-processing of the release), whose quantiles ``q`` give the
        intervals ``[estimate - q_hi, estimate - q_lo]`` (with a noisy Gram matrix,
        the least-squares draws are those of the debiased, studentized estimate
        shifted by the estimate's bias: ``docs/privacy/inference.rst``).

    df_resid_ : float
        With ``inference=True`` and ``epsilon=np.inf``: the degrees of freedom
        of the intervals' Student t quantiles (``inf``: normal quantiles).""",
    "weight_attrs": """weight_bound_ : float
        The bound on a record's weight that the noise was calibrated for:
        ``max_sample_weight`` when ``sample_weight`` was passed (else 1), times
        the largest class weight over ``classes_`` when ``class_weight`` is
        given; 1 for an unweighted fit.""",
    "noise_floor_attrs": """noise_floor_ : float
        The number of rows (persons with ``groups``) whose largest contributions
        the noise outweighs with probability 0.99, from public quantities only
        (the noise's law and scale, the number of coefficients, the bound on one
        record's term): on fewer, whatever the rows hold, the model points where
        its noise points. The number of rows is private under add/remove, so the
        fit compares it with this floor only where the guarantee allows reading
        a count, and then warns (:class:`~skdp.NoiseDominanceWarning`): the
        public count under ``neighboring="replace"``, and DP-SGD's differentially
        private count (its 0.99 upper bound). With the default add/remove
        relation the perturbation estimators cannot tell, and do not warn:
        compare your cohort's size with ``noise_floor_`` yourself (user guide,
        "Tiny cohorts").""",
    "classifier_attrs": """coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        One row per one-vs-rest problem (one row for two classes).

    intercept_ : ndarray of shape (1,) or (n_classes,)

    classes_ : ndarray of shape (n_classes,)

    n_features_in_ : int

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined only when ``X`` has string feature names.""",
    "X_rows": """Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The rows to predict for.""",
    "X_y_rows": """Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The rows.
        y : array-like of shape (n_samples,)
            Their labels (classifiers) or targets (regressors).""",
    "noise_reduction_params": """Parameters
    ----------
    noise : ndarray of shape (dim,)
        The current noise.
    scale, new_scale : float
        Its scale (Laplace ``b``, Gaussian standard deviation) and the smaller one
        wanted.
    rng : numpy.random.Generator
        The noise stream.

    Returns
    -------
    reduced : ndarray of shape (dim,)""",
    "noise_draw_params": """Parameters
    ----------
    dim : int
        Dimension of the vector.
    rng : numpy.random.Generator
        The noise stream.""",
    "privacy_attrs": """data_norm_ : float
        The bound the rows were clipped to (fit and prediction): ``data_norm``,
        1.0 for ``"warn"``, or the private choice of ``"private"``.

    data_norm_epsilon_ : float
        Epsilon spent choosing ``data_norm_`` (0 unless ``data_norm="private"``);
        part of ``epsilon_spent_``.

    epsilon_spent_ : float
        Epsilon of the guarantee delivered by this fit.

    delta_spent_ : float
        Delta of the guarantee delivered by this fit.

    neighboring_ : str
        Neighbouring relation of the guarantee: ``"add_remove"`` or ``"replace"``
        (one row), or with ``fit(..., groups=...)`` ``"add_remove_person"`` or
        ``"replace_person"`` (one person, all of their rows).""",
}


# the budget and its neighbouring relation, in the order every estimator lists them
_SHARED_PARAMS["privacy_params"] = "\n\n    ".join(
    _SHARED_PARAMS[name] for name in ("epsilon", "delta", "neighboring"))


def fill_doc(obj=None, *, fragments=None):
    """Substitute the shared ``%(name)s`` fragments (and ``fragments``) into the docstring.

    Used bare (``@fill_doc``) or with more fragments
    (``@fill_doc(fragments={...})``); also fills the docstrings of ``obj``'s own
    methods.
    """
    if obj is None:
        return lambda target: fill_doc(target, fragments=fragments)
    values = {**_SHARED_PARAMS, **(fragments or {})}
    if obj.__doc__:
        obj.__doc__ = obj.__doc__ % values
    for member in vars(obj).values() if isinstance(obj, type) else ():
        # a method, or a descriptor around one (``available_if``)
        for target in {id(member): member, id(getattr(member, "fn", member)):
                       getattr(member, "fn", member)}.values():
            doc = getattr(target, "__doc__", None)
            if isinstance(doc, str) and "%(" in doc and not isinstance(target, type):
                target.__doc__ = doc % values
    return obj
