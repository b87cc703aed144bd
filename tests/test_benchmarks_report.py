"""The benchmark report (benchmarks/_report.py) and the runner (python -m benchmarks)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from skdp.accounting import gaussian_epsilon, gdp_mu

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
if str(REPO) not in sys.path:  # the benchmarks package lives next to skdp, not inside it
    sys.path.insert(0, str(REPO))

from benchmarks import _coverage_goal as coverage_goal  # noqa: E402
from benchmarks import _report  # noqa: E402
from benchmarks._report import (BENCHMARKS, SECTIONS, fmt, fmt_eps, fmt_summary,  # noqa: E402
                                render_report)

from .conftest import shared_data_home  # noqa: E402


def _section(report, name):
    """The text of one benchmark's section in a rendered report."""
    start = report.index("## " + SECTIONS[name][0])
    end = report.find("\n## ", start + 1)
    return report[start:] if end < 0 else report[start:end]


def _row(text, first_cells):
    """The cells of the markdown table row starting with ``first_cells``."""
    prefix = "| " + " | ".join(first_cells) + " |"
    rows = [line for line in text.splitlines() if line.startswith(prefix)]
    assert len(rows) == 1, (prefix, rows)
    return [c.strip() for c in rows[0].strip("|").split("|")]


@pytest.fixture(scope="module")
def committed():
    if not all((RESULTS / f"{name}.json").exists() for name in BENCHMARKS):
        pytest.skip("the committed full-mode JSON files are not all present")
    return {name: json.loads((RESULTS / f"{name}.json").read_text()) for name in BENCHMARKS}


@pytest.fixture(scope="module")
def report(committed):
    return render_report(RESULTS)


def test_every_section_with_setting_and_table(report):
    for name in BENCHMARKS:
        text = _section(report, name)
        assert "No results" not in text and "Section incomplete" not in text
        for field in ("Machine:", "Versions:", "Git revision:", "Seeds:",
                      "Neighbouring relation:"):
            assert field in text, (name, field)
        assert "|---|" in text
        assert f"![{name}](results/{name}.png)" in text


def _subsection(text, dataset):
    """The ``### dataset`` part of a section."""
    start = text.index(f"### {dataset}")
    end = text.find("\n### ", start + 1)
    return text[start:] if end < 0 else text[start:end]


@pytest.mark.parametrize("dataset", ["adult", "kddcup99"])
def test_objective_perturbation_numbers_are_the_json_numbers(report, committed, dataset):
    text = _subsection(_section(report, "objective_perturbation"), dataset)
    result = committed["objective_perturbation"]["results"][dataset]
    row = result["curves"]["skdp_pure_add_remove"][3]
    header = _row(text, ["epsilon"])
    cells = _row(text, [f"{row['epsilon']:.4g}"])
    column = header.index("skdp_pure_add_remove")
    summary = row["test_accuracy"]
    assert cells[column] == f"{summary['mean']:.4f} ± {summary['sem']:.4f}"
    assert cells[-1] == f"{result['non_private']['test_accuracy']:.4f}"
    assert ("diffprivlib (reference value in the issue)" in header) == (dataset == "adult")
    timing = result["fit_time"]["skdp_pure_add_remove"]
    same_run = text.split("separate timing-only run")[0]
    assert _row(same_run, ["skdp_pure_add_remove"])[1:] == [
        f"{timing['seconds']:.3f}", f"{timing['ratio_to_sklearn']:.2f}"]


def test_earlier_adult_only_layouts_still_render(committed):
    """The Adult-only JSON layouts (before KDDCup99 was added) give the same Adult tables."""
    objpert = committed["objective_perturbation"]
    flat = {k: v for k, v in objpert.items() if k != "results"}
    flat.update(objpert["results"]["adult"])
    napp = {k: v for k, v in committed["napp"].items() if k != "classification"}
    napp["adult"] = committed["napp"]["classification"]["adult"]
    for name, old in (("objective_perturbation", flat), ("napp", napp)):
        new_text = "\n".join(SECTIONS[name][1](committed[name]))
        old_text = "\n".join(SECTIONS[name][1](old))
        assert "### kddcup99" in new_text and "### kddcup99" not in old_text
        tables = [[line for line in _subsection(text, "adult").splitlines()
                   if line.startswith("|")] for text in (old_text, new_text)]
        assert tables[0] and tables[0] == tables[1]


def test_dpsgd_and_napp_numbers_are_the_json_numbers(report, committed):
    dpsgd = committed["dpsgd"]
    rows = dpsgd["accuracy"]["kddcup99"]["methods"]["opacus_dpsgd_recipe"]
    text = _section(report, "dpsgd")
    kdd = text[text.index("### kddcup99"):]
    cells = _row(kdd, [f"{rows[2]['epsilon']:.4g}"])
    assert cells[-1] == fmt_summary(rows[2]["test_accuracy"])  # Opacus: the last column
    assert f"opacus_over_skdp_ratio | {dpsgd['timing']['opacus_over_skdp_ratio']:.3f}" in text

    napp = committed["napp"]
    entry = next(t for t in napp["simulation"]["table"]
                 if (t["family"], t["n"], t["method"]) == ("poisson", 1000, "two_stage"))
    cells = _row(_section(report, "napp"), ["poisson", "1000", f"{entry['epsilon']:.4g}"])
    assert cells[5].startswith(fmt(entry["error"]["mean"]))  # family, n, eps, nonpriv, napp
    for dataset, result in napp["classification"].items():
        text = _subsection(_section(report, "napp"), dataset)
        row = result["rows"][-1]
        cells = _row(text, [f"{row['epsilon']:.4g}"])
        assert cells[["napp", "two_stage"].index(row["method"]) + 1].startswith(
            fmt_summary(row["error"], 2, 100))
        assert f"ratio {result['timing']['ratio']:.2f}" in text



def test_scale_out_numbers_are_the_json_numbers(report, committed):
    payload = committed["scale_out"]
    params, text = payload["params"], _section(report, "scale_out")
    # the claim of the section: data beyond every process's memory limit, and every
    # worker within it
    assert payload["data_gb"] == params["rows"] * params["features"] * 8 / 1e9
    limit_mb = params["memory_limit_gib"] * 1024
    assert payload["data_gb"] * 1e9 > params["workers"] * limit_mb * 2**20
    for name, fit in payload["fits"].items():
        if "error" in fit:
            continue
        assert max(fit["worker_peak_mb"]) < limit_mb, name
        cells = _row(text, [name])
        assert cells[1] == fmt(fit["time_s"], 1) and cells[4] == fmt(fit["test_accuracy"])
        assert cells[-1] == " / ".join(fmt(p, 0) for p in fit["worker_peak_mb"])
    for place, row in payload["pass_times"].items():
        assert _row(text, [place])[1] == f"{row['rows']:,}"


