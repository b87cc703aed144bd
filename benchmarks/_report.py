"""Write ``benchmarks/RESULTS.md`` from the JSON files in ``benchmarks/results/``.

One function per benchmark's JSON schema turns a payload into markdown lines. Nothing
is computed here that the JSON does not hold: the report formats the recorded numbers
(and derives from them only exact binomial probabilities of the coverage goal,
:mod:`benchmarks._coverage_goal`), so it is fast and deterministic (the same JSON
files give the same report).
A missing file, or a JSON lacking some keys, gives a note in its section instead of
an error; what the JSON does not record is reported as "not recorded".
"""

import json
import math
import os
import statistics
from pathlib import Path

from . import _coverage_goal as goal

BENCHMARKS = ("objective_perturbation", "output_perturbation", "dpsgd", "napp", "scaling",
              "scale_out", "scale_out_ssp", "scale_out_persons", "paper_table", "defaults",
              "epsilon_for_utility", "private_selection", "selection_cap", "private_search",
              "person_level", "ssp", "dpsgd_calibration", "metrics", "inference",
              "inference_adult", "refusal")
NOT_RECORDED = "not recorded"
DASH = "—"


# -- formatting -------------------------------------------------------------------------

def fmt(value, digits=4):
    """A number with ``digits`` decimals; inf and nan spelled out, missing as a dash."""
    if value is None:
        return DASH
    if isinstance(value, str):
        return value
    value = float(value)
    if math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}f}"


def fmt_eps(value):
    """An epsilon (or any scale-free number) in short general format."""
    return DASH if value is None else f"{float(value):.4g}"


def fmt_summary(summary, digits=4, scale=1.0):
    """``mean ± sem`` of a ``summarise`` dict (see ``_common.summarise``)."""
    if not isinstance(summary, dict) or "mean" not in summary:
        return DASH
    text = fmt(scale * summary["mean"], digits)
    if summary.get("sem") is not None:
        text += " ± " + fmt(scale * summary["sem"], digits)
    return text


def table(header, rows):
    """A markdown table (cells are already strings)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines + [""]


# -- the setting of a run ---------------------------------------------------------------

def setting(payload, seeds, neighboring):
    """Lines stating machine, versions, revision, date, seeds and neighbouring relation."""
    env = payload.get("environment") or {}
    machine = env.get("machine") or NOT_RECORDED
    cpus = env.get("cpu_count")
    machine += f", {cpus} CPUs" if cpus else ", CPU count not recorded"
    if env.get("processor"):
        machine += f" ({env['processor']})"
    if env.get("python"):
        machine += f"; Python {env['python']}"
    versions = env.get("versions") or {}
    present = ", ".join(f"{k} {v}" for k, v in versions.items() if v)
    absent = ", ".join(k for k, v in versions.items() if not v)
    if absent:
        present += f" (not installed: {absent})"
    return [
        f"- Machine: {machine}",
        f"- Versions: {present or NOT_RECORDED}",
        f"- Git revision: {env.get('git_sha') or NOT_RECORDED}; "
        f"date: {env.get('date') or NOT_RECORDED}",
        f"- Seeds: {seeds}",
        f"- Neighbouring relation: {neighboring}",
    ]


def _seed_list(seeds):
    if not seeds:
        return NOT_RECORDED
    seeds = list(seeds)
    if seeds == list(range(seeds[0], seeds[0] + len(seeds))) and len(seeds) > 2:
        return f"{seeds[0]}..{seeds[-1]}"
    return ", ".join(str(s) for s in seeds)


# -- one function per benchmark schema ----------------------------------------------------

def objective_perturbation(payload, timing=None):
    """``bench_objective_perturbation.py``: per dataset, accuracy per method, fit-time ratios."""
    params = payload.get("params", {})
    lines = setting(payload, _seed_list(params.get("seeds")),
                    "per method, as named: `replace` = replace-one, `add_remove` = "
                    "add/remove-one; diffprivlib is replace-one (from the script; "
                    "the JSON records it only in the method names)") + [""]
    results = payload.get("results")
    if results is None:  # the earlier Adult-only layout
        results = {"adult": {k: payload[k] for k in ("curves", "non_private", "fit_time",
                                                     "diffprivlib_reference") if k in payload}}
    timing_runs = (timing or {}).get("fit_time") or {}
    if timing_runs and "seconds" in next(iter(timing_runs.values())):
        timing_runs = {"adult": timing_runs}  # the earlier Adult-only layout
    for dataset, result in results.items():
        lines += [f"### {dataset}", ""] + _objpert_accuracy(dataset, result)
        lines += _objpert_fit_time(dataset, result.get("fit_time"), "this run")
        lines += _as_run_line("ObjPertLogisticRegression", "LogisticRegression()",
                              result.get("fit_time_as_run"), "this run", cpus=_cpus(payload))
        if dataset in timing_runs:
            lines += _objpert_fit_time(dataset, timing_runs[dataset], _timing_run(timing))
        as_run = ((timing or {}).get("as_run") or {}).get(dataset)
        if as_run:
            # merged by --as-run-only with its own environment, or from --timing-only
            merged = "as_run_environment" in timing
            source = {"environment": timing["as_run_environment"]} if merged else timing
            where = _timing_run(source, "--as-run-only" if merged else "--timing-only")
            matched = (timing.get("matched_interleaved") or {}).get(dataset)
            if matched:
                low, high = matched["ratio_range"]
                lines += [f"**Matched (C = 1 on both sides, each solver's tolerance)**, "
                          f"{where}: ObjPertLogisticRegression {fmt(matched['ours_s'], 3)} s, "
                          f"LogisticRegression(C=1) {fmt(matched['reference_s'], 3)} s; ratio "
                          f"**{fmt(matched['ratio'], 2)}x** (median of {matched['repeats']} "
                          f"interleaved pairs, range {fmt(low, 2)} to {fmt(high, 2)}).", ""]
            lines += _as_run_line("ObjPertLogisticRegression", "LogisticRegression()", as_run,
                                  where, cpus=_cpus(source))
    return lines


def _timing_run(timing, flag="--timing-only"):
    """Where a separate timing-only run's figures come from, with its BLAS thread limit
    when the run recorded one."""
    env = timing.get("environment", {})
    threads = (timing.get("blas_threads") or env.get("blas_threads")
               or (timing.get("params") or {}).get("blas_threads"))
    blas = f", BLAS limited to {threads} thread{'s' * (threads != 1)}" if threads else ""
    return (f"a separate timing-only run (`{flag}`, git "
            f"{env.get('git_sha') or NOT_RECORDED}, date {env.get('date') or NOT_RECORDED}"
            f"{blas})")


def _as_run_line(ours, reference, t, where, others=None, cpus=None):
    """The as-run figure (defaults on both sides) of :func:`interleaved_ratio`'s record;
    ``others`` names the extra fits timed in the same rounds."""
    if not t:
        return []
    extra = "".join(f"; {label}: {fmt(t['others_s'][name], 3)} s, the certified fit "
                    f"{fmt(t['ours_over'][name], 2)}x it"
                    for name, label in (others or {}).items() if name in t.get("ours_over", {}))
    low, high = t.get("ratio_range", (None, None))
    load = t.get("load_average") or []
    return [f"**As run (defaults on both sides)**, {where}: {ours} {fmt(t['ours_s'], 3)} s, "
            f"{reference} {fmt(t['reference_s'], 3)} s; ratio **{fmt(t['ratio'], 2)}x** "
            f"(median of {t.get('repeats', '?')} interleaved pairs, range {fmt(low, 2)} to "
            f"{fmt(high, 2)}; 1-minute load average "
            f"{' to '.join(fmt(v, 1) for v in load) or NOT_RECORDED} on "
            f"{cpus or NOT_RECORDED} CPUs){extra}." + (f" {t['note']}" if t.get("note") else ""), ""]


def _cpus(payload):
    """The CPU count of the run that recorded ``payload`` (for its load averages)."""
    return ((payload or {}).get("environment") or {}).get("cpu_count")


def _objpert_accuracy(dataset, result):
    curves = result["curves"]
    reference = {float(k): v for k, v in result.get("diffprivlib_reference", {}).items()}
    non_private = result.get("non_private", {})
    methods = list(curves)
    by_eps = {}
    for method, rows in curves.items():
        for row in rows:
            by_eps.setdefault(row["epsilon"], {})[method] = row
    header = (["epsilon"] + methods
              + (["diffprivlib (reference value in the issue)"] if reference else [])
              + ["sklearn non-private"])
    rows = []
    for eps in sorted(by_eps):
        rows.append([fmt_eps(eps)]
                    + [fmt_summary(by_eps[eps].get(m, {}).get("test_accuracy")) for m in methods]
                    + ([fmt(reference.get(float(eps)), 3)] if reference else [])
                    + [fmt(non_private.get("test_accuracy"))])
    lines = [f"{dataset} test accuracy (mean ± standard error over seeds; hyperparameters "
             f"chosen per method and epsilon on a validation split of the training rows, "
             f"without noise and outside every reported epsilon: what each estimator can "
             f"reach, not what a private search would), n_train = "
             f"{result.get('n_train', NOT_RECORDED)}:", ""]
    lines += table(header, rows)
    if non_private:
        lines += [f"Non-private scikit-learn LogisticRegression: C = {non_private.get('C')}.",
                  ""]
    return lines


def _objpert_fit_time(dataset, fit_time, where):
    if not fit_time:
        return []
    rows = [[m, fmt(t.get("seconds"), 3), fmt(t.get("ratio_to_sklearn"), 2)]
            for m, t in fit_time.items()]
    return ([f"Fit time on the whole {dataset} training split, C = 1 on both sides "
             f"(matched: same C, each solver's own tolerance), best of 3, measured in "
             f"{where}:", ""]
            + table(["method", "seconds", "ratio to sklearn LogisticRegression"], rows))


def output_perturbation(payload, timing=None):
    """``bench_output_perturbation.py``: per dataset, kernels, ObjPert, LinearSVC, timing."""
    params = payload.get("params", {})
    lines = setting(payload, _seed_list(params.get("seeds")),
                    params.get("neighboring", NOT_RECORDED)
                    + (f"; delta = {params['delta']}" if "delta" in params else "")) + [""]
    for dataset, result in payload["results"].items():
        kernels = result.get("kernels", {})
        eps_keys = list(next(iter(kernels.values()))["accuracy"]) if kernels else []
        header = ["epsilon"] + [f"OutputPertSVM {k} (C={v.get('C')})" for k, v in kernels.items()]
        if "objpert" in result:
            header.append(f"ObjPertLogisticRegression (C={params.get('C_linear', '?')})")
        rows = []
        for eps in eps_keys:
            row = [fmt_eps(float(eps))]
            row += [fmt_summary(k["accuracy"].get(eps)) for k in kernels.values()]
            if "objpert" in result:
                row.append(fmt_summary(result["objpert"].get(eps)))
            rows.append(row)
        lines += [f"### {dataset}", "",
                  f"Test accuracy (mean ± standard error over seeds), "
                  f"n_train = {result.get('n_train', NOT_RECORDED)}:", ""]
        lines += table(header, rows)
        refs = [f"{k} kernel, exact hinge minimiser (epsilon = inf): "
                f"{fmt(v.get('nonprivate_exact_hinge_accuracy'))}" for k, v in kernels.items()]
        if "linearsvc_default_accuracy" in result:
            refs.append("scikit-learn LinearSVC, default settings: "
                        f"{fmt(result['linearsvc_default_accuracy'])}")
        if "majority_class_test_accuracy" in result:
            refs.append(f"majority class: {fmt(result['majority_class_test_accuracy'])}")
        lines += ["Non-private: " + "; ".join(refs) + ".", ""]
        lines += _outputpert_times(result.get("timing"), "this run", _cpus(payload))
        separate = ((timing or {}).get("timing") or {}).get(dataset)
        if separate:
            lines += _outputpert_times({**separate["matched"], "as_run": separate.get("as_run")},
                                       _timing_run(timing), _cpus(timing))
        lines += _rbf_study(result.get("rbf_defaults_study"))
    return lines


def _outputpert_times(t, where, cpus=None):
    """The matched fit times (same C and clipped design) and the as-run figure."""
    if not t:
        return []
    how = (f"median of {t['repeats']} interleaved repetitions" if "repeats" in t
           else "best of 3")
    uncertified = ""
    if t.get("uncertified_hinge_s") is not None:
        uncertified = (f"; LinearSVC(C, loss='hinge') {fmt(t['uncertified_hinge_s'], 3)} s "
                       f"(the same problem at liblinear's tolerance, no certificate: "
                       f"OutputPertSVM {fmt(t.get('ratio_outputpert_to_uncertified_hinge'), 2)}x "
                       f"it)")
    lines = [f"**Matched (same C, same clipped design, scikit-learn's tolerance)**, fit time "
             f"({how}, ratios of medians, {where}): "
             f"LinearSVC {fmt(t.get('linearsvc_default_s'), 3)} s; OutputPertSVM "
             f"linear {fmt(t.get('outputpert_linear_s'), 3)} s = "
             f"**{fmt(t.get('ratio_outputpert_linear'), 2)}x** LinearSVC; "
             f"ObjPertLogisticRegression {fmt(t.get('objpert_s'), 3)} s = "
             f"{fmt(t.get('ratio_objpert'), 2)}x LinearSVC{uncertified}."
             + (f" {t['note']}" if t.get("note") else ""), ""]
    return lines + _as_run_line("OutputPertSVM", "LinearSVC()", t.get("as_run"), where,
                                {"uncertified_hinge": "LinearSVC(C=C_, loss='hinge') on the "
                                                      "clipped rows (no certificate)"}, cpus)


def _rbf_study(study):
    """The validation grid behind OutputPertSVM's RBF defaults, when recorded."""
    if not study or not study.get("grid"):
        return []
    eps_keys = list(study["grid"][0].get("validation_accuracy", {}))
    rows = [[fmt_eps(r.get("gamma")) if not isinstance(r.get("gamma"), str) else r["gamma"],
             str(r.get("n_components")), fmt_eps(r.get("C")), fmt(r.get("validation_exact"))]
            + [fmt_summary(r.get("validation_accuracy", {}).get(e)) for e in eps_keys]
            for r in study["grid"]]
    return ([f"RBF defaults study (validation accuracy; {study.get('split', NOT_RECORDED)}; "
             f"majority class {fmt(study.get('majority_class_validation_accuracy'))}):", ""]
            + table(["gamma", "n_components", "C", "epsilon = inf"]
                    + [f"epsilon = {e}" for e in eps_keys], rows))


DPSGD_LABELS = {"skdp_dpsgd_default": "skdp DP-SGD (defaults)",
                "skdp_dpgd_default": "skdp DP-GD (full batch, 200 epochs)",
                "skdp_dpsgd_recipe": "skdp DP-SGD (recipe)",
                "skdp_objpert_gaussian": "skdp ObjPert (Gaussian)",
                "opacus_dpsgd_recipe": "Opacus DP-SGD (recipe)"}


