"""Sufficient-statistics perturbation: a private ridge regression from noisy ``X^T X``
and ``X^T y``, its ridge chosen privately (AdaSSP, Wang 2018).

Derivation: ``docs/privacy/sufficient_statistics.rst``.
"""

import copy
from dataclasses import dataclass
from numbers import Real

import numpy as np
from sklearn.base import RegressorMixin, clone
from sklearn.utils.validation import check_is_fitted, validate_data

from ..base import neighboring_constraint
from ..mechanisms import reduce_gaussian_noise, reduce_laplace_noise
from ..exceptions import InferenceError
from ..mechanisms._sufficient_statistics import (SSPCalibration, SSPSensitivities,
                                                 SSPStatistics, draw_ssp_noise,
                                                 gram_from_coordinates,
                                                 least_squares_inference, private_ridge,
                                                 solve_ridge, ssp_calibration, ssp_noise_floor,
                                                 ssp_sensitivities, statistics_sums)
from ..utils._docstrings import fill_doc
from ..utils._groups import person_relation
from ..utils._random import noise_generator
from ..utils._sklearn_compat import Interval, StrOptions
from ..utils.validation import clip_rows_to_norm
from ..solvers._partitioned import is_dask_collection
from ._base import (GaussianDPMixin, PrivateLinearModel, by_partitions,
                    partitioned_regression_design, solver_design)
from ._inference import InferenceMixin
from ._weights import (WeightedFitMixin, check_person_params, person_constraints, row_weights,
                       weight_constraints)

Y_BOUND_REFUSAL = (
    "y_bound=None: the sensitivity of X^T y grows with the largest |y|, so SSP needs a "
    "public bound on it (y is clipped to [-y_bound, y_bound]). Choose it from public "
    "knowledge of the target (its unit and plausible range, a data dictionary), never "
    "from the private values: computing it from the data voids the guarantee.")

INFERENCE_OPTIONS = (
    "inference=True estimates the population least-squares minimiser, unweighted and "
    "with an intercept (its residual variance needs the noisy row count, read from the "
    "intercept entry of the Gram matrix), without a ridge (which would bias it): ")


@dataclass
class SSPRelease:
    """One SSP fit: the exact statistics, the noise and its calibration.

    Transient: returned by :func:`_sufficient_statistics_perturbation` and never
    stored on a fitted estimator (it holds the non-private statistics and the noise).
    ``theta`` and ``alpha`` are post-processing of the noisy statistics.
    ``sensitivities`` are the relation's (the calibration's), ``record_bounds`` one
    record's largest terms (add/remove's, for the noise floor).
    """

    statistics: SSPStatistics
    noise: dict
    calibration: SSPCalibration
    sensitivities: SSPSensitivities
    record_bounds: SSPSensitivities
    fixed_alpha: object
    noise_rng: object
    converged: bool = True

    @property
    def dim(self):
        return self.statistics.moment.size

    def noisy(self):
        """The released statistics: ``(gram, moment, eigenvalue or None)``."""
        law = self.sensitivities.law
        exact = self.statistics.coordinates(law)
        gram = gram_from_coordinates(exact["gram"] + self.noise["gram"], self.dim, law)
        eigenvalue = (self.statistics.eigenvalue + self.noise["eigenvalue"][0]
                      if "eigenvalue" in self.noise else None)
        return gram, self.statistics.moment + self.noise["moment"], eigenvalue

    @property
    def inference(self):
        """Whether ``sum w y^2`` is released (for the intervals)."""
        return "residual" in self.noise

    def noisy_residual(self):
        """The released ``sum w y^2`` (``inference=True`` only)."""
        return self.statistics.residual + self.noise["residual"][0]

    @property
    def alpha(self):
        """The ridge: the fixed ``alpha``, or the private rule's."""
        if self.fixed_alpha is not None:
            return float(self.fixed_alpha)
        return private_ridge(self.noisy()[2], self.calibration, self.dim)

    @property
    def theta(self):
        """The released coefficients (the intercept's last)."""
        gram, moment, _ = self.noisy()
        return solve_ridge(gram, moment, self.alpha)

    def noise_floor(self):
        """See :func:`~skdp.mechanisms._sufficient_statistics.ssp_noise_floor`."""
        return ssp_noise_floor(self.calibration, self.dim, self.record_bounds)

    def reduce_noise(self, epsilon, delta):
        """Move the noise to the calibration at a larger ``epsilon`` by the exact
        conditional law (:data:`NOISE_REDUCERS`): the release is then distributed as
        a fit at ``epsilon``, and the earlier one is it plus data-independent noise."""
        calibration = ssp_calibration(epsilon, delta, self.sensitivities,
                                      private_ridge=self.fixed_alpha is None,
                                      inference=self.inference)
        for name, noise in self.noise.items():
            scale, new_scale = self.calibration.scale(name), calibration.scale(name)
            self.noise[name] = (np.zeros_like(noise) if new_scale == 0 else NOISE_REDUCERS[
                calibration.law](noise, scale, new_scale, self.noise_rng))
        self.calibration = calibration


