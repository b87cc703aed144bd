"""The summary of ``ObjPertLogisticRegression(inference=True)`` on Adult beside
statsmodels' ``Logit`` on the same features (issue 46).

Features, all public: the six numeric columns scaled to ``[0, 1]`` by the loader's
declared bounds (:data:`~skdp.datasets._loaders.ADULT_NUMERIC_BOUNDS`) and the columns
``sex``, ``race`` and ``relationship`` reference-coded: ``OneHotEncoder(drop="first")``
over the categories ``adult.names`` declares, in its order (the reference is the first
listed: Female, White, Wife). A row then has norm at most ``sqrt(3 + 6) = 3``
(``data_norm=3`` clips nothing). The other categorical columns are left out: their
rare categories (native-country=Holand-Netherlands has one training row, 25 of its 41
values fewer than 60) have less curvature than the information matrix's noise at
epsilon 1, which the fit would rightly refuse. The full one-hot encoding beside the
intercept is collinear: its fits are refused (``InferenceError``) and the refusal
count over the seeds is recorded.

The private fit: the training split (30,162 rows), ``epsilon=1``, ``delta=1e-6``; the
table is the fit of the first ``random_state`` from 0 whose intervals are not refused
(recorded as ``table_seed``; the refusals over the seeds are counted); the share of coefficients whose private interval
contains the non-private estimate is also given over ``--seeds`` seeds. statsmodels is a
benchmark-only dependency (``pip install skdp[bench]``).

Run ``python -m benchmarks.bench_inference_adult [--seeds K]`` from the repo root with
``SKDP_DATA_HOME`` set; writes ``results/inference_adult.json``.
"""

import argparse
import warnings

import numpy as np
import pandas as pd
import statsmodels.api as sm
from sklearn.compose import ColumnTransformer
from sklearn.preprocessing import OneHotEncoder

from skdp import InferenceError, ObjPertLogisticRegression
from skdp.datasets import load_adult
from skdp.datasets._loaders import ADULT_CATEGORIES, ADULT_NUMERIC_BOUNDS
from skdp.preprocessing import BoundedScaler

from ._common import write_results

NAME = "inference_adult"
CATEGORICAL = ("sex",)
NUMERIC = ("age", "education-num", "hours-per-week")
PARAMS = {"epsilon": 1.0, "delta": 1e-6, "data_norm": 2.0, "seeds": 20}


def preprocessor(drop="first"):
    """Reference-coded categories (``drop="first"``) or the full one-hot encoding
    (``drop=None``), and the numeric columns in ``[0, 1]``; nothing read from the
    rows."""
    encoder = OneHotEncoder(categories=[list(ADULT_CATEGORIES[c]) for c in CATEGORICAL],
                            drop=drop, handle_unknown="ignore", sparse_output=False)
    scaler = BoundedScaler(lower=0.0, upper=[ADULT_NUMERIC_BOUNDS[c] for c in NUMERIC],
                           feature_range=(-1.0, 1.0))
    return ColumnTransformer([("categorical", encoder, list(CATEGORICAL)),
                              ("numeric", scaler, list(NUMERIC))],
                             sparse_threshold=0, verbose_feature_names_out=False)


def features(frame, drop="first"):
    transform = preprocessor(drop).fit(frame)
    return pd.DataFrame(transform.transform(frame), columns=transform.get_feature_names_out(),
                        index=frame.index)


def private_model(seed):
    return ObjPertLogisticRegression(epsilon=PARAMS["epsilon"], delta=PARAMS["delta"],
                                     data_norm=PARAMS["data_norm"], inference=True,
                                     random_state=seed)


def side_by_side(private, reference):
    """The private summary and statsmodels' (``coef``, ``std err``, the 95 %
    interval), one row per coefficient, and whether the private interval contains
    the non-private estimate."""
    table = private.summary().add_prefix("private ")
    table["statsmodels coef"] = np.asarray(reference.params)
    table["statsmodels std err"] = np.asarray(reference.bse)
    interval = np.asarray(reference.conf_int())
    table["statsmodels lower"], table["statsmodels upper"] = interval[:, 0], interval[:, 1]
    table["contains"] = ((table["private lower"] <= table["statsmodels coef"])
                         & (table["statsmodels coef"] <= table["private upper"]))
    return table


def plot(table, path):
    """The private and the non-private 95 % intervals of each coefficient."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 0.45 * len(table) + 1.0))
    rows = np.arange(len(table))
    for offset, who, color in ((0.15, "private", "C0"), (-0.15, "statsmodels", "k")):
        centre = table[f"{who} coef"]
        ax.errorbar(centre, rows + offset, xerr=[centre - table[f"{who} lower"],
                                                 table[f"{who} upper"] - centre],
                    fmt="o", color=color, ms=4, lw=1.2,
                    label="ObjPertLogisticRegression, epsilon 1" if who == "private"
                    else "statsmodels Logit (non-private)")
    ax.set_yticks(rows, list(table.index))
    ax.invert_yaxis()
    ax.axvline(0.0, color="0.7", lw=0.8)
    ax.set_xlabel("coefficient with its 95 % interval")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=PARAMS["seeds"])
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    data = load_adult(as_frame=True)
    X, y = features(data.X_train), (data.y_train > 0).astype(int)
    reference = sm.Logit(y, sm.add_constant(X.to_numpy(), prepend=True)).fit(disp=0)
    tables, refused = {}, 0
    for seed in range(args.seeds):
        try:
            tables[seed] = side_by_side(private_model(seed).fit(X, y), reference)
        except InferenceError:
            refused += 1
    table_seed = min(tables)       # the first seed whose intervals were not refused
    table = tables[table_seed]
    shares = [t["contains"].mean() for t in tables.values()]
    full = features(data.X_train, drop=None)
    full_refused = 0
    for seed in range(args.seeds):
        try:
            private_model(seed).fit(full, y)
        except InferenceError:
            full_refused += 1
    result = {"params": {**PARAMS, "seeds": args.seeds, "categorical": list(CATEGORICAL),
                         "n_train": int(len(y))},
              "table_seed": table_seed,
              "table": table.reset_index(names="name").to_dict(orient="records"),
              "share_contains": float(table["contains"].mean()),
              "share_contains_over_seeds": {"median": float(np.median(shares)),
                                            "min": float(np.min(shares)),
                                            "max": float(np.max(shares)),
                                            "refused": refused},
              "full_one_hot_refused": full_refused}
    print(table.round(3).to_string())
    print({k: v for k, v in result.items() if k != "table"})
    path = write_results(NAME, result)
    plot(table, path.with_suffix(".png"))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