def dpsgd(payload, timing=None):
    """``bench_dpsgd.py``: per dataset, methods against epsilon, Opacus and speed ratios."""
    params = payload.get("params", {})
    seeds = _seed_list(params.get("seeds"))
    if params.get("opacus_seeds"):
        seeds += f" (Opacus: {_seed_list(params['opacus_seeds'])})"
    lines = setting(payload, seeds, "add/remove-one for every private method (from the "
                    "script; not recorded in the JSON)"
                    + (f"; delta = {params['delta']}" if "delta" in params else "")) + [""]
    if "opacus_available" in payload:
        lines += [f"Opacus importable in this run: {payload['opacus_available']}.", ""]
    for dataset, result in payload["accuracy"].items():
        methods = result["methods"]
        by_eps = {}
        for method, rows in methods.items():
            for row in rows:
                by_eps.setdefault(row["epsilon"], {})[method] = row
        header = ["epsilon"] + [DPSGD_LABELS.get(m, m) for m in methods]
        rows = [[fmt_eps(eps)] + [fmt_summary(by_eps[eps].get(m, {}).get("test_accuracy"))
                                  for m in methods] for eps in sorted(by_eps)]
        lines += [f"### {dataset}", "",
                  f"Test accuracy (mean ± standard error over seeds), n_train = "
                  f"{result.get('n_train', NOT_RECORDED)}:", ""]
        lines += table(header, rows)
        non_private = result.get("non_private_LogisticRegression", {})
        if non_private:
            lines += ["Non-private scikit-learn LogisticRegression: " + "; ".join(
                f"{k}: {fmt(v)}" for k, v in non_private.items()) + ".", ""]
        targets = payload.get("targets", {}).get(dataset)
        if targets:
            lines += ["Targets (issue): " + "; ".join(
                f"epsilon {k}: {v}" for k, v in targets.items()) + ".", ""]
    lines += _dpsgd_timing(payload.get("timing"), "this run")
    if timing:
        env = timing.get("environment", {})
        lines += _dpsgd_timing(
            timing.get("timing"),
            f"a separate timing-only run (`--timing-only`, git "
            f"{env.get('git_sha') or NOT_RECORDED}, date {env.get('date') or NOT_RECORDED})")
    return lines + _rerun_notes(payload, "methods")


def _dpsgd_timing(t, where):
    if not t:
        return []
    rows = [[k, fmt(v, 3) if isinstance(v, float) else str(v)] for k, v in t.items()]
    return ([f"Speed ({t.get('epochs', '?')} epochs on Adult, best of 3), measured in "
             f"{where}:", ""] + table(["quantity", "value"], rows))


NAPP_METHODS = ("nonprivate", "napp", "two_stage", "kifer")


def napp(payload, timing=None):
    """``bench_napp.py``: simulation table (error and Youden index), Adult and KDDCup99."""
    params = payload.get("params", {})
    seeds = payload.get("seeds", NOT_RECORDED)
    clf_seeds = params.get("classification_seeds", params.get("adult_seeds"))
    if clf_seeds:
        seeds += f"; classification: {_seed_list(clf_seeds)} (test fits: 100 + seed)"
    neighboring = "add/remove-one, pure epsilon-DP (from the script; not recorded in the JSON)"
    lines = setting(payload, seeds, neighboring) + [""]
    sim = payload.get("simulation", {})
    if sim.get("environment") and sim["environment"] != payload.get("environment"):
        lines += ["The simulations come from an earlier run, kept as they are "
                  "(`--keep-simulations`); its setting:", ""]
        lines += setting({"environment": sim["environment"]}, payload.get("seeds", NOT_RECORDED),
                         neighboring) + [""]
    cells = {}
    for t in sim.get("table", []):
        cells.setdefault((t["family"], t["n"], t["epsilon"]), {})[t["method"]] = t
    methods = [m for m in NAPP_METHODS if any(m in c for c in cells.values())]
    rows = [[f, str(n), fmt_eps(e)]
            + [(fmt_summary(c[m]["error"]) + f" (J {fmt(c[m].get('youden'), 2)})")
               if m in c else DASH for m in methods]
            for (f, n, e), c in cells.items()]
    lines += [f"Simulations ({params.get('reps', '?')} repetitions): test error at the best "
              "alpha on average (mean ± standard error) and, in brackets, the best Youden "
              "index J = TPR - FPR of the variable selection over alpha:", ""]
    lines += table(["family", "n", "epsilon"] + list(methods), rows)
    if "target_two_stage_beats_kifer" in sim:
        lines += ["Two-stage beats Kifer et al. on error or selection at every epsilon >= "
                  "0.6: " + "; ".join(f"{k}: {v}" for k, v in
                                      sim["target_two_stage_beats_kifer"].items()) + ".", ""]
    if sim.get("timing"):
        t = sim["timing"]
        lines += [f"Fit time (linear, n = 500, best of 3, this run): scikit-learn Lasso "
                  f"{fmt(t.get('sklearn_seconds'), 5)} s, NAPP {fmt(t.get('napp_seconds'), 5)}"
                  f" s, ratio {fmt(t.get('ratio'), 2)}.", ""]
    classification = payload.get("classification")
    if classification is None and "adult" in payload:  # the earlier Adult-only layout
        classification = {"adult": payload["adult"]}
    for dataset, result in (classification or {}).items():
        lines += [f"### {dataset}", ""] + _napp_classification(
            dataset, result, timing, _cpus(payload))
    if "runtime_seconds" in payload:
        lines += [f"Run time of the whole benchmark: {payload['runtime_seconds']:.0f} s"
                  + (f" (the kept simulations: {sim['runtime_seconds']:.0f} s in their own run)"
                     if sim.get("environment") != payload.get("environment")
                     and sim.get("runtime_seconds") else "") + ".", ""]
    return lines


def _napp_classification(dataset, result, timing=None, cpus=None):
    by_eps = {}
    for r in result.get("rows", []):
        by_eps.setdefault(r["epsilon"], {})[r["method"]] = r
    names = sorted({r["method"] for r in result.get("rows", [])},
                   key=lambda m: NAPP_METHODS.index(m) if m in NAPP_METHODS else 99)
    rows = [[fmt_eps(e)] + [
        (fmt_summary(c[m]["error"], 2, 100) + f" (alpha {fmt_eps(c[m].get('alpha'))})")
        if m in c else DASH for m in names] for e, c in sorted(by_eps.items())]
    lines = [f"{dataset}, lasso-logistic test misclassification in % (mean ± standard "
             f"error; alpha chosen on validation), n_train = "
             f"{result.get('n_train', NOT_RECORDED)}:", ""]
    lines += table(["epsilon"] + names, rows)
    lines += [f"Non-private: {fmt(100 * result['nonprivate_error'], 2)} % (alpha "
              f"{result.get('nonprivate_alpha')}); scikit-learn liblinear: "
              f"{fmt(100 * result['sklearn_liblinear_error'], 2)} %.", ""]
    if result.get("timing"):
        t = result["timing"]
        lines += [f"**Matched (same L1 problem, liblinear at its tolerance)**, fit time on "
                  f"{dataset} (best of 3, this run): scikit-learn liblinear "
                  f"{fmt(t.get('sklearn_seconds'), 3)} s, NAPP "
                  f"{fmt(t.get('napp_seconds'), 3)} s, ratio {fmt(t.get('ratio'), 2)}.", ""]
        lines += _as_run_line("NAPPLassoClassifier", "liblinear's L1 LogisticRegression",
                              t.get("as_run"), "this run", cpus=cpus)
    separate = ((timing or {}).get("timing") or {}).get(dataset)
    if separate:
        where = _timing_run(timing)
        m = separate["matched"]
        low, high = m.get("ratio_range", (None, None))
        lines += [f"**Matched (same L1 problem, liblinear at its tolerance)**, {where}: "
                  f"NAPP {fmt(m['ours_s'], 3)} s, liblinear {fmt(m['reference_s'], 3)} s "
                  f"(alpha {fmt_eps(m.get('alpha'))}); ratio **{fmt(m['ratio'], 2)}x** (median "
                  f"of {m.get('repeats', '?')} interleaved pairs, range {fmt(low, 2)} to "
                  f"{fmt(high, 2)}).", ""]
        lines += _as_run_line("NAPPLassoClassifier", "liblinear's L1 LogisticRegression",
                              separate.get("as_run"), where, cpus=_cpus(timing))
    return lines


def epsilon_for_utility(payload, timing=None):
    """``bench_epsilon_for_utility.py``: expansion error (part A) and the decision (B)."""
    params = payload.get("params", {})
    seeds = NOT_RECORDED + " as a list"
    if "repetitions" in params:
        seeds = (f"random_state = repetition index 0..{params['repetitions'] - 1} (part A), "
                 f"0..{params.get('decision_repetitions', 1) - 1} (part B); mean curves "
                 f"over seeds 0..{params.get('expansion_curve_seeds', 1) - 1} (A) and "
                 f"0..{params.get('curve_seeds', 1) - 1} (B) (derived from the JSON's params "
                 f"and the script)")
    lines = setting(payload, seeds, "add/remove-one (the estimators' default; from the "
                    "script, not recorded in the JSON)") + [""]
    expansion = payload.get("expansion", {})
    if expansion:
        names = list(dict.fromkeys(e for ranges in expansion.values()
                                   for r in ranges.values() for e in r.get("mae", {})))
        rows = []
        for estimator, ranges in expansion.items():
            for range_name, r in ranges.items():
                mae = r.get("mae", {})
                best = min(mae, key=lambda e: mae[e]["mean"]) if mae else DASH
                rows.append([estimator, range_name] + [fmt_summary(mae.get(e)) for e in names]
                            + [best])
        lines += ["Part A: mean absolute error of the predicted training-accuracy curve over "
                  "each range (mean ± standard error over measuring points and repetitions):",
                  ""]
        lines += table(["estimator", "range"] + [f"MAE {e}" for e in names] + ["best"], rows)
    overall = payload.get("expansion_over_all_points", {})
    if overall:
        rows = [[estimator, o.get("auto", DASH), fmt(o.get("gain_auto_over_linear"), 2)]
                + [fmt(o.get("noise_free_gain_over_linear", {}).get(e), 2)
                   for e in ("inverse", "log")]
                for estimator, o in overall.items()]
        lines += ["Part A over all six measuring points: gain of the default (auto) expansion "
                  "over the paper's linear rule (ratio of mean absolute errors; target >= 2) "
                  "with one draw per measurement, and the noise-free gains of the inverse and "
                  "log expansions (from the mean of the repetitions' draws at each point, "
                  "which leaves only the error of the first-order rule itself):", ""]
        lines += table(["estimator", "auto expansion", "gain of auto, one draw",
                        "noise-free gain, inverse", "noise-free gain, log"], rows)
    checks = [(estimator, c) for estimator, ranges in expansion.items()
              for r in ranges.values() for c in r.get("surrogate_check", [])]
    if checks:
        rows = [[estimator, fmt_eps(c["epsilon"]),
                 fmt(c["smoothed_accuracy_derivative"], 4) + " ± " + fmt(c["sem"], 4),
                 fmt(c["measured_accuracy_slope"], 4)] for estimator, c in checks]
        lines += ["Part A, the smooth surrogate: at each measuring point, the derivative in "
                  "epsilon of the kernel-smoothed training accuracy (mean ± standard error "
                  "over the repetitions' draws) against the slope of the measured mean "
                  "accuracy curve (central difference on the curve's grid):", ""]
        lines += table(["estimator", "epsilon", "surrogate derivative",
                        "measured accuracy slope"], rows)
    decision = payload.get("decision", {})
    for estimator, study in decision.items():
        rows = []
        for key, where in (("rows", "validation (default)"), ("rows_train", "train")):
            for r in study.get(key, []):
                floor = r.get("validation_floor", {})
                rows.append([where, fmt(r.get("target"), 3),
                             fmt_eps(r.get("true_smallest_epsilon")),
                             fmt_summary(r.get("epsilon_"), 3), fmt(r.get("ratio_to_true"), 2),
                             fmt(r.get("median_ratio_to_true"), 2),
                             fmt(floor.get("mean_ratio"), 2) if floor else DASH,
                             fmt_summary(r.get("test_accuracy")),
                             str(r.get("capped_runs", DASH)), str(r.get("max_fits_used", DASH))])
        lines += [f"Part B, {estimator}: EpsilonForUtility's choice against the true smallest "
                  "epsilon (dense grid) and the refit model's Adult test accuracy. 'Split "
                  "floor': the mean ratio of an oracle that knows the mean curve but sees it "
                  "through the validation split's sampling error; 'capped': runs warned that "
                  "the target was not reached within the trust region:", ""]
        lines += table(["measured on", "target", "true smallest epsilon",
                        "chosen epsilon_ (mean ± sem)", "mean ratio", "median ratio",
                        "split floor", "test accuracy", "capped", "max fits"], rows)
    return lines


# the issue's summary: mechanism -> (estimator rows, methods without / with a proxy)
SELECTION_SUMMARY = (
    ("output perturbation, noise reduction", ("Laplace noise reduction", "Gaussian noise "
                                              "reduction"), ("private", "all rows"),
     ("private+proxy", "all rows+proxy")),
    ("objective perturbation, pure", ("objective perturbation (pure",),
     ("private", "all rows", "random ladder", "all rows, random ladder"),
     ("private+proxy", "all rows+proxy")),
    ("objective perturbation, Gaussian", ("objective perturbation (Gaussian",),
     ("private", "all rows", "random ladder", "all rows, random ladder"),
     ("private+proxy", "all rows+proxy")),
    ("DP-GD", ("DP-GD",), ("private", "all rows", "all rows, random ladder", "checkpoints",
                           "all rows, checkpoints"),
     ("private+proxy", "all rows+proxy")),
)


def _selection_summary(estimators, search):
    """Per mechanism and proxy column: the best method's worst median ratio over the
    targets the cap can meet (its name and every target's ratio beside it)."""
    rows = []
    for mechanism, labels, *columns in SELECTION_SUMMARY:
        cells = []
        for methods in columns:
            best = None
            for label, result in estimators.items():
                if not any(part in label for part in labels):
                    continue
                cap = search.get(label, {}).get("epsilon_max")
                for method in methods:
                    ratios = [row["methods"][method]["median_ratio"]
                              for row in result["targets"].values()
                              if method in row["methods"] and row["oracle_epsilon"]
                              and (not cap or row["oracle_epsilon"] <= cap)]
                    if ratios and (best is None or max(ratios) < best[0]):
                        best = (max(ratios), label, method, ratios)
            cells.append(DASH if best is None else
                         f"{fmt(best[0], 2)} ({best[2]}; " + ", ".join(
                             fmt(r, 2) for r in best[3]) + ")")
        rows.append([mechanism] + cells)
    return table(["mechanism", "without proxy: worst target (method; each target)",
                  "with a public proxy"], rows)


