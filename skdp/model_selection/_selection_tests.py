"""The private tests of a selection's rungs, and the counts that scale them.

A rung's test is one noisy sum over the rows it is tested on, ``f = sum_i (u_i -
t)`` with bounded utilities ``u_i`` in [0, 1] (:func:`bounded_utilities`) and the
threshold ``t`` (:func:`test_threshold`); the noisy label counts of those rows
(:func:`noisy_label_counts`) turn sums into utilities. Which noise, and which account
pays, depends on the rows: on a held-out validation part, Laplace tests paid by
that part alone (:class:`ValidationAccount`); on every row, tests charged with the
rungs to their account, Laplace for pure rungs (:class:`PureTests`), Gaussian for
Gaussian-DP rungs (:class:`GaussianTests`) and Renyi odometers (:class:`RenyiTests`)
(:func:`check_test_rows`, :func:`tests_on_all_rows`). The test floor
(:func:`floor_epsilon`) is the cost of the finest test worth buying.
"""

import functools

import numpy as np

from ..utils._groups import rows_per_person
from ..accounting._odometers import (
    GaussianDPOdometer,
    NoiseReductionAccount,
    PureDPAccount,
    RenyiOdometer,
)
from ._partitioned_rows import is_partitioned, partitioned_histogram, partitioned_sum


COUNT_SHARE, COUNT_EPSILON_MAX = 0.05, 0.1
"""The Laplace label counts of the validation part (paid by the validation rows) get
``min(COUNT_SHARE * epsilon_max, COUNT_EPSILON_MAX)``: 5 % of a small cap, 0.1 (noise
of standard deviation 14 rows a count) from a cap of 2 on. The tests repay it (see
:class:`ValidationAccount`)."""


def count_epsilon(epsilon_max):
    """The budget of the validation part's label counts under the cap ``epsilon_max``."""
    return min(COUNT_SHARE * float(epsilon_max), COUNT_EPSILON_MAX)


def regression_count_epsilon(epsilon_max, test_ratio, epsilon_start):
    """The budget of a regressor's one count of the validation part: at most
    :func:`count_epsilon`, and at most the test of a rung at ``epsilon_start``
    (``test_ratio * epsilon_start``).

    A regressor's count only turns test sums into utilities (there is no chance
    level to read from it), so a few per cent of error is harmless; charged like a
    classifier's, it cost five times the oracle epsilon of a selection whose cap was
    a hundred times that oracle (``benchmarks/bench_ssp.py``, 50,000 rows).

    Examples
    --------
    >>> regression_count_epsilon(10.0, 1.0, 0.01)
    0.01
    """
    return min(count_epsilon(epsilon_max), float(test_ratio) * float(epsilon_start))


class _LaplaceTests:
    """The Laplace currency of the counts and tests: a budget is an epsilon, the noise
    ``Lap(1 / budget)``; ``count_epsilon`` and ``charge`` come from the account."""

    def count_noise(self, noise_rng, size):
        return noise_rng.laplace(scale=1.0 / self.count_epsilon, size=size)

    def count_sd(self, n_counts):
        """Standard deviation of the noise of the sum of ``n_counts`` noisy counts."""
        return float(np.sqrt(2.0 * n_counts) / self.count_epsilon)

    def noisy_sum(self, value, noise_rng, epsilon):
        """Charge the test of the rung at ``epsilon``; ``(value + Lap(1 / budget),
        budget)``."""
        budget = self.charge(epsilon)
        return float(value + noise_rng.laplace(scale=1.0 / budget)), budget

    def test_sd(self, budget, rows):
        """Standard deviation, in mean utility over ``rows``, of a test's noise."""
        return comparison_noise_sd(budget, rows)

    def budget_for_sd(self, sd, rows):
        """The smallest test budget whose noise has standard deviation ``sd`` or less."""
        return float(np.sqrt(2.0) / (sd * max(rows, 1.0)))


