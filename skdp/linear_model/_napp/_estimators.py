"""NAPP: the noise-augmented private lasso (Li & Liu), in forms whose guarantee holds."""

import warnings
from functools import partial
from numbers import Integral, Real

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ...base import PrivacyParamsMixin, neighboring_constraint
from ...exceptions import NoiseDominanceWarning
from ...mechanisms import split_budget
from ...mechanisms._approximate_minima import COVER_EPSILON_SHARE, MAX_TOL, in_total_epsilon
from ...mechanisms._dominance import noise_norm
from ...mechanisms._napp import napp_calibration
from ...losses import WeightedLoss, weighted_targets
from ...penalties import make_penalty
from ...solvers._partitioned import is_dask_collection, one_vs_rest
from ...utils._docstrings import _SHARED_PARAMS, fill_doc
from ...utils._groups import person_relation
from ...utils._memory import check_allocation
from ...utils._progress import Progress, problem_names, problems_header, solve_each
from ...utils._random import noise_generator
from ...utils._sklearn_compat import Interval, StrOptions
from ...utils.validation import clip_rows_to_norm, effective_data_norm
from .._base import (
    PrivateLinearModel,
    _LinearClassifierMixin,
    classes_constraint,
    encode_labels,
    one_vs_rest_targets,
    _dask_rows,
    _lazy_mean,
    by_partitions,
    partitioned_design,
    partitioned_regression_design,
    solver_design,
)
from .._weights import WeightedFitMixin, person_constraints, row_weights, weight_constraints
from ._mechanism import napp_release, napp_two_stage


_NAPP_PARAMS = {
    "alpha": """alpha : float, default=1.0
        Weight of the penalty in the sum-form objective
        ``sum_i loss_i + alpha * P(theta)``. It is not scaled by the (private)
        number of samples. Mapping to scikit-learn: ``Lasso(alpha=a)`` on ``n``
        samples is ``alpha = n * a``; ``LogisticRegression(C=C, l1_ratio=1)`` is
        ``alpha = 1 / C``.""",
    "penalty": """penalty : {"l1", "elasticnet", "l2", "bridge"}, default="l1"
        Target penalty ``P``: lasso ``||theta||_1``; elastic net
        ``l1_ratio ||theta||_1 + (1 - l1_ratio) / 2 ||theta||_2**2``; ridge
        ``||theta||_2**2 / 2``; bridge ``sum_j |theta_j|**q``. The intercept
        column is penalised like every coefficient.""",
    "l1_ratio": """l1_ratio : float, default=0.5
        Elastic-net mixing, in [0, 1] (used when ``penalty="elasticnet"``).""",
    "q": """q : float, default=1.5
        Bridge exponent, in (1, 2] (used when ``penalty="bridge"``, which also
        needs ``coef_bound``).""",
    "eps_jacobian_frac": """eps_jacobian_frac : float, default=0.5
        Share of epsilon planned for the Jacobian (curvature) term, in (0, 1);
        the rest pays for the noise. The curvature added is
        ``Delta = beta_H / (exp(eps_jacobian_frac * epsilon) - 1)`` minus what the
        penalty already guarantees.""",
    "retrieval": """retrieval : {"recycle", "return"}, default="recycle"
        What to do with the Jacobian budget that a curved penalty (ridge,
        elastic net, bridge) makes unnecessary (decided before any noise is
        drawn): ``"recycle"`` gives it to the noise (same epsilon, less noise);
        ``"return"`` does not spend it (same noise, smaller ``epsilon_spent_``).""",
    "coef_bound": """coef_bound : float or None, default=None
        Public bound ``B`` on ``||theta||_2`` (intercept coordinate included): the
        estimate is the exact minimiser over this ball. The loss constants are
        computed on it, so it is required by the squared and Poisson losses and
        by the bridge penalty; for the logistic loss it is optional.""",
    "adaptive_two_stage": """adaptive_two_stage : bool, default=False
        Use the two-stage adaptive estimator: a default release with
        ``stage1_frac`` of the budget, then a weighted ridge restricted to its
        support with dual-purpose weights ``max(Delta2, u_j(theta1))`` and a
        fresh noise vector that receives the retrieved Jacobian budget (the
        rigorous form of MOOR, retrieval and recycling; stage 2 always
        recycles). ``epsilon_spent_`` is the composed total.""",
    "stage1_frac": """stage1_frac : float, default=0.3
        Share of epsilon (and delta) given to the first stage, in (0, 1).""",
    "threshold": """threshold : float or None, default=None
        Data-independent hard threshold: coefficients with ``|coef| < threshold``
        are set to 0 (post-processing, free). The intercept is not thresholded.""",
    "augmentation": """augmentation : {"expected", "exact_moment", "random"}, default="expected"
        Pseudo-rows of the NAPP iterations (the solver's warm start):
        ``"expected"`` appends one exact row per coefficient; ``"exact_moment"``
        and ``"random"`` append ``n_aug`` noisy rows as in the paper (exact or
        expected second moments). The released estimate is always the polished,
        certified exact minimiser, so this choice affects speed only.""",
    "n_aug": """n_aug : int or None, default=None
        Number of pseudo-rows for ``"exact_moment"``/``"random"``; ``None`` means
        ``max(1000, 10 * n_coefficients)``.""",
    "tol": """tol : float, default=1e-8
        Public KKT tolerance, in (0, 1e-6], absolute (never scaled by a quantity
        of the data): the solver stops when the largest violation of the
        optimality conditions is at most ``tol``, which puts it within a public
        distance ``r`` of the exact minimiser. 1 % of epsilon pays for
        Gamma-norm output noise that covers ``r``; released coordinates below
        a public floor (the cover's norm with overwhelming probability) are set
        to zero, which keeps the exact zeros of the lasso. If ``tol`` is not
        reached within ``max_iter`` the fit raises
        :class:`~skdp.ConvergenceError` and releases nothing.""",
    "max_iter": """max_iter : int, default=100
        Maximum number of proximal Newton iterations of the exact polish.""",
    "napp_max_iter": """napp_max_iter : int, default=10
        Maximum number of NAPP (noise-augmented IRLS) iterations of the warm start.""",
    "fitted_common": """privacy_guarantee_ : bool
        ``True``: the fit certifies ``epsilon_spent_`` (the research variants of
        :mod:`skdp.research` set ``False``).

    privacy_report_ : dict
        Public constants of the release: mechanism, the epsilon split
        (``eps_jacobian``, ``eps_noise``, ``eps_retrieved``), ``curvature``
        (Delta), ``extra_ridge``, ``noise`` law and ``noise_scale``,
        ``sensitivity`` (zeta), per stage in ``stages`` (with ``persons`` and
        ``jacobian_rank``); ``neighboring`` and ``unit``: ``"one record"``, or with
        ``groups`` ``"one person (all of their rows)"`` and a relation ending in
        ``"_person"``.""",
}