def private_selection(payload, timing=None):
    """``bench_private_selection.py``: the whole search's privacy loss over the oracle epsilon."""
    reps, seeds = payload.get("reps"), payload.get("oracle_seeds")
    lines = setting(payload, f"search repetitions random_state = 1000..{1000 + reps - 1}; "
                    f"oracle curves over seeds 0..{seeds - 1} (from the script and the "
                    f"JSON's reps and oracle_seeds)",
                    "add/remove-one (the estimators' default; from the script)") + [""]
    if "design" not in payload:
        lines += ["These numbers were measured with an earlier design of the private "
                  "selection (one AboveThreshold test and separately budgeted noisy "
                  "utilities; the JSON records no `design`). The script now runs the "
                  "current one (one cap on the whole search, a Laplace test per rung); "
                  "its rerun is pending.", ""]
    elif payload["design"]:
        lines += [f"Selection measured: {payload['design']}.", ""]
    lines += [f"Private rows: each training file minus {payload.get('proxy_rows')} fixed "
              "public rows (the proxy). Oracle: the smallest epsilon at which the "
              "estimator trained on all private rows meets the target on the test split on "
              "average over the seeds (log-linear interpolation on the oracle grid); "
              "beside it, the oracle fit's own share of seeds within half a point of the "
              "target. Per method: the median realised privacy loss of the whole search "
              "over the oracle (for the noise-reduction rows also over the Gamma-norm output "
              "perturbation's oracle, in brackets; in square brackets the training part's "
              "realised loss alone over the oracle; Gaussian figures are the odometer's, at "
              "delta 1e-5), the test floor over the oracle (the cost of a test alone that "
              "tells the target from half a point below it with one-sided error 10 %), the "
              "mean test accuracy of the released models, the share of runs that released a "
              "model within half a point of the target, and the median number of fits. "
              "Search settings: " + "; ".join(
                  f"{label}: " + ", ".join(f"{k}={v}" for k, v in params.items())
                  for label, params in payload.get("search", {}).items()) + ".", ""]
    for dataset, estimators in payload["datasets"].items():
        rows = []
        for label, result in estimators.items():
            cap = payload.get("search", {}).get(label, {}).get("epsilon_max")
            for target, row in result["targets"].items():
                oracle = fmt_eps(row["oracle_epsilon"])
                if row["oracle_epsilon"] is not None and cap and row["oracle_epsilon"] > cap:
                    oracle += " (above the cap: no search can meet it)"
                own = fmt(row.get("oracle_within_half_point"), 2)
                for method, m in row["methods"].items():
                    ratio = fmt(m["median_ratio"], 2)
                    if m.get("median_ratio_to_reference") is not None:
                        ratio += f" ({fmt(m['median_ratio_to_reference'], 2)})"
                    if m.get("median_training_ratio") is not None:
                        ratio += f" [{fmt(m['median_training_ratio'], 2)}]"
                    rows.append([label, target, oracle, own, method, ratio,
                                 fmt(m.get("test_floor_ratio"), 2),
                                 fmt(m["mean_accuracy"], 3), fmt(m["within_half_point"], 2),
                                 fmt(m["median_fits"], 1)])
        lines += [f"### {dataset}", ""]
        if payload.get("design", "").find("all rows") >= 0:
            lines += ["Summary in the shape of the selection issue's targets (median "
                      "realised loss over the oracle):", ""]
            lines += _selection_summary(estimators, payload.get("search", {}))
        lines += table(["estimator", "target", "oracle epsilon", "oracle within 0.5 pt",
                        "method", "loss / oracle", "test floor / oracle", "accuracy",
                        "within 0.5 pt", "fits"], rows)
    return lines


def _stops(counts):
    """Stop reasons and their counts, most frequent first."""
    return ", ".join(f"{reason} {count}" for reason, count in counts.items())


def _pair(figure):
    """An (epsilon, delta) figure: epsilon alone when delta is 0."""
    epsilon, delta = figure
    return fmt_eps(epsilon) if not delta else f"({fmt_eps(epsilon)}, {delta:.3g})"


def _cap_cohort_rows(cells, previous):
    rows = []
    for cell in cells:
        s, cap = cell["summary"], cell["epsilon_max"]
        post = s["ex_post_epsilon"]
        quoted = previous.get("median_realised_loss", {}).get(str(cell["n"]))
        rows.append([
            f"{cell['n']}" + (" (all)" if cell["whole_split"] else ""), fmt_eps(cap),
            f"{fmt(post['median'], 3)} / {fmt(post['p90'], 3)} / {fmt(post['max'], 3)}",
            "; ".join(_pair(a) for a in s["a_priori"]), fmt(s["released_share"], 2),
            _stops(s["stop_reasons"]),
            (f"{fmt(s['mean_test_utility'], 3)} ({fmt(s['min_test_utility'], 3)})"
             if s["mean_test_utility"] is not None else DASH),
            f"{fmt(s['within_half_point_of_runs'], 2)} / "
            f"{fmt(s['within_half_point_of_released'], 2)}",
            f"{fmt(s['median_test_noise_sd'], 4)} "
            f"({fmt(s.get('median_test_noise_sd_at_expected_rows'), 4)})",
            fmt(s["median_sampling_sd"], 4),
            f"{fmt(s['median_noisy_validation_count'], 0)} "
            f"({fmt(s.get('expected_validation_rows'), 0)}, "
            f"± {fmt(s.get('count_noise_sd_rows'), 0)})",
            fmt(s["median_fits"], 1),
            fmt_eps(quoted) if quoted is not None and cap == previous.get("epsilon_max")
            else DASH])
    return rows


def _cohorts(cells):
    """``n = ... at cap ...`` for each cell, or "none"."""
    return ", ".join(f"n = {c['n']} at cap {fmt_eps(c['epsilon_max'])}"
                     for c in cells) or "none"


def _cap_prose(cells, params, previous):
    """What the cohort table says, in numbers copied from it."""
    worst = max(cells, key=lambda c: c["summary"]["ex_post_epsilon"]["max"]
                / c["epsilon_max"])
    near_cap = [c for c in cells
                if c["summary"]["ex_post_epsilon"]["p90"] >= 0.9 * c["epsilon_max"]]
    small = [c for c in cells if not c["whole_split"] and "expected_validation_rows"
             in c["summary"]]
    tolerance = params.get("tolerance", 0.05)
    quoted = previous.get("median_realised_loss", {})
    lines = [
        f"The cap holds on every run: the largest realised epsilon over all cells is "
        f"{worst['summary']['ex_post_epsilon']['max']:.15g} at epsilon_max = "
        f"{fmt_eps(worst['epsilon_max'])} (n = {worst['n']}), and the a priori figure is "
        "the cap on every run (the script asserts both, run by run). Under the previous "
        f"design, at epsilon_max = {fmt_eps(previous.get('epsilon_max'))}, the issue "
        f"reports median realised losses of {' / '.join(f'{v:g}' for v in quoted.values())} "
        f"at n = {' / '.join(quoted)} (max {previous.get('max_realised_loss', 0):g}).", "",
        "A search that finds no passing rung spends up to the cap and releases nothing, "
        "so the realised figure nears the cap where the target is out of reach: the 90th "
        f"percentile is within 10% of the cap at {_cohorts(near_cap)}. On the whole split, "
        "where the target is met within a few rungs, the median is "
        + ", ".join(f"{fmt(c['summary']['ex_post_epsilon']['median'], 3)} at cap "
                    f"{fmt_eps(c['epsilon_max'])}" for c in cells if c["whole_split"])
        + ": the label counts of the validation part cost min(5% of the cap, 0.1) and "
        "the first tests repay them, so the realised figure follows the rungs' spend "
        "rather than the cap.", ""]
    noisy_count = [c for c in small if c["summary"]["count_noise_sd_rows"]
                   > c["summary"]["expected_validation_rows"]]
    coarse = [c for c in small if c["summary"].get("sampling_sd_at_expected_rows", 0) > tolerance]
    below = [c for c in small if c["summary"]["released_share"] > 0
             and (c["summary"]["within_half_point_of_released"] or 0) < 0.5]
    starved = [c for c in small if c["summary"]["released_share"] < 0.1]
    coarse_sizes = ", ".join(f"n = {n}" for n in dict.fromkeys(c["n"] for c in coarse))
    lines += [
        "Which cohorts a cap can serve, from the resolution columns. The validation part's "
        "label counts get min(5% of the cap, 0.1) (Laplace noise of the sd in the count "
        "column, per count); the `cohort_too_small` guard reads the count less two of its "
        "standard deviations, so it refuses rather than trusts a count that noise has "
        "inflated, and no test's noise exceeds half the tolerance. The report's test noise "
        "sd (first figure in its column) is relative to the noisy count; the second "
        "restates it on the expected validation size 0.2 n, where the tests actually run. "
        f"The count's noise exceeds the expected validation part at {_cohorts(noisy_count)}. "
        "The validation sampling "
        f"error at the target on 0.2 n rows, which the search reports and warns about "
        f"rather than refuses, exceeds the "
        f"tolerance {fmt(tolerance, 2)} at {coarse_sizes or 'no size'}, whatever the cap. "
        "Fewer than "
        f"half of the released models are within 0.5 points of the target at "
        f"{_cohorts(below)}: the first rung to pass a coarse test (the threshold has no "
        "margin on a ladder of fresh fits) is mostly a lucky draw of validation rows and "
        "test noise, not a model at the target. Fewer than a tenth of the searches "
        f"release at {_cohorts(starved)}: there the cap is too small for the target on "
        "that many rows (the searches stop at the cap or on a plateau). Per cohort:", ""]
    for c in small:
        s = c["summary"]
        lines.append(
            f"- n = {c['n']}, cap {fmt_eps(c['epsilon_max'])}: validation part about "
            f"{fmt(s['expected_validation_rows'], 0)} rows, counted with noise of sd "
            f"{fmt(s['count_noise_sd_rows'], 0)} rows; test noise sd "
            f"{fmt(s['median_test_noise_sd'], 3)} nominal, "
            f"{fmt(s['median_test_noise_sd_at_expected_rows'], 3)} on the expected rows; "
            f"sampling sd {fmt(s.get('sampling_sd_at_expected_rows'), 3)} on them; released "
            f"{fmt(s['released_share'], 2)}, mean test accuracy "
            f"{fmt(s['mean_test_utility'], 3)}.")
    return lines + [""]


def _cap_estimator_rows(rows):
    out = []
    for row in rows:
        s = row["summary"]
        chosen = s.get("chosen_epsilon")
        post = [(r["ex_post"]["epsilon"], r["ex_post"]["delta"]) for r in row["runs"]]
        same = row.get("same_releases_as_bare")
        out.append([
            row["estimator"], "Pipeline" if row.get("pipeline") else "alone",
            fmt(row["target"], 3),
            (f"{fmt_eps(chosen['median'])} ({fmt_eps(chosen['min'])}–"
             f"{fmt_eps(chosen['max'])})" if chosen else DASH),
            f"{fmt_eps(s['ex_post_epsilon']['median'])} / "
            f"{_pair(max(post))}",
            "; ".join(_pair(a) for a in s["a_priori"]), _stops(s["stop_reasons"]),
            (f"{fmt(s['mean_test_utility'], 4)} ({fmt(s['min_test_utility'], 4)})"
             if s["mean_test_utility"] is not None else DASH),
            fmt(s["within_half_point_of_runs"], 2), fmt(s["median_fits"], 1),
            fmt(s["median_fit_seconds"], 2),
            DASH if same is None else ("yes" if same else "no")])
    return out


def selection_cap(payload, timing=None):
    """``bench_selection_cap.py``: the realised loss against the cap, per cohort and estimator."""
    params = payload.get("params", {})
    previous = payload.get("previous_design", {})
    lines = setting(payload, f"cohorts: random_state {_seed_list(params.get('cohort_seeds'))} "
                    "with a fresh public subsample per repetition (numpy default_rng(("
                    f"{params.get('subsample_seed')}, n, seed)), without replacement); "
                    f"estimators: random_state {_seed_list(params.get('estimator_seeds'))}",
                    params.get("neighboring", NOT_RECORDED)) + [""]
    if payload.get("uncommitted_skdp_files"):
        lines += ["Measured on the git revision above plus uncommitted changes to: "
                  + ", ".join(f"`{f.split()[-1]}`" for f in payload["uncommitted_skdp_files"])
                  + ".", ""]
    lines += ["### Every cohort", "",
              f"`EpsilonForUtility()` at its defaults (ObjPertLogisticRegression(), target "
              f"{fmt(params.get('target'), 2)}, tolerance 0.05, 20% validation coins) on "
              f"subsamples of Adult's training rows, {len(params.get('cohort_seeds', []))} "
              "searches per cell; test accuracy on Adult's test split. Columns: realised "
              "(ex-post) epsilon of the whole search, median / 90th percentile (linear "
              "interpolation) / max; the a priori figure of every run; share of runs "
              "that released a model; stop reasons; mean test accuracy of the released "
              "models (worst in brackets); share within 0.5 points below the target or "
              "above, of all runs / of the released; median test noise sd in accuracy "
              "from `privacy_report_['resolution']` (in brackets: restated on the expected "
              "validation size); median validation sampling sd at the target; median "
              "noisy validation count (expected size 0.2 n, ± the count noise's sd); "
              "median fits; the previous design's median realised loss, quoted from the "
              "issue (not measured here).", ""]
    lines += table(["n", "epsilon_max", "realised epsilon (median / p90 / max)", "a priori",
                    "released", "stop reasons", "test accuracy (worst)",
                    "within 0.5 pt (runs / released)", "test noise sd (at 0.2 n rows)",
                    "sampling sd", "noisy count (0.2 n, ± sd)", "fits",
                    "previous design, median (issue)"],
                   _cap_cohort_rows(payload["cohorts"], previous))
    lines += _cap_prose(payload["cohorts"], params, previous)
    rows = payload["estimators"]
    lines += ["### Every estimator at its defaults", "",
              f"On the whole Adult training split, `EpsilonForUtility(E, epsilon_max=10)` "
              f"with each estimator at its defaults, alone and as "
              f"`{params.get('preprocessing')}` (the scaler maps Adult's [0, 1] features "
              "onto themselves: the last column says whether the Pipeline's runs released "
              "exactly what the bare estimator's did); the regressor on a public synthetic "
              "regression. Columns: target; chosen epsilon, median (min–max over the "
              "released); realised (epsilon, delta), median epsilon / largest; a priori; "
              "stop reasons; mean test utility of the released (worst); share of runs "
              "released within 0.5 points of the target; median fits; median wall-clock "
              "seconds of one search (one process, run one after another).", ""]
    lines += table(["estimator", "used", "target", "chosen epsilon", "realised (median / max)",
                    "a priori", "stop reasons", "test utility (worst)", "within 0.5 pt",
                    "fits", "seconds", "same as bare"], _cap_estimator_rows(rows))
    lines += _cap_regression_note(rows, params.get("regression", {}))
    if "runtime_seconds" in payload:
        lines += [f"Run time of the whole benchmark: {payload['runtime_seconds']:.0f} s.", ""]
    return lines


def _cap_regression_note(rows, regression):
    reference = next((r.get("reference") for r in rows if r.get("reference")), None)
    if not reference:
        return []
    return [
        f"The regression: `make_regression(n_samples={regression.get('n_samples')}, "
        f"n_features={regression.get('n_features')}, n_informative="
        f"{regression.get('n_informative')}, noise={regression.get('noise')}, random_state="
        f"{regression.get('random_state')})`, X times {fmt_eps(regression.get('x_scale'))} "
        f"and y times {fmt_eps(regression.get('y_scale'))} (public constants), the first "
        f"{regression.get('n_train')} rows private, the rest the test split. Utility 1 - "
        "min(1, (y - y_hat)^2 / (4 y_bound^2)), y clipped to y_bound (share of targets "
        f"clipped: {fmt(reference['targets_clipped_by_y_bound'], 4)}); the target "
        f"{regression.get('target')} lies between the test utility of predicting 0, "
        f"{fmt(reference['test_utility_of_zero'], 4)}, and of the true coefficients, "
        f"{fmt(reference['test_utility_of_true_coef'], 4)} (their norm "
        f"{fmt(reference['true_coef_norm'], 2)}, within coef_bound); NAPPLasso at fixed "
        "epsilon, seed 0, on all the private rows: "
        + ", ".join(f"{k.rsplit('_', 1)[-1]}: {fmt(v, 4)}" for k, v in reference.items()
                    if k.startswith("test_utility_at_epsilon_"))
        + ".", ""]


# -- private hyperparameter search (bench_private_search.py) ---------------------------------

_SEARCH_ROWS = (("private_eps_grid", "private search over (epsilon, {p})"),
                ("private_param_grid", "private search over {p}"),
                ("baseline", "GridSearchCV, honest baseline"),
                ("baseline_renyi", "GridSearchCV, honest baseline (Renyi total)"))


def _short_param(param):
    return "lr" if param == "learning_rate" else param


def _chosen_text(chosen, n_runs):
    """The most frequent choice and its count, then how many other choices there were."""
    if not chosen:
        return DASH
    top = chosen[0]
    text = ", ".join(f"{_short_param(k)}={fmt_eps(v)}" for k, v in sorted(top["params"].items()))
    text += f" ({top['count']}/{n_runs})"
    if len(chosen) > 1:
        text += f"; {len(chosen) - 1} other"
    return text