def test_scale_out_persons_numbers_are_the_json_numbers(report, committed):
    payload = committed["scale_out_persons"]
    text = _section(report, "scale_out_persons")
    assert f"{payload['params']['persons']:,} persons" in text
    for name, routes in payload["fits"].items():
        for route, fit in routes.items():
            cells = _row(text, [name, route])
            if "error" in fit:
                assert cells[2].startswith("failed")
                continue
            assert cells[2] == fmt(fit["time_s"], 1) and cells[4] == fmt(fit["test_accuracy"])
            assert cells[-1] == " / ".join(fmt(p, 0) for p in fit["worker_peak_mb"])


@pytest.mark.slow
def test_quick_run_of_the_scale_out_benchmark(tmp_path):
    """``python -m benchmarks.bench_scale_out --quick``: 40,000 x 20 rows on two worker
    processes (30-60 s on a 2-core machine)."""
    pytest.importorskip("dask_ml")
    pytest.importorskip("zarr")
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_scale_out", "--quick"], cwd=REPO,
        capture_output=True, text=True, timeout=900,
        env={**os.environ, "SKDP_BENCHMARK_RESULTS": str(tmp_path),
             "SKDP_BENCH_SCALE_OUT_DATA": str(tmp_path / "store")})
    assert result.returncode == 0, result.stderr[-3000:]
    payload = json.loads((tmp_path / "scale_out_quick.json").read_text())
    assert not (tmp_path / "store" / "quick").exists()      # the store is deleted
    assert (tmp_path / "scale_out_quick.png").stat().st_size > 10_000
    fits = payload["fits"]
    assert set(fits) == {"DPSGDClassifier", "ObjPertLogisticRegression", "NAPPLasso",
                         "dask-ml LogisticRegression"}
    for name, fit in fits.items():
        assert "error" not in fit, (name, fit)
        assert fit["test_accuracy"] > 0.7, name
    assert fits["NAPPLasso"]["passes"] == 3    # check, clipping, one Gram pass
    report = _report.render_report(tmp_path, quick=True, names=("scale_out",))
    assert "Section incomplete" not in report and "No results" not in report


def test_scaling_numbers_are_the_json_numbers(report, committed):
    text = _section(report, "scaling")
    for case, pairs in committed["scaling"]["results"].items():
        for pair, row in pairs.items():
            for reference in row["sklearn"]:
                cells = _row(text, [case, pair, reference["estimator"]])
                assert cells[3:] == [fmt(row["skdp"]["time_s"], 3),
                                     fmt(reference["time_s"], 3),
                                     fmt(reference.get("time_ratio"), 2),
                                     fmt(row["skdp"]["memory_mb"], 1),
                                     fmt(reference["memory_mb"], 1),
                                     fmt(reference.get("memory_ratio"), 2)]


def test_dpsgd_noise_draws_name_the_stream_they_were_timed_on(committed):
    """The committed scaling run timed DP-SGD's noise draws on ChaCha20 and names no
    generator: the report says it predates the step noise from AES-128 in counter
    mode; a run that records ``AESCounter`` is reported as the steps' stream."""
    results = committed["scaling"]["results"]
    old = " ".join(_report._scaling_floors(results))
    assert "from ChaCha20: this run predates DP-SGD's step noise from AES-128" in old
    recorded = json.loads(json.dumps(results))
    for pairs in recorded.values():
        for row in pairs.values():
            if "noise_draw_s" in row["skdp"]:
                row["skdp"]["noise_generator"] = "AESCounter"
    new = " ".join(_report._scaling_floors(recorded))
    assert "from AES-128 in counter mode, the stream a fit's steps draw from" in new
    assert "ChaCha20" not in new


def test_the_scaling_benchmark_times_the_step_noise_stream():
    from benchmarks.bench_scaling import stopping_point
    from skdp import DPSGDClassifier

    X = np.random.default_rng(0).normal(size=(200, 3))
    model = DPSGDClassifier(data_norm=1.0, epochs=1, random_state=0).fit(X, X[:, 0] > 0)
    extras = stopping_point(model, X, X[:, 0] > 0)
    assert extras["noise_generator"] == "AESCounter" and extras["noise_draw_s"] > 0


def test_interleaved_ratios_are_the_json_numbers(report):
    """``scaling_timing.json`` (``bench_scaling --interleaved``) in the scaling section:
    each pair's medians, ratio and range."""
    path = RESULTS / "scaling_timing.json"
    if not path.exists():
        pytest.skip("no interleaved ratios committed")
    text = _section(report, "scaling")
    for label, r in json.loads(path.read_text())["ratios"].items():
        cells = _row(text, [label])
        assert cells[1:5] == [fmt(r["ours_s"], 3), fmt(r["reference_s"], 3),
                              fmt(r["ratio"], 2),
                              f"{fmt(r['ratio_range'][0], 2)} to {fmt(r['ratio_range'][1], 2)}"]


def test_sparse_memory_is_the_json_numbers(report):
    """The sparse pairs' peak memory (``bench_scaling --interleaved``): each pair's
    medians and ratio, and the 2x goal checked against the ratio."""
    path = RESULTS / "scaling_timing.json"
    memory = json.loads(path.read_text()).get("memory") if path.exists() else None
    if not memory:
        pytest.skip("no peak memory of the sparse pairs committed")
    text = _section(report, "scaling")
    for label, r in memory.items():
        cells = _row(text, [label])
        assert cells[1:] == [fmt(r["ours_mb"], 1), fmt(r["reference_mb"], 1),
                             fmt(r["ratio"], 2), "yes" if r["ratio"] <= 2.0 else "no",
                             fmt(r["data_mb"], 1)]
        np.testing.assert_allclose(r["ratio"], r["ours_mb"] / r["reference_mb"])
        assert r["ours_mb"] == np.median(r["all_mb"]["ours"])


def test_paper_table_numbers_are_the_json_numbers(report, committed):
    payload = committed["paper_table"]
    text = _section(report, "paper_table")
    names = list(payload["results"])
    for column, name in enumerate(names, start=1):
        for method, row in payload["results"][name]["methods"].items():
            cell = _row(text, [method])[column]
            assert cell.startswith(fmt_summary(row["test"], 1, 100.0))
            paper = payload["params"]["paper"].get(method, {}).get(name)
            ending = f"({paper})" if paper is not None else fmt(100 * row["test"]["sem"], 1)
            assert cell.endswith(ending)
            if "chosen" in row:
                setting = ", ".join(f"{k}={v}" for k, v in row["chosen"].items())
                assert _row(text, [name, method])[2] == setting