NOISE_REDUCERS = {"laplace": reduce_laplace_noise, "gaussian": reduce_gaussian_noise}


def statistics_pass(design, targets):
    """One partition's ``(A, b, c)`` (:func:`~skdp.mechanisms._sufficient_statistics.
    statistics_sums`); ``targets`` are the clipped ``y``, or rows ``(y_i, w_i)`` when
    the rows are weighted (a person's rows, with ``groups``)."""
    if targets.ndim == 2:
        return statistics_sums(design, targets[:, 0], targets[:, 1])
    return statistics_sums(design, targets)


def _sufficient_statistics_perturbation(statistics, *, epsilon, delta, neighboring, data_norm,
                                        intercept_scaling, n_features, y_bound, weight_bound,
                                        alpha, rng, inference=False):
    """Release the noisy ``statistics`` of the clipped design (rows clipped to
    ``data_norm``, the intercept column ``intercept_scaling`` last when it is not 0)
    and the clipped target.

    ``alpha=None`` releases ``lambda_min`` too, for the private ridge;
    ``inference`` releases ``sum w y^2`` (for the intervals). Pure
    (``delta = 0``): Laplace noise, ``epsilon`` split; Gaussian: one ``mu``-GDP
    release, ``mu^2`` split (:func:`~skdp.mechanisms._sufficient_statistics.
    ssp_calibration`).
    """
    bounds = dict(law="gaussian" if delta > 0 else "laplace", data_norm=data_norm,
                  intercept_scaling=intercept_scaling, n_features=n_features,
                  y_bound=y_bound, weight_bound=weight_bound)
    sensitivities = ssp_sensitivities(neighboring=neighboring, **bounds)
    calibration = ssp_calibration(epsilon, delta, sensitivities, private_ridge=alpha is None,
                                  inference=inference)
    noise = draw_ssp_noise(calibration, statistics.moment.size, rng,
                           private_ridge=alpha is None, inference=inference)
    return SSPRelease(statistics, noise, calibration, sensitivities,
                      ssp_sensitivities(neighboring="add_remove", **bounds), alpha, rng)


