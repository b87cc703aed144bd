"""The outcome of a private selection and its report, from released quantities only.

:class:`SelectionResult` holds what :func:`~._private_selection.select_epsilon_privately`
released (the model, the transcript, each part's spend); :func:`private_report` turns
it into ``EpsilonForUtility.privacy_report_``, with a statement to sign, and
:func:`distance_to_best` says how far the realised loss is from the best possible.
"""

from dataclasses import dataclass, field

from ..utils._format import format_guarantee as _fmt
from ._selection_tests import GaussianTests, RenyiTests, floor_epsilon


@dataclass
class SelectionResult:
    """The outcome of :func:`~._private_selection.select_epsilon_privately`.

    Attributes
    ----------
    estimator : estimator or None
        The passing rung's model (trained on the training part); ``None`` when no
        rung passed within the cap (nothing is released).
    epsilon : float or None
        The passing rung's epsilon.
    rungs : list of dict
        The transcript: each rung's epsilon, certified spend, test budget, threshold,
        noisy test sum, pass/fail bit and noisy utility.
    training : dict
        The training rows' ex-post and a priori (epsilon, delta) and the accounting.
    validation : dict
        The validation rows' spend, ex post and a priori, by component.
    ex_post : tuple of float
        ``(epsilon, delta)`` realised, over every row given.
    a_priori : tuple of float
        ``(epsilon, delta)`` before running, over every row given: the cap.
    noisy_validation_count : float
        The noisy count of the validation part (the sum of the noisy label counts).
    noisy_label_counts : list of float
        The validation part's label counts, each with Laplace noise (a
        classifier's; a regressor's one count).
    chance : float or None
        A classifier's chance level: the largest share of the noisy label counts.
    stop_reason : str
        ``"passed"``, ``"cap"``, ``"max_rungs"``, ``"plateau"`` (the noisy utilities
        levelled off below the threshold) or ``"cohort_too_small"`` (even the whole
        cap could not buy a test of resolution ``tolerance``; no rung was fitted).
    n_fits : int
        Private fits made (one under noise reduction, whatever the rungs).
    threshold : float
        The target plus a fixed margin, clamped into [0, 1] (public).
    test_rows : str
        ``"held_out"`` (a validation part) or ``"all"`` (every row, one odometer).
    training_share : float
        The expected share of the rows the rungs train on (public).
    ladder_floor : float
        The least median ratio of the search's cost to the oracle epsilon that any
        ladder of its kind of rungs can have (:func:`~._selection_accounts.ladder_floor`).
    unit : str
        The unit of privacy: ``"row"``, or ``"person"`` (``groups`` given: the counts
        are of persons and the utilities persons' means).
    resolution : dict
        Post-processing of the noisy count: the standard deviations, in utility, of
        the test's noise at the released (or last) rung, or at the largest rung
        the cap allowed when none ran, and of the validation sampling error at the
        target.
    """

    estimator: object
    epsilon: float
    rungs: list
    training: dict
    validation: dict
    ex_post: tuple
    a_priori: tuple
    noisy_validation_count: float = 0.0
    noisy_label_counts: list = field(default_factory=list)
    chance: float = None
    stop_reason: str = ""
    n_fits: int = 0
    threshold: float = 0.0
    resolution: dict = field(default_factory=dict)
    test_rows: str = "held_out"
    training_share: float = 1.0
    ladder_floor: float = 1.0
    unit: str = "row"


def validation_spend(tests, joint, guarantee):
    """The tested rows' spend, ex post and a priori, by component.

    Parameters
    ----------
    tests : ValidationAccount, PureTests, GaussianTests or RenyiTests
        The selection's counts and tests, after the last rung.
    joint : bool
        Whether the tests read every row (charged to the rungs' account, whose
        ``guarantee`` is then theirs too) rather than a held-out part.
    guarantee : tuple
        The training account's ``((ex-post epsilon, delta), (a priori epsilon, delta))``.

    Returns
    -------
    validation : dict
        ``ex_post``, ``a_priori``, the counts' budget (``count_epsilon`` or
        ``count_mu``), ``tests``, ``test_ratio`` and ``accounting``.
    """
    if not joint:
        return {
            "ex_post": (tests.spent, 0.0), "a_priori": (tests.epsilon_max, 0.0),
            "count_epsilon": tests.count_epsilon,
            "tests": tests.spent - tests.count_epsilon, "test_ratio": tests.test_ratio,
            "accounting": "a Laplace count and one Laplace test per rung (Dwork & Roth "
                          "2014, Theorem 3.6), budgets chosen from earlier outputs: fully "
                          "adaptive basic composition of pure DP (Rogers, Roth, Ullman & "
                          "Vadhan 2016), ex post"}
    gaussian = isinstance(tests, GaussianTests)
    (post, delta_post), (prior, delta_prior) = guarantee
    return {"ex_post": (post, delta_post), "a_priori": (prior, delta_prior),
            **({"count_mu": tests.count_mu} if gaussian else
               {"count_epsilon": tests.count_epsilon}),
            "tests": tests.spent, "test_ratio": tests.test_ratio,
            "accounting": ("Gaussian label counts and one Gaussian test per rung "
                           "on every row, charged in Renyi DP (alpha mu^2 / 2) "
                           "to the rungs' Renyi filters"
                           if isinstance(tests, RenyiTests) else
                           "Gaussian label counts and one Gaussian test per rung "
                           "on every row, charged in mu^2 to the rungs' odometer"
                           if gaussian else
                           "Laplace label counts and one Laplace test per rung on "
                           "every row, added to the rungs' sum (fully adaptive "
                           "basic composition)") + " (the same rows: one account)"}