def test_defaults_numbers_are_the_json_numbers(report, committed):
    payload = committed["defaults"]
    text = _section(report, "defaults")
    misses = 0
    for name, result in payload["results"].items():
        for estimator, by_epsilon in result["estimators"].items():
            for epsilon, row in by_epsilon.items():
                cells = _row(text, [name, estimator, _report.fmt_eps(float(epsilon))])
                assert cells[3].startswith(fmt_summary(row["default"], 1, 100.0))
                assert cells[5] == fmt_summary(row["best"]["test"], 1, 100.0)
                gap = 100 * (row["best"]["test"]["mean"] - row["default"]["mean"])
                assert cells[6] == fmt(gap, 2) == fmt(row["gap_points"], 2)
                best = max(g["test"]["mean"] for g in row["grid"])
                assert row["best"]["test"]["mean"] == best
                misses += gap > payload["params"]["target_points"]
    assert ("Every default is within the target." in text) == (misses == 0)


def test_epsilon_for_utility_study_numbers(report, committed):
    payload = committed["epsilon_for_utility"]
    text = _section(report, "epsilon_for_utility")
    name, ranges = next(iter(payload["expansion"].items()))
    range_name, study = next(iter(ranges.items()))
    header = _row(text, ["estimator", "range"])
    cells = _row(text, [name, range_name])
    for expansion, mae in study["mae"].items():
        assert cells[header.index(f"MAE {expansion}")] == fmt_summary(mae)
    best = min(study["mae"], key=lambda e: study["mae"][e]["mean"])
    assert cells[-1] == best


def test_selection_cap_numbers_and_every_realised_figure_within_its_cap(report, committed):
    payload = committed["selection_cap"]
    text = _section(report, "selection_cap")
    for cell in payload["cohorts"]:
        cap, runs, summary = cell["epsilon_max"], cell["runs"], cell["summary"]
        assert len(runs) == len(payload["params"]["cohort_seeds"])
        for run in runs:
            assert run["a_priori"]["epsilon"] == cap
            assert run["ex_post"]["epsilon"] <= cap
            assert run["ex_post"]["delta"] <= run["a_priori"]["delta"] == 0.0
        post = [run["ex_post"]["epsilon"] for run in runs]
        assert summary["ex_post_epsilon"]["max"] == max(post)
        assert summary["released_share"] == np.mean([run["released"] for run in runs])
        label = f"{cell['n']}" + (" (all)" if cell["whole_split"] else "")
        cells = _row(text, [label, _report.fmt_eps(cap)])
        assert cells[2] == " / ".join(fmt(summary["ex_post_epsilon"][k], 3)
                                      for k in ("median", "p90", "max"))
        assert cells[4] == fmt(summary["released_share"], 2)
        quoted = payload["previous_design"]["median_realised_loss"].get(str(cell["n"]))
        if quoted is not None and cap == payload["previous_design"]["epsilon_max"]:
            assert cells[-1] == _report.fmt_eps(quoted)
    for row in payload["estimators"]:
        for run in row["runs"]:
            assert run["a_priori"]["epsilon"] == 10.0
            assert run["ex_post"]["epsilon"] <= run["a_priori"]["epsilon"]
            assert run["ex_post"]["delta"] <= run["a_priori"]["delta"]
        cells = _row(text, [row["estimator"], "Pipeline" if row["pipeline"] else "alone"])
        utilities = [run["test_utility"] for run in row["runs"] if run["released"]]
        if utilities:
            assert cells[7].startswith(fmt(np.mean(utilities), 4))
        if row["pipeline"]:  # the scaler maps Adult's [0, 1] features onto themselves
            assert row["same_releases_as_bare"] and cells[-1] == "yes"


def test_private_search_numbers_and_every_guarantee_within_its_budget(report, committed):
    payload = committed["private_search"]
    text = _section(report, "private_search")
    goal_points = payload["params"]["goal_points"]
    for cell in payload["cells"]:
        budget, summary, plan = cell["budget"], cell["summary"], cell["plan"]
        assert len(cell["runs"]) == len(payload["params"]["seeds"])
        for run in cell["runs"]:
            for key in ("private_eps_grid", "private_param_grid"):
                epsilon, delta = run[key]["a_priori"]
                assert epsilon <= budget * (1 + 1e-9)
                assert delta == (payload["params"]["dpsgd_delta"]
                                 if cell["mechanism"] == "DPSGDClassifier()" else 0.0)
                assert run[key]["released_epsilon"] <= max(plan["eps_grid"]["epsilon"]
                                                           + [plan["cap"]]) * (1 + 1e-9)
            assert run["baseline"]["basic_epsilon"] == pytest.approx(budget, rel=1e-9)
            if "baseline_renyi" in run:  # DP-SGD: the counted Renyi total is the budget
                assert budget * (1 - 1e-3) <= run["baseline_renyi"]["renyi_epsilon"] <= (
                    budget * (1 + 1e-9))
        oracle = max(np.mean([r["oracle"][v] for r in cell["runs"]])
                     for v in cell["runs"][0]["oracle"])
        assert summary["oracle"]["best_mean"] == pytest.approx(oracle, rel=1e-12)
        param = "lr" if cell["param"] == "learning_rate" else cell["param"]
        first = [fmt_eps(budget), cell["mechanism"]]
        for key, label in (("private_eps_grid", f"private search over (epsilon, {param})"),
                           ("private_param_grid", f"private search over {param}"),
                           ("baseline", "GridSearchCV, honest baseline"),
                           ("baseline_renyi", "GridSearchCV, honest baseline (Renyi total)")):
            if key not in summary:
                continue
            accuracies = [r[key]["test_accuracy"] for r in cell["runs"]]
            assert summary[key]["median"] == pytest.approx(np.median(accuracies), rel=1e-12)
            cells = _row(_subsection(text, cell["dataset"]), first + [label])
            assert cells[5] == fmt(np.median(accuracies), 4)
            assert cells[7] == fmt(100 * (oracle - np.median(accuracies)), 2)
        cells = _row(_subsection(text, cell["dataset"]),
                     first + ["best single configuration at E (oracle)"])
        assert cells[6] == fmt_summary(summary["oracle"]["best"])
    for goal in payload["goal"]:
        assert goal["met"] == (goal["gap_points"] <= goal_points)
    adult = [c for c in payload["cells"] if c["dataset"] == "adult" and c["budget"] == 1.0]
    assert len(payload["goal"]) == 2 * len(adult) > 0
    assert text.count("**met**") == sum(g["met"] for g in payload["goal"])
    assert text.count("**not met**") == sum(not g["met"] for g in payload["goal"])


def _as_run_sentence(t):
    """The as-run figure's numbers as the report prints them."""
    low, high = t["ratio_range"]
    return (f"{t['ours_s']:.3f} s", f"{t['reference_s']:.3f} s", f"ratio **{t['ratio']:.2f}x**",
            f"median of {t['repeats']} interleaved pairs, range {low:.2f} to {high:.2f}")