class ValidationAccount(_LaplaceTests):
    """The validation rows' spend: the counts, then one Laplace test per rung.

    A rung's test has budget ``test_ratio`` times the rung's increment of training
    spend (its epsilon; under noise reduction, its increment over the last release
    of its noise path, in full for a path's first release), less what the counts
    still owe: the budget is ``test_ratio * R - S`` for the training reference ``R``
    after the rung (the sum of those increments) and the validation spend ``S``
    before it, kept between half and all of ``test_ratio`` times the increment. So
    the counts are repaid by the first tests, and from then on the validation part
    spends ``test_ratio`` times what the training part does. Each test is a pure
    Laplace mechanism of sensitivity 1 whose budget is a function of earlier
    outputs, so the realised loss is the sum of the budgets pointwise (fully
    adaptive basic composition of pure DP, Rogers, Roth, Ullman & Vadhan 2016); no
    test is run whose budget would take that sum past ``epsilon_max``.

    Parameters
    ----------
    epsilon_max : float
        The cap.
    test_ratio : float
        A test's budget per unit of its rung's increment of training spend.
    increments : bool
        Whether rungs are releases of noise paths (noise reduction).
    count_budget : float, default=None
        The counts' budget; ``None``: :func:`count_epsilon` of the cap.
    """

    def __init__(self, epsilon_max, test_ratio, increments, count_budget=None):
        self.epsilon_max = float(epsilon_max)
        self.count_epsilon = (count_epsilon(epsilon_max) if count_budget is None
                              else float(count_budget))
        self.test_ratio = float(test_ratio)
        self.increments = increments
        self.spent = self.count_epsilon
        self._last = 0.0
        self._reference = 0.0

    def _base(self):
        return self._last if self.increments else 0.0

    def _debt(self):
        return max(self.spent - self.test_ratio * self._reference, 0.0)

    def _increment_for(self, budget):
        """The smallest increment whose test has ``budget`` (the budget is
        non-decreasing in the increment: ``t i / 2`` while the debt ``D`` exceeds it,
        then ``t i - D``)."""
        debt = self._debt()
        if budget < debt:
            return 2.0 * budget / self.test_ratio
        return (budget + debt) / self.test_ratio

    def largest_rung(self):
        """The largest rung epsilon whose test fits in what is left of the cap."""
        room = max(self.epsilon_max - self.spent, 0.0)
        return self._base() + self._increment_for(room) * (1 - 1e-12)

    def smallest_rung(self, min_budget):
        """The smallest rung epsilon whose test has budget ``min_budget`` at least."""
        return self._base() + self._increment_for(min_budget)

    def new_path(self):
        """Noise reduction: the next rung starts a new path, its test pays in full."""
        self._last = 0.0

    def test_budget(self, epsilon):
        """The budget of the test of a rung at ``epsilon``."""
        full = self.test_ratio * (float(epsilon) - self._base())
        return min(full, max(full - self._debt(), full / 2.0))

    def charge(self, epsilon):
        """Charge the test of the rung at ``epsilon``; return its budget."""
        budget = self.test_budget(epsilon)
        self.spent += budget
        self._reference += float(epsilon) - self._base()
        self._last = float(epsilon)
        return budget


class PureTests(_LaplaceTests):
    """Tests on every row, composed in sequence with pure rungs in one sum.

    For pure rungs (:class:`~skdp.accounting._odometers.PureDPAccount`, or
    :class:`~skdp.accounting._odometers.NoiseReductionAccount` for the releases of Laplace
    noise paths), the label counts (Laplace at ``count_epsilon``) and each rung's
    Laplace test (sensitivity at most 1) read all the rows the rungs are trained on.
    A test's budget is ``test_ratio`` times its rung's epsilon, or
    under noise reduction times the rung's increment over the last release of its
    path (in full for a path's first). Each is pure DP with a budget chosen from
    earlier outputs, so the realised loss of everything released is at most the
    rungs' loss (their sum, or the sum of the paths' last releases) plus the tests'
    and the counts' budgets pointwise (fully adaptive basic composition, Rogers, Roth,
    Ullman & Vadhan 2016). All are charged to the rungs' account, whose cap bounds the
    sum a priori. No row is held out: a test costs ``test_ratio`` times its rung's
    spend, on five times the rows of the default held-out part.

    Parameters
    ----------
    account : PureDPAccount
        The rungs' account, charged with everything here.
    test_ratio : float
        A test's budget per unit of its rung's epsilon (or increment).
    count_epsilon : float
        The counts' budget.
    increments : bool, default=False
        Whether the rungs are releases of noise paths (noise reduction).
    """

    def __init__(self, account, test_ratio, count_epsilon, increments=False):
        self.account, self.increments = account, increments
        self.test_ratio, self.count_epsilon = float(test_ratio), float(count_epsilon)
        self.account.charge_tests(self.count_epsilon)
        self.spent = self.count_epsilon
        self._last = 0.0

    def new_path(self):
        """Noise reduction: the next rung starts a new path, its test pays in full."""
        self._last = 0.0

    def largest_rung(self):
        """The largest rung epsilon that fits the cap with its test."""
        room = max(self.account.largest_rung(), 0.0)
        return (room + self.test_ratio * self._last) / (1.0 + self.test_ratio) * (1 - 1e-12)

    def smallest_rung(self, min_budget):
        """The smallest rung epsilon whose test has budget ``min_budget`` at least."""
        return self._last + min_budget / self.test_ratio

    def test_budget(self, epsilon):
        return self.test_ratio * (float(epsilon) - self._last)

    def charge(self, epsilon):
        """Charge the test of the rung at ``epsilon`` to the rungs' account; its budget."""
        budget = self.test_budget(epsilon)
        self.account.charge_tests(budget)
        self.spent += budget
        if self.increments:
            self._last = float(epsilon)
        return budget


