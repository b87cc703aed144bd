"""Output perturbation: an exact, certified minimiser plus calibrated noise.

Linear SVM (hinge loss; also logistic and Huber) and an RBF SVM through random
Fourier features. Derivation: ``docs/privacy/output_perturbation.rst``.
"""

import copy
from dataclasses import dataclass
from functools import partial
from numbers import Integral, Real

import numpy as np
from sklearn.base import ClassifierMixin, clone
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from ..base import neighboring_constraint, warn_large_delta
from ..losses import HingeLoss, SoftmaxLoss, WeightedLoss, unweighted
from ..mechanisms import (draw_noise, minimiser_sensitivity, output_perturbation_calibration,
                          reduce_gaussian_noise, reduce_laplace_noise)
from ..mechanisms._dominance import noise_floor
from ..mechanisms._output_perturbation import coordinate_noise_std
from ..solvers import certified_hinge_minimiser, newton_minimise
from ..solvers._hinge import check_liblinear_memory
from ..solvers._multinomial import multinomial_minimise
from ..solvers._partitioned import (check_partitioned_hessian, is_dask_collection,
                                    one_vs_rest, partitioned_newton_minimise)
from ..solvers._partitioned_softmax import one_hot, partitioned_multinomial_minimise
from ..utils._docstrings import fill_doc
from ..utils._progress import Progress, problem_names, problems_header, solve_each
from ..utils._random import check_rng, noise_generator
from ..utils._sklearn_compat import Interval, StrOptions
from ..utils.validation import (
    augment_intercept,
    clip_rows_to_norm,
    effective_data_norm,
    finite_clipping_norm,
)
from ._base import (
    PARTITIONED_SUPPORT,
    GaussianDPMixin,
    PrivateLinearModel,
    _LinearClassifierMixin,
    _MultinomialMixin,
    linear_classifier_constraints,
    partitioned_design,
    solver_design,
    encode_labels,
    one_vs_rest_targets,
)
from ._inference import GLMInferenceMixin
from ._weights import (PARTITIONED_SOFTMAX_PERSONS, WeightedFitMixin, check_class_weight,
                       check_person_params, person_constraints, row_weights,
                       weight_constraints, weighted_problem)
from ._random_features import (
    RANDOM_FEATURE_NORM,
    RandomFourierMap,
    draw_random_fourier_map,
)


AUTO_MARGIN_NOISE = {"linear": 0.2, "rbf": 0.6}
"""Standard deviation of the noise on the margin of a row of the largest norm that
``C="auto"`` aims for, per kernel (linear: chosen on Adult and KDDCup99 at epsilon 0.1
to 5, see the defaults benchmark; rbf: the ``C = 0.03`` at epsilon 1 of the RBF
defaults study on Adult, whose random features carry a weaker margin per unit of
``C``). One-vs-rest over ``K`` classes aims for a ``2 K`` times smaller noise: the
prediction compares ``K`` noisy scores (chosen on MNIST, the benchmark's one multiclass
dataset, where ``K`` times smaller lost 2 to 7 points at epsilon 1 and 5)."""


def auto_C(loss, *, epsilon, delta, neighboring, row_norm, tol, law, dim, margin_noise):
    """The ``C`` at which the noise moves a margin by about ``margin_noise``.

    The noise is linear in ``C``: at ``C = 1`` it has coordinate standard
    deviation ``s``, so on the margin ``<b, x>`` of a row of norm ``row_norm`` it
    has standard deviation ``C * row_norm * s``. Public: it reads the budget of
    one problem, the neighbouring relation, the norm bound and the dimension.
    ``epsilon = inf`` (no noise) gives scikit-learn's ``C = 1``.
    """
    if np.isinf(epsilon):
        return 1.0
    unit = (1.0 + 2.0 * tol) * minimiser_sensitivity(1.0, loss.lipschitz, row_norm, neighboring)
    calibration = output_perturbation_calibration(epsilon, delta, unit, law, dim=dim)
    return float(margin_noise / (row_norm * coordinate_noise_std(calibration, dim)))