@pytest.mark.parametrize("dataset", ["adult", "kddcup99"])
def test_fit_times_matched_and_as_run_are_the_json_numbers(dataset):
    """Each fit-time figure of the timing-only runs is printed beside its label: the
    matched one (same problem, the reference's tolerance) and the as-run one (defaults on
    both sides, median of the per-round ratios), with the certificate's price for the
    hinge (the same problem at liblinear's tolerance, uncertified)."""
    stems = ("output_perturbation", "napp", "objective_perturbation")
    if not all((RESULTS / f"{stem}{suffix}.json").exists()
               for stem in stems for suffix in ("", "_timing")):
        pytest.skip("the JSON files of these benchmarks and their timing runs are not all "
                    "present")
    timing = {stem: json.loads((RESULTS / f"{stem}_timing.json").read_text())
              for stem in stems}
    report = render_report(RESULTS, names=stems)

    def line(stem, label):
        """The one line of the timing-only run's figures that starts with ``label``."""
        lines = [text for text in _subsection(_section(report, stem), dataset).splitlines()
                 if text.startswith(label) and "separate timing-only run" in text]
        assert len(lines) == 1, (stem, label, lines)
        return lines[0]

    matched = timing["output_perturbation"]["timing"][dataset]["matched"]
    as_run = timing["output_perturbation"]["timing"][dataset]["as_run"]
    text = line("output_perturbation",
                "**Matched (same C, same clipped design, scikit-learn's tolerance)**")
    assert f"OutputPertSVM linear {matched['outputpert_linear_s']:.3f} s" in text
    assert f"= **{matched['ratio_outputpert_linear']:.2f}x** LinearSVC" in text
    assert (f"OutputPertSVM {matched['ratio_outputpert_to_uncertified_hinge']:.2f}x it"
            in text)
    text = line("output_perturbation", "**As run (defaults on both sides)**")
    for piece in _as_run_sentence(as_run):
        assert piece in text, piece
    assert f"the certified fit {as_run['ours_over']['uncertified_hinge']:.2f}x it" in text

    text = line("napp", "**Matched (same L1 problem, liblinear at its tolerance)**")
    for piece in _as_run_sentence(timing["napp"]["timing"][dataset]["matched"]):
        assert piece in text, piece
    text = line("napp", "**As run (defaults on both sides)**")
    for piece in _as_run_sentence(timing["napp"]["timing"][dataset]["as_run"]):
        assert piece in text, piece

    text = line("objective_perturbation", "**As run (defaults on both sides)**")
    for piece in _as_run_sentence(timing["objective_perturbation"]["as_run"][dataset]):
        assert piece in text, piece
    matched = timing["objective_perturbation"].get("matched_interleaved", {}).get(dataset)
    if matched:
        text = line("objective_perturbation",
                    "**Matched (C = 1 on both sides, each solver's tolerance)**")
        for piece in _as_run_sentence(matched):
            assert piece in text, piece


def test_report_is_deterministic_and_committed_report_current(tmp_path, committed):
    first = _report.write_report(RESULTS, tmp_path / "a.md").read_text()
    second = _report.write_report(RESULTS, tmp_path / "b.md").read_text()
    assert first == second
    # the committed report is what --report-only writes from the committed JSON
    committed_report = REPO / "benchmarks" / "RESULTS.md"
    if committed_report.exists():
        assert committed_report.read_text() == render_report(RESULTS), (
            "benchmarks/RESULTS.md is out of date: run python -m benchmarks --report-only")


def test_missing_and_partial_json(tmp_path, committed):
    shutil.copy(RESULTS / "dpsgd.json", tmp_path / "dpsgd.json")
    partial = dict(committed["napp"])
    del partial["simulation"], partial["environment"]
    (tmp_path / "napp.json").write_text(json.dumps(partial))
    (tmp_path / "objective_perturbation.json").write_text("{not json")
    broken = {"benchmark": "output_perturbation", "results": {"adult": {"kernels": 3}}}
    (tmp_path / "output_perturbation.json").write_text(json.dumps(broken))

    report = render_report(tmp_path)
    assert "epsilon_for_utility.json` is missing" in _section(report, "epsilon_for_utility")
    assert "objective_perturbation.json` is missing or unreadable" in report
    assert "Section incomplete" in _section(report, "output_perturbation")
    dpsgd = _section(report, "dpsgd")
    assert "No results" not in dpsgd and "Section incomplete" not in dpsgd
    assert "![dpsgd]" not in dpsgd  # no PNG copied, no broken image link
    napp = _section(report, "napp")  # no simulation, no environment: the Adult part stays
    assert "Machine: not recorded, CPU count not recorded" in napp
    assert "Git revision: not recorded; date: not recorded" in napp
    for result in committed["napp"]["classification"].values():
        row = next(r for r in result["rows"] if r["method"] == "napp")
        assert fmt_summary(row["error"], 2, 100) in napp


def test_runner_needs_a_mode():
    result = subprocess.run([sys.executable, "-m", "benchmarks"], cwd=REPO,
                            capture_output=True, text=True)
    assert result.returncode == 2 and "choose --quick" in result.stderr


@pytest.mark.slow
def test_quick_run_of_the_cheapest_benchmark(tmp_path):
    """``python -m benchmarks --quick --only objective_perturbation`` end to end.

    Slow: 20 s on an idle 2-core machine (Adult and KDDCup99), longer when it is shared.
    """
    pytest.importorskip("matplotlib")
    from skdp.datasets import load_adult

    data_home = shared_data_home()
    try:
        load_adult(data_home=data_home, download_if_missing=False)
    except Exception:  # noqa: BLE001 - no Adult files here: nothing to run on
        pytest.skip("UCI Adult is not available offline (set SKDP_DATA_HOME)")
    report = tmp_path / "RESULTS_quick.md"
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--only", "objective_perturbation",
         "--results-dir", str(tmp_path), "--report", str(report)],
        cwd=REPO, capture_output=True, text=True, timeout=600,
        env={**os.environ, "SKDP_DATA_HOME": str(data_home)})
    assert result.returncode == 0, result.stderr[-2000:]
    payload = json.loads((tmp_path / "objective_perturbation_quick.json").read_text())
    assert (tmp_path / "objective_perturbation_quick.png").stat().st_size > 10_000
    assert payload["environment"]["date"] and payload["params"]["seeds"] == [0, 1]
    text = _subsection(_section(report.read_text(), "objective_perturbation"), "kddcup99")
    row = payload["results"]["kddcup99"]["curves"]["skdp_gaussian_replace"][-1]
    cells = _row(text, [f"{row['epsilon']:.4g}"])
    assert fmt_summary(row["test_accuracy"]) in cells
    assert "(quick mode)" in report.read_text()