class GaussianTests:
    """Tests on every row, composed with Gaussian-DP rungs in one GDP odometer.

    For rungs accounted in Gaussian DP (full-batch DP-GD), the label counts and each
    rung's test read all the rows the rungs are trained on, and every release is
    charged to the training odometer (:class:`~skdp.accounting._odometers.GaussianDPOdometer`)
    in ``mu^2``: the counts, ``sqrt(K)``-dimensional Gaussian noise of L2 sensitivity 1 under
    add/remove, at ``count_mu``; rung ``k``'s test, the Gaussian mechanism on ``f_k =
    sum_i (u_i - t)`` (sensitivity ``max(t, 1 - t) <= 1``), at ``mu_t = test_ratio *
    mu_k``. Each is ``mu``-GDP with ``mu`` chosen from earlier outputs, so the
    odometer's fully adaptive GDP filters cover them with the rungs; no row is held
    out (every rung trains on all the rows) and a test costs ``sqrt(1 +
    test_ratio^2)`` times its rung in ``mu`` rather than a rung's epsilon again on a
    part of the rows.

    With ``follow_floor``, a test's ``mu`` is at most the test floor's on the noisy
    count (:meth:`set_rows`): the ``mu`` at which a test tells a model at the target
    from one ``FLOOR_BAND`` below it with one-sided error ``FLOOR_ERROR``. A finer
    test buys a verdict the model's own spread does not support, at a price in
    ``mu^2``; the floor is a public function of the released counts.

    Parameters
    ----------
    odometer : GaussianDPOdometer
        The training rows' odometer (fresh rungs), charged with everything here.
    test_ratio : float
        A test's ``mu`` per unit of its rung's ``mu``.
    count_mu : float
        The counts' ``mu``.
    rung_delta : float
        The delta at which a rung's epsilon is converted to its ``mu``.
    follow_floor : bool, default=False
        Cap each test's ``mu`` at the test floor's once :meth:`set_rows` is called.
    """

    def __init__(self, odometer, test_ratio, count_mu, rung_delta, follow_floor=False):
        self.odometer = odometer
        self.test_ratio, self.count_mu = float(test_ratio), float(count_mu)
        self.rung_delta = float(rung_delta)
        self.follow_floor, self.floor_mu = follow_floor, np.inf
        # a path's releases (noise reduction, checkpoints) are tested by their increments
        self.increments, self._last = bool(getattr(odometer, "reduction", False)), 0.0
        self.mu_squared = self.count_mu**2
        self._charge_counts()

    def _charge_counts(self):
        self.odometer.charge_tests(self.count_mu**2)

    def set_rows(self, rows):
        """The noisy count of the rows tested on (public): sets the floor's ``mu``."""
        if self.follow_floor:
            self.floor_mu = floor_mu(rows)

    def _mu(self, epsilon):
        from ..accounting import gdp_mu

        return gdp_mu(float(epsilon), self.rung_delta)

    def largest_rung(self):
        """The largest rung epsilon that fits the top filter with its test."""
        from ..accounting import gaussian_epsilon

        ratio, room = self.test_ratio, self.odometer.rung_room()
        if room <= 0:
            return 0.0
        # the rung's mu^2 plus its test's, ratio^2 (mu^2 - last^2) or the floor's
        # squared, whichever is less: the largest mu either form fits
        last = self._last if self.increments else 0.0
        mu = np.sqrt(max((room + ratio**2 * last**2) / (1.0 + ratio**2),
                         room - self.floor_mu**2, 0.0))
        return gaussian_epsilon(self.rung_delta, mu * (1 - 1e-9)) if mu > 0 else 0.0

    def new_path(self):
        """Noise reduction: the next rung starts a new path, its test at its full ``mu``."""
        self._last = 0.0

    def smallest_rung(self, min_budget):
        """The smallest rung epsilon whose test has ``mu`` ``min_budget`` at least."""
        from ..accounting import gaussian_epsilon

        last = self._last if self.increments else 0.0
        return gaussian_epsilon(self.rung_delta,
                                np.hypot(last, min_budget / self.test_ratio))

    def test_budget(self, epsilon):
        """The ``mu`` of the test of a rung at ``epsilon``: ``test_ratio`` times its
        rung's ``mu`` (under noise reduction, its increment ``sqrt(mu^2 - last^2)``
        over the path's last release), at most the floor's."""
        mu = self._mu(epsilon)
        if self.increments:
            mu = np.sqrt(max(mu**2 - self._last**2, 0.0))
        return min(self.test_ratio * mu, self.floor_mu)

    def charge(self, epsilon):
        """Charge the test of the rung at ``epsilon`` to the odometer; return its ``mu``."""
        mu = self.test_budget(epsilon)
        self.odometer.charge_tests(mu**2)
        self.mu_squared += mu**2
        if self.increments:
            self._last = self._mu(epsilon)
        return mu

    @property
    def spent(self):
        """The ``mu`` of the counts and tests alone (their share of the odometer's)."""
        return float(np.sqrt(self.mu_squared))

    def count_noise(self, noise_rng, size):
        return noise_rng.normal(scale=1.0 / self.count_mu, size=size)

    def count_sd(self, n_counts):
        return float(np.sqrt(n_counts) / self.count_mu)

    def noisy_sum(self, value, noise_rng, epsilon):
        """Charge the test of the rung at ``epsilon``; ``(value + N(0, 1 / mu^2), mu)``."""
        mu = self.charge(epsilon)
        return float(value + noise_rng.normal(scale=1.0 / mu)), mu

    def test_sd(self, mu, rows):
        return float(1.0 / (mu * max(rows, 1.0)))

    def budget_for_sd(self, sd, rows):
        return float(1.0 / (sd * max(rows, 1.0)))