@dataclass
class OutputPertSolution:
    """One binary output-perturbation fit, with what EpsilonForUtility needs.

    Transient: returned by :func:`_output_perturbation`, never stored on a
    fitted estimator (it holds the non-private minimiser and the noise).

    ``theta(epsilon) = theta_star + draw.vector(noise_scale(epsilon))`` where
    ``epsilon`` is the *estimator's* budget; this problem gets
    ``epsilon / n_problems`` (one-vs-rest split) and ``delta / n_problems``.
    ``law`` is the estimator's ``noise`` parameter, ``noise`` the law drawn.
    """

    theta_star: np.ndarray
    certified_distance: float
    converged: bool
    n_iter: int
    base_sensitivity: float
    slack: float
    noise: str
    epsilon: float
    delta: float
    n_problems: int
    draw: object
    law: str = "auto"
    noise_rng: object = None
    record_bound: float = None
    information: np.ndarray = None
    information_calibration: object = None
    gradient_covariance: np.ndarray = None

    def noise_floor(self):
        """The records whose largest pull on ``theta_star`` the noise outweighs: one
        record moves the minimiser's stationarity sum by at most its gradient bound
        ``C L R`` (:func:`~skdp.mechanisms._dominance.noise_floor`)."""
        return noise_floor(self.noise, self.theta_star.size, self.noise_scale(),
                           self.record_bound)

    @property
    def sensitivity(self):
        """Sensitivity of the released point: ``base + 2 * slack``."""
        return self.base_sensitivity + 2.0 * self.slack

    def calibration(self, epsilon=None):
        """The noise's calibration at the estimator's ``epsilon`` (this problem's share)."""
        epsilon = self.epsilon * self.n_problems if epsilon is None else epsilon
        if self.noise == "none":
            epsilon = np.inf
        return output_perturbation_calibration(epsilon / self.n_problems, self.delta,
                                               self.sensitivity, self.law,
                                               dim=self.theta_star.size)

    def noise_scale(self, epsilon=None):
        """Gamma-norm or Laplace scale, or analytic Gaussian sigma."""
        return self.calibration(epsilon).noise_scale

    def noise_scale_derivative(self, epsilon=None):
        """Derivative of :meth:`noise_scale` in the estimator's epsilon."""
        return self.calibration(epsilon).d_noise_scale / self.n_problems

    def released(self, epsilon=None):
        """Released coefficients at ``epsilon`` with the same standard draws."""
        if self.draw is None:
            return self.theta_star.copy()
        return self.theta_star + self.draw.vector(self.noise_scale(epsilon)).reshape(
            self.theta_star.shape)

    @property
    def theta(self):
        """The released coefficients."""
        return self.released()

    def theta_derivative(self):
        """``d theta / d epsilon``: ``theta*`` does not move, the noise scales."""
        if self.draw is None:
            return np.zeros_like(self.theta_star)
        return self.draw.vector(self.noise_scale_derivative()).reshape(self.theta_star.shape)


def _output_perturbation(X, y, loss, *, C, epsilon, delta, neighboring, row_norm, n_problems,
                         tol, max_iter, rng, law="auto", n_classes=None, weights=None):
    """Exact minimiser of ``C sum_i l(y_i <x_i, theta>) + 0.5 ||theta||^2`` plus noise.

    ``X`` is the design actually optimised (clipped and intercept-augmented, or
    random features), with rows of norm at most ``row_norm``; ``y`` in {-1, +1},
    or one-hot rows for the softmax loss, whose minimiser is a ``(K, d)`` matrix
    (gradient bound ``sqrt(2) C R``: :class:`~skdp.losses.SoftmaxLoss`).
    The solver must certify ``||theta - theta*|| <= tol * base_sensitivity``;
    that public bound (not the data-dependent certified value, whose use would
    leak) enters the sensitivity twice. ``delta == 0``: Gamma-norm noise (or
    coordinate-wise Laplace with ``law="laplace"``); ``delta > 0``: analytic Gaussian.
    A partitioned ``X`` holds its targets (``y`` is ``None``; the softmax problem's
    ``n_classes`` is given). A :class:`~skdp.losses.WeightedLoss` has targets ``(y_i,
    w_i)`` (the softmax problem's row ``weights`` are given apart from its one-hot
    rows); its Lipschitz constant, ``W`` times the row's, sets the sensitivity.
    """
    if not np.isfinite(loss.lipschitz):
        raise ValueError("Output perturbation needs a loss with a finite lipschitz constant.")
    base = minimiser_sensitivity(C, loss.lipschitz, row_norm, neighboring)
    slack = tol * base
    row_loss = unweighted(loss)
    if isinstance(row_loss, HingeLoss):
        labels, row_weights = (y, None) if row_loss is loss else (y[:, 0], y[:, 1])
        theta, distance, n_iter = certified_hinge_minimiser(
            X, labels, C=C, target_distance=slack, max_iter=max_iter, weights=row_weights)
    elif isinstance(row_loss, SoftmaxLoss) and getattr(X, "partitioned", False):
        result = partitioned_multinomial_minimise(
            X, n_classes, C=C, ridge=1.0, linear=np.zeros((n_classes, X.shape[1])),
            tol=slack, max_iter=max_iter)
        theta, distance, n_iter = result.theta, result.certified_norm, result.n_iter
    elif isinstance(row_loss, SoftmaxLoss):
        result = multinomial_minimise(X, y, C=C, ridge=1.0, linear=np.zeros((y.shape[1],
                                                                              X.shape[1])),
                                      tol=slack, max_iter=max_iter, weights=weights)
        theta, distance, n_iter = result.theta, result.certified_norm, result.n_iter
    elif getattr(X, "partitioned", False):  # the same solve, its reductions over partitions
        result = partitioned_newton_minimise(X, loss, C=C, ridge=1.0,
                                             linear=np.zeros(X.shape[1]), tol=slack,
                                             max_iter=max_iter)
        theta, distance, n_iter = result.theta, result.certified_norm, result.n_iter
    else:
        result = newton_minimise(X, y, loss, C=C, ridge=1.0, linear=np.zeros(X.shape[1]),
                                 tol=slack, max_iter=max_iter)
        # strong convexity 1: ||theta - theta*|| <= ||grad J(theta)||
        theta, distance, n_iter = result.theta, result.certified_norm, result.n_iter
    noise = output_perturbation_calibration(epsilon, delta, base, law, dim=theta.size).noise
    draw = draw_noise(noise, theta.size, rng)
    return OutputPertSolution(theta, float(distance), bool(distance <= slack), n_iter, base,
                              slack, noise, epsilon, delta, n_problems, draw, law, rng,
                              record_bound=C * loss.lipschitz * row_norm)