def test_validation_floor_on_a_log_linear_curve():
    """The oracle floor behind the decision study's claims, against its closed form.

    On ``u = a + s log(epsilon)`` a level shift ``e ~ N(0, sigma^2)`` moves the crossing
    to ``true * exp(-e / s)``: a log-normal ratio with mean ``exp(sigma^2 / (2 s^2))``
    and ``P(ratio > 1.25) = Phi(-log(1.25) s / sigma)``."""
    from scipy.stats import norm

    from benchmarks.bench_epsilon_for_utility import validation_floor

    target, n_validation = 0.83, 6033
    sigma = np.sqrt(target * (1 - target) / n_validation)
    s = 2 * sigma                                   # sigma / s = 1/2
    grid = np.geomspace(1e-3, 1e3, 4001)            # +-6.9 in log(epsilon), true at 1
    curve = target + s * np.log(grid)
    floor = validation_floor(grid, curve, target, n_validation)
    assert floor["sigma"] == pytest.approx(sigma, rel=1e-12)
    assert floor["mean_ratio"] == pytest.approx(np.exp(0.125), rel=1e-4)
    assert floor["p_ratio_over_1_25"] == pytest.approx(norm.cdf(-2 * np.log(1.25)), abs=1e-3)


def test_ssp_selection_floor_against_its_closed_forms():
    """The noise-reduction floor of ``benchmarks/_selection_floor.py``: pure rungs on a
    held-out part need ``e* / (1 - v)``; on all the rows ``(1 + tau) e* + count``;
    Gaussian rungs the odometer's claim at ``delta / J``, ``J`` its levels counted here
    by hand; with the tests, on ``U = U_inf - a / e^2`` and a margin fixed by the
    sampling error alone (tests of negligible noise), ``sqrt(D / (D - margin))``."""
    from benchmarks._selection_floor import selection_floor

    grid = np.geomspace(0.01, 100.0, 20001)
    curve = 0.96 - 0.055 / grid**2                   # target 0.905 at e* = 1
    common = dict(target=0.905, oracle=1.0, epsilon_max=100.0, epsilon_start=0.1)
    pure = selection_floor(grid, curve, n=5000, delta=0.0, route="held_out", count=0.1,
                           **common)
    assert pure["structural"] == pytest.approx(1.25)
    everything = selection_floor(grid, curve, n=5000, delta=0.0, route="all", count=0.005,
                                 test_ratio=0.05, **common)
    assert everything["structural"] == pytest.approx(1.05 + 0.005)
    mu = gdp_mu(1.25, 1e-6)
    levels = 1 + int(np.ceil(np.log(gdp_mu(100.0, 1e-6) / gdp_mu(0.1, 1e-6)) / np.log(1.1)))
    gaussian = selection_floor(grid, curve, n=5000, delta=1e-6, route="held_out", count=0.1,
                               **common)
    assert gaussian["structural"] == pytest.approx(gaussian_epsilon(1e-6 / levels, mu),
                                                   rel=1e-6)
    # with the tests: where 0.96 - 0.055 / (0.8 e)^2 clears 0.95 + hypot(test noise,
    # sampling error) on m = 4000 held-out rows, solved here by root finding
    from scipy.optimize import brentq

    m, oracle = 4000, np.sqrt(0.055 / 0.01)
    smallest = 2 * np.sqrt(2) / (m * 0.05)

    def gap(e):
        noise = np.sqrt(2) / (max(e * (1 - 1 / 1.2), smallest) * m)
        return 0.96 - 0.055 / (0.8 * e) ** 2 - 0.95 - np.hypot(noise, np.sqrt(
            0.95 * 0.05 / m))

    clear = brentq(gap, oracle, 10 * oracle)
    tested = selection_floor(grid, curve, n=20000, delta=0.0, route="held_out", count=0.1,
                             **{**common, "target": 0.95, "oracle": oracle})
    assert tested["with_tests"] == pytest.approx(clear / oracle, rel=3e-3)
    assert tested["with_tests"] > tested["structural"] == pytest.approx(1.25)


def test_ssp_family_floor_against_independent_computations():
    """``benchmarks/_ssp_floor.py``: the ridge path against direct solves (``inf``
    predicting 0), the oracle's releases are SSP's very releases (the estimator's
    coefficients from the same seed), a split of ``mu^2`` composes exactly, and the
    closed form of the best multiple of ``b~`` against the exact expectation of the
    quadratic in ``c`` evaluated row by row."""
    from benchmarks._ssp_floor import (moment_only_bound, ridge_path_mse, shipped_releases,
                                       split_calibration)
    from skdp import SSPLinearRegression
    from skdp.mechanisms._sufficient_statistics import (SSPStatistics, solve_ridge,
                                                        ssp_sensitivities)

    rng = np.random.default_rng(3)
    X = rng.uniform(-0.5, 0.5, (60, 3))
    y = np.clip(X @ [1.0, -0.5, 0.2] + 0.1 * rng.standard_normal(60), -1, 1)
    Z = np.c_[X, np.ones(60)]
    T = np.c_[rng.uniform(-0.5, 0.5, (40, 3)), np.ones(40)]
    y_test = T[:, :3] @ [1.0, -0.5, 0.2]
    A, b = Z.T @ Z, Z.T @ y
    path = ridge_path_mse(A, b, T, y_test, [0.0, 2.5, np.inf])
    for alpha, value in zip([0.0, 2.5], path):
        theta = np.linalg.solve(A + alpha * np.eye(4), b)
        assert value == pytest.approx(np.mean((T @ theta - y_test) ** 2), rel=1e-10)
    assert path[2] == pytest.approx(np.mean(y_test**2))

    statistics = SSPStatistics.from_sums(A, b)
    (gram, moment, alpha, _), = shipped_releases(statistics, 2.0, 1e-6, 1.0, 1.0, [7])
    model = SSPLinearRegression(epsilon=2.0, delta=1e-6, data_norm=1.0, y_bound=1.0,
                                random_state=7).fit(X, y)
    assert model.alpha_ == pytest.approx(alpha)
    theta = solve_ridge(gram, moment, alpha)
    assert np.allclose(np.r_[model.coef_, model.intercept_], theta, rtol=1e-8, atol=1e-10)

    sensitivities = ssp_sensitivities(law="gaussian", data_norm=1.0, intercept_scaling=1.0,
                                      n_features=3, y_bound=1.0, weight_bound=1.0,
                                      neighboring="add_remove")
    calibration = split_calibration(sensitivities, 0.8, 0.2)
    assert ((sensitivities.gram / calibration.gram) ** 2
            + (sensitivities.moment / calibration.moment) ** 2) == pytest.approx(0.64)
    assert calibration.gram / calibration.moment == pytest.approx(
        sensitivities.gram / sensitivities.moment * 2.0)    # sqrt(0.8 / 0.2)

    s = 3.0

    def expected(c):   # E mean_i (c t_i (b + e) - y_i)^2, row by row
        return np.mean((c * T @ b - y_test) ** 2 + (c * s) ** 2 * np.sum(T**2, axis=1))
    q = np.polyfit([0.0, 0.01, 0.02], [expected(c) for c in (0.0, 0.01, 0.02)], 2)
    assert moment_only_bound(b, T, y_test, s) == pytest.approx(
        np.polyval(q, -q[1] / (2 * q[0])), rel=1e-9)