@fill_doc
class SSPLinearRegression(InferenceMixin, GaussianDPMixin, RegressorMixin, WeightedFitMixin,
                          PrivateLinearModel):
    """Differentially private linear regression by sufficient-statistics perturbation.

    One pass over the rows computes ``A = Z^T Z`` and ``b = Z^T y`` for the clipped,
    intercept-augmented design ``Z`` and the clipped target; noise is added to both
    (and, to choose the ridge, to ``lambda_min(A)``), and the coefficients solve the
    ridge system ``(A_noisy + alpha I) theta = b_noisy``: scikit-learn's
    ``Ridge(alpha, fit_intercept=False)`` on ``Z``, whose statistics are noisy. The
    ridge is chosen from the released statistics by AdaSSP's rule (Wang 2018) unless
    ``alpha`` is fixed.

    Parameters
    ----------
    %(privacy_params)s

    alpha : float or "auto", default="auto"
        The ridge, in the sum form ``sum_i (y_i - z_i theta)^2 + alpha ||theta||^2``
        (the intercept coordinate is penalised too; scikit-learn's ``Ridge(alpha)``
        on ``n`` rows has the same ``alpha``). ``"auto"``: AdaSSP's rule, from a
        private lower bound of ``lambda_min(A)`` that the fit releases with a tenth of
        the budget: ``alpha = max(0, S - lambda_tilde)`` with ``S`` a bound on the
        spectral norm of the noise on ``A`` (see Notes), so that no ridge is added
        when the data alone outweigh the noise. The value used is ``alpha_``.

    %(data_norm)s

    y_bound : float, default=None
        Public bound on ``|y|``: ``y`` is clipped to ``[-y_bound, y_bound]``
        (documented, not refused: a refusal would tell a private value). Required:
        choose it from the target's known range (see the regression user guide),
        after a public centring and scaling of ``y`` when its range is far from 0.

    %(fit_intercept)s

    %(intercept_scaling)s

    %(max_sample_weight)s

    %(max_rows_per_group)s

    inference : bool, default=False
        Also release what confidence intervals need, inside the same ``epsilon``
        and ``delta``: the sum of squares ``sum y^2`` takes the tenth of the budget
        that ``lambda_min`` takes with ``alpha="auto"``, and no ridge is used
        (``alpha_ = 0``), so that ``coef_`` is the least-squares solution of the
        noisy statistics and :meth:`conf_int` covers the population
        least-squares minimiser of the clipped rows (the sampling variability
        and the noise, whose law is known). Needs ``fit_intercept=True``, no
        ``sample_weight`` or ``groups``, and ``alpha="auto"`` or 0. Where valid
        intervals are impossible (the noisy Gram matrix is not positive
        definite) the fit raises :class:`~skdp.InferenceError` and releases
        nothing. See ``docs/privacy/inference.rst``.
        How many rows avoid a refusal, per ``epsilon``, ``delta`` and number of
        features: "How many rows you need" in ``docs/privacy/inference.rst``.

    %(random_state)s

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)

    intercept_ : float

    alpha_ : float
        The ridge used (a post-processing of the released statistics).

    n_features_in_ : int

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined only when ``X`` has string feature names.

    %(privacy_attrs)s

    %(weight_attrs)s

    %(noise_floor_attrs)s

    %(inference_attrs)s

    See Also
    --------
    NAPPLasso : private lasso by objective perturbation.
    sklearn.linear_model.Ridge : the non-private estimator (``epsilon=np.inf``).

    Notes
    -----
    Rows ``z_i = (x_i, c)`` have ``||z_i|| <= B = sqrt(data_norm**2 + c**2)``
    (``c = intercept_scaling``, 0 without an intercept) and weights ``w_i <= W``
    (``weight_bound_``). Neighbouring relation: ``neighboring`` (add/remove-one by
    default; with ``groups``, one person). Sensitivities (one record, add/remove;
    replace doubles the moment's and multiplies the Gram matrix's by ``sqrt(2)``
    (Gaussian) or 2 (Laplace)): Gram matrix ``W B^2`` in the Frobenius norm, moment
    ``W B y_bound``, ``lambda_min`` ``W B^2`` (Weyl). ``delta > 0``: Gaussian noise,
    the three releases one ``mu``-GDP mechanism with ``mu = gdp_mu(epsilon, delta)``,
    so exactly ``(epsilon, delta)``-DP, ``mu^2`` split 0.1 to ``lambda_min``, 0.45
    to each of ``A`` and ``b`` (halves with a fixed ``alpha``). ``delta = 0``:
    Laplace noise on the upper triangle of ``A`` and on ``b`` with L1 sensitivities
    ``W ((sqrt(d) R + c)^2 + B^2) / 2`` and ``W y_bound (sqrt(d) R + c)``, ``epsilon``
    split in the same shares. The number of rows is never read: it enters only
    through ``A`` (its intercept entry is the noisy count). Predictions clip rows to
    ``data_norm_`` as the fit did. Derivation: ``docs/privacy/sufficient_statistics.rst``.

    :class:`~skdp.EpsilonForUtility` selects epsilon on one noise path of the
    statistics (Laplace gradual release, or the Brownian mechanism): each rung is an
    exact release at its epsilon, and the search pays for the last one; with
    ``groups`` the path holds the person-weighted statistics, every rung person-level.
    On a dask array (``groups`` too) the statistics are one read of the rows.

    References
    ----------
    .. [W18] Wang, "Revisiting differentially private linear regression: optimal
       and adaptive prediction & estimation in unbounded domain", UAI 2018.
    .. [KHP15] Koufogiannis, Han & Pappas, "Gradual release of sensitive data under
       differential privacy", 2015.
    .. [WRWR22] Whitehouse, Ramdas, Wu & Rogers, "Brownian noise reduction:
       maximizing privacy subject to accuracy constraints", NeurIPS 2022.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from skdp import SSPLinearRegression
    >>> X, y = make_regression(n_samples=500, n_features=4, random_state=0)
    >>> reg = SSPLinearRegression(epsilon=1.0, data_norm=5.0, y_bound=300.0,
    ...                           random_state=0).fit(X, y)
    >>> reg.coef_.shape, reg.epsilon_spent_, reg.delta_spent_, reg.neighboring_
    ((4,), 1.0, 0.0, 'add_remove')

    With intervals (on rows inside the public bounds, where the covered parameter
    is the least-squares minimiser):

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, (5000, 3))
    >>> y = X @ [1.0, -2.0, 0.5] + rng.normal(0, 1, 5000)
    >>> reg = SSPLinearRegression(epsilon=1.0, data_norm=2.0, y_bound=6.0,
    ...                           inference=True, random_state=0).fit(X, y)
    >>> reg.conf_int().shape, list(reg.summary().columns)
    ((4, 2), ['coef', 'std err', 'lower', 'upper'])
    """

    _parameter_constraints = {
        **PrivateLinearModel._privacy_parameter_constraints,
        "neighboring": neighboring_constraint(),
        "alpha": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "y_bound": [Interval(Real, 0, None, closed="neither"), None],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(Real, 0, None, closed="neither")],
        **weight_constraints(class_weight=False),
        **person_constraints(),
        "inference": ["boolean"],
    }

    def __init__(self, *, epsilon=1.0, delta=0.0, neighboring="add_remove", alpha="auto",
                 data_norm="warn", y_bound=None, fit_intercept=True, intercept_scaling=1.0,
                 max_sample_weight=1.0, max_rows_per_group=1.0, inference=False,
                 random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.neighboring = neighboring
        self.alpha = alpha
        self.data_norm = data_norm
        self.y_bound = y_bound
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.max_sample_weight = max_sample_weight
        self.max_rows_per_group = max_rows_per_group
        self.inference = inference
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # The default budget (epsilon=1, rows clipped to norm 1) is too noisy for the
        # common checks' R^2 > 0.5 on their few unscaled rows.
        tags.regressor_tags.poor_score = True
        return tags

    def _has_epsilon_derivative(self):
        # the private ridge is a kinked function of the noisy eigenvalue
        return False

    def _partitioned_refusal(self, with_derivative):
        return None   # one map-reduce of the statistics, the same model as in memory

    def _releases(self, X, y, with_derivative=False, sample_weight=None, groups=None):
        """Validate (every error before any noise), then compute the statistics of the
        clipped rows in one pass (a map-reduce over a dask array's partitions) and
        release them."""
        check_person_params(self, groups)
        self._check_privacy_params()
        if self.y_bound is None:
            raise ValueError(f"{type(self).__name__}: {Y_BOUND_REFUSAL}")
        self._check_inference_options(sample_weight, groups)
        bounds = dict(fit_intercept=self.fit_intercept,
                      intercept_scaling=self.intercept_scaling)
        if is_dask_collection(X) or is_dask_collection(y):
            # sample_weight is refused before (dask); a person's rows weigh M in all
            self.weight_bound_ = 1.0 if groups is None else float(self.max_rows_per_group)
            design = partitioned_regression_design(
                self, X, y, data_norm=self._resolve_data_norm(), low=-self.y_bound,
                high=self.y_bound, groups=groups, scan=False, **bounds)
            # one read of the rows: checked, clipped and summed in one task each
            statistics = SSPStatistics.from_sums(*design.checked_reduce(statistics_pass))
        else:
            X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True,
                                 accept_sparse=("csr", "csc"))
            weights, self.weight_bound_ = row_weights(self, sample_weight, X, groups=groups)
            design = solver_design(X, data_norm=self._resolve_data_norm(X), **bounds)
            statistics = SSPStatistics.of(design, np.clip(y, -self.y_bound, self.y_bound),
                                          weights)
        return [_sufficient_statistics_perturbation(
            statistics, epsilon=self._mechanism_epsilon(), delta=self.delta,
            neighboring=self.neighboring, data_norm=self.data_norm_,
            intercept_scaling=self.intercept_scaling if self.fit_intercept else 0.0,
            n_features=self.n_features_in_, y_bound=self.y_bound,
            weight_bound=self.weight_bound_, alpha=self._mechanism_alpha(),
            rng=noise_generator(self.random_state), inference=self.inference)]

    def _check_inference_options(self, sample_weight, groups):
        """Refuse, before any noise, the options under which ``inference=True`` has no
        valid interval here."""
        if not self.inference:
            return
        refusals = [(sample_weight is not None, "pass no sample_weight"),
                    (groups is not None, "pass no groups"),
                    (not self.fit_intercept, "set fit_intercept=True"),
                    (self.alpha not in ("auto", 0, 0.0), "set alpha='auto' or 0")]
        for refused, remedy in refusals:
            if refused:
                raise ValueError(f"{type(self).__name__}: {INFERENCE_OPTIONS}{remedy}.")

    def _mechanism_alpha(self):
        """The fixed ridge, ``None`` for the private rule, 0 with ``inference``."""
        if self.inference:
            return 0.0
        return None if self.alpha == "auto" else float(self.alpha)

    def _set_fitted(self, releases):
        self._clear_inference()
        inference = self._least_squares_inference(releases[0]) if self.inference else None
        super()._set_fitted(releases)
        self.coef_ = self.coef_[0]
        self.intercept_ = float(self.intercept_[0])
        self.alpha_ = float(releases[0].alpha)
        if inference is not None:
            self._set_inference(inference)

    def _least_squares_inference(self, release):
        """The intervals' estimate and covariance from the released statistics, or
        their refusal (:meth:`_refuse_intervals`)."""
        gram, moment, _ = release.noisy()
        try:
            return least_squares_inference(gram, moment, release.noisy_residual(),
                                           release.calibration, self.intercept_scaling)
        except InferenceError as error:
            return self._refuse_intervals(error)

    def predict(self, X):
        """Predict with the private model (rows clipped to ``data_norm_``).

        %(X_rows)s

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            ``X @ coef_ + intercept_``.
        """
        check_is_fitted(self)
        if is_dask_collection(X):   # lazily, partition by partition
            return by_partitions(self.predict, X, None, float)
        X = validate_data(self, X, dtype=np.float64, reset=False, accept_sparse=("csr", "csc"))
        return np.asarray(clip_rows_to_norm(X, self.data_norm_) @ self.coef_) + self.intercept_

    def _supports_noise_reduction(self):
        """Laplace (pure) and Gaussian noise both have an exact coupling across scales;
        a private ``data_norm`` (a discrete draw) does not."""
        return not self._private_norm()

    def _noise_reduction_path(self, X, y, C_epsilon=None, groups=None):
        """One release of the statistics whose noise is reduced to larger epsilons.

        See :class:`SSPNoiseReductionPath`. ``C_epsilon`` is accepted for the
        selection's interface and unused (SSP has no ``C``). ``groups``: the
        person-weighted statistics, every release person-level, as ``fit(X, y,
        groups=groups)``.
        """
        if not self._supports_noise_reduction():
            raise ValueError("Noise reduction needs a public data_norm (not 'private').")
        return SSPNoiseReductionPath(self, X, y, groups)