_NOTES = """Privacy statement. Unit of privacy: one record (a row of ``X`` with its
    target). Neighbouring relation: ``neighboring`` (default add/remove-one).
    Mechanism: objective perturbation in the form of Kifer, Smith & Thakurta
    (2012) with the target penalty, released as the exact minimiser over the
    ball ``||theta||_2 <= coef_bound`` of ``sum_i loss_i + <b, theta> + alpha
    P(theta) + extra_ridge / 2 ||theta||^2``. With per-record gradient bound
    ``G = L_f R`` and Hessian bound ``beta_H = c R**2`` on that domain (``R``
    the row bound, intercept included), the Jacobian term costs ``eps_J`` when
    the penalty part has curvature ``Delta = beta_H / (exp(eps_J) - 1)``, and
    the noise ``b`` (density ``exp(-eps_b ||b|| / zeta)``, or Gaussian with
    ``sigma = zeta (t + sqrt(t**2 + 2 eps_b)) / (2 eps_b)``,
    ``t = sqrt(2 log(2/delta))``, ``4/delta`` for replace) costs
    ``eps_b = epsilon - eps_J``; ``zeta = G`` (add/remove) or ``2 G`` (replace).
    Only the curvature the penalty lacks is added (``extra_ridge = max(0,
    Delta - mu_P)``); when the penalty's own curvature covers Delta the unused
    Jacobian budget is retrieved before the noise is drawn. ``eps_J`` is at most
    5 nats: the curvature is never below ``beta_H / expm1(5)``. The two-stage
    estimator composes its two releases sequentially. The noise-augmented
    iterations are the solver; the released estimate is the polished exact
    minimiser, certified by its KKT residual. Not protected: the number of
    samples and the feature dimension. Floating-point attacks on the samplers
    are out of scope. The paper's MOOR, VS, VS+ and recycling are not DP as
    published (exact audits in ``skdp.audit``) and exist only in
    :mod:`skdp.research`. Derivation: ``docs/privacy/napp.rst``. ``X``, dense
    or sparse, is read in place (the row clipping and the intercept column are
    applied inside the products); the solvers form dense ``d x d`` Gram
    matrices, and a design whose matrices would not fit in memory is refused
    before any work.

    Row weights. With ``sample_weight`` (or ``class_weight``) the objective's loss
    is ``sum_i w_i loss_i`` with every ``w_i`` in ``[0, W]``, ``W =
    weight_bound_``: a record's gradient bound is ``W G`` and its Hessian bound
    ``W beta_H`` (a loss scaled by ``w <= W``), so ``zeta`` and ``Delta`` are
    those of the unweighted fit with ``W`` times the loss; the penalty and its
    curvature are unchanged. The release is then the same as with the weights
    ``w_i / W`` (bound 1) and the penalty ``alpha / W``: large weights act as a
    weaker penalty against the same relative noise, so scale ``alpha`` with
    ``W`` to keep the unweighted fit's regularisation. The unit of privacy is
    one record with its weight.

    Persons. With ``fit(X, y, groups=...)`` the unit of privacy is one person
    (all of their rows; ``neighboring_`` is ``"add_remove_person"`` or
    ``"replace_person"``). Each of a person's ``k`` rows is weighted ``min(1, M /
    k)``, ``M = max_rows_per_group``, so a person's weights sum to at most
    ``weight_bound_ = M W``: ``zeta`` is that of a record of weight ``M W``. A
    person's Hessian is a sum of up to ``k`` rank-one terms of trace at most ``M W
    beta_H`` in all, of rank up to the number of coefficients ``m``, so the
    Jacobian term is bounded by ``m log(1 + M W beta_H / (m Delta))`` instead of
    the row's ``log(1 + W beta_H / Delta)``: the curvature is ``Delta = M W beta_H /
    (m (exp(eps_J / m) - 1))`` (``privacy_report_["stages"]`` gives ``m`` as
    ``jacobian_rank``). Two-stage fits use ``m = |S|`` in the second stage.
    ``data_norm="private"`` is refused with groups (its quantile protects a
    row)."""


MNIST_NUMBERS = {"napp": "0.32", "napp_gaussian": "0.82", "dpsgd": "0.91",
                 "objpert": "0.71"}
"""Test accuracies on MNIST at epsilon 1 quoted by :class:`~skdp.NoiseDominanceWarning`
(``examples/napp_multiclass_mnist.py``, ``docs/choosing.rst``)."""

