"""Run the benchmarks and write the report: ``python -m benchmarks``.

Usage (from the repository root)::

    python -m benchmarks --quick         # CI-sized runs (minutes), then RESULTS_quick.md
    python -m benchmarks --full          # full runs (hours on 2 cores), then RESULTS.md
    python -m benchmarks --full --only dpsgd napp
    python -m benchmarks --full --n-jobs 2   # accuracy repetitions on 2 joblib workers
    python -m benchmarks --report-only   # no run: RESULTS.md from the existing JSON
                                         # (with --quick: RESULTS_quick.md)

Each benchmark runs in its own process (``python -m benchmarks.bench_<name>``), one
after the other, and writes ``results/<name>.json`` and ``.png`` (quick mode:
``<name>_quick.*``, so a quick run never overwrites full results). The report is
written even when a benchmark fails; the exit status is then 1.

``--n-jobs`` is passed on to the scripts that take it (``N_JOBS_BENCHMARKS``): they run
their accuracy repetitions through joblib, with the same results for any value; their
fit-time measurements stay sequential.
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from . import _common
from ._report import BENCHMARKS, write_report

HERE = Path(__file__).resolve().parent
# the benchmark scripts that take --n-jobs
N_JOBS_BENCHMARKS = ("objective_perturbation", "dpsgd", "napp", "paper_table", "defaults",
                     "epsilon_for_utility", "selection_cap", "private_search",
                     "dpsgd_calibration")


def run_benchmark(name, quick, results_dir, n_jobs=1):
    """Run one benchmark script in a subprocess; return its exit status."""
    command = [sys.executable, "-m", f"benchmarks.bench_{name}"] + (["--quick"] if quick else [])
    if name in N_JOBS_BENCHMARKS:
        command += ["--n-jobs", str(n_jobs)]
    env = {**os.environ, "SKDP_BENCHMARK_RESULTS": str(results_dir)}
    return subprocess.run(command, cwd=HERE.parent, env=env, check=False).returncode


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks",
                                     description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="CI-sized runs, results in *_quick.*")
    mode.add_argument("--full", action="store_true", help="the full runs behind RESULTS.md")
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, metavar="NAME",
                        help=f"run these benchmarks only (of: {', '.join(BENCHMARKS)})")
    parser.add_argument("--report-only", action="store_true",
                        help="run nothing; write the report from the existing JSON files")
    parser.add_argument("--n-jobs", type=int, default=1,
                        help="joblib workers for the accuracy repetitions of "
                             f"{', '.join(N_JOBS_BENCHMARKS)} (default 1; same results for "
                             "any value; fit times are always measured sequentially)")
    parser.add_argument("--results-dir", type=Path, default=_common.RESULTS_DIR,
                        help="where the JSON and PNG files go (default: %(default)s)")
    parser.add_argument("--report", type=Path, default=None,
                        help="report path (default: benchmarks/RESULTS.md, or "
                             "RESULTS_quick.md in quick mode)")
    args = parser.parse_args(argv)
    if not (args.quick or args.full or args.report_only):
        parser.error("choose --quick (CI-sized, minutes) or --full (hours on 2 cores)")
    quick = args.quick
    names = args.only or list(BENCHMARKS)
    failed = []
    if not args.report_only:
        args.results_dir.mkdir(parents=True, exist_ok=True)
        for i, name in enumerate(names, 1):
            print(f"[benchmarks] {i}/{len(names)} {name} ({'quick' if quick else 'full'})",
                  flush=True)
            start = time.perf_counter()
            status = run_benchmark(name, quick, args.results_dir.resolve(), args.n_jobs)
            print(f"[benchmarks] {name}: exit status {status} after "
                  f"{time.perf_counter() - start:.0f} s", flush=True)
            if status != 0:
                failed.append(name)
    report = args.report or HERE / ("RESULTS_quick.md" if quick else "RESULTS.md")
    # the report always covers every benchmark (a missing JSON is noted in its section)
    print("[benchmarks] wrote", write_report(args.results_dir, report, quick=quick))
    if failed:
        print("[benchmarks] failed:", ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