def _search_rows(cell):
    s, plan, param = cell["summary"], cell["plan"], cell["param"]
    n_runs = len(cell["runs"])
    oracle = s["oracle"]
    budget, mechanism = fmt_eps(cell["budget"]), cell["mechanism"]
    rows = []
    for key, label in _SEARCH_ROWS:
        r = s.get(key)
        if r is None:
            continue
        if key.startswith("baseline"):
            guarantee = (f"none for the choice; fits: {fmt_eps(r['basic_epsilon'])} basic"
                         + (f" ({fmt_eps(r['renyi_epsilon'])} Renyi)"
                            if r.get("renyi_epsilon") is not None else "")
                         + (f", delta {r['total_delta']:.2g}" if r["total_delta"] else ""))
            per_fit_key = ("epsilon_per_fit" if key == "baseline"
                           else "renyi_epsilon_per_fit")
            per_fit = (f"{fmt_eps(plan['baseline'][per_fit_key])} × "
                       f"{plan['baseline']['n_fits']} fits")
            trials = str(plan["baseline"]["n_fits"])
        else:
            guarantee = "; ".join(_pair(a) for a in r["a_priori"])
            per_fit = (fmt_eps(r["candidate_epsilon"]) if r["candidate_epsilon"] is not None
                       else ", ".join(fmt_eps(e) for e in plan["eps_grid"]["epsilon"]))
            trials = f"{fmt(r['mean_trials'], 0)} (mean)"
        rows.append([budget, mechanism, label.format(p=_short_param(param)), guarantee,
                     per_fit, fmt(r["median"], 4), fmt_summary(r), fmt(r["gap_points"], 2),
                     fmt(r["within_goal_share"], 2), trials,
                     _chosen_text(r["chosen"], n_runs)])
    for key, label, epsilon in (("oracle", "best single configuration at E (oracle)",
                                 cell["budget"]),
                                ("oracle_at_cap", "best single configuration at cap",
                                 plan["cap"])):
        o = s.get(key)
        if o is None:
            continue
        rows.append([budget, mechanism, label, "no search paid", fmt_eps(epsilon), DASH,
                     fmt_summary(o["best"]), fmt(100 * (oracle["best_mean"] - o["best_mean"]), 2),
                     DASH, "1", f"{_short_param(param)}={fmt_eps(o['best_value'])}"])
    best_np = max(cell["non_private"], key=lambda v: cell["non_private"][v])
    rows.append([budget, mechanism, "non-private best (seed 0)", "none", "inf", DASH,
                 fmt(cell["non_private"][best_np], 4), DASH, DASH, "1",
                 f"{_short_param(param)}={fmt_eps(float(best_np))}"])
    return rows


def _goal_lines(payload):
    params = payload.get("params", {})
    goal_points = params.get("goal_points", 1.0)
    cells = {(c["dataset"], c["budget"], c["mechanism"]): c for c in payload["cells"]}
    if not payload.get("goal"):
        return ["The goal (Adult, E = 1) was not measured in this run.", ""]
    lines = [f"**Goal** (issue 33): at a whole-search budget of epsilon 1 on Adult, the "
             f"released model within {fmt(goal_points, 0)} point of the best single "
             "configuration's accuracy at epsilon 1 (median of the private search against "
             "the oracle's mean):", ""]
    for g in payload["goal"]:
        cell = cells[("adult", 1.0, g["mechanism"])]
        s, plan = cell["summary"], cell["plan"]
        label = dict(_SEARCH_ROWS)[g["search"]].format(p=_short_param(cell["param"]))
        text = (f"- {g['mechanism']}, {label}: median {fmt(g['median'], 4)} (mean "
                f"{fmt(g['mean'], 4)}) against {fmt(g['oracle'], 4)}, gap "
                f"{fmt(g['gap_points'], 2)} points (mean gap {fmt(g['mean_gap_points'], 2)}): "
                + ("**met**" if g["met"] else "**not met**"))
        at_cap = s.get("oracle_at_cap")
        if not g["met"] and at_cap is not None:
            repetition = 100 * (g["oracle"] - at_cap["best_mean"])
            selection = 100 * (at_cap["best_mean"] - g["median"])
            largest = (plan["cap"] if g["search"] == "private_param_grid"
                       else max(plan["eps_grid"]["epsilon"]))
            pure = not plan["a_priori"][g["search"]][1]
            why = ("in pure DP the repetition costs 2 + eta trials for the stopping law of "
                   "shape eta (2 under the default logarithmic law), "
                   "the noisy row count a share of the budget and the noisy score a "
                   "share of each trial" if pure else
                   "Renyi accounting of the repetition (its secret number of trials, "
                   "mean " + fmt(plan["mean_trials"][g["search"]], 0) + ") and of the "
                   "noisy score and row count")
            text += (f". Each trial's model gets at most epsilon {fmt_eps(largest)} of the "
                     f"budget 1 ({why}); the best single configuration at the cap "
                     f"{fmt_eps(plan['cap'])} reaches {fmt(at_cap['best_mean'], 4)}"
                     + (f" (median {fmt(at_cap['best']['median'], 4)})"
                        if "median" in at_cap["best"] else "")
                     + f": {fmt(repetition, 2)} points of the gap are the cap's, "
                     f"{fmt(selection, 2)} the noisy selection's"
                     + (" (negative: the search's median is above that configuration's "
                        "mean)" if selection < 0 else ""))
        lines.append(text + ".")
    return lines + [""]


MARGIN_POINTS = 0.5
"""The private search's median above the best single configuration's at the cap by more
than this (in points) is reported as selection among noise draws."""


def _cell_name(cell):
    return f"{cell['dataset']} E = {fmt_eps(cell['budget'])} {cell['mechanism']}"


def _search_comparisons(cells):
    """Which selection wins where, from the medians in the tables."""
    key = "private_param_grid"
    beaten = [c for c in cells if c["summary"]["baseline"]["median"]
              >= c["summary"][key]["median"]]
    renyi = [c for c in cells if "baseline_renyi" in c["summary"]]
    renyi_wins = [c for c in renyi if c["summary"]["baseline_renyi"]["median"]
                  >= c["summary"][key]["median"]]
    eps_grid = [c for c in cells if c["summary"]["private_eps_grid"]["median"]
                > c["summary"][key]["median"]]
    above_cap = [c for c in cells if "median" in c["summary"].get("oracle_at_cap", {}).get(
        "best", {}) and c["summary"][key]["median"] - c["summary"]["oracle_at_cap"]["best"][
            "median"] > MARGIN_POINTS / 100]
    lines = [
        f"Against the honest baseline (basic composition), the private search over the "
        f"hyperparameter alone has the higher median in {len(cells) - len(beaten)} of "
        f"{len(cells)} cells" + (": the baseline's is as high or higher in "
                                 + "; ".join(_cell_name(c) for c in beaten)
                                 if beaten else "") + "."]
    if renyi:
        lines[-1] += (f" DP-SGD's baseline counted by Renyi composition (each fit at "
                      f"several times the basic share) reaches the private search's median "
                      f"or more in {len(renyi_wins)} of {len(renyi)} cells"
                      + (": " + "; ".join(_cell_name(c) for c in renyi_wins)
                         if renyi_wins else "") + ".")
    lines += ["", f"Searching epsilon as well (the larger grid) gives a higher median than "
              f"the hyperparameter alone in {len(eps_grid)} of {len(cells)} cells"
              + (": the grid's smaller epsilons seldom pay (the budget's cap is the same, "
                 "and a larger grid spreads the trials over weaker candidates)."
                 if 2 * len(eps_grid) < len(cells) else "."), ""]
    if above_cap:
        lines += [f"The search's median is more than {fmt(MARGIN_POINTS, 1)} points above "
                  "the median of the best single configuration fitted at the cap (what "
                  "each trial gets) in: "
                  + "; ".join(f"{_cell_name(c)} ({fmt(c['summary'][key]['median'], 4)} "
                              f"against {fmt(c['summary']['oracle_at_cap']['best']['median'], 4)})"
                              for c in above_cap)
                  + ". Each trial draws fresh noise and only the best-scoring model is "
                  "released, so the search also selects among noise draws: where one "
                  "draw can ruin a model (output perturbation at a small epsilon) this "
                  "filters out the bad ones.", ""]
    return lines


def private_search(payload, timing=None):
    """``bench_private_search.py``: private search against the honest baseline and the oracle."""
    params = payload.get("params", {})
    seeds = params.get("seeds")
    lines = setting(payload, f"random_state {_seed_list(seeds)} for the private searches "
                    "(reproducibility mode, an independent stream per trial) and the oracle "
                    "fits; the baseline's fits use random_state=None (fresh noise for every "
                    "fold fit, so the baseline is not reproducible run to run)",
                    params.get("neighboring", NOT_RECORDED)) + [""]
    if payload.get("uncommitted_skdp_files"):
        lines += ["Measured on the git revision above plus uncommitted changes to: "
                  + ", ".join(f"`{f.split()[-1]}`" for f in payload["uncommitted_skdp_files"])
                  + ".", ""]
    rows_used = params.get("rows", {})
    available = params.get("n_train_available", {})
    subsampled = ", ".join(
        f"{name}: {n} of its {available.get(name, NOT_RECORDED)} training rows"
        for name, n in rows_used.items() if n is not None)
    lines += [
        f"Test accuracy of the released model over {len(seeds or [])} repetitions per "
        "cell, on each dataset's test split. Every search is at its defaults apart from "
        "the grid and the whole-search budget E. Private searches: "
        "`PrivateGridSearchCV(est, grid, epsilon=E)` (pure DP for objective and output "
        f"perturbation; `delta={params.get('dpsgd_delta', 1e-5):g}`, Renyi accounting, "
        "for DP-SGD) over (epsilon, C or learning rate), the grid's epsilons fractions of "
        "the cap, and over C or learning rate alone, every candidate at the plan's "
        "candidate epsilon (cap). Honest baseline: scikit-learn's `GridSearchCV(est("
        f"epsilon=e_b), grid, cv={params.get('cv', 3)})` over the same C or learning "
        "rate grid with e_b = E / (candidates × folds + 1), so that its total by basic "
        "composition (`privacy_cost_of_search`, every fold fit and the refit counted) is "
        "E (DP-SGD: each fit also at delta 1e-5 / fits; a second DP-SGD baseline gives "
        "each fit the largest epsilon whose fits compose by Renyi to (E, 1e-5), the "
        "headline total `privacy_cost_of_search` reports for DP-SGD). Its choice is covered by no "
        "guarantee even then: the exact cross-validation scores that choose are not "
        "noised. Oracle: each grid value fitted alone at epsilon E on the whole training "
        "split, mean over the seeds; the best value's mean is the reference (no search "
        "paid), and the same at the cap shows what the repetition's price alone costs. "
        + (f"Public subsamples ({subsampled}; numpy default_rng("
           f"{params.get('subsample_seed')}), without replacement); every test row is "
           "kept. " if subsampled else "")
        + "Columns: whole-search guarantee (a priori, from `privacy_report_`; the "
        "baseline's counted total); epsilon of each fit (the private searches' "
        "candidates); median and mean ± sem test accuracy; gap: the oracle's mean minus "
        "the median, in points (for the oracle at the cap: the oracle at E minus it); "
        f"share of repetitions within {fmt(params.get('goal_points', 1.0), 0)} point of "
        "the oracle; trials (the private searches' secret number of trials has this "
        "mean; the baseline's fits); most frequent choice (count over the repetitions).",
        ""]
    header = ["E", "mechanism", "selection", "whole-search guarantee", "epsilon per fit",
              "median", "mean ± sem", "gap (pt)", "within 1 pt", "trials / fits", "chosen"]
    for dataset in dict.fromkeys(c["dataset"] for c in payload["cells"]):
        rows = []
        for cell in payload["cells"]:
            if cell["dataset"] == dataset:
                rows += _search_rows(cell)
        lines += [f"### {dataset}", ""] + table(header, rows)
    lines += _goal_lines(payload)
    lines += _search_comparisons(payload["cells"])
    refused = [c for c in payload["cells"] if c["plan"].get("refusal_at_param_cap")]
    if refused:
        c = refused[0]
        lines += [
            f"A plan refused: for {c['mechanism']} the (epsilon, "
            f"{_short_param(c['param'])}) grid with its largest epsilon at the "
            f"{_short_param(c['param'])}-only search's cap ({fmt_eps(c['plan']['cap'])} at "
            f"E = {fmt_eps(c['budget'])}) does not fit: \"{c['plan']['refusal_at_param_cap']}\" "
            "The larger grid has a larger default mean number of trials (twice the grid's "
            "size), which Renyi accounting charges; its epsilons are fractions of the "
            f"cap at that mean instead ({fmt_eps(c['plan']['eps_grid_cap'])}). Cells "
            "concerned: " + ", ".join(f"{x['dataset']} E = {fmt_eps(x['budget'])}"
                                      for x in refused) + ".", ""]
    log = payload.get("run_log") or []
    if "runtime_seconds" in payload:
        lines += [f"Run time: {payload['runtime_seconds']:.0f} s in all ("
                  + "; ".join(f"E = {', '.join(fmt_eps(b) for b in r['budgets'])}: "
                              f"{r['seconds']:.0f} s on {r['n_jobs']} joblib worker(s)"
                              for r in log) + ").", ""]
    return lines


def scaling(payload, timing=None):
    """``bench_scaling.py``: fit time and peak memory against scikit-learn, per design."""
    params = payload.get("params", {})
    lines = setting(payload, _seed_list(params.get("seeds")),
                    params.get("neighboring", NOT_RECORDED)) + [""]
    lines += [f"Target: fit-time ratio at most {params.get('target_time_ratio', 1.5)} and "
              f"peak-memory ratio at most {params.get('target_memory_ratio', 2.0)} "
              "(skdp / scikit-learn, one BLAS thread, each fit alone in a fresh process, "
              "same run; memory: growth of the peak resident set over the fit). Objective "
              "perturbation, DP-GD and NAPP read X, dense or CSR, in place (the clipping "
              "factors and the intercept column are applied inside the products; NAPP "
              "holds its d x d Gram matrix and one Hessian block); the hinge solver "
              "gives liblinear the clipped rows, a copy of a dense X (new values on a CSR "
              "X's index arrays) only when some row is clipped by more than rounding "
              "(about a tenth of the rows of these designs have norm 1 + 1 ulp and go as "
              "they are); when liblinear's margin partition does not certify, its Huber "
              "path runs over the rows nearest the margin only, the others held on their "
              "side.", ""]
    rows, failures = [], []
    for case, pairs in payload["results"].items():
        for pair, row in pairs.items():
            ours = row["skdp"]
            if ours.get("error"):
                failures.append(f"{case}, {ours['estimator']}: {ours['error']}")
            for reference in row["sklearn"]:
                if reference.get("error"):
                    failures.append(f"{case}, {reference['estimator']}: {reference['error']}")
                rows.append([case, pair, reference["estimator"], fmt(ours.get("time_s"), 3),
                             fmt(reference.get("time_s"), 3),
                             fmt(reference.get("time_ratio"), 2),
                             fmt(ours.get("memory_mb"), 1),
                             fmt(reference.get("memory_mb"), 1),
                             fmt(reference.get("memory_ratio"), 2)])
    lines += table(["design", "mechanism", "scikit-learn", "skdp s", "sklearn s",
                    "time ratio", "skdp MB", "sklearn MB", "memory ratio"], rows)
    lines += [""] + (["Fits that failed: " + "; ".join(failures) + "."] if failures
                     else ["Every fit succeeded."]) + [""]
    return lines + _scaling_floors(payload["results"]) + _interleaved_ratios(timing)