NOISE_ROWS_LIMIT = 2000.0
"""One-vs-rest fits whose noise, per problem, has the norm of the largest gradients of
this many records or more warn (:class:`~skdp.NoiseDominanceWarning`). On MNIST (785
coefficients, ten classes, about 6,000 rows a class) at epsilon 1: 15,900 records
(the default) reached 0.32 test accuracy, 3,100 (``delta=1e-5``) about 0.62 on the
noise-equivalent subsample, 1,600 (``delta=1e-5, eps_jacobian_frac=0.05``) 0.82,
against 0.91 for ``DPSGDClassifier`` (``docs/choosing.rst``)."""


def noise_in_records(calibration, dim):
    """Mean norm of one release's noise over one record's largest gradient ``G``.

    The number of records pulling the same way whose gradients the noise matches
    (:func:`~skdp.mechanisms._dominance.noise_norm`). A function of public constants only.
    """
    return noise_norm(calibration.noise, dim, calibration.noise_scale) / \
        calibration.gradient_bound


def _cover_derivative(solution):
    """``d/depsilon`` of the cover's noise on the released (non-zero) coordinates.

    Its scale is proportional to ``1 / epsilon_cover``, a fixed share of epsilon.
    """
    if solution.cover is None:
        return 0.0
    epsilon = solution.cover.epsilon / COVER_EPSILON_SHARE
    return -solution.cover_draw.vector(solution.cover.scale) / epsilon


def _release_theta_derivative(solution):
    """``d/depsilon`` of one default NAPP release: minimiser and cover, draws held fixed.

    Coordinates the release's floor set to zero stay zero nearby.
    """
    derivative = _minimiser_theta_derivative(solution) + _cover_derivative(solution)
    return np.where(solution.released != 0, derivative, 0.0)


def _minimiser_theta_derivative(solution):
    """``d theta / d epsilon`` of one default NAPP minimiser, the standard draw held fixed.

    On the support ``S`` of ``theta`` the KKT conditions ``g_S(theta) + l1_S
    sign(theta_S) (+ nu theta_S) = 0`` (``g`` the smooth gradient, ``nu`` the
    multiplier of an active ball ``||theta|| = coef_bound``) hold along the path;
    differentiating, ``(H_SS + nu I) theta'_S + nu' theta_S = -(extra' theta_S +
    (log scale)' b_S)`` with ``theta_S' theta'_S = 0`` when the ball is active, and
    ``theta' = 0`` off ``S`` (strict complementarity).
    """
    theta = solution.theta
    derivative = np.zeros_like(theta)
    if solution.draw is None:
        return derivative
    problem = solution.problem
    d_extra, d_log_scale = in_total_epsilon(solution.calibration)
    S = np.flatnonzero(theta)
    theta_S = theta[S]
    rhs = d_extra * theta_S + d_log_scale * problem.linear[S]
    H = problem.smooth_hessian(theta).block(S)
    bound = problem.coef_bound
    if bound is None or not np.isfinite(bound) or np.linalg.norm(theta) < bound * (1 - 1e-9):
        derivative[S] = -np.linalg.solve(H, rhs)
        return derivative
    g = problem.smooth_gradient(theta)[S] + problem.l1[S] * np.sign(theta_S)
    nu = -(theta_S @ g) / (theta_S @ theta_S)
    A = H + nu * np.eye(len(S))
    a_rhs, a_theta = np.linalg.solve(A, np.column_stack([rhs, theta_S])).T
    d_nu = -(theta_S @ a_rhs) / (theta_S @ a_theta)
    derivative[S] = -(a_rhs + d_nu * a_theta)
    return derivative


def _napp_design(X, estimator):
    """The clipped design of :func:`~skdp.linear_model._base.solver_design` (``X`` read
    in place, dense or CSR), once the ``d x d`` arrays NAPP's solvers hold at once (at
    most three: a Gram matrix, a Hessian and the block factorised in place) are known
    to fit in memory: refused before any work when they would not."""
    _check_napp_allocation(X.shape[1] + int(estimator.fit_intercept))
    return solver_design(X, data_norm=estimator._resolve_data_norm(X),
                         fit_intercept=estimator.fit_intercept,
                         intercept_scaling=estimator.intercept_scaling)


def _check_napp_allocation(d):
    """Refuse, before any work, ``d x d`` matrices NAPP's solvers cannot hold (at most
    three at once: a Gram matrix, a Hessian and the block factorised in place; on a dask
    array the driver holds them, and each worker one partial Gram matrix)."""
    check_allocation(8.0 * 3 * d * d,
                     f"NAPP's solver, with d x d Gram and Hessian matrices for {d} coefficients,")


def _grouped(names):
    """Several parameter fragments as one (the estimators list them alike)."""
    return "\n\n    ".join({**_SHARED_PARAMS, **_NAPP_PARAMS}[name] for name in names)


_napp_doc = fill_doc(fragments={
    **_NAPP_PARAMS,
    "notes": _NOTES,
    "napp_budget_params": _grouped(["penalty", "l1_ratio", "q", "epsilon", "delta",
                                    "neighboring", "eps_jacobian_frac", "retrieval",
                                    "data_norm"]),
    "napp_solver_params": _grouped(["coef_bound", "fit_intercept", "intercept_scaling",
                                    "adaptive_two_stage", "stage1_frac", "threshold",
                                    "augmentation", "n_aug", "tol", "max_iter",
                                    "napp_max_iter"]),
})