def validation_test_floor(result):
    """:func:`~._selection_tests.floor_epsilon` on the rows the search tests on (their
    noisy count), Gaussian at the search's delta when its tests are Gaussian."""
    gaussian = "count_mu" in result.validation
    return floor_epsilon(result.noisy_validation_count,
                      result.a_priori[1] if gaussian else None)


def distance_to_best(result):
    """How far the search's realised loss is from the best possible, from released
    quantities only: where the oracle epsilon lies (between the last failed rung and
    the passing one, on the scale of every row), the loss over that bracket, the
    design's floor on that ratio and the test's floor."""
    failed = [r["epsilon"] for r in result.rungs if not r["passed"]]
    low = max(failed) * result.training_share if failed else None
    high = result.epsilon * result.training_share if result.estimator is not None else None
    loss = result.ex_post[0]
    return {
        "oracle_bracket": (low, high),
        "loss_over_bracket": (None if high is None else loss / high,
                              None if low is None else loss / low),
        "ladder_floor": result.ladder_floor,
        "test_floor": validation_test_floor(result),
        "explanation": (
            "The oracle epsilon is the smallest at which the estimator trained on every "
            "row meets the target on average. It lies about between the last failed rung "
            "and the passing one, both rescaled to every row (times the training share "
            f"{result.training_share:.2g}); each end is a noisy test's verdict, not a "
            "certainty. loss_over_bracket is the realised loss over each end. No search "
            "with this kind of rungs has a median ratio to the oracle below ladder_floor, "
            "and no test that tells the target from half a point below it with one-sided "
            "error 10 % on these rows costs less than test_floor."),
    }


def _outcome(result, estimator_name, target, utility):
    """The statement's first sentence: what the search released, or why nothing."""
    n_rungs = len(result.rungs)
    trials = (f"{n_rungs} trial fits" if result.n_fits != 1 or n_rungs == 1 else
              f"{n_rungs} trial releases of one fit, each less noisy than the last (noise "
              "reduction, or checkpoints of one run of DP-GD)")
    records = "persons" if result.unit == "person" else "records"
    if result.estimator is not None:
        article = "an" if estimator_name[:1] in "AEIOU" else "a"
        return (f"It released {article} {estimator_name} model trained at epsilon "
                f"{result.epsilon:.4g}, the first of {trials} whose {utility} "
                f"passed a private test against the target {target:g}.")
    if result.stop_reason == "cohort_too_small":
        return (f"The validation part (about {max(result.noisy_validation_count, 0):.0f} "
                f"{records}, a noisy count) is too small for the cap: even a test at the "
                f"largest epsilon the cap allows would have had noise of standard "
                f"deviation {result.resolution['test_noise_sd']:.2g} in {utility}, coarser "
                "than the tolerance. No model was fitted or released.")
    if result.stop_reason == "plateau":
        return (f"No trial fit passed the private test against the target {target:g}, "
                f"and the noisy {utility} levelled off below it after {trials}: the "
                "search stopped early and no model was released.")
    return (f"No trial fit passed the private test against the target {target:g} "
            f"within the cap after {trials}: no model was released.")


