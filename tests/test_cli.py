"""The command-line main job (``python -m skdp``)."""

import subprocess
import sys

import pytest

from skdp._cli import main


def test_main_job_default_runs_offline(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "curve.png"
    assert main(["--seed", "0", "--output", str(out)]) == 0
    text = capsys.readouterr().out
    for line in ("private selection", "chosen epsilon", "measured test accuracy",
                 "whole search, realised", "whole search, a priori",
                 "statement: It released", "the choice of epsilon included"):
        assert line in text
    assert out.stat().st_size > 10_000


def test_analytic_main_job_says_the_selection_is_not_covered(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    assert main(["--selection", "analytic", "--draws", "2", "--seed", "0", "--output",
                 str(tmp_path / "c.png")]) == 0
    text = capsys.readouterr().out
    for line in ("predicted accuracy there", "cost of the selection", "not covered"):
        assert line in text


def test_unreachable_target_releases_nothing(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    assert main(["--target", "1.0", "--epsilon-max", "2", "--seed",
                 "0", "--output", str(tmp_path / "u.png")]) == 0
    text = capsys.readouterr().out
    assert "none (nothing released)" in text and "no model was released" in text


def test_csv_input_and_label_column(tmp_path, capsys):
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=600, n_features=4, n_informative=2, n_redundant=0,
                               class_sep=2.0, random_state=0)
    path = tmp_path / "data.csv"
    rows = ["a,b,c,d,colour,label"] + [
        f"{r[0]},{r[1]},{r[2]},{r[3]},{'red' if i % 2 else 'blue'},{'yes' if t else 'no'}"
        for i, (r, t) in enumerate(zip(X, y))]
    path.write_text("\n".join(rows) + "\n")
    assert main(["--dataset", str(path), "--label-column", "label", "--target", "0.8",
                 "--seed", "0", "--output", str(tmp_path / "p.png")]) == 0
    assert "chosen epsilon" in capsys.readouterr().out


def test_unknown_dataset_is_a_clear_error():
    with pytest.raises(SystemExit, match="neither a built-in dataset"):
        main(["--dataset", "no-such-file.csv"])


def test_module_entry_point_prints_help():
    result = subprocess.run([sys.executable, "-m", "skdp", "--help"], capture_output=True,
                            text=True, check=True)
    assert "target accuracy" in result.stdout


def test_progress_line_per_measuring_round_and_quiet(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    args = ["--selection", "analytic", "--draws", "3", "--max-fits", "7", "--seed", "0",
            "--output", str(tmp_path / "p.png")]
    assert main(args) == 0
    out = capsys.readouterr().out
    # 3 draws at the measuring point, 3 more at one refinement, then the answer
    assert out.count("[EpsilonForUtility] measured at") == 1
    assert out.count("[EpsilonForUtility] refined at") == 1
    assert out.count("[EpsilonForUtility] epsilon_=") == 1
    assert main(args + ["--quiet"]) == 0
    out = capsys.readouterr().out
    assert "[EpsilonForUtility]" not in out and "chosen epsilon" in out


def test_progress_line_per_rung(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    assert main(["--seed", "0", "--output", str(tmp_path / "p.png")]) == 0
    out = capsys.readouterr().out
    rungs = [line for line in out.splitlines() if line.startswith("[EpsilonForUtility] rung")]
    assert len(rungs) >= 1 and rungs[-1].split(", ")[1] == "pass"
    assert f"private fits (rungs)      : {len(rungs)}" in out
