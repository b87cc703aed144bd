"""The rungs of a private selection and the steering of their ladder.

A rung is a private fit at one epsilon, made through the gate (:func:`~._gate.secret_fit`,
silenced: only the released rung speaks). Fresh rungs are new fits with independent
noise (:class:`FreshFits`); under noise reduction the rungs are releases, at
increasing epsilons, of noise paths (:class:`NoiseReductionRungs`). The next rung's
epsilon comes from released quantities only: the utility law fitted to the noisy
utilities (:class:`CurveSteering`), a public geometric ladder
(:class:`GeometricSteering`), or that ladder from a public random offset
(:func:`random_offset`).
"""

import numpy as np
from sklearn.base import clone
from sklearn.pipeline import Pipeline

from ._gate import SecretTrials, Speech, check_person_fit, private_step, secret
from ._selection_checks import private_step_params
from ._transcript import utility_law


PROXY_SAFETY, PROXY_RATIO = 1.3, 1.4
"""A ladder of fresh pure rungs started from a public proxy's answer starts at
``PROXY_SAFETY`` times it and, after a failed rung, steps by ``PROXY_RATIO`` until the
curve can be fitted: the answer is close, and a model's own noise makes a rung at the
oracle epsilon fail about half the time (measured on Adult, objective perturbation at
target 0.82 on all the rows, ten seeds: 2.2 times the oracle epsilon against 2.7 when
started at the answer and doubling). Not for DP-GD, whose proxy answer (the analytic
method on 5000 public rows) was already above the oracle: started there, one fit cost
2.9 to 3.5 times the oracle epsilon on all the rows at every target."""


NOISE_REDUCTION_STEP = 1.2
"""Ratio of the noise-reduction ladder: rungs are releases of one path, so a fine
ladder costs no more training budget; each test pays for its rung's increment of
epsilon, a sixth of it at this ratio."""


class FreshFits:
    """Rungs that are new fits, each with fresh, independent noise.

    Parameters
    ----------
    estimator : estimator or Pipeline
        The private estimator (or a Pipeline ending in one).
    X, y : array-like
        The training part.
    sources : _NoiseSources
        The rungs' noise sources.
    params : dict
        Private-step parameters every rung gets (the whole input's ``classes``).
    largest_epsilon : float
        The largest epsilon the cap allows a rung (public).
    groups : ndarray of shape (n_samples,), default=None
        The person of each row of the training part: every rung is then fitted with
        ``fit(X, y, groups=groups)`` and must certify a person-level guarantee
        (:class:`~._gate.SecretTrials`).
    """

    def __init__(self, estimator, X, y, sources, params, largest_epsilon, groups=None):
        self.estimator, self.X, self.y, self.sources = estimator, X, y, sources
        self.params, self.largest_epsilon = params, largest_epsilon
        self.groups = groups
        self.trials = SecretTrials(estimator, X, y, "EpsilonForUtility", groups)
        self.statement = self.trials.statement
        self.n_fits = 0
        self.speech = None

    def rung(self, epsilon):
        """The model of the rung at ``epsilon``, fitted through the gate (silenced:
        :attr:`speech` holds what it said, replayed only if it is released)."""
        _, random_state = self.sources.next()
        params = {self.trials.prefix + key: value
                  for key, value in {"epsilon": epsilon, **self.params}.items()}
        model, self.speech = self.trials.fit(params, random_state)
        self.n_fits += 1
        return model

    def release(self, model, user_random_state):
        """The passing rung, as released (:meth:`~._gate.SecretTrials.release`)."""
        return self.trials.release(model, self.speech, user_random_state)


NOISE_REDUCTION_SEGMENT = 4.0
"""Span in epsilon of one noise path with ``C="auto"``: a rung beyond
``NOISE_REDUCTION_SEGMENT`` times its path's first release starts a new path (a fit with
fresh noise). With a numeric ``C`` one path serves every rung."""


