"""The vectorised RDP computation against dp-accounting's RdpAccountant (its oracle)."""

import logging
import math

import numpy as np
import pytest

import dp_accounting
from dp_accounting.rdp import RdpAccountant
from skdp.accounting._rdp import ORDERS, dpsgd_rdp, rdp_to_delta, rdp_to_epsilon


def _oracle(z, q, T, count_noise_std):
    step = dp_accounting.GaussianDpEvent(z)
    if q < 1:
        step = dp_accounting.PoissonSampledDpEvent(q, step)
    event = dp_accounting.SelfComposedDpEvent(step, T)
    if count_noise_std is not None:
        event = dp_accounting.ComposedDpEvent(
            [dp_accounting.GaussianDpEvent(count_noise_std), event])
    accountant = RdpAccountant()
    accountant.compose(event)
    return accountant


@pytest.mark.parametrize("q", [0.001, 0.1, 0.9, 1.0])
@pytest.mark.parametrize("z", [0.4, 1.1, 5.0, 30.0])
@pytest.mark.parametrize("T, count_noise_std", [(1, None), (100, 40.0), (10_000, None)])
def test_rdp_equals_dp_accounting(q, z, T, count_noise_std):
    """Every order's RDP (the orders dp-accounting drops as unconverged are infinite in
    both), epsilon at two deltas and delta at two epsilons, to 1e-8 relative."""
    logging.disable(logging.WARNING)  # dp-accounting warns of the orders it drops
    try:
        oracle = _oracle(z, q, T, count_noise_std)
    finally:
        logging.disable(logging.NOTSET)
    ours = dpsgd_rdp(z, q, T, count_noise_std)
    finite = np.isfinite(oracle._rdp)
    np.testing.assert_array_equal(np.isfinite(ours), finite)
    np.testing.assert_allclose(ours[finite], oracle._rdp[finite], rtol=1e-8)
    for delta in (1e-5, 1e-9):
        expected = oracle.get_epsilon(delta)
        assert rdp_to_epsilon(ours, delta) == pytest.approx(expected, rel=1e-8)
    for epsilon in (0.5, 3.0):
        assert rdp_to_delta(ours, epsilon) == pytest.approx(oracle.get_delta(epsilon),
                                                            rel=1e-8)


def test_fractional_orders_decide_at_large_epsilon():
    """At z = 0.8, q = 0.1, T = 10 the best order is fractional: the grid's fractional
    orders are computed, not skipped (integer orders alone give a larger epsilon)."""
    rdp = dpsgd_rdp(0.8, 0.1, 10)
    integer = ORDERS == np.round(ORDERS)
    best = rdp_to_epsilon(rdp, 1e-5)
    assert best < rdp_to_epsilon(np.where(integer, rdp, np.inf), 1e-5)
    assert math.isfinite(best)


def test_no_noise_and_no_sampling_edge_cases():
    assert np.all(np.isinf(dpsgd_rdp(0.0, 0.1, 10)))
    np.testing.assert_allclose(dpsgd_rdp(2.0, 1.0, 3), 3 * ORDERS / 8)
    assert rdp_to_epsilon(np.zeros(ORDERS.size), 1e-5) == 0.0


@pytest.mark.parametrize("orders", [[10.5], [3.0], [1.5, 2.5]])
def test_sampled_gaussian_rdp_takes_orders_of_one_kind_only(orders):
    """A grid of only fractional (or only integer) orders gave an empty concatenation."""
    from skdp.accounting._rdp import ORDERS, sampled_gaussian_rdp

    full = sampled_gaussian_rdp(0.1, 1.1, ORDERS)
    picked = sampled_gaussian_rdp(0.1, 1.1, np.array(orders))
    for order, value in zip(orders, picked):
        assert value == pytest.approx(full[np.flatnonzero(ORDERS == order)[0]], rel=1e-12)
