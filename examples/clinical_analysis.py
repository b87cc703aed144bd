"""A whole person-level analysis in one guarantee: Table 1, a model, its scores and a
cross-validation, all in one ``PrivacyLedger``.

A clinical team holds a visit table: several rows per patient. No offline clinical table
ships with skdp, so UCI Adult stands in for it: its rows are grouped into "patients" of 1
to 20 rows by a public rule that never reads the data (a fixed-seed permutation of the
row indices cut into runs of uniform random length). The unit of privacy is then a
patient with all of their rows, and every release below protects one patient:

1. a Table 1 of the training cohort (``ledger.describe``: count, shares, bounded means);
2. a model: a public preprocessor (declared categories and bounds) and objective
   perturbation, fitted with ``groups`` (``ledger.fit``);
3. the model's held-out accuracy and ROC AUC on the test patients (``ledger.score``);
4. a 5-fold private cross-validation of the same pipeline on the training patients
   (``ledger.cross_validate``: folds by public coins, every fit and score charged).

The ledger refuses, before any noise, a release that would cross its budget, and its
report states the whole analysis in one sentence.

Run ``python examples/clinical_analysis.py`` (under a minute on two cores).
"""

import warnings

import numpy as np
from sklearn.pipeline import make_pipeline

from skdp import ObjPertLogisticRegression, PrivacyLedger
from skdp.datasets import adult_preprocessor, load_adult

TOTAL_EPSILON = 3.0
BUDGET = {"table1": 0.6, "fit": 1.0, "accuracy": 0.2, "roc_auc": 0.2,
          "cv_fit": 0.2, "cv_score": 0.2}   # 0.6 + 1 + 0.2 + 0.2 + (4 x 0.2 + 0.2) = 3
AUC_BINS = 10                              # fewer public score bins: less noise
FOLDS = 5
LARGEST_PATIENT = 20
PUBLIC_SEED = 45
SCHEMA = {"label": {"name": "income", "classes": ["<=50K", ">50K"]},
          "columns": {"age": {"bounds": [17, 90]},
                      "hours-per-week": {"bounds": [1, 99]},
                      "education-num": {"bounds": [1, 16]},
                      "sex": {"categories": ["Female", "Male"]},
                      "race": {"categories": ["White", "Black", "Asian-Pac-Islander",
                                              "Amer-Indian-Eskimo", "Other"]}}}


def patients(n_rows, seed=PUBLIC_SEED, largest=LARGEST_PATIENT):
    """Each row's patient by a public rule: a fixed-seed permutation cut into runs of
    1 to ``largest`` rows (reads only the number of rows)."""
    rng = np.random.default_rng(seed)
    ends = np.cumsum(rng.integers(1, largest + 1, size=n_rows))
    patient = np.empty(n_rows, dtype=np.intp)
    patient[rng.permutation(n_rows)] = np.searchsorted(ends, np.arange(n_rows),
                                                       side="right")
    return patient


def cohort_frame(X, y):
    """The Table 1's columns and the label as text."""
    frame = X[list(SCHEMA["columns"])].copy()
    frame["income"] = np.where(y == 1, ">50K", "<=50K")
    return frame


def main(quick=False):
    """Run the analysis; return the Table 1, the scores, the cross-validation and the
    ledger's report."""
    data = load_adult(as_frame=True)
    X, y, X_test, y_test = data.X_train, data.y_train, data.X_test, data.y_test
    if quick:
        X, y, X_test, y_test = X[:6000], y[:6000], X_test[:3000], y_test[:3000]
    train_patients = patients(len(y))
    test_patients = patients(len(y_test), seed=PUBLIC_SEED + 1)
    model = make_pipeline(adult_preprocessor(), ObjPertLogisticRegression(
        epsilon=BUDGET["fit"], data_norm=np.sqrt(14)))

    ledger = PrivacyLedger(TOTAL_EPSILON)
    table1 = ledger.describe(cohort_frame(X, y), SCHEMA, epsilon=BUDGET["table1"],
                             groups=train_patients)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a person-level fit reminds of max_rows_per_group
        ledger.fit(model, X, y, groups=train_patients)
        scores = {"accuracy": ledger.score(model, X_test, y_test, scoring="accuracy",
                                           epsilon=BUDGET["accuracy"],
                                           groups=test_patients),
                  "roc_auc": ledger.score(model, X_test, y_test, scoring="roc_auc",
                                          epsilon=BUDGET["roc_auc"], groups=test_patients,
                                          bins=AUC_BINS)}
        cv = ledger.cross_validate(
            make_pipeline(adult_preprocessor(), ObjPertLogisticRegression(
                epsilon=BUDGET["cv_fit"], data_norm=np.sqrt(14))),
            X, y, cv=FOLDS, scoring="accuracy", epsilon=BUDGET["cv_score"],
            groups=train_patients, cv_random_state=PUBLIC_SEED)
    return {"table1": table1, "scores": scores, "cross_validation": cv,
            "report": ledger.report()}


if __name__ == "__main__":
    result = main()
    print(f"Table 1 of the training patients (person-level, epsilon {BUDGET['table1']:g}; "
          "N is the noisy number of patients):")
    print(result["table1"].round(3).to_string())
    for name, estimate in result["scores"].items():
        low, high = estimate.conf_int(0.05)
        print(f"held-out {name}: {float(estimate):.3f} (noise std {estimate.noise_std:.3f}, "
              f"95% noise interval {low:.3f} to {high:.3f})")
    folds = [float(s) for s in result["cross_validation"]["test_score"]]
    print(f"{FOLDS}-fold private cross-validated accuracy: {np.mean(folds):.3f} "
          f"(folds {', '.join(f'{s:.3f}' for s in folds)})")
    print(result["report"]["statement"])