class _BaseNAPP(WeightedFitMixin, PrivateLinearModel):
    """Parameters, validation and the mechanism dispatch shared by the NAPP estimators."""

    # first-order expansion of the utility in EpsilonForUtility (see its benchmark)
    _epsilon_expansion = "log"

    _parameter_constraints = {
        **PrivacyParamsMixin._privacy_parameter_constraints,
        "neighboring": neighboring_constraint(),
        "alpha": [Interval(Real, 0, None, closed="left")],
        "penalty": [StrOptions({"l1", "elasticnet", "l2", "bridge"})],
        "l1_ratio": [Interval(Real, 0, 1, closed="both")],
        "q": [Interval(Real, 1, 2, closed="right")],
        "eps_jacobian_frac": [Interval(Real, 0, 1, closed="neither")],
        "retrieval": [StrOptions({"recycle", "return"})],
        "coef_bound": [Interval(Real, 0, None, closed="neither"), None],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(Real, 0, None, closed="neither")],
        "adaptive_two_stage": ["boolean"],
        "stage1_frac": [Interval(Real, 0, 1, closed="neither")],
        "threshold": [Interval(Real, 0, None, closed="left"), None],
        "augmentation": [StrOptions({"expected", "exact_moment", "random"})],
        "n_aug": [Interval(Integral, 1, None, closed="left"), None],
        "tol": [Interval(Real, 0, MAX_TOL, closed="right")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "napp_max_iter": [Interval(Integral, 1, None, closed="left")],
        "verbose": ["verbose"],
        **weight_constraints(class_weight=False),
        **person_constraints(),
    }

    def _check_params(self, n_coefficients):
        """Cross-parameter rules, checked before any noise is drawn."""
        self._check_privacy_params()
        loss = self._loss_name
        needs_bounds = self._make_loss().needs_public_bounds
        needs = []
        if needs_bounds and self.coef_bound is None:
            needs.append(f"coef_bound (the {loss} loss has no finite gradient bound without "
                         "a public bound on ||theta||)")
        if needs_bounds and getattr(self, "y_bound", None) is None:
            needs.append(f"y_bound (the {loss} loss needs a public bound on |y|; y is clipped "
                         "to it)")
        if self.penalty == "bridge" and self.coef_bound is None:
            needs.append("coef_bound (the bridge penalty's curvature is bounded below only on "
                         "a bounded domain)")
        if needs:
            raise ValueError(f"{type(self).__name__} with loss={loss!r} and "
                             f"penalty={self.penalty!r} needs " + "; ".join(needs) +
                             ". Choose these bounds from public knowledge, never from the "
                             "private data.")
        if self.penalty == "bridge" and not 1.0 < self.q <= 2.0:
            raise ValueError(f"q={self.q} is outside (1, 2]: the bridge penalty must be "
                             "convex for a private fit.")
        if self.augmentation == "exact_moment" and self.n_aug is not None \
                and self.n_aug < n_coefficients + 2:
            raise ValueError(f"n_aug={self.n_aug} is too small for exact-moment pseudo-rows: "
                             f"it must be at least n_coefficients + 2 = {n_coefficients + 2}.")

    def _check_groups(self, groups):
        """With ``groups``, refuse before any noise what has no person-level calibration:
        ``data_norm="private"`` (its DP quantile protects one row, not one person)."""
        if groups is not None and self._private_norm():
            raise ValueError(
                f"{type(self).__name__}: data_norm='private' is refused with groups: the "
                "private choice of the norm bound protects one row, not one person (all of "
                "their rows). Pass a public data_norm.")

    def _partitioned_persons(self, groups):
        """``(weights, persons)`` of :meth:`_run` for a dask fit: with ``groups`` the
        partitions weigh a person's rows (``weight_bound_ = max_rows_per_group``)."""
        if groups is None:
            return None, False
        self.weight_bound_ = float(self.max_rows_per_group)
        return "partitions", True

    def _penalty(self):
        return make_penalty(self.penalty, self.alpha, l1_ratio=self.l1_ratio, q=self.q)

    def _partitioned_refusal(self, with_derivative):
        return None   # every loss, penalty and option (the d x d matrices checked in fit)

    def _partitioned(self, X, y):
        """Whether ``(X, y)`` is a fit on a dask array; then refuse, before any pass over
        the data, what the parameters alone rule out (bounds, the d x d matrices)."""
        if not (is_dask_collection(X) or is_dask_collection(y)):
            return False
        if len(X.shape) == 2:   # other shapes: refused by the input checks
            n_coefficients = X.shape[1] + int(self.fit_intercept)
            self._check_params(n_coefficients)
            _check_napp_allocation(n_coefficients)
        return True

    def _run(self, problems, rng, weights=None, persons=False):
        """Run the configured mechanism once per problem ``(design, targets)`` (a
        partitioned design holds its targets: ``None``); return the transient
        solutions. Row ``weights`` (in ``[0, weight_bound_]``) make the loss a
        :class:`~skdp.losses.WeightedLoss`, whose bounds are ``weight_bound_`` times
        the row's; ``weights="partitions"``: the partitions' targets carry them. With
        ``persons`` (``groups`` given) ``weight_bound_`` bounds a person's weights in
        all and the Jacobian is bounded for a person's Hessian of any rank
        (``docs/privacy/napp.rst``, "Persons (groups)")."""
        row_norm = effective_data_norm(self.data_norm_, self.fit_intercept,
                                       self.intercept_scaling)
        if weights is None:
            self.weight_bound_ = 1.0
        loss = self._make_loss()
        if weights is not None:
            loss = WeightedLoss(loss, self.weight_bound_)
        if weights is not None and not isinstance(weights, str):
            problems = [(design, weighted_targets(target, weights))
                        for design, target in problems]
        gradient_bound, hessian_bound = loss.bounds(row_norm, getattr(self, "y_bound", None),
                                                    self.coef_bound)
        penalty = self._penalty()
        solver = dict(tol=self.tol, max_iter=self.max_iter, napp_max_iter=self.napp_max_iter,
                      augmentation=self.augmentation, n_aug=self.n_aug, rng=rng)
        k = len(problems)
        common = dict(epsilon=self._mechanism_epsilon() / k, delta=self.delta / k,
                      gradient_bound=gradient_bound, hessian_bound=hessian_bound,
                      coef_bound=self.coef_bound, eps_jacobian_frac=self.eps_jacobian_frac,
                      neighboring=self.neighboring, solver=solver, rng=rng, persons=persons)
        self._warn_noise_dominance(k, problems[0][0].shape[1], penalty, common)
        progress = Progress(self.verbose, type(self).__name__)
        header = problems_header(k, problems[0][0].shape[1], epsilon=common["epsilon"],
                                 delta=common["delta"], tol=self.tol)
        return solve_each(progress, self._problem_names(k),
                          partial(self._release_problem, loss=loss, penalty=penalty,
                                  common=common), problems, header)

    def _problem_names(self, n_problems):
        """Public names of the problems, for the progress lines."""
        return ["regression problem"]

    def _warn_noise_dominance(self, n_problems, dim, penalty, common):
        """Warn, before any noise, when public quantities say the noise will dominate
        (the classifier's one-vs-rest fits; nothing for the regressor)."""

    def _release_problem(self, X, y, loss, penalty, common):
        """The mechanism on one problem (a subclass may swap it)."""
        if self.adaptive_two_stage:
            return napp_two_stage(X, y, loss, penalty, stage1_frac=self.stage1_frac, **common)
        return napp_release(X, y, loss, penalty, retrieval=self.retrieval, **common)

    def _mechanism_name(self):
        return "napp_two_stage" if self.adaptive_two_stage else "napp"

    def _has_epsilon_derivative(self):
        # the two-stage estimator's second stage depends on the first through its
        # support and weights
        return not self.adaptive_two_stage

    def _derivative_coefficients(self, releases):
        """Implicit function theorem on the KKT conditions of each released minimiser
        (:func:`_release_theta_derivative`); one-vs-rest spends ``epsilon / K`` per
        class, hence the factor ``1 / K``. Thresholded coefficients stay at 0 nearby.
        """
        k = len(releases)
        derivatives = np.array([_release_theta_derivative(r) / k for r in releases])
        if self.threshold is not None:
            coef_part = derivatives[:, :self.n_features_in_]
            coef_part[np.asarray(self.coef_).reshape(k, -1) == 0] = 0.0
        return self._coefficients(derivatives)

    def _set_fitted(self, solutions):
        """Coefficients, certificate, spend and report from the transient solutions.

        A solution that did not reach the public tolerance releases nothing: the
        fit raises :class:`~skdp.ConvergenceError`.
        """
        self._check_converged(solutions)
        n_features = self.n_features_in_
        thetas = np.array([s.theta if s.released is None else s.released for s in solutions],
                          dtype=float)
        if self.threshold is not None:
            coef_part = thetas[:, :n_features]
            coef_part[np.abs(coef_part) < self.threshold] = 0.0
        self.coef_, self.intercept_ = self._coefficients(thetas)
        report = self._report(solutions)
        self.privacy_guarantee_ = True
        self._record_spend(report["epsilon_spent"], self.delta, report["neighboring"])
        self.privacy_report_ = report

    def _report(self, solutions):
        first = solutions[0]
        stages = []
        for stage in (first.stage1, first):
            if stage is not None:
                record = stage.calibration.as_dict()
                # the share that pays for the cover of the solver's error
                record["epsilon_cover"] = 0.0 if stage.cover is None else stage.cover.epsilon
                stages.append(record)
        per_problem = sum(stage["epsilon_spent"] + stage["epsilon_cover"] for stage in stages)
        last = stages[-1]
        persons = first.calibration.persons
        return {
            "mechanism": self._mechanism_name(),
            "epsilon": float(self.epsilon),
            "delta": float(self.delta),
            "epsilon_spent": float(per_problem * len(solutions) + self.data_norm_epsilon_),
            "epsilon_data_norm": float(self.data_norm_epsilon_),
            "data_norm": self.data_norm_,
            # with groups: one person (all of their rows)
            "neighboring": person_relation(self.neighboring) if persons else self.neighboring,
            "unit": "one person (all of their rows)" if persons else "one record",
            "n_problems": len(solutions),
            "eps_jacobian": last["eps_jacobian"],
            "eps_noise": last["eps_noise"],
            "eps_retrieved": last["eps_retrieved"],
            "curvature": last["curvature"],
            "extra_ridge": last["extra_ridge"],
            "noise": last["noise"],
            "noise_scale": last["noise_scale"],
            "sensitivity": last["sensitivity"],
            "stages": stages,
        }