def _interleaved_ratios(timing):
    """``scaling_timing.json`` (``bench_scaling --interleaved``): each pair's fits timed in
    turn in one process, the median of the per-round ratios."""
    if not timing:
        return []
    env, params = timing.get("environment", {}), timing.get("params", {})
    rows = [[label, fmt(r["ours_s"], 3), fmt(r["reference_s"], 3), fmt(r["ratio"], 2),
             f"{fmt(r['ratio_range'][0], 2)} to {fmt(r['ratio_range'][1], 2)}",
             " to ".join(fmt(v, 1) for v in r.get("load_average", []))]
            for label, r in timing["ratios"].items()]
    return (["Interleaved ratios (`python -m benchmarks.bench_scaling --interleaved "
             f"{params.get('rounds', '?')}`, git {env.get('git_sha') or NOT_RECORDED}, "
             f"date {env.get('date') or NOT_RECORDED}): each pair fitted in turn, "
             f"{params.get('rounds', '?')} rounds after a warm-up fit of each, one BLAS "
             "thread, wall time, defaults unless stated; the figure is the median of the "
             "per-round ratios. Taken on a shared 2-core machine (the 1-minute load "
             "average before and after is given): the ratios move with the load. Goals "
             "(issue 48): sparse pairs at most "
             f"{params.get('target_time_ratio', 1.5)}, small batches and persons over rows "
             f"at most {params.get('target_small_batch_ratio', 1.3)}.", ""]
            + table(["pair (skdp / reference)", "skdp s", "reference s", "ratio",
                     "range", "load"], rows) + _interleaved_floors(timing["ratios"])
            + _interleaved_memory(timing.get("memory"), params))


def _interleaved_memory(memory, params):
    """The sparse pairs' peak memory (``bench_scaling.sparse_memory``), against the goal."""
    if not memory:
        return []
    goal = params.get("target_memory_ratio", 2.0)
    rows = [[label, fmt(r["ours_mb"], 1), fmt(r["reference_mb"], 1), fmt(r["ratio"], 2),
             NOT_RECORDED if r["ratio"] is None else ("yes" if r["ratio"] <= goal else "no"),
             fmt(r["data_mb"], 1)]
            for label, r in memory.items()]
    rounds = next(iter(memory.values())).get("rounds", "?")
    return ([f"Peak memory of the sparse pairs on the RCV1-shaped CSR 50000 x 50000 (0.1 %) "
             "design in the same run: each fit alone in a fresh "
             f"process, the two sides alternating for {rounds} rounds, one BLAS thread, "
             "defaults; memory is the growth of the process's peak resident set (VmHWM) "
             "over its resident set after loading the data and a warm-up fit, so "
             "allocations outside Python (liblinear's copy of the rows) count; the figures "
             f"are the medians, the ratio theirs. Goal (issue 48): at most {goal}x.", ""]
            + table(["pair (skdp / reference)", "skdp MB", "reference MB", "ratio",
                     f"at most {goal}x", "CSR data MB"], rows)
            + _memory_floor(memory, params))


def _memory_floor(memory, params):
    """DP-SGD's memory floor against SGDClassifier's, and the goal re-scoped to it."""
    for label, r in memory.items():
        if r.get("floor_mb") is None or r["ours_mb"] is None:
            continue
        over, goal = params.get("target_memory_over_floor", 1.5), params.get(
            "target_memory_ratio", 2.0)
        measured = r["ours_mb"] / r["floor_mb"]
        below = r["floor_ratio"] is not None and r["floor_ratio"] > goal
        return [f"{label}: a mini-batch DP-SGD with defaults must hold, with numpy/scipy, "
                "four vectors of the coefficients' size (iterate, tail sum, momentum, "
                "the step's product or noise) and its Poisson batch gathered as CSR rows: a floor "
                f"of {r['floor_mb']:.1f} MB, {fmt(r['floor_ratio'], 1)}x SGDClassifier's "
                f"{r['reference_mb']:.2f} MB (one vector updated in place, row by row), so "
                f"the {goal:g}x goal is {'below' if below else 'above'} the floor. "
                "Re-scoped goal: DP-SGD at most "
                f"{over:g}x its floor; measured {measured:.2f}x ("
                f"{'met' if measured <= over else 'not met'}; above the floor: the targets, "
                "clip factors and row norms, three vectors of n, and the batch's scores and "
                "residuals).", ""]
    return []


def _interleaved_floors(ratios):
    """The parts of a DP-SGD fit timed alone in the same rounds, over the reference."""
    notes = []
    for label, r in ratios.items():
        others = r.get("others_s") or {}
        if others and r.get("reference_s"):
            notes.append(f"{label}: " + ", ".join(
                f"{name} {fmt(seconds, 3)} s ({fmt(seconds / r['reference_s'], 2)}x)"
                for name, seconds in others.items()))
    if not notes:
        return []
    return ["Parts of the DP-SGD fits timed alone in the same rounds (median seconds, and "
            "over the reference's median): the fit's n_steps Gaussian draws of the "
            "coefficients' size from its noise stream (AES-128 in counter mode), its "
            "Poisson samples as a fit draws them, the gathers of those batches' rows, "
            "and those gathers with the two products a step makes with its batch (the "
            "scores, then the transposed product with the residuals). "
            + "; ".join(notes) + ".", ""]


def _scaling_floors(results):
    """What the certificate and the noise cost, where the runs recorded it: the sum-form
    gradient norms at which LogisticRegression stopped, Lasso's sum-form KKT residual at
    its stop, and DP-SGD's noise draws alone against SGDClassifier's whole fit."""
    norms, draws, kkt, generators = {}, [], [], set()
    for case, pairs in results.items():
        for row in pairs.values():
            for reference in row["sklearn"]:
                if reference.get("gradient_norm") is not None:
                    norms.setdefault(reference["estimator"], []).append(
                        reference["gradient_norm"])
                if reference.get("kkt_residual") is not None:
                    kkt.append(reference["kkt_residual"])
            ours, theirs = row["skdp"], row["sklearn"][0]
            if ours.get("noise_draw_s") is not None and theirs.get("time_s"):
                share = ours["noise_draw_s"] / theirs["time_s"]
                if share >= 0.05:
                    draws.append(f"{case} {fmt(ours['noise_draw_s'], 3)} s ({fmt(share, 2)}x)")
                    generators.add(ours.get("noise_generator"))
    lines = []
    if norms:
        ranges = [f"{name} {min(values):.2g} to {max(values):.2g}"
                  for name, values in norms.items()]
        lines += ["Sum-form gradient norm of its own objective where scikit-learn's "
                  "LogisticRegression stopped, over the designs: " + "; ".join(ranges)
                  + ". Objective perturbation certifies at most its tol, 1e-8, on the "
                  "perturbed objective: the distance to the exact minimiser that its "
                  "output noise covers (docs/privacy/objective_perturbation.rst).", ""]
    if kkt:
        lines += [f"Largest violation of the optimality conditions of Lasso's objective in "
                  f"sum form where it stopped, over the designs: {min(kkt):.2g} to "
                  f"{max(kkt):.2g}. NAPPLasso certifies at most its tol, 1e-8 (and its "
                  "multiplier search solves to 1e-10), on the perturbed objective: the "
                  "distance to the exact minimiser that its output noise covers "
                  "(docs/privacy/napp.rst).", ""]
    if draws:
        lines += ["DPSGDClassifier's noise draws alone (n_steps_ vectors of the "
                  f"coefficients' size from {_step_noise_source(generators)}), and their "
                  "time as a multiple of SGDClassifier's whole fit, where it is at least "
                  "0.05x: " + "; ".join(draws) + ".", ""]
    return lines


def _step_noise_source(generators):
    """The generator the recorded noise draws came from: a run that names none timed
    ChaCha20, DP-SGD's step noise before it moved to AES-128 in counter mode."""
    if generators == {"AESCounter"}:
        return "AES-128 in counter mode, the stream a fit's steps draw from"
    return ("ChaCha20: this run predates DP-SGD's step noise from AES-128 in counter "
            "mode, about 0.4x ChaCha20's time per normal, so a fit's draws now take less")



def scale_out(payload, timing=None):
    """``bench_scale_out.py``: one private fit on a dask array read from zarr."""
    params = payload["params"]
    lines = setting(payload, _seed_list(params.get("seeds")),
                    params.get("neighboring", NOT_RECORDED)) + [""]
    gib = params["memory_limit_gib"]
    lines += [f"Data: {params['rows']:,} x {params['features']} float64 "
              f"({payload['data_gb']:.2f} GB; {payload['store_bytes'] / 1e9:.2f} GB on disk, "
              f"{params['store']}, written by the workers in "
              f"{payload['store_write_s']:.0f} s; chunks of {params['chunk_rows']:,} rows), "
              "generated block by block on the workers: no process ever holds it. "
              f"Cluster: dask LocalCluster, {params['workers']} worker processes of one "
              f"thread, each with memory_limit {gib:g} GiB "
              f"({params['workers'] * gib * 2**30 / 1e9:.1f} GB in all, against "
              f"{payload['data_gb']:.1f} GB of data); every pass reads every block from the "
              f"store again. Privacy: epsilon {fmt_eps(params['epsilon'])} (DP-SGD: delta "
              f"{params['delta']:g}), data_norm 1; dask-ml's LogisticRegression (L-BFGS, "
              f"C = 1, max_iter {params['dask_ml_max_iter']}) is the non-private "
              "reference. Memory: peak resident set (VmHWM, reset before each fit) of the "
              "driver and of each worker process. Accuracy on "
              f"{params['test_rows']:,} rows generated apart. The two cores were shared "
              "with other jobs during the run: times vary from run to run.", ""]
    versions = params.get("scale_out_versions")
    if versions:
        lines[-2] += " Scale-out stack: " + ", ".join(
            f"{k} {v}" for k, v in versions.items() if v) + "."
    rows, failures = [], []
    for name, fit in payload["fits"].items():
        if fit.get("error"):
            failures.append(f"{name}: {fit['error']}")
            continue
        passes = fit.get("passes")
        rows.append([name, fmt(fit["time_s"], 1), DASH if passes is None else str(passes),
                     DASH if passes is None else fmt(fit["time_per_pass_s"], 2),
                     fmt(fit["test_accuracy"]), fmt(fit["driver_peak_mb"], 0),
                     fmt(fit["driver_growth_mb"], 1),
                     " / ".join(fmt(p, 0) for p in fit["worker_peak_mb"])])
    lines += table(["fit", "seconds", "passes", "seconds per pass", "test accuracy",
                    "driver peak MB", "driver growth MB", "worker peaks MB"], rows)
    lines += (["Fits that failed: " + "; ".join(failures) + ".", ""] if failures else [])
    lines += ["Passes: the reductions over the partitions, plus the input check and the "
              "clipping pass; seconds per pass divide the whole fit (the noise calibration "
              "included) by them.", ""]
    places = payload["pass_times"]
    kinds = [k for k in next(iter(places.values())) if k != "rows"]
    reference = places.get("numpy, rows in the driver's memory")
    rows = []
    for place, row in places.items():
        cells = [place, f"{row['rows']:,}"]
        for kind in kinds:
            ratio = (row[kind] / row["rows"]) / (reference[kind] / reference["rows"])
            cells += [fmt(row[kind], 3), fmt(ratio, 2)]
        rows.append(cells)
    header = ["rows live", "rows"]
    for kind in kinds:
        header += [f"{kind} s", "per row vs numpy"]
    lines += ["Seconds per pass, one pass at a time (best of 3; 1 on all the rows), and "
              "per row against numpy on rows in the driver's memory:", ""]
    return lines + table(header, rows)


def scale_out_persons(payload, timing=None):
    """``bench_scale_out_persons.py``: person-level fits on a visit table read from zarr."""
    params = payload["params"]
    lines = setting(payload, _seed_list(params.get("seeds")),
                    params.get("neighboring", NOT_RECORDED)) + [""]
    gib = params["memory_limit_gib"]
    lines += [f"Data: a visit table of {params['rows']:,} x {params['features']} float64 "
              f"({payload['data_gb']:.2f} GB; {payload['store_bytes'] / 1e9:.2f} GB on disk, "
              f"{params['store']}, written by the workers in "
              f"{payload['store_write_s']:.0f} s; chunks of {params['chunk_rows']:,} rows) "
              f"of {params['persons']:,} persons of 1 to {params['largest_person']} rows by "
              "a public rule (persons span the chunks). Cluster: dask LocalCluster, "
              f"{params['workers']} worker processes of one thread, memory_limit {gib:g} GiB "
              f"each. Privacy: epsilon {fmt_eps(params['epsilon'])} (DP-SGD: delta "
              f"{params['delta']:g}, sample_rate {params['dpsgd']['sample_rate']:g}, epochs "
              f"{params['dpsgd']['epochs']:g}), data_norm 1, max_rows_per_group 1. Routes: "
              "\"person\" fits with groups on the dask array (DP-SGD sums each step's "
              "sampled persons' clipped gradients by person inside each partition, the "
              "persons spread over partitions added by person on the workers, X read in "
              "place; objective perturbation weighs each row by a person-keyed "
              "reduction); \"row\" fits the same array "
              "without groups (one row the unit); \"person, in memory\" fits with groups "
              f"the first {params['subsample_rows']:,} rows (whole persons) in the driver's "
              f"memory. Accuracy on {params['test_rows']:,} rows generated apart. Passes: "
              "the solver's reductions over the partitions, by rows or by person (the "
              "input checks, the person codes and sizes are further passes, not counted). "
              "The driver's "
              "peak includes the test rows and the subsample it holds; its growth is over "
              "the fit. The two cores were shared with other jobs during the run: times vary "
              "from run to run.", ""]
    if payload.get("finished") is False:
        lines += ["The run was stopped before its last fit: the table holds the fits it "
                  "finished (the results are written after every fit).", ""]
    rows = []
    for name, routes in payload["fits"].items():
        for route, fit in routes.items():
            if fit.get("error"):
                rows.append([name, route, f"failed: {fit['error']}"] + [DASH] * 5)
                continue
            rows.append([name, route, fmt(fit["time_s"], 1), str(fit["passes"]),
                         fmt(fit["test_accuracy"]), fmt(fit["driver_peak_mb"], 0),
                         fmt(fit["driver_growth_mb"], 1),
                         " / ".join(fmt(p, 0) for p in fit["worker_peak_mb"])])
    return lines + table(["estimator", "route", "seconds", "passes", "test accuracy",
                          "driver peak MB", "driver growth MB", "worker peaks MB"], rows)


