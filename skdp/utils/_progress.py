"""Progress lines of a long fit (``verbose``): public quantities and elapsed time only."""

import time


class Progress:
    """Print ``[name] message, elapsed s`` lines when ``verbose`` is set.

    The caller passes only what the release covers (parameters, shapes, released
    attributes such as ``classes_``); the elapsed time is measured from the object's
    creation.

    Parameters
    ----------
    verbose : int
        ``0``: print nothing.
    name : str
        Prefix of every line (the estimator's class name).
    """

    def __init__(self, verbose, name):
        self.verbose = int(verbose or 0)
        self.name = name
        self.start = time.perf_counter()

    def __call__(self, message):
        if self.verbose:
            print(f"[{self.name}] {message}, {time.perf_counter() - self.start:.1f} s",
                  flush=True)


def problem_names(classes, n_problems, multinomial=False):
    """Public names of a classifier's problems, in the order they are solved.

    ``classes`` is the released ``classes_``; one problem on two classes is the binary
    problem, ``n_problems`` of them are one-vs-rest problems, one class each.
    """
    if multinomial:
        return [f"softmax problem ({len(classes)} classes)"]
    if n_problems == 1:
        return ["binary problem" if classes is None else
                f"binary problem ({classes[1]} against {classes[0]})"]
    return [f"one-vs-rest problem {i + 1}/{n_problems} (class {c})"
            for i, c in enumerate(classes)]


def problems_header(n_problems, dim, *, epsilon, delta, tol, C=None):
    """The first progress line of a fit: its problems and the public budget of each."""
    penalty = "" if C is None else f", C={C:.4g}"
    return (f"{n_problems} problem{'s' if n_problems > 1 else ''} of {dim} coefficients, "
            f"epsilon={epsilon:.4g} and delta={delta:.4g} each{penalty}, tol={tol:g}")


def solve_each(progress, names, solve, problems, header):
    """``[solve(*problem) for problem in problems]``, with a ``header`` line first and a
    line naming each problem once it is solved."""
    progress(header)
    releases = []
    for name, problem in zip(names, problems):
        releases.append(solve(*problem))
        progress(f"{name} solved")
    return releases