@_napp_doc
class NAPPLasso(RegressorMixin, _BaseNAPP):
    """Differentially private lasso regression by noise-augmented objective perturbation (NAPP).

    The coefficients are the exact minimiser of the penalised empirical risk
    plus a random linear term ``<b, theta>`` and only the curvature the
    penalty lacks for privacy, in the sum form
    ``sum_i loss_i + alpha * P(theta)``, computed the NAPP way: the noise and
    the penalty are realised by pseudo-rows appended to the data, every
    iteration is a weighted least-squares (IRLS) fit, and the result is
    polished to the exact minimiser and certified.

    Parameters
    ----------
    %(alpha)s

    loss : {"squared", "poisson"}, default="squared"
        Squared error (linear regression) or Poisson negative log-likelihood
        with log link (counts ``y >= 0``). Both need ``y_bound`` and
        ``coef_bound``.

    %(napp_budget_params)s

    y_bound : float or None, default=None
        Public bound on the target: ``y`` is clipped to ``[-y_bound, y_bound]``
        (squared) or ``[0, y_bound]`` (Poisson). Required.

    %(napp_solver_params)s

    %(max_sample_weight)s

    %(max_rows_per_group)s

    %(random_state)s

    %(verbose)s

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)

    intercept_ : float

    n_features_in_ : int

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined only when ``X`` has string feature names.

    %(fitted_common)s

    %(privacy_attrs)s

    %(weight_attrs)s

    %(noise_floor_attrs)s

    See Also
    --------
    NAPPLassoClassifier : the logistic-loss sibling.
    sklearn.linear_model.Lasso : the non-private estimator (``alpha / n_samples``).

    Notes
    -----
    %(notes)s

    Squared loss: ``L_f = R * coef_bound + y_bound`` and ``c = 1``. Poisson:
    ``L_f = max(exp(R * coef_bound), y_bound)`` and ``c = exp(R * coef_bound)``,
    so the Poisson curvature requirement grows exponentially with
    ``R * coef_bound``. The guarantee holds because the estimate is constrained
    to the ball of radius ``coef_bound`` (the constraint is public and
    data-independent; the loss constants are suprema over it). If the
    unconstrained minimiser lies outside the ball, the released estimate lies
    on its boundary; choose ``coef_bound`` generously from public knowledge.
    Predictions use rows clipped to ``data_norm``, like the fit.

    %(no_incremental_fits)s

    References
    ----------
    .. [LL21] Li & Liu, "Noise-Augmented Privacy-Preserving Empirical Risk
       Minimization with Dual-purpose Regularizer and Privacy Budget Retrieval
       and Recycling", arXiv:2110.08676, 2021.
    .. [KST12] Kifer, Smith & Thakurta, "Private Convex Empirical Risk
       Minimization and High-dimensional Regression", COLT 2012.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from skdp import NAPPLasso
    >>> X, y = make_regression(n_samples=200, n_features=5, random_state=0)
    >>> reg = NAPPLasso(alpha=5.0, y_bound=300.0, coef_bound=300.0, data_norm=3.0,
    ...                 random_state=0).fit(X, y)
    >>> reg.coef_.shape, reg.epsilon_spent_, reg.neighboring_
    ((5,), 1.0, 'add_remove')
    """

    _parameter_constraints = {
        **_BaseNAPP._parameter_constraints,
        "loss": [StrOptions({"squared", "poisson"})],
        "y_bound": [Interval(Real, 0, None, closed="neither"), None],
    }

    def __init__(self, *, alpha=1.0, loss="squared", penalty="l1", l1_ratio=0.5, q=1.5,
                 epsilon=1.0, delta=0.0, neighboring="add_remove", eps_jacobian_frac=0.5,
                 retrieval="recycle", data_norm="warn", y_bound=None, coef_bound=None,
                 fit_intercept=True, intercept_scaling=1.0, adaptive_two_stage=False,
                 stage1_frac=0.3, threshold=None, augmentation="expected", n_aug=None,
                 tol=1e-8, max_iter=100, napp_max_iter=10, max_sample_weight=1.0,
                 max_rows_per_group=1.0, random_state=None, verbose=0):
        self.alpha = alpha
        self.loss = loss
        self.penalty = penalty
        self.l1_ratio = l1_ratio
        self.q = q
        self.epsilon = epsilon
        self.delta = delta
        self.neighboring = neighboring
        self.eps_jacobian_frac = eps_jacobian_frac
        self.retrieval = retrieval
        self.data_norm = data_norm
        self.y_bound = y_bound
        self.coef_bound = coef_bound
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.adaptive_two_stage = adaptive_two_stage
        self.stage1_frac = stage1_frac
        self.threshold = threshold
        self.augmentation = augmentation
        self.n_aug = n_aug
        self.tol = tol
        self.max_iter = max_iter
        self.napp_max_iter = napp_max_iter
        self.max_sample_weight = max_sample_weight
        self.max_rows_per_group = max_rows_per_group
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.positive_only = self.loss == "poisson"
        # The default budget (epsilon=1, rows clipped to norm 1) is far too noisy
        # for the common checks' R^2 > 0.5 on unscaled toy data.
        tags.regressor_tags.poor_score = True
        return tags

    def _releases(self, X, y, with_derivative=False, sample_weight=None, groups=None):
        """Validate, clip, then run the mechanism; return the transient solutions.

        The solutions hold the noise draws and the clipped design; the fitted
        estimator never keeps them. ``groups`` (one person label per row) makes the
        person the unit of privacy.
        """
        self._check_groups(groups)
        if self._partitioned(X, y):   # checked as a map-reduce, clipped in partitions
            poisson = self.loss == "poisson"
            design = partitioned_regression_design(
                self, X, y, data_norm=self._resolve_data_norm(), fit_intercept=self.fit_intercept,
                intercept_scaling=self.intercept_scaling,
                low=0.0 if poisson else -self.y_bound, high=self.y_bound, nonnegative=poisson,
                groups=groups)
            return self._run([(design, None)], noise_generator(self.random_state),
                             *self._partitioned_persons(groups))
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True,
                             accept_sparse=("csr", "csc"))
        self._check_params(X.shape[1] + int(self.fit_intercept))
        if self.loss == "poisson":
            if np.any(y < 0):
                raise ValueError("Some value(s) of y are negative: the Poisson loss needs "
                                 "counts y >= 0.")
            y = np.minimum(y, self.y_bound)
        else:
            y = np.clip(y, -self.y_bound, self.y_bound)
        weights, self.weight_bound_ = row_weights(self, sample_weight, X, groups=groups)
        design = _napp_design(X, self)
        rng = noise_generator(self.random_state)
        return self._run([(design, y)], rng, weights, persons=groups is not None)

    def _set_fitted(self, solutions):
        super()._set_fitted(solutions)
        self.coef_ = self.coef_[0]
        self.intercept_ = float(self.intercept_[0])

    def predict(self, X):
        """Predict with the private model (rows clipped to ``data_norm``).

        %(X_rows)s

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            ``X @ coef_ + intercept_``, or its exponential for the Poisson loss.
        """
        check_is_fitted(self)
        if is_dask_collection(X):   # lazily, partition by partition
            return by_partitions(self.predict, X, None, float)
        X = validate_data(self, X, dtype=np.float64, reset=False, accept_sparse=("csr", "csc"))
        eta = np.asarray(clip_rows_to_norm(X, self.data_norm_) @ self.coef_) + self.intercept_
        return np.exp(eta) if self.loss == "poisson" else eta

    def score(self, X, y, sample_weight=None):
        """Coefficient of determination ``R^2`` of :meth:`predict` on ``(X, y)``; lazy
        (a 0-d dask array) on dask input.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
            The rows.
        y : array-like or dask array of shape (n_samples,)
            The true targets.
        sample_weight : array-like or dask array of shape (n_samples,), default=None
            Weights of the rows.

        Returns
        -------
        score : float or dask array
            ``1 - sum w (y - y_pred)^2 / sum w (y - mean_w y)^2``.
        """
        if not (is_dask_collection(X) or is_dask_collection(y)):
            return super().score(X, y, sample_weight=sample_weight)
        predicted = self.predict(X if is_dask_collection(X) else _dask_rows(X, None))
        y = _dask_rows(y, predicted).astype(float)
        residual = _lazy_mean((y - predicted) ** 2, sample_weight, predicted)
        spread = _lazy_mean((y - _lazy_mean(y, sample_weight, predicted)) ** 2,
                            sample_weight, predicted)
        return 1.0 - residual / spread