def test_ssp_risk_estimate_is_unbiased_in_the_moment_noise():
    """Without Gram noise, the mean of ``_ssp_floor.risk_estimate`` over ``b~ = b + e``
    equals ``E J = b^T M A M b + v tr(M A M) - 2 b^T M b``: the mean over the 2 d
    points ``+-sqrt(v d) u_k`` (``u_k`` a basis) is exact for a quadratic in ``e``."""
    from benchmarks._ssp_floor import risk_estimate
    from skdp.mechanisms._sufficient_statistics import SSPCalibration

    rng = np.random.default_rng(5)
    Z = rng.standard_normal((30, 4))
    A, b, v, alpha = Z.T @ Z, Z.T @ rng.standard_normal(30), 2.5, 3.0
    calibration = SSPCalibration("gaussian", 0.0, np.sqrt(v), 0.0)
    points = np.sqrt(v * 4) * np.r_[np.eye(4), -np.eye(4)]
    mean = np.mean([risk_estimate(A, b + e, calibration, alpha) for e in points])
    M = np.linalg.inv(A + alpha * np.eye(4))
    assert mean == pytest.approx(b @ M @ A @ M @ b + v * np.trace(M @ A @ M)
                                 - 2 * b @ M @ b, rel=1e-10)
    assert risk_estimate(A - 40 * np.eye(4), b, calibration, 0.0) == np.inf


def test_ssp_noise_dominated_goal_counts():
    """The goal's count: only noise-dominated cells, each against 0.9 and its floor."""
    from benchmarks.bench_ssp import noise_dominated_goal

    def cell(ratio, shipped, best, dominated=True):
        return {"ssp_over_adassp_mse": ratio, "noise_dominated": dominated,
                "floor": {"ratios": {"shipped_split": shipped, "best_split": best}}}
    tasks = {"a": {"cells": {"0.1": cell(0.95, 0.93, 0.92), "0.3": cell(0.92, 0.89, 0.88),
                             "1.0": cell(0.5, 0.4, 0.4), "3.0": cell(1.2, 0, 0, False)}}}
    goal = noise_dominated_goal(tasks)
    assert [c["epsilon"] for c in goal["cells"]] == [0.1, 0.3, 1.0]
    assert (goal["noise_dominated"], goal["met"], goal["reachable"],
            goal["met_where_reachable"]) == (3, 1, 2, 1)
    assert [c["reachable_any_split"] for c in goal["cells"]] == [False, True, True]


def test_ssp_noise_dominated_numbers_are_the_json_numbers(report, committed):
    payload = committed["ssp"]
    text = _section(report, "ssp")
    for cell in payload["noise_dominated_goal"]["cells"]:
        cells = payload["tasks"][cell["task"]]["cells"]
        floor = next(c for key, c in cells.items() if float(key) == cell["epsilon"])["floor"]
        row = _row(text, [cell["task"], fmt_eps(cell["epsilon"])])
        assert row[2:5] == [fmt(cell["ratio"], 3), fmt(floor["ratios"]["shipped_split"], 3),
                            f"{fmt(floor['ratios']['best_split'], 3)} "
                            f"({floor['best_split']:g})"]


def test_person_level_numbers_are_the_json_numbers(report, committed):
    payload = committed["person_level"]
    text = _section(report, "person_level")
    for name, routes in payload["results"].items():
        cells = _row(text, [name])
        assert cells[1:] == [fmt_summary(routes[route]["accuracy"])
                             for route in ("person", "row", "group privacy")]
        assert routes["person"]["neighboring"].endswith("_person")
        assert not routes["row"]["neighboring"].endswith("_person")


def test_person_level_persons_follow_a_public_rule():
    from benchmarks.bench_person_level import visit_persons

    persons = visit_persons(5000)
    sizes = np.bincount(persons)
    assert sizes.min() >= 1 and sizes.max() <= 20
    assert np.array_equal(persons, visit_persons(5000))  # reads only the row count


def test_dpsgd_calibration_numbers_are_the_json_numbers(report, committed):
    payload = committed["dpsgd_calibration"]
    text = _section(report, "dpsgd_calibration")
    for unit, estimators in payload["results"].items():
        for name, result in estimators.items():
            cells = _row(text, [unit, name])
            assert cells[2:] == [fmt_summary(result[key]) for key in
                                 ("mean_probability", "log_loss", "brier", "accuracy",
                                  "log_loss_change", "accuracy_change")]
            assert result["neighboring"].endswith("_person") == (unit == "persons")
    assert f"Test base rate {fmt(payload['base_rate_test'])}" in text
    for data, by_epsilon in payload["accuracy"].items():
        for epsilon, methods in by_epsilon.items():
            for method, cell in methods.items():
                cells = _row(text, [_report.ACCURACY_SET_NAMES[data], epsilon, method])
                assert cells[3:] == [fmt_summary(cell["accuracy"]), fmt_summary(cell["change"])]


def test_metrics_numbers_are_the_json_numbers_and_the_goal_is_checked(report, committed):
    payload = committed["metrics"]
    text = _section(report, "metrics")
    epsilons = payload["params"]["epsilons"]
    goal = payload["params"]["goal"]
    for dataset, result in payload["metrics"].items():
        part = _subsection(text, dataset)
        for model, figures in result["models"].items():
            start = part.index(f"**{model}**")
            end = part.find("\n**", start + 1)
            table_text = part[start:] if end < 0 else part[start:end]
            cells = _row(table_text, ["ROC AUC"])
            assert cells[1] == fmt(figures["rows"]["exact"]["roc_auc"])
            assert cells[2:] == [fmt(figures[unit]["errors"][str(e)]["roc_auc"]
                                     ["median_abs_error"])
                                 for unit in ("rows", "persons") for e in epsilons]
            cell = figures["rows"]["errors"][str(goal["epsilon"])]
            worst = max(b["median_abs_error"] for curve in ("calibration_true",
                                                            "calibration_pred")
                        for b in cell[curve])
            assert figures["goal"]["calibration_bin"]["error"] == worst
            for name, check in figures["goal"].items():
                assert check["met"] == (check["error"] <= goal[name])
            assert len(cell["calibration_true"]) == payload["params"]["calibration_bins"]
    for entry in payload["table1"]["table"]:
        if entry["statistic"] == "mean":
            cells = _row(_subsection(text, "Table 1 of Adult"), [entry["variable"], "—",
                                                                  "mean"])
            assert cells[3:] == [fmt(entry[k]) for k in ("exact", "private", "noise_std",
                                                         "median_abs_error")]
    cv = payload["params"]["cv"]
    assert (cv["folds"] - 1) * cv["fit_epsilon"] + cv["score_epsilon"] == pytest.approx(
        cv["total_epsilon"])
    for result in payload["cross_validation"].values():
        for run in result["runs"]:
            assert run["spent"]["epsilon"] <= cv["total_epsilon"] * (1 + 1e-12)
            assert len(run["private"]) == len(run["exact"]) == cv["folds"]
            assert run["private_mean"] == pytest.approx(np.mean(run["private"]))


