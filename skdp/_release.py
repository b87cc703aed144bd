"""What ``python -m skdp --save DIR`` writes: the model, and what a privacy officer reads.

``model.skops``
    The released model (the schema's preprocessing and the private estimator, one
    ``Pipeline``), loadable with :func:`skdp.io.load_model` without running code.
``privacy_card.json``
    The guarantee as data: estimator, epsilon and delta of the released model and of
    the whole search, unit and neighbouring relation, the statement, the schema's
    SHA-256, the versions.
``README.md``
    A model card (``skops.card``) with the same facts in words.

Every figure comes from the search's ``privacy_report_`` (released quantities only):
no row count, no seed, no value of the rows.
"""

import json
import platform
from pathlib import Path

UNITS = {"row": "one record (row)", "person": "one person (all of a person's rows)"}
FILES = {"model": "model.skops", "card": "privacy_card.json", "readme": "README.md"}


def privacy_card(search, *, schema_sha256=None, seeded=False):
    """The privacy card of a private selection, as a JSON-ready dict.

    Parameters
    ----------
    search : EpsilonForUtility
        Fitted.
    schema_sha256 : str, default=None
        SHA-256 of the schema file the preprocessing was built from.
    seeded : bool, default=False
        Whether the noise came from a seed (reproducibility mode: not for
        publication). The seed itself is never written.

    Returns
    -------
    card : dict
    """
    report = search.privacy_report_
    released = report["released_model"]
    estimator = search.estimator
    final = estimator.steps[-1][1] if hasattr(estimator, "steps") else estimator
    return {
        "estimator": type(final).__name__,
        "model": None if released is None else {
            "file": FILES["model"], "epsilon": released["epsilon"],
            "delta": released["delta"]},
        "target_utility": search.target_utility,
        "whole_search": {"ex_post": report["ex_post"], "a_priori": report["a_priori"]},
        "unit": UNITS[report["unit"]],
        "neighbouring": report["neighboring"],
        "statement": report["statement"],
        "noise": ("seeded: reproducibility mode, do not publish this model" if seeded
                  else "fresh cryptographic noise"),
        "schema_sha256": schema_sha256,
        "versions": _versions(),
    }


def write_release(directory, search, *, schema_sha256=None, seeded=False):
    """Write the released model (if any), its privacy card and its model card.

    Parameters
    ----------
    directory : str or Path
        Created if missing.
    search : EpsilonForUtility
        Fitted.
    schema_sha256 : str, default=None
        SHA-256 of the schema file.
    seeded : bool, default=False
        Whether the noise came from a seed.

    Returns
    -------
    paths : list of Path
        The files written.
    """
    from .io import save_model

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    card = privacy_card(search, schema_sha256=schema_sha256, seeded=seeded)
    written = []
    if card["model"] is not None:
        save_model(search.best_estimator_, directory / FILES["model"])
        written.append(directory / FILES["model"])
    (directory / FILES["card"]).write_text(json.dumps(card, indent=2) + "\n")
    written.append(directory / FILES["card"])
    _model_card(search, card).save(directory / FILES["readme"])
    written.append(directory / FILES["readme"])
    return written


def _model_card(search, card):
    from skops.card import Card

    model = search.best_estimator_ if card["model"] is not None else search.estimator
    readme = Card(model, model_diagram=False, template=None)
    released = card["model"]
    guarantee = ("No model was released." if released is None else
                 f"The model was trained at epsilon {_figure(released['epsilon'])} "
                 f"(delta {_figure(released['delta'])}); the whole search, the choice of "
                 f"epsilon included, is ({_figure(card['whole_search']['ex_post']['epsilon'])}"
                 f", {_figure(card['whole_search']['ex_post']['delta'])})-differentially "
                 f"private ex post, never above its cap "
                 f"({_figure(card['whole_search']['a_priori']['epsilon'])}, "
                 f"{_figure(card['whole_search']['a_priori']['delta'])}).")
    readme.add(**{
        "Model description": f"A differentially private {card['estimator']} released by "
                             "skdp's private selection of epsilon (EpsilonForUtility), "
                             f"target accuracy {card['target_utility']}.",
        "Privacy": f"{guarantee} Unit of privacy: {card['unit']}; neighbouring relation: "
                   f"{card['neighbouring']}. Noise: {card['noise']}.",
        "Privacy/Statement": card["statement"],
        "Data dictionary": (
            "No schema: a built-in dataset, each row scaled by its own norm."
            if card["schema_sha256"] is None else
            "The preprocessing uses only the declared schema (SHA-256 "
            f"`{card['schema_sha256']}`): bounds, categories, imputation constants; "
            "nothing was learned from the rows outside the guarantee."),
        "How to load": "`from skdp.io import load_model; model = load_model("
                       f"'{FILES['model']}')` (skops format: loading runs no code).",
        "Versions": ", ".join(f"{k} {v}" for k, v in card["versions"].items()),
    })
    return readme


def _figure(value):
    """A figure for people: four significant digits."""
    return f"{value:.4g}"


def _versions():
    import numpy
    import scipy
    import sklearn
    import skops

    from . import __version__

    return {"skdp": __version__, "python": platform.python_version(),
            "numpy": numpy.__version__, "scipy": scipy.__version__,
            "scikit-learn": sklearn.__version__, "skops": skops.__version__}