@_napp_doc
class NAPPLassoClassifier(_LinearClassifierMixin, ClassifierMixin, _BaseNAPP):
    """Differentially private L1 logistic regression by noise-augmented objective perturbation.

    The logistic-loss sibling of :class:`NAPPLasso`: the coefficients are the
    exact minimiser of ``sum_i log(1 + exp(-y_i <x_i, theta>)) + alpha * P(theta)``
    plus a random linear term and only the curvature the penalty lacks,
    computed with noise-augmented IRLS iterations, polished and certified.

    Parameters
    ----------
    %(alpha)s

    %(napp_budget_params)s

    %(napp_solver_params)s

    %(class_weight)s

    %(max_sample_weight)s

    %(max_rows_per_group)s

    %(classes)s

    %(random_state)s

    %(verbose)s

    Attributes
    ----------
    %(classifier_attrs)s

    %(fitted_common)s

    %(privacy_attrs)s

    %(weight_attrs)s

    %(noise_floor_attrs)s

    See Also
    --------
    NAPPLasso : squared and Poisson losses.
    ObjPertLogisticRegression : objective perturbation with a ridge penalty.
    sklearn.linear_model.LogisticRegression : the non-private estimator
        (``C = 1 / alpha``, ``l1_ratio=1``).

    Notes
    -----
    %(notes)s

    Logistic loss: ``L_f = 1`` and ``c = 1/4`` on all of ``R^d``, so no
    ``coef_bound`` is needed (it is only used as a constraint when given).
    Multiclass one-vs-rest splits epsilon and delta evenly over the classes
    (sequential composition); the set of class labels is treated as public
    unless it is declared with ``classes``.

    Many classes on wide data. Each one-vs-rest problem gets ``epsilon / K``
    and its noise's norm grows with the number of coefficients ``d``: on
    MNIST (``d = 785``, ``K = 10``) at epsilon 1 the default reached about
    a third of the accuracy of :class:`DPSGDClassifier` (0.32 against 0.91;
    0.82 with ``delta=1e-5`` and ``eps_jacobian_frac=0.05``: see the user
    guide's page *Choosing a mechanism*). A fit of three classes or more whose
    noise, per problem, has the norm of the largest gradients of 2,000 records
    or more raises :class:`~skdp.NoiseDominanceWarning` before any noise is
    drawn; the rule reads ``d``, ``K`` and the budget, never the rows or
    their number.

    %(no_incremental_fits)s

    References
    ----------
    .. [LL21] Li & Liu, "Noise-Augmented Privacy-Preserving Empirical Risk
       Minimization with Dual-purpose Regularizer and Privacy Budget Retrieval
       and Recycling", arXiv:2110.08676, 2021.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skdp import NAPPLassoClassifier
    >>> X, y = make_classification(n_samples=200, n_features=4, random_state=0)
    >>> clf = NAPPLassoClassifier(alpha=2.0, epsilon=1.0, data_norm=5.0,
    ...                           random_state=0).fit(X, y)
    >>> clf.coef_.shape, clf.classes_, clf.epsilon_spent_
    ((1, 4), array([0, 1]), 1.0)
    """

    _parameter_constraints = {**_BaseNAPP._parameter_constraints,
                              **weight_constraints(),
                              "classes": classes_constraint()}

    _loss_name = "logistic"

    def __init__(self, *, alpha=1.0, penalty="l1", l1_ratio=0.5, q=1.5, epsilon=1.0,
                 delta=0.0, neighboring="add_remove", eps_jacobian_frac=0.5,
                 retrieval="recycle", data_norm="warn", coef_bound=None, fit_intercept=True,
                 intercept_scaling=1.0, adaptive_two_stage=False, stage1_frac=0.3,
                 threshold=None, augmentation="expected", n_aug=None, tol=1e-8,
                 max_iter=100, napp_max_iter=10, class_weight=None, max_sample_weight=1.0,
                 max_rows_per_group=1.0, classes=None, random_state=None, verbose=0):
        self.alpha = alpha
        self.penalty = penalty
        self.l1_ratio = l1_ratio
        self.q = q
        self.epsilon = epsilon
        self.delta = delta
        self.neighboring = neighboring
        self.eps_jacobian_frac = eps_jacobian_frac
        self.retrieval = retrieval
        self.data_norm = data_norm
        self.coef_bound = coef_bound
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.adaptive_two_stage = adaptive_two_stage
        self.stage1_frac = stage1_frac
        self.threshold = threshold
        self.augmentation = augmentation
        self.n_aug = n_aug
        self.tol = tol
        self.max_iter = max_iter
        self.napp_max_iter = napp_max_iter
        self.class_weight = class_weight
        self.max_sample_weight = max_sample_weight
        self.max_rows_per_group = max_rows_per_group
        self.classes = classes
        self.random_state = random_state
        self.verbose = verbose

    def _problem_names(self, n_problems):
        return problem_names(self.classes_, n_problems)

    def _warn_noise_dominance(self, n_problems, dim, penalty, common):
        """:class:`~skdp.NoiseDominanceWarning` for a one-vs-rest fit (three classes or
        more) whose noise per problem matches the gradients of at least
        :data:`NOISE_ROWS_LIMIT` records: from the shape, the number of classes and
        the budget, never from the rows or their number."""
        if n_problems < 3:
            return
        share = self.stage1_frac if self.adaptive_two_stage else 1.0
        budget = split_budget(share * common["epsilon"], share * common["delta"])
        calibration = napp_calibration(
            budget.epsilon_mechanism, budget.delta_mechanism,
            gradient_bound=common["gradient_bound"], hessian_bound=common["hessian_bound"],
            penalty_curvature=penalty.strong_convexity(self.coef_bound),
            eps_jacobian_frac=self.eps_jacobian_frac, neighboring=self.neighboring,
            retrieval=self.retrieval, persons=common["persons"], dimension=dim)
        records = noise_in_records(calibration, dim)
        if records < NOISE_ROWS_LIMIT:
            return
        warnings.warn(
            f"{type(self).__name__} fits {n_problems} one-vs-rest problems of {dim} "
            f"coefficients, each with epsilon={common['epsilon']:.3g}: the noise of each "
            f"has the norm of the largest gradients of about {records:,.0f} records pulling "
            "one way, so unless every class has many times that many rows the noise "
            "dominates the model (MNIST, 784 features and 10 classes, epsilon 1, all "
            f"60,000 rows: {MNIST_NUMBERS['napp']} accuracy at the defaults, "
            f"{MNIST_NUMBERS['napp_gaussian']} with delta=1e-5 and eps_jacobian_frac=0.05, "
            "whose noise is smaller). For multiclass "
            "prediction use DPSGDClassifier (one softmax model with the whole budget: "
            f"{MNIST_NUMBERS['dpsgd']} there) or, for pure epsilon-DP, "
            f"ObjPertLogisticRegression ({MNIST_NUMBERS['objpert']}); NAPPLassoClassifier "
            "suits sparse models with few classes and many rows per feature (numbers in "
            "the user guide, 'Choosing a mechanism'). This warning "
            "reads public quantities only; silence it with warnings.filterwarnings when "
            "the data are large enough.", NoiseDominanceWarning, stacklevel=7)

    def _releases(self, X, y, with_derivative=False, sample_weight=None, groups=None):
        """Validate, clip, then run the mechanism once per one-vs-rest problem.

        Returns the transient solutions (noise draws, clipped design), which
        the fitted estimator never keeps. ``groups`` (one person label per row)
        makes the person the unit of privacy.
        """
        self._check_groups(groups)
        if self._partitioned(X, y):   # checked as a map-reduce; labels mapped in partitions
            design = partitioned_design(self, X, y, data_norm=self._resolve_data_norm(),
                                        fit_intercept=self.fit_intercept,
                                        intercept_scaling=self.intercept_scaling,
                                        max_classes=np.inf, groups=groups)
            n_classes = len(self.classes_)
            problems = [(design, None)] if n_classes == 2 else [
                (design.with_targets(partial(one_vs_rest, positive=c)), None)
                for c in range(n_classes)]
            return self._run(problems, noise_generator(self.random_state),
                             *self._partitioned_persons(groups))
        X, y = validate_data(self, X, y, dtype=np.float64, accept_sparse=("csr", "csc"))
        check_classification_targets(y)
        self._check_params(X.shape[1] + int(self.fit_intercept))
        self.classes_, y_idx = encode_labels(y, self.classes)
        weights, self.weight_bound_ = row_weights(self, sample_weight, X, y_idx, self.classes_,
                                                  groups=groups)
        design = _napp_design(X, self)
        targets = one_vs_rest_targets(y_idx, len(self.classes_))
        rng = noise_generator(self.random_state)
        return self._run([(design, target) for target in targets], rng, weights,
                         persons=groups is not None)
