"""Choosing epsilon inside the guarantee: a ladder of private fits tested privately.

The accuracy-first procedure of Ligett, Neel, Roth, Waggoner & Wu (NeurIPS 2017):

1. the rows are split by independent public coins into a training part ``D_T`` and a
   validation part ``D_V`` (under add/remove, adding a row moves no other row across
   the split, so the two parts compose in parallel; a permutation cut would not);
2. rung ``k`` fits the estimator on ``D_T`` at ``epsilon_k`` with fresh,
   independent noise (never shared across rungs: two releases of one noise draw at
   two epsilons reveal the non-private minimiser);
3. AboveThreshold (Dwork & Roth 2014, Algorithm 1) tests each rung on ``D_V`` with
   the query ``f_k = sum_{i in D_V} (u_i - threshold)``, ``u_i`` in [0, 1]
   (sensitivity at most 1 under add/remove): one ``rho ~ Lap(2 / epsilon_val)``,
   then ``nu_k ~ Lap(4 / epsilon_val)`` per rung, pass when ``f_k + nu_k >= rho``;
4. the passing rung's model is released with the transcript (the rungs' epsilons
   and pass/fail bits).

Accounting. A training row enters only through the rungs' models: with pure
epsilon-DP rungs the realised loss is at most ``sum_{j <= k} epsilon_j`` pointwise,
whatever the stopping rule (an ex-post guarantee), capped a priori by
``epsilon_max``. A validation row enters only through AboveThreshold:
``epsilon_val``, however many rungs ran. The parts compose in parallel, so the
procedure is ex-post ``max(train spend, epsilon_val)``-DP and a priori
``max(epsilon_max, epsilon_val)``-DP with respect to every row given. Rungs with
``delta > 0`` have no pointwise loss bound and need a privacy filter or odometer
with its theorem; they are refused here.
"""

from dataclasses import dataclass, field

import numpy as np
from sklearn.base import clone

from ..utils._random import privacy_streams
from ._measure import _NoiseSources


def coin_split(n_samples, validation_fraction, public_rng):
    """Assign each row to the validation part by an independent public coin.

    Row ``i``'s coin is the ``i``-th draw of ``public_rng``, so adding a row at the
    end never moves another row across the split.

    Parameters
    ----------
    n_samples : int
        Number of rows.
    validation_fraction : float
        Probability that a row goes to the validation part, in (0, 1).
    public_rng : numpy.random.Generator
        A public stream (never one that draws privacy noise).

    Returns
    -------
    in_validation : ndarray of shape (n_samples,), dtype bool
    """
    return public_rng.random(n_samples) < validation_fraction


class AboveThreshold:
    """The sparse vector technique for one pass (Dwork & Roth 2014, Algorithm 1).

    epsilon-DP for any adaptively chosen sequence of queries of sensitivity at most 1,
    however many are asked before the first pass; it halts at the first pass.

    Parameters
    ----------
    epsilon : float
        The test's budget.
    threshold : float
        The public threshold ``T`` the noisy queries are compared with (here 0: the
        query already subtracts the utility threshold row by row).
    noise_rng : numpy.random.Generator
        The noise stream.
    """

    def __init__(self, epsilon, noise_rng, threshold=0.0):
        self.epsilon = float(epsilon)
        self._rng = noise_rng
        self._noisy_threshold = threshold + noise_rng.laplace(scale=2.0 / self.epsilon)
        self.halted = False

    def test(self, query):
        """Whether the noisy query clears the noisy threshold; halts at the first pass.

        Parameters
        ----------
        query : float
            The query's value on the private data (sensitivity at most 1).

        Returns
        -------
        passed : bool
        """
        if self.halted:
            raise RuntimeError("AboveThreshold has halted: a new test needs a new instance "
                               "(and pays epsilon again).")
        noisy = query + self._rng.laplace(scale=4.0 / self.epsilon)
        self.halted = bool(noisy >= self._noisy_threshold)
        return self.halted


