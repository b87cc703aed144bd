"""Peak memory of the CSV route on a visit table of 110,000 rows.

Writes a synthetic visit table (110,000 visits of about 40,000 patients, a
high-cardinality patient id and a visit id, numeric columns with missing values,
categorical columns with up to 500 declared categories) and its schema to a temporary
folder, runs ``python -m skdp --schema ... --groups-column patient_id --save ...`` in
a child process, and prints the child's wall time and peak resident set size.

Run ``python -m benchmarks.cli_visit_table [--rows N]``.
"""

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

DIAGNOSES = [f"D{i:03d}" for i in range(500)]
WARDS = [f"ward-{i}" for i in range(40)]


def visit_table(n_rows, seed=0):
    """A synthetic visit table with a public generator (no real data)."""
    rng = np.random.default_rng(seed)
    person = np.sort(rng.integers(0, n_rows // 3, n_rows))
    age = rng.integers(18, 95, n_rows).astype(float)
    age[rng.random(n_rows) < 0.05] = np.nan
    stay = np.round(rng.exponential(4.0, n_rows), 1)
    stay[rng.random(n_rows) < 0.05] = np.nan
    diagnosis = rng.choice(DIAGNOSES, n_rows).astype(object)
    diagnosis[rng.random(n_rows) < 0.05] = np.nan
    ward = rng.choice(WARDS, n_rows)
    sex = rng.choice(["F", "M"], n_rows)
    logit = (0.3 * np.nan_to_num(stay) - 1.5 + 0.02 * (np.nan_to_num(age) - 50)
             + 0.5 * (ward == "ward-0"))
    label = np.where(rng.random(n_rows) < 1 / (1 + np.exp(-logit)), "yes", "no")
    return pd.DataFrame({
        "visit_id": [f"V{i:08d}" for i in range(n_rows)],
        "patient_id": [f"P{p:08d}" for p in person],
        "age": age, "sex": sex, "ward": ward, "diagnosis": diagnosis,
        "length_of_stay": stay, "prior_visits": rng.poisson(2.0, n_rows),
        "readmitted": label})


SCHEMA = {
    "label": {"name": "readmitted", "classes": ["no", "yes"]},
    "columns": {"age": {"bounds": [18, 100]}, "sex": {"categories": ["F", "M"]},
                "ward": {"categories": WARDS}, "diagnosis": {"categories": DIAGNOSES},
                "length_of_stay": {"bounds": [0, 60]}, "prior_visits": {"bounds": [0, 20]}},
    "ignore": ["visit_id"],
}


def run(n_rows):
    """Run the CSV route on ``n_rows`` visits in a child process.

    Returns ``(wall seconds, peak RSS in GiB)``; the peak is the largest of this
    process's children so far, an upper bound on the run's own.
    """
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        visit_table(n_rows).to_csv(folder / "visits.csv", index=False)
        (folder / "schema.json").write_text(json.dumps(SCHEMA))
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "skdp", "--dataset", str(folder / "visits.csv"),
                        "--schema", str(folder / "schema.json"), "--groups-column",
                        "patient_id", "--target", "0.6", "--quiet", "--save",
                        str(folder / "release"), "--output", str(folder / "curve.png")],
                       check=True)
        wall = time.perf_counter() - start
    return wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=110_000)
    args = parser.parse_args(argv)
    wall, peak = run(args.rows)
    print(f"{args.rows} visits: {wall:.1f} s, peak RSS of the run {peak:.2f} GiB")


if __name__ == "__main__":
    main()
