"""The composers' reading of the estimators' declarations for the odometers."""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import Normalizer

from skdp import DPSGDClassifier, ObjPertLogisticRegression, OutputPertSVM
from skdp.accounting._costs import DPSGDRungCost
from skdp.model_selection._accounts import (FittedSpend, approx_odometer_for,
                                            renyi_odometer_for)

X, y = make_classification(n_samples=300, n_features=4, n_informative=2, n_redundant=0,
                           random_state=0)
X /= np.linalg.norm(X, axis=1).max()

POISSON = DPSGDRungCost(1e-5, 0.1, 10)          # DPSGDClassifier's defaults


def test_renyi_charge_of_a_real_fit_in_a_pipeline():
    estimator = make_pipeline(Normalizer(), DPSGDClassifier(epsilon=1.0, random_state=0))
    odometer = renyi_odometer_for(estimator, epsilon_max=8.0)
    assert odometer.delta_max == 1e-5                 # renyi_default_delta_max
    # the cost the estimator declares: its calibration's count and steps (q = 0.1, T = 100)
    np.testing.assert_array_equal(odometer.cost.rdp(1.0), POISSON.rdp(1.0))
    figures = odometer.charge(1.0, FittedSpend(estimator.fit(X, y)))
    assert figures["rdp_certified"] == figures["rdp"]
    assert figures["epsilon_spent"] <= 1.0 and figures["delta_spent"] == 1e-5
    with pytest.raises(ValueError, match="delta > 0"):
        renyi_odometer_for(ObjPertLogisticRegression(delta=0.0), 8.0)
    with pytest.raises(ValueError, match="declares no Renyi curve"):
        renyi_odometer_for(ObjPertLogisticRegression(delta=1e-6,
                                                              neighboring="replace"), 8.0)


def test_approx_charge_of_a_real_kst_fit():
    estimator = ObjPertLogisticRegression(epsilon=0.5, delta=1e-8, random_state=0)
    odometer = approx_odometer_for(estimator, epsilon_max=8.0)
    assert odometer.rung_delta == 1e-8 and odometer.delta_max == pytest.approx(4e-6)
    figures = odometer.charge(0.5, FittedSpend(estimator.fit(X, y)))
    assert figures == {"epsilon_spent": 0.5, "delta_spent": 1e-8, "epsilon_charged": 0.5}
    assert odometer.guarantee()[0][0] == pytest.approx(8.0 / 1.1**29)   # 0.5 <= 0.505

    with pytest.raises(ValueError, match="delta > 0"):
        approx_odometer_for(ObjPertLogisticRegression(delta=0.0), 8.0)


def test_fitted_spend_reads_the_declarations():
    """A full-batch DP-SGD fit declares its composed mu and curve; a Poisson-sampled one
    no mu; a Gaussian output perturbation fit gdp_mu of its spend; a pure fit none."""
    from skdp.accounting import composed_mu, gdp_mu

    full = DPSGDClassifier(epsilon=1.0, sample_rate=1.0, epochs=5, data_norm=1.0,
                           random_state=0).fit(X, y)
    spend = FittedSpend(make_pipeline(Normalizer(), full))
    assert spend.mu == composed_mu(full.noise_multiplier_, full.n_steps_,
                                   full.count_noise_std_)
    np.testing.assert_array_equal(spend.rdp, full._renyi_spent())
    poisson = DPSGDClassifier(epsilon=1.0, data_norm=1.0, random_state=0).fit(X, y)
    assert FittedSpend(poisson).mu is None
    gauss = OutputPertSVM(epsilon=1.0, delta=1e-5, data_norm=1.0, random_state=0).fit(X, y)
    assert FittedSpend(gauss).mu == gdp_mu(gauss.epsilon_spent_, gauss.delta_spent_)
    pure = ObjPertLogisticRegression(epsilon=1.0, data_norm=1.0, random_state=0).fit(X, y)
    assert FittedSpend(pure).mu is None and FittedSpend(pure).delta == 0.0