def test_inference_numbers_are_the_json_numbers(report, committed):
    """Every cell of the coverage grid: its refusal rate, coverage range, share in
    [0.93, 0.97] and width ratios, as the JSON records them."""
    text = _section(report, "inference")
    for cell in committed["inference"]["cells"]:
        cells = _row(text, [_report.INFERENCE_LABELS[cell["estimator"]], f"{cell['n']:,}",
                            str(cell["d"]), fmt_eps(cell["epsilon"]), fmt_eps(cell["delta"])])
        kept = cell["draws"] - cell["refused"]
        assert cells[5:9] == [str(cell["draws"]), str(kept), fmt(cell["refusal_rate"], 3),
                              _report._coverage_range(cell)]
        assert cells[13:] == list(_report._width_ratios(cell))
        if kept == 0:
            assert cells[9:13] == ["—"] * 4
            continue
        hits = np.round(np.asarray(cell["coverage"]) * kept).astype(int)
        np.testing.assert_allclose(hits / kept, cell["coverage"], atol=1e-12)
        share = cell["share_in_0.93_0.97"]
        assert cells[9] == f"{fmt(share, 2)} ({'yes' if share >= 0.9 else 'no'})"
        # the re-scoped goal from scipy's Clopper-Pearson intervals (independently)
        passing = sum(stats.binomtest(int(k), kept).proportion_ci(0.99, "exact").high >= 0.93
                      and stats.binomtest(int(k), kept).proportion_ci(0.99, "exact").low <= 0.97
                      for k in hits)
        met = "yes" if passing / hits.size >= 0.9 else "no"
        assert cells[11] == f"{passing}/{hits.size} ({met})"


def test_inference_adult_numbers_are_the_json_numbers(report, committed):
    payload = committed["inference_adult"]
    text = _section(report, "inference_adult")
    for row in payload["table"]:
        cells = _row(text, [row["name"]])
        assert cells[1] == fmt(row["private coef"], 3)
        assert cells[5] == fmt(row["statsmodels coef"], 3)
        assert cells[-1] == ("yes" if row["contains"] else "no")
    assert f"estimate: {fmt(payload['share_contains'], 2)}" in text


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_interval_width_floor_against_the_mechanisms_noise(delta):
    """``benchmarks/_interval_width_floor.py``: the first-order width ratio (from
    ``bench_refusal.standard_errors``) against
    the spread of ``A^{-1} (Z^T r + e - E theta*)`` with ``e`` and ``E`` drawn by the
    mechanism's own noise functions (``draw_ssp_noise``, ``gram_from_coordinates``) and
    the sampling term ``N(0, s^2 A)``: 20,000 draws estimate each variance within
    about 1 % (relative standard error ``sqrt(2 / 20000)``); tolerance 5 %."""
    from benchmarks._interval_width_floor import first_order_width_ratios
    from benchmarks.bench_inference import ERROR_SD, population
    from benchmarks.bench_refusal import INTERCEPT_SCALING
    from skdp.mechanisms._sufficient_statistics import (draw_ssp_noise, gram_from_coordinates,
                                                        ssp_calibration, ssp_sensitivities)

    n, d, epsilon, draws = 20_000, 3, 1.0, 20_000
    law = "gaussian" if delta > 0 else "laplace"
    calibration = ssp_calibration(epsilon, delta, ssp_sensitivities(
        law=law, data_norm=1.0, intercept_scaling=INTERCEPT_SCALING, n_features=d,
        y_bound=4.0, weight_bound=1.0, neighboring="add_remove"), private_ridge=False,
        inference=True)
    theta = np.r_[population(d)[1:], population(d)[0] / INTERCEPT_SCALING]  # intercept last
    gram = n * np.r_[np.full(d, 1.0 / (3.0 * d)), INTERCEPT_SCALING**2]
    rng = np.random.default_rng(11)
    errors = np.empty((draws, d + 1))
    for k in range(draws):
        noise = draw_ssp_noise(calibration, d + 1, rng, private_ridge=False, inference=True)
        E = gram_from_coordinates(noise["gram"], d + 1, law)
        sampling = ERROR_SD * np.sqrt(gram) * rng.standard_normal(d + 1)
        errors[k] = (sampling + noise["moment"] - E @ theta) / gram
    measured = np.sqrt(errors.var(axis=0) * gram / ERROR_SD**2)
    expected = first_order_width_ratios("linear", n, d, epsilon, delta)
    np.testing.assert_allclose(np.r_[measured[-1], measured[:-1]], expected, rtol=0.05)
    assert expected.max() > 1.5     # the noise is a visible part of the width here


@pytest.mark.parametrize("law", ["gaussian", "laplace", "gamma_norm"])
def test_objpert_width_floor_noise_variances_against_the_mechanisms_draws(law):
    """``benchmarks/bench_refusal.py``'s noise variances of the first-order standard
    errors against draws of the mechanism's own samplers: a noise vector's coordinate
    variance (``draw_noise``) and the diagonal of ``Cov(E u)`` for the released
    information matrix's noise (``release_information`` of a zero matrix); 40,000
    draws, relative standard error about 0.7 %, tolerance 4 %."""
    from benchmarks.bench_refusal import (symmetric_noise_covariance,
                                          symmetric_noise_variance, vector_noise_variance)
    from skdp.mechanisms._glm_inference import release_information
    from skdp.mechanisms._noise import draw_noise
    from skdp.mechanisms._sufficient_statistics import SSPCalibration

    rng, dim, scale, draws = np.random.default_rng(2), 4, 1.7, 40_000
    vectors = np.array([draw_noise(law, dim, rng).vector(scale) for _ in range(draws)])
    np.testing.assert_allclose(vectors.var(axis=0), vector_noise_variance(law, scale, dim),
                               rtol=0.04)
    if law == "gamma_norm":
        return
    calibration = SSPCalibration(law, scale, 0.0, 0.0)
    u = np.array([0.3, -1.0, 0.5, 2.0])
    products = np.array([release_information(np.zeros((dim, dim)), calibration, rng) @ u
                         for _ in range(draws)])
    np.testing.assert_allclose(products.var(axis=0),
                               symmetric_noise_variance(calibration, u), rtol=0.04)
    covariance = symmetric_noise_covariance(calibration, u)
    scale = np.sqrt(np.outer(np.diag(covariance), np.diag(covariance)))
    np.testing.assert_allclose(np.cov(products.T) / scale, covariance / scale, atol=0.03)


