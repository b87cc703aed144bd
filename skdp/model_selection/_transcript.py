"""What a private selection's transcript shows: its utility curve and its plot.

Both read only ``privacy_report_``, that is released quantities (the rungs'
epsilons, noisy utilities, test noise and thresholds, the noisy count), so they cost
no privacy.
"""

import numpy as np


def utility_law(epsilons, utilities):
    """``(U_inf, a)`` of the least-squares law ``U(epsilon) = U_inf - a / epsilon``.

    The noise of every skdp mechanism scales as ``1 / epsilon`` at a fixed row count.
    """
    design = np.column_stack([np.ones_like(epsilons), -1.0 / epsilons])
    (u_inf, a), *_ = np.linalg.lstsq(design, utilities, rcond=None)
    return float(u_inf), float(a)


def private_utility_curve(report, epsilons):
    """Utility at each epsilon from the rungs' noisy utilities, with an error band.

    Parameters
    ----------
    report : dict
        A private selection's ``privacy_report_``.
    epsilons : array-like of shape (n_points,)
        Where to estimate the utility.

    Returns
    -------
    utility : ndarray of shape (n_points,)
        The law ``U_inf - a / epsilon`` fitted to the noisy utilities (two rungs or
        more), the one noisy utility (one rung), or NaN (none).
    error : ndarray of shape (n_points,)
        The test's error at the last rung (its noise and the validation sampling
        error, in utility), the same at every point.
    """
    epsilons = np.atleast_1d(np.asarray(epsilons, dtype=float))
    rungs = report["transcript"]["rungs"]
    error = np.full(epsilons.shape, report["resolution"]["total_sd"])
    if not rungs:
        return np.full(epsilons.shape, np.nan), error
    at = np.array([r["epsilon"] for r in rungs])
    noisy = np.array([r["noisy_utility"] for r in rungs])
    if len(rungs) == 1:
        return np.full(epsilons.shape, noisy[0]), error
    u_inf, a = utility_law(at, noisy)
    return u_inf - a / epsilons, error


def plot_private_transcript(report, target, ax):
    """Draw a private selection's transcript on ``ax``.

    Parameters
    ----------
    report : dict
        A private selection's ``privacy_report_``.
    target : float
        The target utility.
    ax : matplotlib Axes

    Returns
    -------
    ax : matplotlib Axes
    """
    rungs = report["transcript"]["rungs"]
    sampling = report["resolution"]["sampling_sd"]
    for passed, marker, label in ((False, "o", "rung: failed"), (True, "*", "rung: passed")):
        chosen = [r for r in rungs if r["passed"] is passed]
        if chosen:
            ax.errorbar([r["epsilon"] for r in chosen], [r["noisy_utility"] for r in chosen],
                        yerr=[2 * np.hypot(r["test_sd"], sampling) for r in chosen],
                        fmt=marker, ms=10 if passed else 6, color="C1" if passed else "C0",
                        label=label)
    if len(rungs) >= 2:
        at = np.array([r["epsilon"] for r in rungs])
        grid = np.geomspace(at.min() / 1.5, at.max() * 1.5, 200)
        law = private_utility_curve(report, grid)[0]
        above = law >= 0            # a utility below 0 is no point on the plot's scale
        if above.any():
            ax.plot(grid[above], law[above], lw=1, color="C2", label="law U_inf - a / epsilon")
    # thresholds equal to the target would hide under its line: one line, one entry
    at_target = bool(rungs) and np.allclose([r["threshold"] for r in rungs], target)
    if len(rungs) >= 2 and not at_target:
        ax.plot(at, [r["threshold"] for r in rungs], "k:", lw=1, label="test threshold")
    ax.axhline(target, color="k", ls="--", lw=1,
               label="target (= test threshold)" if at_target else "target")
    released = report["released_model"]
    if released is not None:
        ax.axvline(released["epsilon"], color="C3", lw=1, zorder=0,   # behind the rungs
                   label=f"released at epsilon {released['epsilon']:.3g}")
    ex_post = report["ex_post"]["epsilon"]
    ax.set_title(f"private selection: {ex_post:.3g} spent of the cap "
                 f"{report['a_priori']['epsilon']:.3g} ({report['transcript']['stop_reason']})")
    if rungs:
        log_epsilon_axis(ax)
    ax.set_xlabel("epsilon")
    ax.set_ylabel("noisy validation utility")
    ax.legend()
    return ax


def axes(ax=None):
    """``ax``, or the axes of a new matplotlib figure (imported only to plot)."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.subplots()[1]


def log_epsilon_axis(ax):
    """A logarithmic epsilon axis labelled with plain numbers."""
    from matplotlib import ticker

    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())