class RenyiTests(GaussianTests):
    """Tests on every row, composed with Renyi-DP rungs in one Renyi odometer.

    For fresh rungs accounted by the Renyi odometer (Poisson-sampled DP-SGD, Gaussian
    objective perturbation), the label counts and each rung's test are the Gaussian
    mechanisms of :class:`GaussianTests` (the counts at ``count_mu``, rung ``k``'s test
    at ``mu_t = test_ratio * mu_k`` with ``mu_k`` the ``mu`` of a Gaussian mechanism at
    the rung's (epsilon, delta), a public function of its epsilon). A Gaussian
    mechanism at ``mu`` is ``(alpha, alpha mu^2 / 2)``-RDP at every order, so the
    counts are charged to the odometer before any rung, and each rung's cost becomes
    its own RDP plus its test's (:meth:`RenyiOdometer.join_tests`), charged together before the
    rung runs: the odometer's Renyi filters cover everything released, each
    mechanism's RDP fixed from earlier outputs, as for the rungs alone.

    Parameters
    ----------
    odometer : RenyiOdometer
        The training rows' odometer (fresh rungs), charged with everything here.
    test_ratio, count_mu, rung_delta : float
        As for :class:`GaussianTests`.
    follow_floor : bool, default=False
        As for :class:`GaussianTests`; the rungs' cost follows the tests' from
        :meth:`set_rows` on, before any rung.
    """

    def _charge_counts(self):
        self.odometer.join_tests(_gaussian_rdp(self.count_mu),
                                 lambda epsilon: _gaussian_rdp(self.test_budget(epsilon)))

    def set_rows(self, rows):
        super().set_rows(rows)
        self.odometer.tests_changed()

    def largest_rung(self):
        """The largest rung epsilon that fits a filter with its test (the odometer's
        cost includes the test)."""
        return self.odometer.largest_rung()

    def charge(self, epsilon):
        """The ``mu`` of the test of the rung at ``epsilon``, already charged to the
        odometer with its rung."""
        mu = self.test_budget(epsilon)
        self.mu_squared += mu**2
        return mu


