"""The research variants live outside the private estimators and never claim privacy."""

import subprocess
import sys

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification

from skdp import NAPPLassoClassifier
from skdp.research import ResearchNAPPLassoClassifier

X, y = make_classification(n_samples=150, n_features=4, random_state=0)


def test_no_private_estimator_imports_the_research_variants():
    code = ("import sys, skdp, skdp.linear_model, skdp.model_selection, skdp.audit; "
            "print('skdp.research' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"
    assert "research_mode" not in NAPPLassoClassifier().get_params()


def test_research_estimator_has_every_napp_parameter_and_clones():
    research = ResearchNAPPLassoClassifier(research_mode="vs", alpha=0.5, epsilon=2.0)
    params = research.get_params()
    assert set(params) == set(NAPPLassoClassifier().get_params()) | {"research_mode",
                                                                     "vs_truncation"}
    copy = clone(research)
    assert copy.get_params() == params
    assert copy.alpha == 0.5 and copy.research_mode == "vs"


@pytest.mark.parametrize("params, match", [
    (dict(research_mode="moor", adaptive_two_stage=True), "adaptive_two_stage"),
    (dict(research_mode="vs++"), "'research_mode'"),
    (dict(research_mode="vs", vs_truncation=1.0), "'vs_truncation'"),
])
def test_bad_research_parameters_raise_before_noise(params, match):
    rng = np.random.default_rng(42)
    before = rng.bit_generator.state
    with pytest.raises(ValueError, match=match):
        ResearchNAPPLassoClassifier(random_state=rng, **params).fit(X, y)
    assert rng.bit_generator.state == before