@fill_doc
class OutputPertSVM(GLMInferenceMixin, GaussianDPMixin, _MultinomialMixin,
                    _LinearClassifierMixin, ClassifierMixin, WeightedFitMixin,
                    PrivateLinearModel):
    """Differentially private SVM by output perturbation (linear or RBF kernel).

    Solves the L2-regularised problem ``C * sum_i loss_i + 0.5 * ||theta||^2``
    (scikit-learn's ``LinearSVC(C, loss="hinge")`` on the intercept-augmented
    design) to a certified accuracy, then adds noise calibrated to the L2
    sensitivity of the exact minimiser. ``kernel="rbf"`` first maps the rows
    through data-independent random Fourier features.

    Parameters
    ----------
    %(privacy_params)s

    C : float or "auto", default="auto"
        Inverse regularisation strength, as in scikit-learn. The sensitivity and
        so the noise grow linearly with ``C``; the regularisation bias falls.
        ``"auto"`` sets it from public quantities only (epsilon, delta, the
        neighbouring relation, ``data_norm``, the number of coefficients): the
        ``C`` at which the noise on the margin of a row of norm ``R`` (see Notes)
        has standard deviation 0.2 (0.6 for ``kernel="rbf"``; divided by ``K``
        for a one-vs-rest fit of ``K`` classes), that is ``0.2 / (R s)`` with ``s``
        the standard deviation of one noise coordinate at ``C = 1``; so it grows
        about linearly with epsilon. ``epsilon=inf`` gives ``C = 1``. The value
        used is ``C_``. On Adult, KDDCup99 and MNIST it is within a point of
        accuracy of the best ``C`` of a grid at epsilon 0.1, 1 and 5
        (``benchmarks/bench_defaults.py``); a fixed ``C`` is too noisy at small
        epsilon or too regularised at large epsilon.

    loss : {"hinge", "logistic", "huber"}, default="hinge"
        Loss of the margin; only its Lipschitz constant (1 for all three) enters
        the privacy analysis, so the non-smooth hinge is fine.

    huber_h : float, default=0.5
        Width of the Huber hinge (``loss="huber"`` only).

    multi_class : {"auto", "multinomial", "ovr"}, default="auto"
        With three classes or more: ``"multinomial"`` (``loss="logistic"`` only)
        fits one softmax model with the whole budget; ``"ovr"`` one binary model
        per class, each with ``epsilon / K``. ``"auto"`` is multinomial for the
        logistic loss, one-vs-rest otherwise.

    %(fit_intercept)s

    %(intercept_scaling)s

    %(data_norm)s
        With ``kernel="rbf"`` it sets the kernel's length scale (``gamma="auto"``)
        and is not needed for privacy (random features have norm at most 1), so
        ``None`` is allowed there: rows are then not clipped (but for rows longer
        than 1e150, scaled down to that norm so that ``x . omega`` stays finite).

    kernel : {"linear", "rbf"}, default="linear"
        ``"rbf"`` approximates the kernel ``exp(-gamma ||x - x'||^2)`` by
        ``n_components`` random Fourier features.

    gamma : float or "auto", default="auto"
        RBF width. ``"auto"`` is ``1 / data_norm**2`` (``1 / n_features`` when
        ``data_norm=None``): computed from public parameters or the shape, never
        from the values. See Notes.

    n_components : int, default=100
        Number of random Fourier features (``kernel="rbf"``). The noise grows
        with it (see Notes).

    feature_random_state : int, RandomState instance, Generator or None, default=0
        Seed of the random Fourier map (``kernel="rbf"``). The map is public: it
        is released with the model (``random_weights_``, ``random_offset_``) and
        does not depend on the data. It is drawn from this value alone
        (``skdp.utils.check_rng``), never from ``random_state``, so the map
        and this seed reveal nothing about the noise. The default 0 is a public
        constant: every fit draws the same map whatever ``random_state`` is, so
        models are reproducible and comparable. ``None`` draws a fresh map from
        operating-system entropy. Do not pass the value or the generator given
        as ``random_state``: this seed is public (a small integer can be found
        from the published map by search), and so would the noise seed be.

    tol : float, default=1e-3
        Relative accuracy of the minimiser. The solver must certify that the
        returned point is within ``tol * Delta`` of the exact minimiser
        (``Delta`` the sensitivity below); the noise is calibrated to
        ``(1 + 2 tol) Delta``, which bounds the distance between the returned
        points of two neighbouring datasets. The certificate includes an
        estimate of its own rounding error (a fixed relative ``tol`` stays
        above it for any realistic number of rows).

    max_iter : int, default=10_000
        Maximum iterations of each liblinear pass (hinge; up to four passes
        with tightening tolerances) or Newton iterations (logistic, Huber).
        If the certificate is not reached the fit raises
        :class:`~skdp.ConvergenceError` and releases nothing.

    noise : {"auto", "laplace"}, default="auto"
        ``"auto"``: Gamma-norm noise (``delta=0``) or Gaussian (``delta > 0``).
        ``"laplace"``: i.i.d. Laplace coordinates calibrated to the L1
        sensitivity ``sqrt(d) (1 + 2 tol) Delta`` (``d`` coefficients, intercept
        included), pure epsilon-DP, ``delta=0`` only. Its noise norm is about
        ``sqrt(2)`` times the Gamma-norm's at the same epsilon, but it admits
        noise reduction: :class:`~skdp.EpsilonForUtility` then releases one
        noise path at increasing epsilons and pays only the last one (see
        ``docs/privacy/private_selection.rst``). The Gaussian noise of
        ``delta > 0`` admits noise reduction too (the Brownian bridge).

    %(class_weight)s

    %(max_sample_weight)s

    %(max_rows_per_group)s

    %(classes)s

    inference : bool, default=False
        Also release what confidence intervals need, inside the same ``epsilon``
        and ``delta``: a tenth of both pays for a noisy information matrix (the
        loss's Hessian sum at the released coefficients; for ``loss="huber"`` also
        the covariance of its gradient, the two sharing the tenth), and the output
        perturbation gets the rest. ``coef_`` and ``intercept_`` are then the
        one-step correction of the ridge's bias, ``theta + H~^{-1} theta / C``,
        which estimates the population minimiser of the unpenalised loss on the
        clipped rows, and :meth:`conf_int` covers it (the sampling variability,
        with the sandwich ``H^{-1} J H^{-1}`` for the Huber loss, and the noise,
        whose law is known). Binary fits with ``loss="logistic"`` or
        ``loss="huber"`` and ``kernel="linear"``, in memory, without weights or
        groups; no noise reduction. Where valid intervals are impossible (for the
        Huber loss also where it is flat: separable classes, too few rows in its
        quadratic band) the fit raises :class:`~skdp.InferenceError` and releases
        nothing. See ``docs/privacy/inference.rst``.
        How many rows avoid a refusal, per ``epsilon``, ``delta`` and number of
        features: "How many rows you need" in ``docs/privacy/inference.rst``.

    %(random_state)s

    %(verbose)s

    Attributes
    ----------
    %(classifier_attrs)s

    C_ : float
        The ``C`` of the fit: ``C``, or the value of ``C="auto"`` at this budget.

    random_weights_ : ndarray of shape (n_features, n_components)
        ``omega`` of the random Fourier map (``kernel="rbf"`` only; ``coef_`` then
        has ``n_components`` columns, the weights of the random features).

    random_offset_ : ndarray of shape (n_components,)
        ``psi`` of the random Fourier map (``kernel="rbf"`` only).

    %(privacy_attrs)s

    %(weight_attrs)s

    %(noise_floor_attrs)s

    %(inference_attrs)s

    See Also
    --------
    ObjPertLogisticRegression : Objective perturbation (smooth losses).
    sklearn.svm.LinearSVC : The non-private estimator.

    Notes
    -----
    Privacy statement. Unit of privacy: one record (row with its label).
    Neighbouring relation: ``neighboring`` (default add/remove-one). The
    objective ``C sum_i l_i(theta) + 0.5 ||theta||^2`` is 1-strongly convex and
    each record's loss is ``G``-Lipschitz in ``theta`` with
    ``G = C * R`` (all three losses are 1-Lipschitz in the margin), where
    ``R = sqrt(data_norm**2 + intercept_scaling**2)`` with an intercept and
    ``data_norm`` without; for ``kernel="rbf"`` ``R = sqrt(1 + intercept_scaling**2)``
    (or 1). The exact minimiser therefore has L2 sensitivity ``Delta = G``
    (add/remove) or ``2 G`` (replace). This is the spec's replace-one formula
    ``2 G' / (n Lambda)`` of the Chaudhuri form ``(1/n) sum l_i + Lambda/2
    ||theta||^2`` with ``G' = R``: dividing our objective by ``C n`` gives
    ``Lambda = 1 / (C n)``, so ``2 R / (n Lambda) = 2 C R``. No derivative of
    the loss is used, so the hinge loss is covered. The returned point is
    certified (hinge: primal-dual gap of a polished dual point,
    ``||theta - theta*|| <= sqrt(2 gap)``;
    logistic, Huber: ``||theta - theta*|| <= ||grad J||``) to lie within the
    public bound ``tol * Delta`` of the exact minimiser, so the noise uses the
    sensitivity ``(1 + 2 tol) Delta``; when the certificate fails, the fit
    raises and releases nothing. With ``delta=0`` the noise has
    density proportional to ``exp(-epsilon ||b|| / ((1 + 2 tol) Delta))``
    (Chaudhuri et al. Algorithm 1, epsilon-DP); with ``delta > 0`` it is
    Gaussian with the analytic calibration of Balle & Wang (2018), valid for
    every epsilon. A multinomial fit perturbs the ``K x d`` softmax minimiser,
    whose sensitivity is ``sqrt(2) C R`` (the softmax loss's gradient bound;
    ``2 sqrt(2) C R`` under replace), with the whole budget; one-vs-rest splits
    epsilon and delta evenly over the classes. The random Fourier map is drawn
    from ``feature_random_state`` alone, independently of the data and of
    ``random_state``, and released with the model. Not protected: the set of
    class labels unless ``classes`` is given, and the feature dimension.
    Floating-point attacks on the samplers are out of scope. Derivation:
    ``docs/privacy/output_perturbation.rst``.

    Row weights. With ``sample_weight`` or ``class_weight`` the objective is
    ``C sum_i w_i l_i(theta) + 0.5 ||theta||^2`` with every ``w_i`` in ``[0,
    W]``, ``W = weight_bound_``: a record's loss is ``W C R``-Lipschitz and the
    objective still 1-strongly convex, so the minimiser's sensitivity is that of
    the unweighted fit at ``C W`` (``W C R`` add/remove, ``2 W C R`` replace) and
    the noise is calibrated to it. ``C="auto"`` reads the weighted bound, so
    ``C_`` is the automatic ``C`` divided by ``W``. The hinge solver takes the
    weights as liblinear does (the dual box ``0 <= alpha_i <= C w_i``) and its
    duality-gap certificate is computed with them. The unit of privacy is one
    record with its weight.

    Persons. With ``fit(X, y, groups=...)`` the unit of privacy is one person
    (all of their rows): ``neighboring_`` is ``"add_remove_person"`` (or
    ``"replace_person"``). Each of a person's ``k`` rows is weighted ``min(1, M
    / k)`` (``M = max_rows_per_group``), so a person's weights sum to at most
    ``W = weight_bound_`` (``M`` times the bound without groups). A person's
    loss ``C sum_j w_j l_j(theta)`` is convex and ``C W R``-Lipschitz (the sum
    of the rows' gradients, each at most ``C w_j R``), and that is all the
    sensitivity argument uses: adding or removing one person moves the exact
    minimiser by at most ``C W R`` (``2 C W R`` when one person's rows replace
    another's), the calibration of the weighted fit at ``W``, unchanged.
    ``data_norm="private"`` is refused with ``groups`` (its quantile is
    row-level).

    RBF defaults. With rows clipped to ``data_norm`` two rows are at most
    ``2 data_norm`` apart, so ``gamma = 1 / data_norm**2`` spreads the kernel
    over ``[exp(-4), 1]`` on the ball: neither nearly constant
    (``1 / n_features`` would give ``[0.96, 1]`` on Adult's 104 unit-norm
    columns, an almost linear model with tiny features) nor a
    nearest-neighbour rule. The Gamma-norm noise has norm about
    ``(n_components + 1) C R / epsilon`` in a uniform direction (``R =
    sqrt(2)`` with the intercept), so on the decision function of a feature
    row (norm about 1.2 with the intercept column) it has standard deviation
    about ``1.7 sqrt(n_components) C / epsilon``: fewer features and a smaller
    ``C`` mean less noise, more features and a larger ``C`` a better
    non-private fit. ``n_components=100`` with ``C=0.03`` keeps it near 0.5,
    below the margin, at epsilon = 1 (Adult, about 30,000 rows: see the
    benchmark for the accuracy against epsilon); ``C="auto"`` follows that
    choice at every budget (margin noise 0.6 where the linear kernel takes
    0.2: a random-feature model needs a larger ``C`` for the same margin).
    These values were chosen on a validation split of Adult's training rows,
    never its test rows (``benchmarks/bench_output_perturbation.py``,
    ``rbf_defaults_study``), and the linear rule on Adult's and KDDCup99's
    (``benchmarks/bench_defaults.py``). That choice read protected training
    rows without noise and is in no reported epsilon: the defaults are public
    choices for other data, but they are not independent of those datasets,
    and a study that tunes them on its own private data pays for the tuning.

    %(no_incremental_fits)s

    References
    ----------
    .. [CMS11] Chaudhuri, Monteleoni & Sarwate, "Differentially Private Empirical
       Risk Minimization", JMLR 12, 2011.
    .. [BW18] Balle & Wang, "Improving the Gaussian Mechanism for Differential
       Privacy: Analytical Calibration and Optimal Denoising", ICML 2018.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skdp import OutputPertSVM
    >>> X, y = make_classification(n_samples=200, n_features=4, random_state=0)
    >>> clf = OutputPertSVM(epsilon=1.0, C=0.1, data_norm=5.0, random_state=0).fit(X, y)
    >>> clf.coef_.shape, clf.epsilon_spent_, clf.neighboring_
    ((1, 4), 1.0, 'add_remove')
    >>> rbf = OutputPertSVM(kernel="rbf", n_components=50, data_norm=5.0,
    ...                     random_state=0).fit(X, y)
    >>> rbf.coef_.shape, rbf.random_weights_.shape
    ((1, 50), (4, 50))
    """

    # first-order expansion of the utility in EpsilonForUtility (see its benchmark)
    _epsilon_expansion = "inverse"

    _parameter_constraints = {
        **linear_classifier_constraints({"hinge", "logistic", "huber"}),
        "neighboring": neighboring_constraint(),
        "C": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "kernel": [StrOptions({"linear", "rbf"})],
        "gamma": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "feature_random_state": ["random_state", np.random.Generator],
        "tol": [Interval(Real, 0, 1, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "noise": [StrOptions({"auto", "laplace"})],
        "multi_class": _MultinomialMixin.multi_class_constraint,
        "verbose": ["verbose"],
        **weight_constraints(),
        **person_constraints(),
        "inference": ["boolean"],
    }

    def __init__(self, *, epsilon=1.0, delta=0.0, neighboring="add_remove", C="auto",
                 loss="hinge", huber_h=0.5, fit_intercept=True, intercept_scaling=1.0,
                 data_norm="warn", kernel="linear", gamma="auto", n_components=100,
                 feature_random_state=0, tol=1e-3, max_iter=10_000, noise="auto",
                 multi_class="auto", class_weight=None, max_sample_weight=1.0,
                 max_rows_per_group=1.0, classes=None, inference=False, random_state=None,
                 verbose=0):
        self.epsilon = epsilon
        self.delta = delta
        self.neighboring = neighboring
        self.C = C
        self.loss = loss
        self.huber_h = huber_h
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.data_norm = data_norm
        self.kernel = kernel
        self.gamma = gamma
        self.n_components = n_components
        self.feature_random_state = feature_random_state
        self.tol = tol
        self.max_iter = max_iter
        self.noise = noise
        self.multi_class = multi_class
        self.class_weight = class_weight
        self.max_sample_weight = max_sample_weight
        self.max_rows_per_group = max_rows_per_group
        self.classes = classes
        self.inference = inference
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # At the default budget (epsilon=1, C=1) the Gamma-norm noise on theta has mean
        # norm d * C * sqrt(2) / epsilon, comparable with theta* on the small check data:
        # check_classifiers_train's 0.83 training accuracy is out of reach by design.
        tags.classifier_tags.poor_score = True
        return tags

    def _has_epsilon_derivative(self):
        # "auto" moves C, and so the minimiser, with epsilon; the one-step correction
        # of inference=True reads a second release
        return self.C != "auto" and not self.inference

    def _gamma(self, n_features):
        """The RBF width: ``gamma``, or the public rule of ``"auto"``."""
        if self.gamma != "auto":
            return float(self.gamma)
        if self.data_norm_ is None:
            return 1.0 / n_features
        return 1.0 / self.data_norm_**2

    def _feature_map(self):
        return RandomFourierMap(self.random_weights_, self.random_offset_)

    def _partitioned_refusal(self, with_derivative):
        """A dask array fits with the certified Newton solvers only: the linear kernel,
        the logistic or Huber loss (binary, one-vs-rest or softmax)."""
        if self.kernel != "linear":
            return (f"OutputPertSVM(kernel={self.kernel!r}) does not fit on a dask array: "
                    "the random Fourier features are fitted in memory only; use "
                    "kernel='linear' with loss='logistic' or loss='huber'.")
        if self.loss == "hinge":
            return ("OutputPertSVM(loss='hinge') does not fit on a dask array: its solver "
                    "(liblinear's dual coordinate descent) needs all rows in one process; "
                    "use loss='logistic' or loss='huber' (the certified Newton solver over "
                    "the partitions).")
        return None

    def _partitioned_releases(self, X, y, groups=None):
        """The fit of a dask ``(X, y)``: the input checks as a map-reduce, the
        certified Newton solve over the partitions, the noise on the client. With
        ``groups`` each row is weighted ``min(1, M / k)`` inside its partition (the
        persons' sizes counted by person key), binary or one-vs-rest."""
        refusal = self._partitioned_refusal(False)
        if refusal is not None:   # also for callers of _releases (noise reduction)
            raise ValueError(f"{refusal} {PARTITIONED_SUPPORT}")
        for name in ("random_weights_", "random_offset_"):
            self.__dict__.pop(name, None)
        if len(X.shape) == 2:  # before any pass over the data (other shapes: below)
            check_partitioned_hessian(X.shape[1] + bool(self.fit_intercept))
        design = partitioned_design(self, X, y, data_norm=self._resolve_data_norm(),
                                    fit_intercept=self.fit_intercept,
                                    intercept_scaling=self.intercept_scaling,
                                    max_classes=np.inf, groups=groups)
        row_norm = effective_data_norm(self.data_norm_, self.fit_intercept,
                                       self.intercept_scaling)
        n_classes = len(self.classes_)
        multinomial = self._is_multinomial(n_classes)
        if multinomial and groups is not None:   # from the label set, before any noise
            raise ValueError(f"{type(self).__name__}: {PARTITIONED_SOFTMAX_PERSONS}")
        # the partitions hold the labels: one view of them per problem
        if multinomial:
            problems = [design.with_targets(partial(one_hot, n_classes=n_classes),
                                            width=n_classes)]
        elif n_classes == 2:
            problems = [design]
        else:
            problems = [design.with_targets(partial(one_vs_rest, positive=c))
                        for c in range(n_classes)]
        self.weight_bound_ = 1.0 if groups is None else float(self.max_rows_per_group)
        return self._problem_releases(problems, [None] * len(problems), design.shape[1],
                                      row_norm, noise_generator(self.random_state),
                                      weighted_partitions=groups is not None)

    def _releases(self, X, y, with_derivative=False, sample_weight=None, groups=None):
        """Validate, then run the mechanism once (two classes, or a multinomial fit) or
        once per one-vs-rest problem.

        Returns the transient solutions (non-private minimiser, noise draws),
        which the fitted estimator never keeps. For ``kernel="rbf"`` it sets
        the public random feature map (``random_weights_``, ``random_offset_``).
        With ``groups`` a person's rows weigh at most ``weight_bound_`` in all, the
        bound the noise is calibrated to (see Notes, "Persons").
        """
        check_person_params(self, groups)
        if self.kernel == "linear":
            self._check_privacy_params()
        else:  # data_norm=None is allowed with random features
            warn_large_delta(self.delta, type(self).__name__)
        if self.noise == "laplace" and self.delta > 0:
            raise ValueError("noise='laplace' is pure epsilon-DP: it needs delta=0; got "
                             f"delta={self.delta}.")
        check_class_weight(self.class_weight)
        partitioned = is_dask_collection(X) or is_dask_collection(y)
        self._check_glm_inference_options(partitioned, sample_weight, groups, more_refusals=[
            (self.kernel != "linear", "set kernel='linear'")])
        if partitioned:
            return self._partitioned_releases(X, y, groups)
        X, y = validate_data(self, X, y, dtype=np.float64, accept_sparse=("csr", "csc"))
        check_classification_targets(y)
        self.classes_, y_idx = encode_labels(y, self.classes)
        self._check_two_classes()
        multinomial = self._is_multinomial(len(self.classes_))
        weights, self.weight_bound_ = row_weights(self, sample_weight, X, y_idx, self.classes_,
                                                  groups=groups)
        if self.kernel == "rbf":
            rng = noise_generator(self.random_state)
            # data_norm=None: rows capped at a huge norm all the same (x . omega finite)
            X = clip_rows_to_norm(X, finite_clipping_norm(self._resolve_data_norm(X)))
            gamma = self._gamma(X.shape[1])
            # the published map comes from its own public seed, never from random_state
            feature_map = draw_random_fourier_map(X.shape[1], self.n_components, gamma,
                                                  check_rng(self.feature_random_state))
            self.random_weights_, self.random_offset_ = feature_map.weights, feature_map.offset
            design = feature_map.transform(X)
            if self.fit_intercept:
                design = augment_intercept(design, self.intercept_scaling)
            row_norm = effective_data_norm(RANDOM_FEATURE_NORM, self.fit_intercept,
                                           self.intercept_scaling)
        else:
            for name in ("random_weights_", "random_offset_"):
                self.__dict__.pop(name, None)
            design = solver_design(X, data_norm=self._resolve_data_norm(X),
                                   fit_intercept=self.fit_intercept,
                                   intercept_scaling=self.intercept_scaling)
            row_norm = effective_data_norm(self.data_norm_, self.fit_intercept,
                                           self.intercept_scaling)
            if self.loss == "hinge":
                check_liblinear_memory(design)  # before the noise stream is touched
            rng = noise_generator(self.random_state)
        targets = ([np.eye(len(self.classes_))[y_idx]] if multinomial
                   else one_vs_rest_targets(y_idx, len(self.classes_)))
        return self._problem_releases([design] * len(targets), targets, design.shape[1],
                                      row_norm, rng, weights)

    def _problem_releases(self, designs, targets, n_coefficients, row_norm, rng,
                          weights=None, weighted_partitions=False):
        """``C_`` at the problems' share of the budget, then the mechanism once per
        problem (one softmax problem, or one binary problem per one-vs-rest class).
        With row ``weights`` the loss is :class:`~skdp.losses.WeightedLoss` at the
        bound ``weight_bound_`` (``C="auto"`` then reads its Lipschitz constant);
        ``weighted_partitions``: the same loss, the partitions' targets carrying their
        rows' weights."""
        multinomial = self._is_multinomial(len(self.classes_))
        loss = SoftmaxLoss() if multinomial else self._make_loss()
        if weighted_partitions:
            loss = WeightedLoss(loss, self.weight_bound_)
        elif weights is not None and multinomial:
            loss = WeightedLoss(loss, self.weight_bound_)
        elif weights is not None:
            targets = [weighted_problem(loss, target, weights, self.weight_bound_)[1]
                       for target in targets]
            loss = WeightedLoss(loss, self.weight_bound_)
        dim = len(self.classes_) * n_coefficients if multinomial else n_coefficients
        k = len(targets)
        epsilon, delta = self._mechanism_budget()
        share = dict(epsilon=epsilon / k, delta=delta / k,
                     neighboring=self.neighboring, row_norm=row_norm, tol=self.tol)
        # a noise-reduction path resolves C="auto" at its public C_epsilon, not at
        # its first (smallest) release
        C_share = {**share, "epsilon": getattr(self, "_C_epsilon", None) or epsilon}
        C_share["epsilon"] /= k
        self.C_ = (auto_C(loss, law=self.noise, dim=dim,
                          margin_noise=AUTO_MARGIN_NOISE[self.kernel] / (2 * k if k > 1 else 1),
                          **C_share)
                   if self.C == "auto" else float(self.C))
        solve = partial(_output_perturbation, loss=loss, C=self.C_, n_problems=k,
                        max_iter=self.max_iter, rng=rng, law=self.noise,
                        n_classes=len(self.classes_),
                        weights=weights if multinomial else None, **share)
        header = problems_header(k, dim, epsilon=share["epsilon"], delta=share["delta"],
                                 tol=self.tol, C=self.C_)
        solutions = solve_each(Progress(self.verbose, type(self).__name__),
                               problem_names(self.classes_, k, multinomial), solve,
                               list(zip(designs, targets)), header)
        if self.inference:   # after the output noise, from the same stream
            solution = solutions[0]
            solution.information, solution.information_calibration = \
                self._release_information(designs[0], targets[0], solution.theta, loss, rng)
            solution.gradient_covariance = self._release_gradient_covariance(
                designs[0], targets[0], solution.theta, loss, rng)
        return solutions

    _inference_losses = ("logistic", "huber")

    def _inference_mechanism(self, solution):
        """The unit ridge at ``C_``, the output noise, and the Huber loss's ``J~`` with
        the most curvature one row adds (``sup l'' R^2``)."""
        row_norm = effective_data_norm(self.data_norm_, self.fit_intercept,
                                       self.intercept_scaling)
        return dict(C=self.C_, ridge=1.0, output_noise=(solution.noise, solution.noise_scale()),
                    gradient_covariance=solution.gradient_covariance,
                    curvature_bound=self._make_loss().smoothness * row_norm**2)

    _renyi_cost_params = ("inference",)
    """Parameters that change the Gaussian fit's Renyi curve besides the privacy ones
    (whether it has one: none with ``inference=True``): a randomised search must give
    them as lists."""

    def _is_gaussian_dp(self):
        """With ``inference=True`` the information matrix composes with the release by
        adding (epsilon, delta): no ``mu``-GDP figure, hence no Renyi curve."""
        return super()._is_gaussian_dp() and not self.inference

    def _supports_noise_reduction(self):
        """Laplace (``noise="laplace"``) or Gaussian (``delta > 0``) noise has an exact
        coupling across scales; the Gamma-norm noise has none known to us, and the
        information matrix of ``inference=True`` has no path."""
        return ((self.noise == "laplace" or self.delta > 0) and not self._private_norm()
                and not self.inference)

    def _noise_reduction_path(self, X, y, C_epsilon=None):
        """One certified fit whose noise is released at increasing epsilons.

        See :class:`NoiseReductionPath`; needs ``noise="laplace"`` or ``delta > 0``.
        ``C_epsilon``: the public epsilon at which ``C="auto"`` is resolved (``None``:
        the first release's).
        """
        if not self._supports_noise_reduction():
            raise ValueError("Noise reduction needs noise='laplace' (pure) or delta > 0 "
                             "(Gaussian); the Gamma-norm noise has no exact coupling. It also "
                             "needs a public data_norm (not 'private').")
        return NoiseReductionPath(self, X, y, C_epsilon)

    def _n_coefficients(self):
        return self.n_components if self.kernel == "rbf" else self.n_features_in_

    def _prediction_input(self, X):
        if self.kernel != "rbf":
            return super()._prediction_input(X)
        X = validate_data(self, X, dtype=np.float64, reset=False, accept_sparse=("csr", "csc"))
        X = clip_rows_to_norm(X, finite_clipping_norm(self.data_norm_))
        return self._feature_map().transform(X)


NOISE_REDUCERS = {"laplace": reduce_laplace_noise, "gaussian": reduce_gaussian_noise}


class NoiseReductionPath:
    """Releases of one output-perturbation fit at increasing epsilons, on one noise path.

    The first release is the estimator's own fit at its ``epsilon``. ``release(e)``
    for a larger ``e`` moves every problem's noise to the smaller scale by the
    exact conditional law (:func:`~skdp.mechanisms.reduce_laplace_noise`, or the
    Brownian bridge :func:`~skdp.mechanisms.reduce_gaussian_noise`), so each
    release is distributed exactly as a fit at ``e``, and the earlier releases are
    the latest one plus noise that does not depend on the data. Laplace: a sequence
    stopped at ``e_k`` is ``e_k``-DP, ex post (Koufogiannis, Han & Pappas 2015;
    Ligett et al. 2017). Gaussian: it is a post-processing of one Gaussian release at
    ``e_k`` (Whitehouse, Ramdas, Wu & Rogers 2022), accounted by
    :class:`~skdp.accounting._odometers.GaussianDPOdometer`.
    Transient: it holds the non-private minimisers and must never be stored or
    released; the models it returns hold neither.

    Parameters
    ----------
    estimator : OutputPertSVM
        Unfitted, with ``noise="laplace"`` or ``delta > 0``; cloned.
    X, y : array-like
        The training rows and labels.
    C_epsilon : float, default=None
        The public epsilon at which ``C="auto"`` is resolved (``None``: the
        estimator's ``epsilon``, the first release's). One ``C`` serves the whole
        path, so resolving it at the smallest release would regularise every
        later, less noisy release for the noise of the first.
    """

    def __init__(self, estimator, X, y, C_epsilon=None):
        self._template = clone(estimator)
        self._template._C_epsilon = C_epsilon
        self._solutions = self._template._releases(X, y)
        self._template._check_converged(self._solutions)
        self.epsilon = float(self._template.epsilon)
        self._noise = [s.released() - s.theta_star for s in self._solutions]

    def release(self, epsilon):
        """The fitted model at ``epsilon`` (at least the last one released).

        Parameters
        ----------
        epsilon : float
            The release's budget.

        Returns
        -------
        model : OutputPertSVM
            Fitted, with ``epsilon`` and ``epsilon_spent_`` set to ``epsilon``.
        """
        epsilon = float(epsilon)
        if epsilon < self.epsilon:
            raise ValueError(f"Noise reduction only goes to larger epsilons: {epsilon} < "
                             f"{self.epsilon}.")
        for k, solution in enumerate(self._solutions):
            scale, new_scale = solution.noise_scale(self.epsilon), solution.noise_scale(epsilon)
            reduce = NOISE_REDUCERS[solution.noise]
            self._noise[k] = (np.zeros_like(self._noise[k]) if new_scale == 0 else
                              reduce(self._noise[k], scale, new_scale, solution.noise_rng))
        self.epsilon = epsilon
        model = copy.copy(self._template)
        del model._C_epsilon  # a refit of the released model resolves C at its own epsilon
        model.epsilon = epsilon
        model.coef_, model.intercept_ = model._coefficients(
            [s.theta_star + noise for s, noise in zip(self._solutions, self._noise)])
        model._record_spend(epsilon, model.delta, model.neighboring)
        return model