def _gaussian_rdp(mu):
    """RDP of a Gaussian mechanism at ``mu`` (sensitivity 1, noise ``1 / mu``) at every
    order of the accountant's grid: ``alpha mu^2 / 2``."""
    from ..accounting._rdp import ORDERS

    return ORDERS * float(mu) ** 2 / 2


def comparison_noise_sd(budget, validation_rows):
    """Standard deviation, in mean utility, of a test's noise ``Lap(1 / budget)``.

    Parameters
    ----------
    budget : float
        The test's epsilon.
    validation_rows : float
        The (noisy, hence public) size of the validation part.

    Returns
    -------
    sd : float
        ``sqrt(2) / (budget * m)``.
    """
    return float(np.sqrt(2.0) / (budget * max(validation_rows, 1.0)))


def sampling_sd(target, validation_rows):
    """Sampling error of a mean utility near ``target`` over ``m`` validation rows.

    Returns ``sqrt(t (1 - t) / m)``, ``t`` clamped into [0, 1].
    """
    t = min(max(float(target), 0.0), 1.0)
    return float(np.sqrt(t * (1.0 - t) / max(validation_rows, 1.0)))


FLOOR_BAND, FLOOR_ERROR = 0.005, 0.1
"""The test floor tells the target from ``FLOOR_BAND`` below it with one-sided error
``FLOOR_ERROR``."""


def floor_mu(rows):
    """The Gaussian test floor's ``mu`` on ``rows`` rows: ``z_{1 - beta} / (tau n)``
    with ``beta = FLOOR_ERROR`` and ``tau = FLOOR_BAND``."""
    from scipy.stats import norm

    return float(norm.ppf(1 - FLOOR_ERROR) / (FLOOR_BAND * max(float(rows), 1.0)))


def floor_epsilon(rows, gaussian_delta=None):
    """The privacy cost of a test alone that tells a model at the target from one
    ``FLOOR_BAND`` below it with one-sided error ``FLOOR_ERROR`` on ``rows`` rows:
    Laplace, ``ln(1 / (2 beta)) / (tau m)``, or (``gaussian_delta`` given) Gaussian,
    ``mu = z_{1 - beta} / (tau n)`` converted at that delta."""
    from ..accounting import gaussian_epsilon

    if gaussian_delta is not None:
        return float(gaussian_epsilon(gaussian_delta, floor_mu(rows)))
    return float(np.log(0.5 / FLOOR_ERROR) / (FLOOR_BAND * max(float(rows), 1.0)))


PURE_ALL_ROWS_TEST_RATIO = 0.05
"""A pure rung's test budget per unit of its epsilon when the tests read every row."""


GAUSSIAN_COUNT_RATIO = 0.3
"""Under ``test_ratio="auto"``, the Gaussian counts' ``mu`` per unit of a rung's at
``epsilon_start``. The counts only set the tests' scale and floor, for which a few per
cent of error is harmless, while at ratio 1 they cost a whole rung at ``epsilon_start``:
on KDDCup99, Gaussian objective perturbation at target 0.97 (oracle 0.055, start 0.1)
cost 3.6 times the oracle at ratio 1 and 2.1 at 0.3 (ten seeds, the curve)."""


def check_test_rows(test_rows, account):
    """Whether the tests read every row (``test_rows="all"``); refuse it, before any
    data is read, unless the rungs' account can take the tests: pure rungs, fresh or
    releases of Laplace noise paths (:class:`PureTests`), full-batch DP-GD rungs, fresh
    or checkpoints of one run, and Gaussian noise reduction in the Gaussian-DP odometer
    (:class:`GaussianTests`), or Poisson DP-SGD and Gaussian objective perturbation
    rungs in the Renyi odometer (:class:`RenyiTests`)."""
    if test_rows not in ("held_out", "all"):
        raise ValueError(f"test_rows must be 'held_out' or 'all', got {test_rows!r}.")
    if test_rows == "held_out":
        return False
    account = account[0] if isinstance(account, tuple) else account
    if not isinstance(account, (PureDPAccount, GaussianDPOdometer, RenyiOdometer)):
        raise ValueError(
            "test_rows='all' composes the tests on every row with the rungs in one "
            "account: it needs pure rungs (delta=0, Laplace noise reduction included), "
            "DP-SGD rungs, Gaussian noise reduction or Gaussian objective perturbation "
            "with a Renyi curve, not rungs accounted by basic composition. Those test "
            "on a held-out part (test_rows='held_out').")
    return True