def scale_out_ssp(payload, timing=None):
    """``bench_scale_out_ssp.py``: SSPLinearRegression on the scale-out zarr store."""
    params = payload["params"]
    lines = setting(payload, _seed_list(params.get("seeds")),
                    params.get("neighboring", NOT_RECORDED)) + [""]
    load = params.get("load_average")
    lines += [f"Data: the store of the scale-out benchmark, {params['rows']:,} x "
              f"{params['features']} float64 ({payload['data_gb']:.2f} GB; written by the "
              f"workers in {payload['store_write_s']:.0f} s; chunks of "
              f"{params['chunk_rows']:,} rows), with the rows' linear score as the target "
              f"(`X w + 0.5 e`); {params['workers']} worker processes of one thread, "
              f"memory_limit {params['memory_limit_gib']:g} GiB each. "
              f"SSPLinearRegression(epsilon={fmt_eps(params['epsilon'])}, "
              f"delta={params['delta']:g}, data_norm={params['data_norm']:g}, "
              f"y_bound={params['y_bound']:g}). Reads of the data: the tasks that read a "
              "block of X from the store, over the number of blocks. R^2 on "
              f"{params['test_rows']:,} rows generated apart."
              + (f" Load average {load[0]:.1f} on 2 cores at the end of the run: times "
                 "are noisy." if load else ""), ""]
    rows = []
    for label, fit in (("rows", payload["fit"]), (
            f"persons of {params['person_rows']} rows, spread over partitions",
            payload["fit_persons"])):
        rows.append([label, fmt(fit["time_s"], 1), fmt(fit["reads_of_the_data"], 2),
                     fmt(fit["test_r2"]), fit["neighboring"], fmt(fit["driver_peak_mb"], 0),
                     fmt(fit["driver_growth_mb"], 1),
                     " / ".join(fmt(p, 0) for p in fit["worker_peak_mb"])])
    lines += table(["fit", "seconds", "reads of the data", "test R^2", "relation",
                    "driver peak MB", "driver growth MB", "worker peaks MB"], rows)
    times = payload["times"]
    read = times["read pass"]["runs_s"]
    lines += [f"Interleaved, {params['repeats']} rounds (median seconds; the median over "
              "the rounds of each round's ratio to its read of the data):", ""]
    lines += table(["work", "median s", "runs s", "ratio to a read"],
                   [[name, fmt(t["median_s"], 1), " / ".join(fmt(v, 1) for v in t["runs_s"]),
                     fmt(statistics.median(v / r for v, r in zip(t["runs_s"], read)), 2)]
                    for name, t in times.items()])
    sub = payload["subsample"]
    return lines + [f"Against memory, on the first {sub['rows']:,} rows: the in-memory SSP "
                    f"fit's test R^2 {fmt(sub['ssp_in_memory_test_r2'])}, least squares' "
                    f"{fmt(sub['least_squares_test_r2'])}; the dask fit on those rows is the "
                    "in-memory model within "
                    f"{sub['dask_equals_memory_max_relative_gap']:.1e} (relative).", ""]


def paper_table(payload, timing=None):
    """``bench_paper_table.py``: accuracy per method and dataset, next to Yu et al.'s Table 2."""
    params = payload.get("params", {})
    results = payload["results"]
    paper = params.get("paper", {})
    lines = setting(payload, _seed_list(params.get("final_seeds")),
                    params.get("neighboring", NOT_RECORDED)) + [""]
    shaped = [name for name in results if name.endswith("-shaped")]
    lines += ["Test accuracy in percent, mean ± standard error over the final seeds (MNIST "
              f"and the shaped designs: {len(params.get('final_seeds_large', []))} seeds), "
              "paper's number in brackets. Hyperparameters chosen on a validation split of "
              "the training rows (never the test rows), without noise and outside the "
              "reported epsilon; the defaults rows give only epsilon and delta = 1/n_train^2."
              + (" The *-shaped columns are synthetic stand-ins, not comparable with the "
                 "paper's numbers." if shaped else ""), ""]
    names = list(results)
    methods = []
    for result in results.values():
        methods += [m for m in result["methods"] if m not in methods]
    methods += [m for m in paper if m not in methods]
    rows = []
    for method in methods:
        cells = [method]
        for name in names:
            cell = fmt_summary(results[name]["methods"].get(method, {}).get("test"), 1,
                               scale=100.0)
            reference = paper.get(method, {}).get(name)
            cells.append(cell + (f" ({reference})" if reference is not None else ""))
        rows.append(cells)
    header = ["method"] + [f"{name} (epsilon {fmt_eps(results[name]['epsilon'])}, "
                           f"n {results[name]['n_train']})" for name in names]
    lines += table(header, rows)
    chosen = [[name, method, ", ".join(f"{k}={v}" for k, v in row["chosen"].items())]
              for name in names for method, row in results[name]["methods"].items()
              if "chosen" in row]
    lines += ["Settings chosen on the validation split:", ""]
    lines += table(["dataset", "method", "setting"], chosen)
    return lines + _rerun_notes(payload, "methods")


def _rerun_notes(payload, key):
    """One line per partial rerun recorded in the JSON: which rows, where and when."""
    lines = []
    for rerun in payload.get("reruns", []):
        env = rerun.get("environment") or {}
        lines += [f"Rerun at git revision {env.get('git_sha') or NOT_RECORDED} "
                  f"({env.get('date') or NOT_RECORDED}), the other rows unchanged: "
                  f"{', '.join(rerun[key])} on {', '.join(rerun['datasets'])}.", ""]
    return lines

def _params_text(params):
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in params.items()) or "defaults"


def defaults(payload, timing=None):
    """``bench_defaults.py``: each estimator's defaults against the best of a grid."""
    params = payload.get("params", {})
    results = payload["results"]
    target = params.get("target_points", 1.0)
    lines = setting(payload, _seed_list(params.get("seeds")),
                    params.get("neighboring", NOT_RECORDED)) + [""]
    lines += [f"Test accuracy in percent, mean ± standard error over the seeds (MNIST: "
              f"{_seed_list(params.get('seeds_mnist'))}; output perturbation's grid: "
              f"{params.get('noise_seeds', NOT_RECORDED)} noise draws around one exact "
              "minimiser per C). Each estimator is given only epsilon; the value its "
              "\"auto\" rule chose is in brackets. Output perturbation's default is scored "
              "like its grid, at the C_ its rule chose and with the same noise draws (where "
              "recorded, its real fits over the seeds follow). Gap: the grid's best minus "
              f"the default, in points; the target is at most {fmt(target, 1)}.", ""]
    rows, misses = [], []
    for name, result in results.items():
        for estimator, by_epsilon in result["estimators"].items():
            for epsilon, row in by_epsilon.items():
                resolved = _params_text(row.get("resolved") or {})
                gap = row["gap_points"]
                fits = (f"; fits {fmt_summary(row['default_fits'], 1, 100.0)}"
                        if "default_fits" in row else "")
                rows.append([name, estimator, fmt_eps(float(epsilon)),
                             f"{fmt_summary(row['default'], 1, 100.0)} ({resolved}{fits})",
                             _params_text(row["best"]["params"]),
                             fmt_summary(row["best"]["test"], 1, 100.0), fmt(gap, 2)])
                if gap > target:
                    misses.append(f"{name} {estimator} epsilon {fmt_eps(float(epsilon))}")
    lines += table(["dataset", "estimator", "epsilon", "default", "grid's best setting",
                    "grid's best", "gap"], rows)
    lines += ["Every default is within the target." if not misses else
              "Above the target: " + "; ".join(misses) + ".", ""]
    return lines + _rerun_notes(payload, "estimators")


def person_level(payload, timing=None):
    """``bench_person_level.py``: accuracy at person-level epsilon against the row-level
    fit and the group-privacy route, per estimator."""
    params = payload["params"]
    sizes = payload["person_sizes"]
    lines = setting(payload, _seed_list(params["seeds"]),
                    "add/remove one person (all their rows) for `person` and `group "
                    "privacy`; add/remove one row for `row`") + [""]
    lines += [f"Adult's {payload['rows']} training rows grouped by a public rule into "
              f"{payload['persons']} persons of {sizes['min']} to {sizes['max']} rows "
              f"(mean {sizes['mean']:.1f}); majority rate {payload['majority_rate']:.4f}. "
              f"Epsilon {params['epsilon']:g} (DP-SGD at delta {params['delta']:g}). "
              "`person`: `fit(..., groups=persons)`, the claim covers one person. `row`: "
              f"the row-level fit at the same epsilon, which covers one person of k rows "
              f"only at k epsilon (up to {params['largest_person']} here). `group privacy`: "
              f"the row-level fit at epsilon / {params['largest_person']}, a person-level "
              "claim by group privacy for persons of at most that many rows.", ""]
    rows = []
    for name, routes in payload["results"].items():
        rows.append([name] + [fmt_summary(routes[route]["accuracy"])
                              for route in ("person", "row", "group privacy")])
    return lines + table(["estimator", "person-level (groups)",
                          "row-level, same epsilon (not person-level)",
                          "group privacy (row-level at epsilon / k)"], rows) + [""]


def ssp(payload, timing=None):
    """``bench_ssp.py``: test MSE and R^2 of SSPLinearRegression, AdaSSP, NAPPLasso and
    the non-private fit per task and epsilon."""
    params = payload["params"]
    lines = setting(payload, f"{params['draws']} noise draws per cell (seed 1000 draw + "
                    "100 epsilon), one fixed data split", "add/remove one row") + [""]
    lines += [f"Gaussian methods at delta {payload['delta']:g}; `SSP, pure` and NAPPLasso at "
              "delta 0. Cells: mean ± standard error of the test MSE (R^2 in brackets). SSP "
              "(Gaussian) has a test MSE at most AdaSSP's in "
              f"{100 * payload['share_of_cells_ssp_at_most_adassp']:.0f} % of the cells. "
              f"Run time {payload['runtime_seconds']:.0f} s under a load average of "
              f"{payload['load_average'][0]:.1f} on {_cpus(payload)} CPUs.", ""]
    for task, result in payload["tasks"].items():
        first = next(iter(result["cells"].values()))
        methods = [m for m, value in first.items()
                   if isinstance(value, dict) and "mse" in value]
        lines += [f"**{task}**: {result['n_train']:,} training rows, {result['n_features']} "
                  f"features, data_norm {result['data_norm']:.3g}, y_bound "
                  f"{result['y_bound']:g}; non-private least squares: MSE "
                  f"{fmt(result['nonprivate']['mse'])} (R^2 "
                  f"{fmt(result['nonprivate']['r2'], 3)}).", ""]
        rows = [[fmt_eps(float(epsilon))]
                + [f"{fmt_summary(cell[m]['mse'])} ({fmt(cell[m]['r2']['mean'], 3)})"
                   for m in methods] + [fmt(cell["ssp_over_adassp_mse"], 3)]
                for epsilon, cell in result["cells"].items()]
        lines += table(["epsilon", *methods, "SSP / AdaSSP MSE"], rows)
    return (lines + _ssp_noise_dominated(payload)
            + _ssp_selection(payload.get("selection", {})))


def _ssp_noise_dominated(payload):
    """The noise-dominated cells of ``bench_ssp.py`` against the floor of SSP's family
    (``benchmarks/_ssp_floor.py``), and the issue's two accuracy goals."""
    goal = payload.get("noise_dominated_goal")
    if not goal:
        return []
    lines = ["**Where the noise dominates** (AdaSSP's excess test MSE over least squares "
             "above least squares' own). Test MSE over AdaSSP's of SSP and of the "
             "family's oracles, on the benchmark's seeds, each choosing the ridge with "
             "the test set: one ridge per cell at the shipped split (SSP's very "
             "releases) and at the best split of the Gaussian budget between `X^T X` "
             "and `X^T y` (its share to `X^T X` in brackets); one ridge per draw (it "
             "knows where the draw's noise fell: not a rule); the whole budget on "
             "`X^T y` and the best multiple of it (closed form); predicting 0; and "
             "a private rule, the ridge at least SSP's that minimises an estimate of "
             "the risk from the release "
             "(`docs/privacy/sufficient_statistics.rst`, \"Where the noise "
             "dominates\"):", ""]
    rows = []
    for cell in goal["cells"]:
        floor = payload["tasks"][cell["task"]]["cells"][_epsilon_key(
            payload["tasks"][cell["task"]]["cells"], cell["epsilon"])]["floor"]
        ratios = floor["ratios"]
        rows.append([cell["task"], fmt_eps(cell["epsilon"]), fmt(cell["ratio"], 3),
                     fmt(ratios["shipped_split"], 3),
                     f"{fmt(ratios['best_split'], 3)} ({floor['best_split']:g})",
                     fmt(ratios["per_draw"], 3), fmt(ratios["moment_only_bound"], 3),
                     fmt(ratios["predict_zero"], 3), fmt(ratios["risk_estimate_rule"], 3)])
    lines += table(["task", "epsilon", "SSP", "oracle, shipped split", "oracle, best split",
                    "oracle per draw", "moment only, best multiple", "predict 0",
                    "risk-estimate rule"], rows)
    share = payload["share_of_cells_ssp_at_most_adassp"]
    reachable = [c for c in goal["cells"] if c["reachable"]]
    any_split = [c for c in goal["cells"] if c["reachable_any_split"]]
    limit = goal["goal_ratio"]
    return lines + [
        f"Goals: SSP's test MSE at most AdaSSP's in {100 * share:.0f} % of the cells (goal "
        f"90 %: {'met' if share >= 0.9 else 'not met'}); at most {limit:g} times AdaSSP's "
        f"in {goal['met']} of the {len(goal['cells'])} noise-dominated cells (the goal as "
        f"issued, all of them: {'met' if goal['met'] == len(goal['cells']) else 'not met'}"
        f"). Re-scoped to where the family's oracle at the shipped split reaches it: "
        f"{goal['met_where_reachable']} of {len(reachable)} "
        f"({'met' if goal['met_where_reachable'] == len(reachable) else 'not met'}); at "
        f"the best split the oracle reaches it in {len(any_split)} cells, of which SSP "
        f"meets {sum(c['met'] for c in any_split)}.", ""]


def _epsilon_key(cells, epsilon):
    """The key of ``cells`` whose epsilon is ``epsilon``."""
    return next(key for key in cells if float(key) == epsilon)


def _ssp_selection(selection):
    """The selection study of ``bench_ssp.py``: realised epsilon over the oracle, beside
    the floor (``benchmarks/_selection_floor.py``)."""
    if not selection:
        return []
    lines = ["**Selection** (`EpsilonForUtility` around SSP on the synthetic task, default "
             "parameters but the route's noise, `utility_scale` and `test_rows`; "
             "`epsilon_start` a tenth and `epsilon_max` a hundred times the oracle; target "
             "80 % of the way from the utility of predicting 0 to the non-private fit's, on "
             "the route's scale; oracle: the smallest epsilon at which one fit on all the "
             "rows meets the target on average; floor: the least median ratio of the route "
             "with exact tests (its account and training rows), a lower bound; estimate: "
             "the ratio where the mean curve clears the tests' margin, before the ladder's "
             "overshoot and lucky passes (`benchmarks/_selection_floor.py`); within "
             "tolerance: released and at most "
             "the default tolerance 0.05 below the target):", ""]
    rows = [[f"{int(n):,}", route, f"{cell['target']:.4f}",
             f"{cell['zero_utility']:.4f} / {cell['nonprivate_utility']:.4f}",
             fmt_eps(cell["oracle_epsilon"]), fmt(cell["floor"]["structural"], 2),
             fmt(cell["floor"]["with_tests"], 2), fmt(cell["median_ratio"], 2),
             f"{100 * cell['share_released_meeting_target']:.0f} %",
             f"{100 * cell['share_released_within_tolerance']:.0f} %", str(len(cell["runs"]))]
            for n, routes in selection.items() for route, cell in routes.items()]
    return lines + table(["rows", "route", "target utility", "predict 0 / non-private",
                          "oracle epsilon", "floor, exact tests", "estimate with the tests",
                          "median ex-post / oracle", "released, meeting the target",
                          "released, within tolerance", "runs"], rows) + _ssp_goal(selection)


SSP_GOAL_ROUTE = "Laplace, held-out"
"""The route the selection's goal is set on: the closest to its floor."""


