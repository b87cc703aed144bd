"""Each solver checks what it requires of a loss before any work."""

import numpy as np
import pytest

from skdp.losses import LogisticLoss
from skdp.solvers import REQUIRED_LOSS_ATTRIBUTES, CompositeProblem, newton_minimise, solve_napp


class _ValueOnly:
    def loss(self, z, y):
        return np.logaddexp(0.0, -y * z)


def test_every_required_attribute_is_used_by_the_losses():
    for name in REQUIRED_LOSS_ATTRIBUTES:
        assert callable(getattr(LogisticLoss(), name))


def test_newton_refuses_a_loss_without_derivatives():
    X, y = np.eye(3), np.array([1.0, -1.0, 1.0])
    with pytest.raises(TypeError, match="newton_minimise needs a loss with dz, d2z"):
        newton_minimise(X, y, _ValueOnly(), C=1.0, ridge=1.0, linear=np.zeros(3), tol=1e-8,
                        max_iter=5)


def test_napp_solver_refuses_a_loss_without_derivatives():
    X, y = np.eye(3), np.array([1.0, -1.0, 1.0])
    with pytest.raises(TypeError, match="solve_napp needs a loss with dz, d2z"):
        CompositeProblem(X, y, _ValueOnly(), np.zeros(3), 0.1, 0.0, 0.0, 2.0, None)
    # the same problem with a loss that has them solves
    problem = CompositeProblem(X, y, LogisticLoss(), np.zeros(3), 0.1, 0.0, 0.0, 2.0, None)
    assert solve_napp(problem, tol=1e-8, max_iter=50).converged