def tests_on_all_rows(account, test_ratio, epsilon_start):
    """The tests' account of ``test_rows="all"``: the counts cost one test of a rung at
    ``epsilon_start`` (in epsilon for pure rungs, in ``mu`` for Gaussian ones).
    ``test_ratio="auto"``: :data:`PURE_ALL_ROWS_TEST_RATIO` for pure rungs; for
    Gaussian ones, a test at its rung's ``mu`` but no finer than the test floor's, and
    counts at :data:`GAUSSIAN_COUNT_RATIO` times a rung's ``mu`` at ``epsilon_start``."""
    from ..accounting import gdp_mu
    if isinstance(account, PureDPAccount):
        ratio = PURE_ALL_ROWS_TEST_RATIO if test_ratio == "auto" else test_ratio
        return PureTests(account, ratio, ratio * epsilon_start,
                         increments=isinstance(account, NoiseReductionAccount))
    ratio = 1.0 if test_ratio == "auto" else test_ratio
    count_ratio = GAUSSIAN_COUNT_RATIO if test_ratio == "auto" else ratio
    count_mu = count_ratio * gdp_mu(epsilon_start, account.rung_delta)
    tests = RenyiTests if isinstance(account, RenyiOdometer) else GaussianTests
    return tests(account, ratio, count_mu=count_mu, rung_delta=account.rung_delta,
                 follow_floor=test_ratio == "auto")


def test_threshold(target, margin, reduction, test_sd, sample_sd):
    """The test's threshold of a rung, clamped into [0, 1].

    ``margin="auto"``: under noise reduction, the test's error at the target (its
    noise and the validation sampling error, both from public quantities), so that
    a passing release is rarely below the target on the fine ladder of many tests;
    0 for a ladder of fresh fits, whose step overshoots the target already.
    """
    if margin == "auto":
        margin = float(np.hypot(test_sd, sample_sd)) if reduction else 0.0
    return min(1.0, max(0.0, float(target) + float(margin)))


def bounded_utilities(model, X, y, y_bound=None, utility_scale=None):
    """Per-row utilities in [0, 1] of a fitted model: the only read of validation rows.

    A classifier's is ``1[prediction right]``. A regressor's is ``1 - min(1, (y -
    y_hat)^2 / s^2)`` with ``y`` clipped to the public ``[-y_bound, y_bound]`` and the
    public scale ``s`` (``utility_scale``, by default ``2 y_bound``): 1 for an exact
    prediction, 0 for an error of ``s`` or more. Any public ``s`` keeps each utility in
    [0, 1], so a test's sum keeps sensitivity 1; a scale of a few times the error the
    user would accept spreads the utilities of useful models over most of [0, 1],
    where ``2 y_bound`` crowds them near 1.

    Parameters
    ----------
    model : fitted estimator
        A rung's model.
    X, y : array-like
        The validation rows.
    y_bound : float, default=None
        The public bound on ``|y|`` of a regressor (``None`` for a classifier).
    utility_scale : float, default=None
        A regressor's public error scale ``s``; ``None``: ``2 y_bound``.

    Returns
    -------
    utilities : ndarray of shape (n_samples,)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.dummy import DummyRegressor
    >>> model = DummyRegressor(strategy="constant", constant=0.0).fit([[0]], [0])
    >>> bounded_utilities(model, np.zeros((3, 1)), np.array([0.0, 0.25, 3.0]),
    ...                   y_bound=1.0, utility_scale=0.5).tolist()
    [1.0, 0.75, 0.0]
    """
    if len(y) == 0:
        return np.zeros(0)
    prediction = np.asarray(model.predict(X))
    if y_bound is None:
        return (prediction == np.asarray(y)).astype(float)
    scale = 2.0 * y_bound if utility_scale is None else float(utility_scale)
    error = np.clip(np.asarray(y, dtype=float), -y_bound, y_bound) - prediction
    return 1.0 - np.minimum(1.0, error**2 / scale**2)