def _ssp_goal(selection):
    """The selection's goal, re-scoped to the floor (``docs/privacy/private_selection.rst``,
    "What the goal should be"), against the measured cells of its route."""
    cells = {n: routes[SSP_GOAL_ROUTE] for n, routes in selection.items()
             if SSP_GOAL_ROUTE in routes}
    if not cells:
        return []
    parts, met = [], True
    for n, cell in cells.items():
        over_floor = cell["median_ratio"] / cell["floor"]["structural"]
        within = cell["share_released_within_tolerance"]
        met = met and over_floor <= 1.3 and within >= 0.9
        parts.append(f"{int(n):,} rows: median {fmt(cell['median_ratio'], 2)} times the "
                     f"oracle, {fmt(over_floor, 2)} times the floor, "
                     f"{100 * within:.0f} % within the tolerance "
                     f"({100 * cell['share_released_meeting_target']:.0f} % meeting the "
                     "target)")
    return [f"Goal (re-scoped to the floor, `docs/privacy/private_selection.rst`): on the "
            f"route closest to its floor ({SSP_GOAL_ROUTE}, a declared `utility_scale`), "
            "a median ex-post epsilon at most 1.3 times the route's floor with at least "
            "90 % of the released models within the target's tolerance; "
            + "; ".join(parts) + f": {'met' if met else 'not met'}.", ""]


CALIBRATION_METRICS = (("mean_probability", "mean predicted probability"),
                       ("log_loss", "log loss"), ("brier", "Brier score"),
                       ("accuracy", "accuracy"))


def dpsgd_calibration(payload, timing=None):
    """``bench_dpsgd_calibration.py``: mean predicted probability, log loss, Brier score
    and accuracy on Adult of DP-SGD's defaults (``intercept_scaling=0.25`` and the
    intercept correction), the earlier defaults, each change alone, ``"auto"`` and
    objective perturbation, per unit of privacy; then the accuracy of the defaults,
    the earlier ones and ``"auto"`` on text-like rows, MNIST and KDDCup99."""
    params = payload["params"]
    lines = setting(payload, _seed_list(params["seeds"]),
                    "add/remove one row (`rows`), add/remove one person with all their "
                    "rows (`persons`, `fit(..., groups=persons)`)") + [""]
    reference = payload["non_private"]
    lines += [f"Adult, epsilon {params['epsilon']:g} (DP-SGD at delta {params['delta']:g}, "
              "objective perturbation pure), figures on the test rows. Test base rate "
              f"{fmt(payload['base_rate_test'])} (training rows "
              f"{fmt(payload['base_rate_train'])}). Non-private `LogisticRegression(C=1e4)`: "
              + ", ".join(f"{label} {fmt(reference[key])}"
                          for key, label in CALIBRATION_METRICS) + ".", ""]
    rows = []
    for unit, estimators in payload["results"].items():
        for name, result in estimators.items():
            rows.append([unit, name] + [fmt_summary(result[key])
                                        for key, _ in CALIBRATION_METRICS]
                        + [fmt_summary(result[key + "_change"])
                           for key in ("log_loss", "accuracy")])
    first = next(iter(next(iter(payload["results"].values()))))
    return lines + table(["unit", "estimator"] + [label for _, label in CALIBRATION_METRICS]
                         + ["log loss change", "accuracy change"], rows) + [
        f"The changes are paired by seed against `{first}` of the same unit.", ""
    ] + _dpsgd_default_accuracy(payload)


ACCURACY_SET_NAMES = {"text": "text-like sparse rows (`examples/text_like_sparse.py`, "
                              "delta 1 / n^2)",
                      "mnist": "MNIST (10 classes, softmax)", "kddcup99": "KDDCup99"}


def _dpsgd_default_accuracy(payload):
    """The accuracy table of ``bench_dpsgd_calibration.py`` (absent from older runs)."""
    if "accuracy" not in payload:
        return []
    params = payload["params"]
    rows = [[ACCURACY_SET_NAMES.get(name, name), epsilon, method,
             fmt_summary(cell["accuracy"]), fmt_summary(cell["change"])]
            for name, by_epsilon in payload["accuracy"].items()
            for epsilon, methods in by_epsilon.items()
            for method, cell in methods.items()]
    return [f"Test accuracy of `DPSGDClassifier` away from Adult (seeds "
            f"{_seed_list(params['accuracy_seeds'])}, mean and standard error; `defaults "
            "before` is `intercept_scaling=1, intercept_correction=False`, `'auto'` the "
            "same with `max_grad_norm='auto'`; the change is paired by seed against "
            "`defaults before`):", ""] + table(
        ["data", "epsilon", "DPSGDClassifier", "accuracy", "change"], rows) + [""]


METRIC_LABELS = (("accuracy", "accuracy"), ("balanced_accuracy", "balanced accuracy"),
                 ("roc_auc", "ROC AUC"), ("brier_score_loss", "Brier score"),
                 ("log_loss", "log loss"), ("mean_squared_error", "MSE"),
                 ("r2", "R^2 (Efron)"))


def _bin_label(k, n_bins):
    low, high = k / n_bins, (k + 1) / n_bins
    return f"({low:g}, {high:g}]" if k else f"[{low:g}, {high:g}]"


def _metric_rows(result, epsilons):
    """One row per metric (and per calibration bin): the exact value on the rows, then
    the median absolute error per unit and epsilon."""
    rows = []
    units = [unit for unit in ("rows", "persons") if unit in result]
    for key, label in METRIC_LABELS:
        rows.append([label, fmt(result["rows"]["exact"][key])] + [
            fmt(result[unit]["errors"][str(e)][key]["median_abs_error"])
            for unit in units for e in epsilons])
    exact = result["rows"]["calibration_exact"]
    n_bins = len(exact["weight"])
    for curve, name, what in (("calibration_true", "true", "share of positives"),
                              ("calibration_pred", "pred", "mean probability")):
        for k in range(n_bins):
            rows.append([f"calibration {_bin_label(k, n_bins)} {what} "
                         f"({exact['weight'][k]:.0f} rows)", fmt(exact[name][k])] + [
                fmt(result[unit]["errors"][str(e)][curve][k]["median_abs_error"])
                for unit in units for e in epsilons])
    return rows


def _goal_text(goal):
    parts = [f"{name.replace('_', ' ')} {fmt(g['error'])} (bound {g['bound']:g}, "
             f"{'**met**' if g['met'] else '**not met**'})" for name, g in goal.items()]
    return "; ".join(parts)


def metrics(payload, timing=None):
    """``bench_metrics.py``: each private metric's median absolute error against the
    exact metric, a private Table 1 beside the exact one, and a private cross-validation
    against the exact ``cross_val_score``."""
    params = payload["params"]
    epsilons = params["epsilons"]
    lines = setting(payload, f"{len(params['draws'])} noise draws per cell (seeds "
                    f"{_seed_list(params['draws'])}); models fitted once (seed "
                    f"{params['model_seed']})",
                    "add/remove one row (`rows`); add/remove one person with all their rows "
                    "(`persons`, each person weighing 1)") + [""]
    goal = params["goal"]
    lines += ["Cells: the median over the draws of the absolute error of the private metric "
              "(pure epsilon, Laplace noise) against the exact scikit-learn metric of the "
              "same predictions on the test rows (for persons: each row weighted 1 / its "
              "person's rows, the quantity the person-level metric estimates). The "
              "`exact` column is the row-level value. Log loss against scikit-learn's on "
              "probabilities clipped to [1e-4, 1 - 1e-4]; MSE and R^2 of the "
              "positive-class probability as a prediction of the 0/1 label "
              "(`y_bound=1`); AUC against the raw scores (32 public bins); calibration: "
              f"the default {params['calibration_bins']} equal bins. Goal at epsilon "
              f"{goal['epsilon']:g} on the rows: accuracy and Brier within "
              f"{goal['accuracy']:g}, AUC within {goal['roc_auc']:g}, each calibration bin "
              f"within {goal['calibration_bin']:g}. Persons: {params['persons']}. Run time "
              f"{payload['runtime_seconds']:.0f} s.", ""]
    header = ["metric", "exact"] + [f"{unit} {fmt_eps(e)}" for unit in ("rows", "persons")
                                    for e in epsilons]
    for dataset, result in payload["metrics"].items():
        lines += [f"### {dataset}", "",
                  f"{result['test_rows']:,} test rows, {result['test_persons']:,} persons; "
                  f"base rate {fmt(result['base_rate'])}.", ""]
        for model, figures in result["models"].items():
            lines += [f"**{model}** ({params['models'][model]}). Goal: "
                      f"{_goal_text(figures['goal'])}.", ""]
            lines += table(header, _metric_rows(figures, epsilons))
    lines += _table1_lines(payload["table1"])
    lines += _cross_validation_lines(payload["cross_validation"], params["cv"])
    return lines


def _table1_lines(study):
    lines = [f"### Table 1 of Adult (training rows) at a total epsilon of "
             f"{fmt_eps(study['epsilon'])}", "",
             f"{study['rows']:,} rows; each release (the count, each column, the label) at "
             f"epsilon {fmt_eps(study['epsilon_per_release'])}. `private`: one draw (seed "
             "0), with its stated noise standard deviation; last column: the median "
             "absolute error over the draws.", ""]
    rows = [[entry["variable"], entry["level"] or DASH, entry["statistic"],
             fmt(entry["exact"]), fmt(entry["private"]), fmt(entry["noise_std"]),
             fmt(entry["median_abs_error"])] for entry in study["table"]]
    return lines + table(["variable", "level", "statistic", "exact", "private", "noise std",
                          "median abs error"], rows)


def _cross_validation_lines(study, cv):
    lines = [f"### Private cross-validation of ObjPertLogisticRegression at a total epsilon "
             f"of {fmt_eps(cv['total_epsilon'])}", "",
             f"`PrivacyLedger({cv['total_epsilon']:g}).cross_validate(..., cv={cv['folds']})`: "
             f"folds by public coins, each fit at epsilon {cv['fit_epsilon']:g}, each fold's "
             f"{cv['scoring']} at {cv['score_epsilon']:g} ({cv['folds'] - 1} x "
             f"{cv['fit_epsilon']:g} + {cv['score_epsilon']:g} per row), against "
             "scikit-learn's exact `cross_val_score` of the same estimator on the same "
             "folds (its own noise draws); each run with fresh noise.", ""]
    rows = []
    for dataset, result in study.items():
        for i, run in enumerate(result["runs"]):
            rows.append([dataset, str(i), fmt(run["private_mean"]), fmt(run["exact_mean"]),
                         fmt(run["private_mean"] - run["exact_mean"]),
                         fmt(max(run["noise_std"])), fmt_eps(run["spent"]["epsilon"])])
    lines += table(["dataset", "run", "private mean", "exact mean", "difference",
                    "largest fold noise std", "ledger spent"], rows)
    first = next(iter(study.values()))["runs"][0]
    return lines + [f"The ledger's statement: \"{first['statement']}\"", ""]


INFERENCE_LABELS = {"linear": "SSPLinearRegression", "logistic": "ObjPertLogisticRegression",
                    "output_logistic": "OutputPertSVM (logistic)"}


def _coverage_range(cell):
    if cell["share_in_0.93_0.97"] is None:
        return DASH
    return f"{fmt(min(cell['coverage']), 3)} to {fmt(max(cell['coverage']), 3)}"


def _kept(cell):
    return cell["draws"] - cell["refused"]


def _hits(cell):
    """Each coefficient's count of covering intervals (its coverage times the kept
    draws)."""
    return [round(coverage * _kept(cell)) for coverage in cell["coverage"]]


def _literal_floor(cell):
    """The probability that an exact interval meets the literal goal with the cell's
    kept draws and coefficients."""
    return goal.cell_pass_probability(
        goal.pass_probability(_kept(cell), goal.NOMINAL, goal.literal_pass),
        len(cell["coverage"]))


def _rescoped_passes(cell):
    """Per coefficient, whether it passes the re-scoped goal."""
    return [goal.rescoped_pass(hits, _kept(cell)) for hits in _hits(cell)]


def _goal_cells(cell):
    """The literal goal (share in the band, met or not, and its floor) and the
    re-scoped goal (coefficients passing, met or not, and the power against a coverage
    of 0.90 per coefficient)."""
    if cell["share_in_0.93_0.97"] is None:
        return [DASH] * 4
    share, passes = cell["share_in_0.93_0.97"], _rescoped_passes(cell)
    met = "yes" if goal.cell_passes(passes) else "no"
    power = 1.0 - goal.pass_probability(_kept(cell), 0.90, goal.rescoped_pass)
    return [f"{fmt(share, 2)} ({'yes' if share >= goal.CELL_SHARE else 'no'})",
            fmt(_literal_floor(cell), 2), f"{sum(passes)}/{len(passes)} ({met})",
            fmt(power, 2)]


