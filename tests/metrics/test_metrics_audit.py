"""Black-box audits of the private AUC and calibration curve (slow): runs on two
neighbouring datasets, an event chosen on half of them, Clopper-Pearson bounds on the
other half (:func:`skdp.audit.audit_statistics`). An audit can refute a claim, never
certify it; the exact replay tests in ``test_metrics.py`` are the calibration's proof.
Measured power at 2 x 1,500 runs (under load, one seed): the true release's lower bound
was 0.13 (AUC) and 0.06 (calibration) for a claimed epsilon of 1, and a release with 2.5
times too little noise gave only 0.29 and 0.17, so the planted bug below removes the noise
almost entirely, which the audit must refute."""

import numpy as np
import pytest

import skdp.stats._cells as cells_module
from skdp.audit import audit_statistics
from skdp.metrics import private_calibration_curve, private_roc_auc_score

Y = np.array([0, 0, 0, 1, 1, 1, 1])
SCORE = np.array([0.1, 0.2, 0.7, 0.3, 0.8, 0.9, 0.95])   # the last row is the one removed

RELEASES = {
    "auc": lambda y, s, seed: float(private_roc_auc_score(y, s, bins=2, epsilon=1.0,
                                                          random_state=seed)),
    "calibration": lambda y, s, seed: float(private_calibration_curve(
        y, s, bins=2, epsilon=1.0, random_state=seed)[0][1]),
}


def _audit(release, runs=1500):
    on_d = [release(Y, SCORE, seed) for seed in range(runs)]
    without = [release(Y[:-1], SCORE[:-1], runs + seed) for seed in range(runs)]
    return audit_statistics(on_d, without, epsilon=1.0)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(RELEASES))
def test_audit_does_not_refute_the_claim(name):
    assert not _audit(RELEASES[name]).contradicted


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(RELEASES))
def test_audit_refutes_a_release_without_enough_noise(name, monkeypatch):
    calibrate = cells_module.calibrate
    monkeypatch.setattr(cells_module, "calibrate",
                        lambda e, d, l1, l2: calibrate(e, d, l1 / 100, l2 / 100))
    assert _audit(RELEASES[name]).contradicted
