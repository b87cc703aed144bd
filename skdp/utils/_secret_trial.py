"""Whether a fit runs as one of a composer's secret trials.

A composer (a private selection's rungs, a search's trials, a ledger's
cross-validation folds) fits several models and releases at most one. A fit whose
output may be refused from its own noisy release (``inference=True``: the intervals)
must not raise in a secret trial, since the refusal would reveal that trial; inside
:func:`secret_trial` it keeps its model and notes the refusal, and the composer treats
that trial as a failed one (it is never released).
"""

import contextlib
import contextvars

_IN_SECRET_TRIAL = contextvars.ContextVar("skdp_in_secret_trial", default=False)


@contextlib.contextmanager
def secret_trial():
    """Run the fits inside as a composer's secret trial."""
    token = _IN_SECRET_TRIAL.set(True)
    try:
        yield
    finally:
        _IN_SECRET_TRIAL.reset(token)


def in_secret_trial():
    """Whether the current fit is a composer's secret trial (:func:`secret_trial`).

    Examples
    --------
    >>> from skdp.utils._secret_trial import in_secret_trial, secret_trial
    >>> with secret_trial():
    ...     inside = in_secret_trial()
    >>> inside, in_secret_trial()
    (True, False)
    """
    return _IN_SECRET_TRIAL.get()
