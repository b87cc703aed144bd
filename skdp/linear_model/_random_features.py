"""Random Fourier features of the Gaussian kernel, with a data-independent draw.

The map of Chaudhuri, Monteleoni & Sarwate (2011, Algorithm 3) is
``v(x) = D**-0.5 * cos(x @ omega + psi)`` with ``omega_j ~ N(0, 2 gamma I_p)`` and
``psi_j ~ Uniform[-pi, pi]``. Every feature vector has L2 norm at most 1 whatever
``x`` is, and ``E[v(x) . v(x')] = exp(-gamma ||x - x'||^2) / 2`` (a rescaled
Gaussian kernel). The draws depend only on the shape ``(p, D)``, ``gamma`` and the
generator, never on the rows, so the map can be released with the model.
Derivation: ``docs/privacy/output_perturbation.rst``.
"""

from dataclasses import dataclass

import numpy as np

#: Upper bound on ``||v(x)||`` for every ``x``: the feature rows' norm bound R.
RANDOM_FEATURE_NORM = 1.0


@dataclass(frozen=True)
class RandomFourierMap:
    """A drawn random Fourier feature map (public, data-independent)."""

    weights: np.ndarray  # (n_features, n_components), omega
    offset: np.ndarray  # (n_components,), psi

    @property
    def n_components(self):
        return self.weights.shape[1]

    def transform(self, X):
        """``v(X)``: dense array of shape (n_samples, n_components), rows of norm <= 1."""
        projection = np.asarray(X @ self.weights) + self.offset
        np.cos(projection, out=projection)
        projection *= 1.0 / np.sqrt(self.n_components)
        return projection


def draw_random_fourier_map(n_features, n_components, gamma, rng):
    """Draw ``omega ~ N(0, 2 gamma I)`` (one column per component) and ``psi ~ U[-pi, pi]``.

    Parameters
    ----------
    n_features : int
        Input dimension ``p``.
    n_components : int
        Number of random features ``D``.
    gamma : float
        Width of the kernel ``exp(-gamma ||x - x'||^2)``.
    rng : numpy.random.Generator

    Returns
    -------
    feature_map : RandomFourierMap
    """
    weights = rng.normal(scale=np.sqrt(2.0 * gamma), size=(n_features, n_components))
    offset = rng.uniform(-np.pi, np.pi, size=n_components)
    return RandomFourierMap(weights, offset)