class SSPNoiseReductionPath:
    """Releases of one SSP fit at increasing epsilons, on one noise path.

    The first release is the estimator's own fit at its ``epsilon``. ``release(e)``
    recalibrates the three statistics at ``e`` and moves each noise vector to its new,
    smaller scale by the exact conditional law (Laplace: Koufogiannis, Han & Pappas
    2015; Gaussian: the Brownian bridge, Whitehouse et al. 2022): each release is
    distributed exactly as a fit at ``e``, and the earlier ones are it plus noise that
    does not depend on the data. The statistics do not depend on the coefficients,
    so the whole model, ridge included, is recomputed from each release. With
    ``groups`` the statistics are the person-weighted ones of ``fit(X, y,
    groups=groups)`` (a person's rows weigh ``max_rows_per_group`` in all, the bound
    every calibration on the path uses), so each release is a person-level fit at its
    epsilon. Transient: it holds the exact statistics and must never be stored or
    released.

    Parameters
    ----------
    estimator : SSPLinearRegression
        Unfitted; cloned.
    X, y : array-like
        The training rows and targets.
    groups : array-like of shape (n_samples,), default=None
        The person of each row.
    """

    def __init__(self, estimator, X, y, groups=None):
        self._template = clone(estimator)
        fit = {} if groups is None else {"groups": groups}
        self._release = self._template._releases(X, y, **fit)[0]
        self._relation = (self._template.neighboring if groups is None
                          else person_relation(self._template.neighboring))
        self.epsilon = float(self._template.epsilon)

    def release(self, epsilon):
        """The fitted model at ``epsilon`` (at least the last one released).

        Parameters
        ----------
        epsilon : float
            The release's budget.

        Returns
        -------
        model : SSPLinearRegression
            Fitted, with ``epsilon`` and ``epsilon_spent_`` set to ``epsilon``.
        """
        epsilon = float(epsilon)
        if epsilon < self.epsilon:
            raise ValueError(f"Noise reduction only goes to larger epsilons: {epsilon} < "
                             f"{self.epsilon}.")
        model = copy.copy(self._template)
        model.epsilon = epsilon
        self._release.reduce_noise(model._mechanism_epsilon(), model.delta)
        self.epsilon = epsilon
        model._set_fitted([self._release])
        model.neighboring_ = self._relation
        model.noise_floor_ = self._release.noise_floor()
        return model