def _validation_sum(model, X_val, y_val, threshold, y_bound, shares=None, utility_scale=None):
    """``sum_i (u_i - threshold)`` over the validation part: a rung's only read of it
    (sensitivity ``max(threshold, 1 - threshold) <= 1``). With persons (``shares``:
    each row's ``1 / k_i``, ``k_i`` its person's number of rows, all in this part),
    ``sum_p (mean_{i in p} u_i - threshold) = sum_i (u_i - threshold) / k_i``: adding
    or removing a person moves it by their mean utility less the threshold, the same
    sensitivity per person."""
    if is_partitioned(X_val):  # partition by partition, on the dask graph
        return partitioned_sum(functools.partial(bounded_utilities, model, y_bound=y_bound,
                                                 utility_scale=utility_scale),
                               X_val, y_val, shares, threshold)
    deviations = bounded_utilities(model, X_val, y_val, y_bound, utility_scale) - threshold
    return float(np.sum(deviations if shares is None else shares * deviations))


def person_shares(codes):
    """Each row's share ``1 / k`` of its person (``k`` their number of rows): a person's
    shares sum to 1. Private (from the persons' sizes): used only inside sums whose
    sensitivity per person is bounded (:func:`_validation_sum`, the label
    counts)."""
    return 1.0 / rows_per_person(codes)


def noisy_label_counts(y_val, classes, tests, noise_rng, shares=None):
    """``(histogram, count, chance)``: the validation part's label counts plus the
    ``tests``' count noise each (Laplace, or Gaussian for :class:`GaussianTests`),
    their sum, and a classifier's chance level (the largest noisy share; ``None`` for
    a regressor). All but the histogram is post-processing. With persons (``shares``
    given) the counts are of persons: each person adds their fraction of rows in each
    class, and the sum counts persons."""
    histogram = _validation_histogram(y_val, classes, shares)
    histogram += tests.count_noise(noise_rng, histogram.shape)
    count = float(histogram.sum())
    chance = float(histogram.max() / max(count, 1.0)) if classes is not None else None
    return histogram, count, chance


def _validation_histogram(y_val, classes, shares=None):
    """The validation part's label counts (its size for a regressor), released only
    through noise: one row moves one count by one (sensitivity 1). With persons
    (``shares``, each row's ``1 / k``): each person adds to each class the fraction of
    their rows in it, a vector of non-negative entries summing to 1 (L1 sensitivity 1,
    L2 sensitivity at most 1), and the counts sum to the number of persons."""
    if is_partitioned(y_val):  # partition by partition, on the dask graph
        return partitioned_histogram(y_val, classes, shares)
    if shares is None:
        if classes is None:
            return np.array([len(y_val)], dtype=float)
        return np.array([np.sum(y_val == c) for c in classes], dtype=float)
    if classes is None:
        return np.array([np.sum(shares)], dtype=float)
    return np.array([np.sum(shares[y_val == c]) for c in classes], dtype=float)


def cohort_too_small(top_budget, count, n_counts, tests, tolerance):
    """Whether the test at the largest rung the cap allows (budget ``top_budget``)
    would have noise above ``tolerance`` on a count rarely above the true one: the
    noisy count less two standard deviations of its ``n_counts`` counts' noise."""
    if top_budget <= 0:
        return True
    fewest = count - 2.0 * tests.count_sd(n_counts)
    return tests.test_sd(top_budget, fewest) > tolerance


def noisy_test(model, validation, epsilon, count, noise_rng, threshold, y_bound, tests,
               shares=None, utility_scale=None):
    """The test of the rung at ``epsilon``: the noisy sum of ``f = sum_i (u_i -
    threshold)`` over the validation part (with persons, ``shares`` given: ``f = sum_p
    (mean_{i in p} u_i - threshold)``) (``tests.noisy_sum``, which charges it), its
    pass bit, and the noisy utility ``threshold + noisy sum / count``. A regressor's
    utilities are on the public ``utility_scale`` (:func:`bounded_utilities`)."""
    X_val, y_val = validation
    # the scale is passed only when set: the default read keeps its six arguments
    scale = {} if utility_scale is None else {"utility_scale": utility_scale}
    noisy_sum, budget = tests.noisy_sum(
        _validation_sum(model, X_val, y_val, threshold, y_bound, shares, **scale),
        noise_rng, epsilon)
    return {"test_budget": budget, "threshold": threshold, "noisy_sum": noisy_sum,
            "passed": bool(noisy_sum >= 0.0),
            "noisy_utility": threshold + noisy_sum / max(count, 1.0),
            "test_sd": tests.test_sd(budget, count)}