@dataclass
class LadderResult:
    """The outcome of :func:`private_ladder`.

    Attributes
    ----------
    estimator : estimator or None
        The passing rung's model (trained on the training part), ``None`` when no
        rung passed within ``epsilon_max``.
    epsilon : float or None
        The passing rung's epsilon.
    rungs : list of dict
        The transcript: each rung's requested and certified epsilon and its
        pass/fail bit.
    train_epsilon : float
        Certified spend of the training rows: the sum over the rungs that ran.
    validation_epsilon : float
        Spend of the validation rows (AboveThreshold's budget).
    ex_post_epsilon : float
        ``max(train_epsilon, validation_epsilon)``: the realised guarantee.
    a_priori_epsilon : float
        ``max(epsilon_max, validation_epsilon)``: the guarantee before running.
    """

    estimator: object
    epsilon: float
    rungs: list = field(default_factory=list)
    train_epsilon: float = 0.0
    validation_epsilon: float = 0.0
    ex_post_epsilon: float = 0.0
    a_priori_epsilon: float = 0.0


def _accuracy_query(model, X, y, threshold):
    """``sum_i (1[model(x_i) = y_i] - threshold)`` over the validation rows."""
    if len(y) == 0:
        return 0.0
    return float(np.sum((model.predict(X) == y) - threshold))


def geometric_ladder(epsilon_start, ratio, epsilon_max):
    """The public doubling (or ``ratio``) ladder whose cumulative sum stays within the cap.

    Parameters
    ----------
    epsilon_start : float
        The first rung's epsilon.
    ratio : float
        The factor between consecutive rungs, above 1.
    epsilon_max : float
        Cap on the rungs' total.

    Returns
    -------
    epsilons : list of float
    """
    epsilons, total, epsilon = [], 0.0, float(epsilon_start)
    while total + epsilon <= epsilon_max * (1 + 1e-12):
        epsilons.append(epsilon)
        total += epsilon
        epsilon *= ratio
    return epsilons


def private_ladder(estimator, X, y, *, target, epsilons, epsilon_val, validation_fraction=0.2,
                   margin=0.0, random_state=None):
    """Fit rungs at ``epsilons`` on the training part until AboveThreshold passes one.

    Parameters
    ----------
    estimator : estimator object
        A classifier with pure epsilon-DP fits (``delta = 0``), an ``epsilon`` and a
        ``random_state`` parameter; it is cloned.
    X : array-like of shape (n_samples, n_features)
        Every row given; split by coins into training and validation parts.
    y : array-like of shape (n_samples,)
        Labels.
    target : float
        The accuracy to reach, in [0, 1].
    epsilons : list of float
        The rungs' epsilons, in order (public: for example :func:`geometric_ladder`);
        their sum is the a priori cap of the training rows.
    epsilon_val : float
        AboveThreshold's budget, paid by the validation rows.
    validation_fraction : float, default=0.2
        Probability of a row's coin.
    margin : float, default=0.0
        Public margin added to ``target`` to form the test's threshold.
    random_state : None, int or Generator, default=None
        ``None``: fresh cryptographic noise for the test and every rung. Otherwise
        reproducibility mode: independent generators derived for each rung.

    Returns
    -------
    result : LadderResult
    """
    if estimator.get_params().get("delta", 0.0) != 0.0:
        raise ValueError(
            "private_ladder accounts ex post for pure epsilon-DP rungs only (delta=0): "
            "rungs with delta > 0 need a privacy filter or odometer.")
    X, y = np.asarray(X), np.asarray(y)
    noise_rng, public_rng = privacy_streams(random_state)
    in_validation = coin_split(len(y), validation_fraction, public_rng)
    X_train, y_train = X[~in_validation], y[~in_validation]
    X_val, y_val = X[in_validation], y[in_validation]
    test = AboveThreshold(epsilon_val, noise_rng)
    sources = _NoiseSources(random_state, estimator.get_params().get("random_state"))
    threshold = min(1.0, target + margin)
    rungs, released = [], None
    for epsilon in epsilons:
        _, rung_random_state = sources.next()
        model = clone(estimator).set_params(epsilon=epsilon, random_state=rung_random_state)
        model.fit(X_train, y_train)
        passed = test.test(_accuracy_query(model, X_val, y_val, threshold))
        rungs.append({"epsilon": float(epsilon), "epsilon_spent": float(model.epsilon_spent_),
                      "passed": passed})
        if passed:
            # the released model keeps the user's random_state, never a derived one
            released = model.set_params(random_state=estimator.get_params()["random_state"])
            break
    train = float(sum(r["epsilon_spent"] for r in rungs))
    return LadderResult(
        estimator=released, epsilon=rungs[-1]["epsilon"] if released is not None else None,
        rungs=rungs, train_epsilon=train, validation_epsilon=float(epsilon_val),
        ex_post_epsilon=max(train, float(epsilon_val)),
        a_priori_epsilon=max(float(sum(epsilons)), float(epsilon_val)))