def _width_ratios(cell):
    """The median width ratio of the coefficients (their median) and of the
    intercept."""
    if cell["share_in_0.93_0.97"] is None:
        return DASH, DASH
    ratios = cell["median_width_ratio"]
    coefficients = sorted(ratios[1:])
    return fmt(coefficients[len(coefficients) // 2], 2), fmt(ratios[0], 2)


def _goal_statistics(kept_cells):
    """What the re-scoped test risks and detects: its false-failure probability for an
    exact interval (per coefficient at 500 and 100 draws, and over the grid's cells
    with their kept draws) and its power per coefficient."""
    def fails(kept, coverage):
        return 1.0 - goal.pass_probability(kept, coverage, goal.rescoped_pass)

    grid_pass = math.prod(goal.cell_pass_probability(1.0 - fails(_kept(c), goal.NOMINAL),
                                                     len(c["coverage"])) for c in kept_cells)
    power = "; ".join(f"{coverage:.2f}: {fmt(fails(500, coverage), 2)} at 500 draws and "
                      f"{fmt(fails(100, coverage), 2)} at 100" for coverage in (0.90, 0.99))
    return (f"For an exact interval (coverage 0.95) the re-scoped test fails a coefficient "
            f"with probability {fails(500, goal.NOMINAL):.1e} at 500 kept draws and "
            f"{fails(100, goal.NOMINAL):.1e} at 100, and fails some cell of the "
            f"{len(kept_cells)} above with probability {1.0 - grid_pass:.1e} (coefficients "
            f"independent); it detects a coefficient whose true coverage is {power}. It "
            "therefore flags gross miscoverage only: at 100 draws it cannot fail a "
            "coefficient that covers too often (100 hits in 100 give a 99 % interval "
            "reaching below 0.97).")


WIDTH_GOAL = 1.5
FLOOR_SLACK = 1.1


def _width_rescoped(cell):
    """Whether every coordinate's median width is at most :data:`WIDTH_GOAL`, or, where
    the release's first-order width is above it, within :data:`FLOOR_SLACK` of that
    (None when the cell has no first-order width)."""
    floors = cell.get("first_order_width_ratio")
    if floors is None:
        return None
    return all(width <= max(WIDTH_GOAL, FLOOR_SLACK * floor)
               for width, floor in zip(cell["median_width_ratio"], floors))


def _width_goal(cells, largest):
    """The width goal at the largest n and epsilon 1, per cell, and its re-scoped form
    against the release's first-order width (``benchmarks/_interval_width_floor.py``)."""
    chosen = [c for c in cells if c["n"] == largest and c["epsilon"] == 1.0
              and c["share_in_0.93_0.97"] is not None]
    if not chosen:
        return "Width goal: no cell at that size and epsilon 1 gave intervals."
    parts = []
    for c in chosen:
        coefficients, intercept = _width_ratios(c)
        met = max(c["median_width_ratio"]) <= WIDTH_GOAL
        floors = c.get("first_order_width_ratio")
        floor = ("" if floors is None else
                 f", first order {fmt(sorted(floors[1:])[len(floors[1:]) // 2], 2)}x and "
                 f"{fmt(floors[0], 2)}x, re-scoped "
                 f"{'met' if _width_rescoped(c) else 'not met'}")
        parts.append(f"{INFERENCE_LABELS[c['estimator']]} d = {c['d']}, delta "
                     f"{fmt_eps(c['delta'])}: {coefficients}x and {intercept}x "
                     f"({'met' if met else 'not met'}{floor})")
    met = sum(max(c["median_width_ratio"]) <= WIDTH_GOAL for c in chosen)
    rescoped = sum(bool(_width_rescoped(c)) for c in chosen)
    return (f"Width goal (n = {largest:,}, epsilon 1: every coefficient's median width, "
            f"the intercept's included, at most {WIDTH_GOAL}x the non-private interval's): "
            f"met in {met} of {len(chosen)} cells. Re-scoped: at most {WIDTH_GOAL}x, or within "
            f"{FLOOR_SLACK}x of the width the release allows to first order where that is "
            f"larger (the sampling and the noise's exact law on the population's matrix: "
            f"no interval narrower than it covers at large n): met in {rescoped} of "
            f"{len(chosen)}. Median of the coefficients and intercept: "
            + "; ".join(parts) + ".")


def inference(payload, timing=None):
    """``bench_inference.py``: coverage, refusals and width of the intervals of
    ``inference=True`` per cell of the grid, with the literal and the re-scoped
    coverage goal (:mod:`benchmarks._coverage_goal`)."""
    params = payload["params"]
    cells = payload["cells"]
    largest = max(params["sizes"])
    lines = setting(payload, "draw k (k below the cell's draws): data seed 1,000,000 + k, "
                    "noise seed k", "add/remove one row") + [""]
    if params.get("parts"):
        lines += [f"Merged from {len(params['parts'])} runs (`--merge`), with the draws "
                  "per cell of the table's draws column: " + "; ".join(
                      f"sizes {part['sizes']}, estimators {part['estimators']}, epsilons "
                      f"{part['epsilons']}, {part['draws']} draws"
                      + ("" if part["complete"] else " (stopped before its last cells)")
                      for part in params["parts"]) + ".", ""]
    if not payload.get("complete", True):
        lines += ["**Partial grid:** the table holds the cells that were run; the others "
                  f"(of {len(params['estimators'])} estimators, sizes up to {largest:,}) "
                  "are missing.", ""]
    kept = [c for c in cells if c["share_in_0.93_0.97"] is not None]
    literal = sum(c["share_in_0.93_0.97"] >= goal.CELL_SHARE for c in kept)
    floors = [_literal_floor(c) for c in kept]
    rescoped = sum(goal.cell_passes(_rescoped_passes(c)) for c in kept)
    lines += ["Coverage of the population parameter by the nominal 95 % intervals, per "
              "coefficient (the intercept's included), over the kept fits (those not "
              "refused). Literal goal: the share of coefficients whose coverage is in "
              "[0.93, 0.97], met when at least 0.9; its floor is the probability that an "
              "exact interval (coverage 0.95, coefficients independent) meets it with the "
              "cell's kept draws. Re-scoped goal: a coefficient passes when its 99 % "
              "Clopper-Pearson interval of coverage meets [0.93, 0.97]; the cell when at "
              "least 0.9 of its coefficients pass; power: the probability that the test "
              "fails a coefficient of true coverage 0.90 at the cell's kept draws. Width: "
              "the median over draws of the private interval's width over the non-private "
              "interval's on the same data, median of the coefficients and the intercept's. "
              "A cell whose fits were all refused has dashes.", "",
              f"Over the {len(kept)} cells not refused in every draw: literal goal met in "
              f"{literal} (an exact interval would meet it in {fmt(sum(floors), 1)} on "
              f"average); re-scoped goal met in {rescoped}. "
              + _goal_statistics(kept), "", _width_goal(cells, largest), ""]
    rows = [[INFERENCE_LABELS[c["estimator"]], f"{c['n']:,}", str(c["d"]), fmt_eps(c["epsilon"]),
             fmt_eps(c["delta"]), str(c["draws"]), str(_kept(c)), fmt(c["refusal_rate"], 3),
             _coverage_range(c), *_goal_cells(c), *_width_ratios(c)]
            for c in cells]
    return lines + table(["estimator", "n", "d", "epsilon", "delta", "draws", "kept",
                          "refused", "coverage", "literal (in band)", "literal floor",
                          "re-scoped (passing)", "power at 0.90", "width (coefficients)",
                          "width (intercept)"], rows)


def inference_adult(payload, timing=None):
    """``bench_inference_adult.py``: the private summary beside statsmodels' Logit."""
    params = payload["params"]
    over = payload["share_contains_over_seeds"]
    table_seed = payload.get("table_seed", 0)
    lines = setting(payload, f"noise seed {table_seed} for the table (the first from 0 whose "
                    f"intervals were not refused); 0..{params['seeds'] - 1} for the share over "
                    "seeds", "add/remove one row") + [""]
    lines += [f"ObjPertLogisticRegression(inference=True, epsilon={fmt_eps(params['epsilon'])}, "
              f"delta={fmt_eps(params['delta'])}, data_norm={fmt_eps(params['data_norm'])}) "
              f"and statsmodels' Logit on the same {params['n_train']:,} training rows and "
              f"features: {', '.join(params['categorical'])} reference-coded "
              "(OneHotEncoder(drop='first'), declared categories) and the numeric columns "
              "scaled to [-1, 1] by declared bounds. Share of coefficients whose private "
              f"interval contains the non-private estimate: {fmt(payload['share_contains'], 2)} "
              f"(seed {table_seed}); over {params['seeds']} seeds median {fmt(over['median'], 2)}, "
              f"range {fmt(over['min'], 2)} to {fmt(over['max'], 2)}, {over['refused']} "
              f"refused. The full one-hot encoding beside the intercept (collinear) was "
              f"refused in {payload['full_one_hot_refused']} of {params['seeds']} seeds.", ""]
    columns = ("private coef", "private std err", "private lower", "private upper",
               "statsmodels coef", "statsmodels std err", "statsmodels lower",
               "statsmodels upper")
    rows = [[row["name"], *(fmt(row[c], 3) for c in columns), "yes" if row["contains"] else "no"]
            for row in payload["table"]]
    return lines + table(["coefficient", *columns, "contains"], rows)


def _size(value):
    return DASH if value is None else f"{value:,.0f}"


def _share(share):
    """A share of the budget: a number, or least squares' dict of them."""
    if isinstance(share, dict):
        return ", ".join(f"{name} {fmt_eps(value)}" for name, value in share.items())
    return fmt_eps(share)


def refusal(payload, timing=None):
    """``bench_refusal.py``: the rows ``inference=True`` needs, simulated from the
    released matrix's law, its agreement with the coverage grid's refusals and the
    trade-off of larger shares."""
    params = payload["params"]
    settings = payload["settings"]
    lines = setting(payload, f"one stream from seed {params['seed']} (noise draws, then "
                    "the validation's releases); the logistic information over "
                    f"{params['information_rows']:,} rows from the same seed",
                    "add/remove one row") + [""]
    lines += [f"{params['draws']:,} draws of the released matrix's noise per setting, "
              "from the estimators' own calibration; refused: the identification rule "
              "(smallest eigenvalue at most twice the noise's standard deviation on a "
              "direction) and, for least squares, the noisy residual sum of squares (on up "
              f"to {params['validation_releases']:,} accepted draws). n (5 %), n (50 %): "
              "the smallest n refused with probability below 5 % and 50 %; identification "
              "only: the same for the first rule alone; closed form: (2 s + 2 s_o sqrt(p)) / "
              "lambda_min(Sigma), against the identification rule's 5 % size.", ""]
    rows = [[INFERENCE_LABELS[s["estimator"]], str(s["d"]), fmt_eps(s["epsilon"]),
             fmt_eps(s["delta"]), s["noise_law"], fmt(s["quadratic_form_sd"], 1),
             _size(s["n_refused_below"]["0.05"]), _size(s["n_refused_below"]["0.5"]),
             _size(s["identification_n_refused_below"]["0.05"]), _size(s["closed_form_n"]),
             fmt(s["closed_form_n"] / s["identification_n_refused_below"]["0.05"], 2)]
            for s in settings]
    lines += table(["estimator", "d", "epsilon", "delta", "noise", "s", "n (5 %)", "n (50 %)",
                    "identification only, n (5 %)", "closed form n",
                    "closed form / identification n (5 %)"], rows)
    checks = [(s, v) for s in settings for v in s["validation"]]
    inside = sum(v["measured_ci"][0] - 0.02 <= v["total"] <= v["measured_ci"][1] + 0.02
                 for _, v in checks)
    lines += [f"Against the coverage grid (`inference.json`): the simulated refusal rate is "
              f"within the measured rate's 95 % Clopper-Pearson interval widened by 0.02 in "
              f"{inside} of {len(checks)} cells; simulated: identification rule on every "
              f"draw, and among the accepted draws the residual refusal and the bootstrap's "
              f"(fewer than one accepted world draw in a hundred, on up to "
              f"{params['world_releases']} releases).", ""]
    rows = [[INFERENCE_LABELS[s["estimator"]], f"{v['n']:,}", str(s["d"]), fmt_eps(s["epsilon"]),
             fmt_eps(s["delta"]), f"{fmt(v['measured'], 3)} ({v['draws']})",
             f"{fmt(v['measured_ci'][0], 3)} to {fmt(v['measured_ci'][1], 3)}",
             fmt(v["identification"], 3), fmt(v["residual_given_accepted"], 3),
             fmt(v["bootstrap_given_accepted"], 2), fmt(v["total"], 3)]
            for s, v in checks]
    lines += table(["estimator", "n", "d", "epsilon", "delta", "measured (draws)",
                    "Clopper-Pearson", "identification", "residual (given accepted)",
                    "bootstrap (given accepted)", "simulated total"], rows)
    sizes = ", ".join(f"{int(n):,}" for n in params["se_sizes"])
    lines += [f"Larger shares: the refusal sizes and the median over coefficients of the "
              f"first-order standard error (sampling and noise) against the shipped "
              f"shares' at n = {sizes}.", ""]
    rows = [[INFERENCE_LABELS[s["estimator"]], str(s["d"]), fmt_eps(s["epsilon"]),
             fmt_eps(s["delta"]), _share(t["share"]), _size(t["n_refused_below"]["0.05"]),
             _size(t["n_refused_below"]["0.5"]),
             *(fmt(t["se_ratio"][str(int(n))], 3) for n in params["se_sizes"])]
            for s in settings for t in s["shares"]]
    return lines + table(["estimator", "d", "epsilon", "delta", "shares", "n (5 %)",
                          "n (50 %)", *(f"standard error ratio, n = {int(n):,}"
                                        for n in params["se_sizes"])], rows)


SECTIONS = {
    "objective_perturbation": ("Objective perturbation (ObjPertLogisticRegression) on Adult "
                               "and KDDCup99", objective_perturbation),
    "output_perturbation": ("Output perturbation (OutputPertSVM) on Adult and KDDCup99",
                            output_perturbation),
    "dpsgd": ("DP-SGD (DPSGDClassifier) on Adult and KDDCup99, against Opacus", dpsgd),
    "napp": ("NAPP lasso: simulations, Adult and KDDCup99", napp),
    "epsilon_for_utility": ("EpsilonForUtility: expansion accuracy and decision study",
                            epsilon_for_utility),
    "private_selection": ("EpsilonForUtility: choosing epsilon inside the guarantee",
                          private_selection),
    "selection_cap": ("EpsilonForUtility: one cap on the whole search, on every cohort "
                      "and estimator", selection_cap),
    "private_search": ("PrivateGridSearchCV: private hyperparameter search against the "
                       "honest GridSearchCV at the same total epsilon (Adult, KDDCup99)",
                       private_search),
    "scaling": ("Fit time and memory against scikit-learn (wide, tall and sparse designs)",
                scaling),
    "scale_out": ("One private fit on data no process holds: a dask array read from zarr "
                  "on a LocalCluster", scale_out),
    "scale_out_persons": ("Persons on data no process holds: person-level fits on a "
                          "visit table read from zarr on a LocalCluster",
                          scale_out_persons),
    "scale_out_ssp": ("SSPLinearRegression on data no process holds: the scale-out "
                      "zarr store with a continuous target", scale_out_ssp),
    "paper_table": ("Yu et al. 2020, Table 2, reproduced (Adult, KDDCup99, MNIST; "
                    "Gisette- and RCV1-shaped stand-ins)", paper_table),
    "defaults": ("Defaults against the best of a grid (Adult, KDDCup99, MNIST)", defaults),
    "person_level": ("The person as the unit of privacy on a visit-style table (Adult)",
                     person_level),
    "ssp": ("Linear regression: SSPLinearRegression against AdaSSP, NAPPLasso and least "
            "squares (diabetes, Adult age, synthetic)", ssp),
    "dpsgd_calibration": ("DP-SGD's predicted probabilities: the clipping bias and the "
                          "intercept correction (Adult, rows and persons), and the "
                          "defaults' accuracy on text-like rows, MNIST and KDDCup99",
                          dpsgd_calibration),
    "metrics": ("Private evaluation and description: skdp.metrics, a Table 1 and a "
                "private cross-validation against the exact numbers (Adult, KDDCup99)",
                metrics),
    "inference": ("Confidence intervals (inference=True): coverage, refusals and width on "
                  "simulated data", inference),
    "inference_adult": ("Confidence intervals on Adult: the private summary beside "
                        "statsmodels' Logit", inference_adult),
    "refusal": ("Confidence intervals: how many rows before they are refused (the "
                "released matrix's law, simulated)", refusal),
}


# -- assembling the report ----------------------------------------------------------------

def load(results_dir, stem):
    """The JSON payload ``results_dir/<stem>.json``, or None when absent or unreadable."""
    path = Path(results_dir) / f"{stem}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _where(results_dir, report_dir):
    """``results_dir`` as seen from the report (relative: the report is portable)."""
    return Path(os.path.relpath(results_dir, report_dir or Path(results_dir).parent)).as_posix()


def section(name, results_dir, quick=False, report_dir=None):
    """The markdown lines of one benchmark's section (paths relative to report_dir)."""
    title, render = SECTIONS[name]
    stem = name + ("_quick" if quick else "")
    lines = [f"## {title}", "", f"Source: `{stem}.json` (`python -m benchmarks.bench_{name}"
             f"{' --quick' if quick else ''}`).", ""]
    payload = load(results_dir, stem)
    if payload is None:
        return lines + [f"*No results: `{stem}.json` is missing or unreadable in "
                        f"`{_where(results_dir, report_dir)}/`.*", ""]
    try:
        lines += render(payload, load(results_dir, stem + "_timing"))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, StopIteration) as exc:
        lines += [f"*Section incomplete: the JSON does not have the expected layout "
                  f"({type(exc).__name__}: {exc}).*", ""]
    png = Path(results_dir) / f"{stem}.png"
    if png.exists():
        lines += [f"![{name}]({_where(results_dir, report_dir)}/{png.name})", ""]
    return lines


def render_report(results_dir, quick=False, names=BENCHMARKS, report_dir=None):
    """The whole report as one string (by default for a report next to ``results_dir``)."""
    lines = [f"# Benchmark results{' (quick mode)' if quick else ''}", "",
             "Generated by `python -m benchmarks --report-only"
             f"{' --quick' if quick else ''}` from the JSON files in "
             f"`{_where(results_dir, report_dir)}/`; do not edit by hand. Every number is "
             "copied from the JSON of the run that measured it; fit-time ratios were measured "
             "within one run, as stated per table. What a JSON does not record is marked "
             "\"not recorded\".",
             ""]
    if quick:
        lines += ["**Quick mode:** CI-sized runs (few seeds, subsampled data); the numbers "
                  "show that the scripts run, not the estimators' accuracy.", ""]
    for name in names:
        lines += section(name, results_dir, quick, report_dir)
    return "\n".join(lines).rstrip() + "\n"


def write_report(results_dir, path, quick=False, names=BENCHMARKS):
    """Write the report to ``path``; return the path."""
    path = Path(path)
    path.write_text(render_report(results_dir, quick, names, report_dir=path.parent))
    return path
