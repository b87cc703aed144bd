import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import approx_fprime

from skdp.losses import HingeLoss, HuberHingeLoss, LogisticLoss, SquaredLoss, make_loss

MARGINS = np.linspace(-6, 6, 241) + 1e-3  # avoid the Huber/hinge kinks exactly


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberHingeLoss(h=0.5), HuberHingeLoss(h=0.1)])
def test_derivatives_match_finite_differences(loss):
    for m in MARGINS:
        fd_grad = approx_fprime(np.array([m]), lambda v: float(loss.value(v[0])), 1e-7)[0]
        fd_hess = approx_fprime(np.array([m]), lambda v: float(loss.grad(v[0])), 1e-7)[0]
        assert abs(fd_grad - loss.grad(m)) < 1e-5
        if not (isinstance(loss, HuberHingeLoss) and abs(abs(1 - m) - loss.h) < 1e-5):
            assert abs(fd_hess - loss.hessian(m)) < 1e-4


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberHingeLoss(h=0.5), HuberHingeLoss(h=0.1),
                                  HingeLoss()])
def test_bounds_hold_on_a_grid(loss):
    grid = np.linspace(-50, 50, 100001)
    assert np.max(np.abs(loss.grad(grid))) <= loss.lipschitz + 1e-12
    if np.isfinite(loss.smoothness):
        hess = loss.hessian(grid)
        assert hess.min() >= 0.0
        assert hess.max() <= loss.smoothness + 1e-12
        # the bound is attained (it is the supremum, not a loose constant)
        assert hess.max() >= 0.999 * loss.smoothness


def test_constants():
    assert LogisticLoss.smoothness == 0.25
    assert HuberHingeLoss(h=0.1).smoothness == pytest.approx(5.0)
    assert HuberHingeLoss(h=0.5).smoothness == pytest.approx(1.0)
    assert HingeLoss.smoothness == np.inf
    assert SquaredLoss.lipschitz_on(2.0, 3.0) == 5.0


def test_huber_middle_piece_matches_expanded_form():
    loss = HuberHingeLoss(h=0.3)
    m = np.linspace(0.7, 1.3, 13)
    expanded = (1 - m) ** 2 / (4 * 0.3) + (1 - m) / 2 + 0.3 / 4
    assert_allclose(loss.value(m), expanded, atol=1e-12)


def test_huber_is_continuous_at_the_joins():
    loss = HuberHingeLoss(h=0.2)
    for join in (0.8, 1.2):
        assert_allclose(loss.value(join - 1e-9), loss.value(join + 1e-9), atol=1e-8)
        assert_allclose(loss.grad(join - 1e-9), loss.grad(join + 1e-9), atol=1e-7)


def test_linear_predictor_form():
    loss = LogisticLoss()
    z, y = np.array([0.3, -1.2]), np.array([1.0, -1.0])
    assert_allclose(loss.loss(z, y), np.log1p(np.exp(-y * z)))
    assert_allclose(loss.dz(z, y), -y / (1 + np.exp(y * z)))
    sq = SquaredLoss()
    assert_allclose(sq.dz(z, y), z - y)


def test_hinge_has_no_hessian_and_registry():
    with pytest.raises(ValueError, match="output perturbation"):
        HingeLoss().hessian(0.0)
    assert make_loss("huber", huber_h=0.2) == HuberHingeLoss(h=0.2)
    assert make_loss("logistic", huber_h=0.2) == LogisticLoss()
    with pytest.raises(ValueError, match="Unknown loss"):
        make_loss("cauchy")