def _statement(result, estimator_name, target, utility):
    """The statement to sign: the outcome, the guarantee, how the rows were used and
    the test's resolution."""
    (eps_post, delta_post), (eps_prior, delta_prior) = result.ex_post, result.a_priori
    pure = not delta_prior
    resolution = result.resolution
    persons = result.unit == "person"
    outcome = _outcome(result, estimator_name, target, utility)
    guarantee = (f"Everything released (the model, its epsilon, and the transcript of the "
                 f"search: each trial's epsilon, pass/fail result and noisy {utility}) is "
                 f"{_fmt(eps_post, delta_post)}-differentially private")
    unit = ("any one person (all of their rows)" if persons else
            "any one record (row)")
    return (
        f"{outcome} {guarantee} with respect to adding or removing {unit} among those "
        "given, the choice of epsilon included. "
        f"This is the realised (ex-post) loss; whatever the data, it could not have "
        f"exceeded the search's cap {_fmt(eps_prior, delta_prior)}. "
        + ("" if pure else
           "With Gaussian noise the realised figure comes from a privacy odometer and holds "
           "for the released transcript taken as a whole; ex-post guarantees with delta > 0 "
           "are not closed under post-processing, so for anything derived from part of it "
           f"alone, rely on the a priori {_fmt(eps_prior, delta_prior)}. ")
        + (("Every person's rows were used both to train the trial models and to test "
            "them; both uses are counted in the figure. " if persons else
            "Every record was used both to train the trial models and to test them; both "
            "uses are counted in the figure. ") if result.test_rows == "all" else
           ("All of each person's rows were used either to train the trial models or to "
            "test them, decided by one independent coin per person, so the two uses do "
            "not add up. " if persons else
            "Each record was used either to train the trial models or to test them, "
            "decided by an independent coin, so the two uses do not add up. "))
        + (f"The tests and counts are per person: each trial's {utility} is the mean "
           "over persons of their mean over their rows, and the counts count persons. "
           if persons else "")
        + f"The test's resolution: noise of standard deviation "
        f"{resolution['test_noise_sd']:.2g} and a validation sampling error of "
        f"{resolution['sampling_sd']:.2g} in {utility}.")


def _fits(result):
    """Each rung's certified spend."""
    purpose = ("rung (trained on every row)" if result.test_rows == "all" else
               "rung (trained on the training part)")
    return [{"epsilon": r["epsilon"], "epsilon_spent": r["epsilon_spent"],
             "delta": r.get("delta_spent", 0.0), **({"mu": r["mu"]} if "mu" in r else {}),
             "purpose": purpose} for r in result.rungs]


def _parts(result):
    """Each part's spend, ex post and a priori, with its accounting."""
    train, val = result.training, result.validation
    return {
        "training": {"ex_post": dict(zip(("epsilon", "delta"), train["ex_post"])),
                     "a_priori": dict(zip(("epsilon", "delta"), train["a_priori"])),
                     "accounting": train["accounting"]},
        "validation": {"ex_post": dict(zip(("epsilon", "delta"), val["ex_post"])),
                       "a_priori": dict(zip(("epsilon", "delta"), val["a_priori"])),
                       **{key: val[key] for key in ("count_epsilon", "count_mu", "tests",
                                                    "test_ratio", "accounting")
                          if key in val}},
    }


def private_report(result, estimator_name, target, utility="accuracy"):
    """``privacy_report_`` of a private selection, with a statement to sign.

    Parameters
    ----------
    result : SelectionResult
        The selection's outcome.
    estimator_name : str
        Name of the private estimator, for the statement.
    target : float
        The target utility.
    utility : str, default="accuracy"
        What the utility is, for the statement.

    Returns
    -------
    report : dict
        ``selection``, ``neighboring`` (``"add_remove"``, or ``"add_remove_person"``
        with persons), ``unit`` (``"row"`` or ``"person"``), ``ex_post`` and
        ``a_priori`` ``(epsilon, delta)`` over every row (the a priori pair is the cap), ``parts`` (``training`` and
        ``validation``, each with its ex-post and a priori figures and accounting),
        ``fits`` (each rung's certified spend), ``transcript`` (rungs with their
        test budgets, thresholds, noisy sums, pass/fail bits and noisy utilities;
        the noisy count; the stop reason), ``resolution`` (the test's noise and the
        validation sampling error, in utility), ``released_model`` and
        ``statement``.
    """
    (eps_post, delta_post), (eps_prior, delta_prior) = result.ex_post, result.a_priori
    persons = result.unit == "person"
    fits = _fits(result)
    return {
        "selection": "private",
        "neighboring": "add_remove_person" if persons else "add_remove",
        "unit": result.unit,
        "ex_post": {"epsilon": eps_post, "delta": delta_post},
        "a_priori": {"epsilon": eps_prior, "delta": delta_prior},
        "parts": _parts(result),
        "composition": ("one odometer over every release on all the rows (the parts "
                        "are the same rows)" if result.test_rows == "all" else
                        "parallel over the parts (independent coins): max of the parts"),
        "fits": fits,
        "transcript": {"rungs": result.rungs,
                       "noisy_validation_count": result.noisy_validation_count,
                       "noisy_label_counts": result.noisy_label_counts,
                       "chance": result.chance,
                       "threshold": result.threshold,
                       "stop_reason": result.stop_reason},
        "resolution": dict(result.resolution),
        "distance_to_best": distance_to_best(result),
        "released_model": (None if result.estimator is None else
                           {"epsilon": result.epsilon, "delta": fits[-1]["delta"]}),
        "statement": _statement(result, estimator_name, target, utility),
    }
