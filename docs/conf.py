"""Sphinx configuration for the skdp documentation.

Build with ``sphinx-build -W --keep-going -b html docs docs/_build/html``; the test
suite builds it the same way (``tests/test_docs.py``).
"""

import sys
from pathlib import Path

import skdp

# docs/_ext/recorded.py: the :recorded: role, numbers quoted from the examples' records
# and docs/_ext/benchmark.py: the :benchmark: role, numbers quoted from benchmarks/results
sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

project = "skdp"
author = "the skdp developers"
copyright = "2026, the skdp developers"
release = skdp.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "recorded",
    "benchmark",
]

# Offline build: no intersphinx, no remote images.
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_static_path = ["_static"]

# The API pages are written by hand in api.rst (one autoclass/autofunction per name),
# so autosummary only renders tables and never writes stub files.
autosummary_generate = False
autodoc_typehints = "none"

# numpydoc: the class docstrings document their own attributes; listing every
# inherited scikit-learn method as well would bury them.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# scikit-learn generates set_*_request methods (metadata routing) whose docstrings
# point into scikit-learn's own glossary; they are not part of the skdp API.
autodoc_default_options = {
    "exclude-members": "set_fit_request, set_score_request, set_predict_request",
}

# Every cross-reference inside skdp must resolve (a broken one fails the -W build).
# Without intersphinx (the build is offline) references to other projects cannot.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(sklearn|numpy|scipy|pandas|joblib|matplotlib|dask|dp_accounting)(\..*)?"),
]
