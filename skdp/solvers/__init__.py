"""Exact, certified minimisers of the private objectives (sum form).

Each solver stops at a public tolerance and returns a certificate that bounds its
distance to the exact minimiser, which the mechanisms' output noise covers:

* :func:`newton_minimise`: Newton's method for smooth, strongly convex GLM
  objectives, certified by the gradient norm; the direction comes from the dense
  Hessian or, for wide or sparse designs (:func:`uses_hessian_products`), from
  conjugate gradients on Hessian-vector products.
* :func:`certified_hinge_minimiser`: the L2-regularised hinge loss, certified by
  its duality gap.
* :func:`solve_napp`: the composite (lasso, elastic net, bridge, norm ball)
  objectives of NAPP by noise-augmented IRLS and an exact proximal-Newton
  polish, certified by the KKT residual.

The smooth solvers state what they need of a loss in ``REQUIRED_LOSS_ATTRIBUTES``
(the value ``loss(z, y)`` and the derivatives ``dz``, ``d2z`` in the linear
predictor ``z``) and check it with :func:`check_loss` before any work.
"""

from ._check import REQUIRED_LOSS_ATTRIBUTES, check_loss
from ._composite import CompositeProblem, solve_composite, solve_napp
from ._hinge import certified_hinge_minimiser, hinge_duality_gap
from ._newton import (NewtonResult, glm_gradient, glm_hessian, glm_hessian_solve,
                      glm_objective, newton_minimise, uses_hessian_products)

__all__ = [
    "CompositeProblem",
    "NewtonResult",
    "REQUIRED_LOSS_ATTRIBUTES",
    "check_loss",
    "certified_hinge_minimiser",
    "glm_gradient",
    "glm_hessian",
    "glm_hessian_solve",
    "glm_objective",
    "hinge_duality_gap",
    "newton_minimise",
    "solve_composite",
    "solve_napp",
    "uses_hessian_products",
]
