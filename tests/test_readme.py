"""The README's quick start runs and prints what its comments say."""

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
DECIMAL = re.compile(r"-?\d+\.\d+")


def _quick_start():
    section = README.read_text().split("## Quick start", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def _matches(printed, stated):
    """A printed token against the README's: equal, or equal after rounding to the
    README's number of decimals."""
    if DECIMAL.fullmatch(stated):
        return round(float(printed), len(stated.split(".")[1])) == float(stated)
    return printed == stated


def test_quick_start_prints_what_its_comments_say():
    from skdp.datasets import load_adult

    try:
        load_adult(download_if_missing=False)
    except OSError as exc:
        pytest.skip(f"Adult not available: {exc}")
    code = _quick_start()
    stated = [line.split("#", 1)[1].split() for line in code.splitlines()
              if line.startswith("print(") and "#" in line]
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(code, str(README), "exec"), {})
    printed = [line.split() for line in output.getvalue().splitlines()]
    assert len(printed) == len(stated) == 4
    for got, want in zip(printed, stated):
        # the comment starts with the printed values; words after them explain
        assert all(_matches(g, w) for g, w in zip(got, want[:len(got)])), (got, want)