class NoiseReductionRungs(FreshFits):
    """Rungs that are releases, at increasing epsilons, of noise paths.

    A path is one fit whose noise is released at increasing epsilons. With ``C="auto"``
    it covers a factor ``NOISE_REDUCTION_SEGMENT`` from its first release and its ``C``
    is resolved once, at the top of that span (or the largest rung the cap allows):
    one ``C`` serves every release of a path, and a ``C`` resolved at its first,
    noisiest release regularises every later release for that noise (measured on
    Adult: no release passed 0.80 below the cap, the non-private model of that ``C``
    reaching 0.79). The next rung beyond the span starts a new path, with fresh
    noise: the accounts then add the paths' last releases. With a numeric ``C`` one
    path serves every rung up to the cap, and the search costs its last release. A Pipeline's public
    steps are fitted once (they learn nothing from the rows) and shared by every
    released Pipeline. With ``groups`` the path is fitted with them (an estimator whose
    path takes them: :func:`~._selection_checks.path_takes_groups`), and every release
    must certify the person-level relation.
    """

    def starts_path(self, epsilon):
        """Whether the rung at ``epsilon`` starts a new path: the first, or with
        ``C="auto"`` one beyond its path's span."""
        auto_C = private_step_params(self.estimator).get("C") == "auto"
        return self.n_fits == 0 or (auto_C
                                    and epsilon > self._path_start * NOISE_REDUCTION_SEGMENT)

    def rung(self, epsilon, new_path):
        """The release at ``epsilon``: of the current path, or of a new one."""
        if self.n_fits == 0:
            X, self._steps = self.X, []
            if isinstance(self.estimator, Pipeline):
                head = Pipeline(clone(self.estimator).steps[:-1])
                X, self._steps = head.fit_transform(X, self.y), head.steps
            self._X_design = X
        if new_path:
            _, random_state = self.sources.next()
            final, _ = private_step(self.estimator)
            self._path_model = clone(final).set_params(
                epsilon=epsilon, random_state=random_state, **self.params)
            C_epsilon = min(epsilon * NOISE_REDUCTION_SEGMENT,
                            max(self.largest_epsilon, epsilon))
            persons = {} if self.groups is None else {"groups": self.groups}
            with secret(self._path_model, self.statement) as self._path_speech:
                self._path = self._path_model._noise_reduction_path(
                    self._X_design, self.y, C_epsilon=C_epsilon, **persons)
            self._path_start = epsilon
            self.n_fits += 1
        with secret(self._path_model, self.statement) as speech:
            model = self._path.release(epsilon)
        if self.statement.persons:
            check_person_fit(model)
        self.speech = Speech(self._path_speech.warnings + speech.warnings)
        if not isinstance(self.estimator, Pipeline):
            return model
        pipeline = clone(self.estimator)
        pipeline.steps = [*self._steps, (self.estimator.steps[-1][0], model)]
        return pipeline


class CurveSteering:
    """The next rung's epsilon from released quantities only.

    The utility law ``U(epsilon) = U_inf - a / epsilon`` (the noise of every skdp
    mechanism scales as ``1 / epsilon`` at a fixed row count) is fitted by least
    squares to the rungs' noisy utilities; the next rung goes where the law meets
    the threshold, times ``1 + safety``, kept between ``min_step`` and ``max_step``
    times the last rung. With fewer than two noisy utilities, or when the law does
    not reach the threshold, the step is ``ratio``.
    """

    def __init__(self, threshold, ratio=2.0, *, safety=0.1, min_step=1.25, max_step=10.0):
        self.threshold = float(threshold)
        self.ratio = float(ratio)
        self.safety, self.min_step, self.max_step = safety, min_step, max_step

    def next(self, rungs):
        """The epsilon after ``rungs`` (dicts with ``epsilon`` and ``noisy_utility``)."""
        last = rungs[-1]["epsilon"]
        points = [(r["epsilon"], r["noisy_utility"]) for r in rungs
                  if r.get("noisy_utility") is not None]
        guess = self._law_answer(points) if len(points) >= 2 else None
        if guess is None:
            return last * self.ratio
        return float(np.clip(guess * (1 + self.safety), last * self.min_step,
                             last * self.max_step))

    def _law_answer(self, points):
        u_inf, a = utility_law(np.array([e for e, _ in points]),
                               np.array([u for _, u in points]))
        if a <= 0 or u_inf <= self.threshold:
            return None
        return float(a / (u_inf - self.threshold))


class GeometricSteering(CurveSteering):
    """The public ladder ``epsilon_{k+1} = ratio * epsilon_k`` (ignores the utilities)."""

    def next(self, rungs):
        return rungs[-1]["epsilon"] * self.ratio


def random_offset(public_rng, ratio):
    """The randomised ladder's start factor ``ratio ** U``, ``U`` uniform on [0, 1)
    from a public stream (it does not depend on the data)."""
    return float(ratio ** public_rng.random())