def test_coverage_goal_binomials_by_hand():
    # P(X <= 2), X ~ Binomial(10, 0.3): 0.7^10 + 10 0.3 0.7^9 + 45 0.3^2 0.7^8
    assert coverage_goal.binomial_tail(2, 10, 0.3) == pytest.approx(0.3827827864, abs=1e-10)
    assert coverage_goal.binomial_tail(9, 10, 0.3, upper=True) == pytest.approx(
        10 * 0.3**9 * 0.7 + 0.3**10, rel=1e-12)
    assert coverage_goal.binomial_pmf(0, 5, 0.0) == 1.0 and coverage_goal.binomial_pmf(5, 5, 1.0) == 1.0
    # 20 draws: only 19 hits (0.95) is in [0.93, 0.97], so an exact interval meets the
    # literal goal with probability 20 0.95^19 0.05 = 0.95^19
    assert coverage_goal.pass_probability(20, 0.95, coverage_goal.literal_pass) == pytest.approx(0.95**19)
    # at least 90 %: all 6 of 6, and 19 of 21
    q = 0.8
    assert coverage_goal.cell_pass_probability(q, 6) == pytest.approx(q**6)
    assert coverage_goal.cell_pass_probability(q, 21) == pytest.approx(
        q**21 + 21 * q**20 * (1 - q) + 210 * q**19 * (1 - q) ** 2)
    assert coverage_goal.cell_passes([True] * 19 + [False] * 2)
    assert not coverage_goal.cell_passes([True] * 18 + [False] * 3) and not coverage_goal.cell_passes([])


def test_coverage_goal_rescoped_is_the_clopper_pearson_criterion():
    """A coefficient passes exactly when scipy's 99 % Clopper-Pearson interval meets
    [0.93, 0.97]; at 100 draws that is 86 hits or more (P(X <= 85) = 0.0041 < 0.005 <
    P(X <= 86) = 0.0099 at 0.93) and never fails from above; at 500, 450 to 494."""
    for kept in (1, 5, 37, 100, 500):
        for hits in range(kept + 1):
            ci = stats.binomtest(hits, kept).proportion_ci(0.99, "exact")
            assert coverage_goal.rescoped_pass(hits, kept) == (ci.high >= 0.93 and ci.low <= 0.97)
    assert [k for k in range(101) if coverage_goal.rescoped_pass(k, 100)] == list(range(86, 101))
    assert [k for k in range(501) if coverage_goal.rescoped_pass(k, 500)] == list(range(450, 495))
    assert coverage_goal.binomial_tail(85, 100, 0.93) == pytest.approx(
        stats.binom.cdf(85, 100, 0.93), rel=1e-10)
    assert not coverage_goal.rescoped_pass(0, 0) and not coverage_goal.literal_pass(0, 0)
    # the probability that an exact interval fails: both tails at 0.95
    assert 1 - coverage_goal.pass_probability(500, 0.95, coverage_goal.rescoped_pass) == pytest.approx(
        stats.binom.cdf(449, 500, 0.95) + stats.binom.sf(494, 500, 0.95), rel=1e-8)


def test_refusal_thresholds_are_the_refusal_rule():
    """Each noise draw's threshold n is exactly where singular_within_noise starts to
    accept n Sigma + E (the same draws), for least squares and logistic regression."""
    from benchmarks import bench_refusal as refusal
    from skdp.mechanisms._sufficient_statistics import (singular_within_noise,
                                                        symmetric_noise_draws)

    for kind, delta in (("linear", 0.0), ("logistic", 1e-6)):
        sigma = refusal.population_matrix(kind, 5, 20_000, 0)
        noise_law = refusal.calibration(kind, 5, 1.0, delta)
        noise = symmetric_noise_draws(noise_law, 6, np.random.default_rng(1))
        limits = refusal.thresholds(sigma, noise, noise_law)
        assert 0.05 < np.mean(limits >= np.median(limits) * 0.9) < 0.95
        for n in np.quantile(limits, [0.1, 0.5, 0.9]) * [1.001, 0.999, 1.001]:
            refused = singular_within_noise(n * sigma + noise, noise_law)
            np.testing.assert_array_equal(refused, limits >= n)


def test_refusal_calibration_at_other_shares_by_hand():
    """The scaled calibrations against the noise scales computed by hand: Laplace
    sensitivity / (epsilon share), Gaussian sensitivity / (mu sqrt(share))."""
    from benchmarks import bench_refusal as refusal
    from skdp.mechanisms._glm_inference import INFORMATION_SHARE
    from skdp.mechanisms._sufficient_statistics import ssp_sensitivities

    shares = {"gram": 0.6, "moment": 0.3, "residual": 0.1}
    for delta in (0.0, 1e-6):
        law = "gaussian" if delta > 0 else "laplace"
        sens = ssp_sensitivities(law=law, data_norm=1.0, intercept_scaling=1.0, n_features=5,
                                 y_bound=4.0, weight_bound=1.0, neighboring="add_remove")
        scaled = refusal.calibration("linear", 5, 2.0, delta, shares)
        for name, share in shares.items():
            expected = getattr(sens, name) / (gdp_mu(2.0, delta) * np.sqrt(share) if delta
                                              else 2.0 * share)
            assert scaled.scale(name) == pytest.approx(expected, rel=1e-12)
        assert refusal.calibration("linear", 5, 2.0, delta, refusal.SSP_SHARES) == \
            refusal.calibration("linear", 5, 2.0, delta)
    # the logistic information: Laplace scale (B^2 / 4) L1 factor / (epsilon share)
    logistic = refusal.calibration("logistic", 5, 2.0, 0.0, 0.2)
    shipped = refusal.calibration("logistic", 5, 2.0, 0.0)
    assert logistic.gram == pytest.approx(shipped.gram * INFORMATION_SHARE / 0.2, rel=1e-12)


def test_refusal_sizes_below_interpolates_the_curve():
    from benchmarks import bench_refusal as refusal

    sizes = refusal.CURVE_SIZES
    # a curve falling log-linearly from 1 at sizes[10] to 0 at sizes[20]
    curve = np.clip((np.log(sizes[20]) - np.log(sizes)) / np.log(sizes[20] / sizes[10]), 0, 1)
    found = refusal.sizes_below(curve)
    assert found["0.5"] == pytest.approx(np.sqrt(sizes[10] * sizes[20]), rel=1e-9)
    assert found["0.05"] == pytest.approx(sizes[10] ** 0.05 * sizes[20] ** 0.95, rel=1e-9)
    assert refusal.sizes_below(np.ones_like(sizes))["0.05"] is None
    assert refusal.sizes_below(np.zeros_like(sizes))["0.5"] == sizes[0]


def test_width_goal_rescoped_against_the_first_order_width():
    """The re-scoped width goal: every coordinate at most 1.5x, or within 1.1x of its
    first-order width where that is above 1.5x; no first-order width: not judged."""
    cell = {"median_width_ratio": [1.0, 1.4, 2.7], "first_order_width_ratio": [1.0, 1.2, 2.5]}
    assert _report._width_rescoped(cell)               # 2.7 <= 1.1 * 2.5
    assert not _report._width_rescoped({**cell, "median_width_ratio": [1.0, 1.6, 2.7]})
    assert not _report._width_rescoped({**cell, "median_width_ratio": [1.0, 1.4, 2.8]})
    assert _report._width_rescoped({"median_width_ratio": [1.0]}) is None
