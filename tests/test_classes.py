"""The public ``classes`` parameter of every private classifier.

Without it ``classes_`` (and the one-vs-rest budget split) come from the private labels,
so a label held by one record shows in the released model. With it they come from the
declared set: the released attributes no longer depend on which labels occur.
"""

import numpy as np
import pytest
from sklearn.datasets import make_classification

from skdp import DPSGDClassifier, NAPPLassoClassifier, ObjPertLogisticRegression, OutputPertSVM

CLASSIFIERS = {
    "objpert": lambda **kw: ObjPertLogisticRegression(epsilon=3.0, **kw),
    "outputpert": lambda **kw: OutputPertSVM(epsilon=3.0, C=0.1, **kw),
    "dpsgd": lambda **kw: DPSGDClassifier(epsilon=3.0, epochs=5, **kw),
    "napp": lambda **kw: NAPPLassoClassifier(epsilon=3.0, **kw),
}

X, y = make_classification(n_samples=200, n_features=4, n_informative=3, n_redundant=0,
                           n_classes=3, n_clusters_per_class=1, random_state=0)
X /= np.linalg.norm(X, axis=1).max()
labels = np.array(["a", "b", "c"])[y]


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_released_shape_does_not_reveal_a_missing_class(name):
    """A dataset without class "c" (say its only holder was removed) releases the same
    classes_ and coefficient shape as the full one when the classes are declared."""
    make = CLASSIFIERS[name]
    without_c = labels != "c"
    full = make(classes=["a", "b", "c"], random_state=0).fit(X, labels)
    partial = make(classes=["a", "b", "c"], random_state=0).fit(X[without_c],
                                                                labels[without_c])
    np.testing.assert_array_equal(full.classes_, partial.classes_)
    assert full.coef_.shape == partial.coef_.shape == (3, 4)
    assert set(partial.predict(X)) <= {"a", "b", "c"}
    # undeclared, the label set leaks: two classes instead of three
    assert len(make(random_state=0).fit(X[without_c], labels[without_c]).classes_) == 2


@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_labels_outside_the_declared_classes_are_rejected_before_any_noise(name):
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    with pytest.raises(ValueError, match="outside the declared classes"):
        CLASSIFIERS[name](classes=["a", "b"], random_state=rng).fit(X, labels)
    assert rng.bit_generator.state == before


def test_one_vs_rest_splits_the_budget_over_the_declared_classes():
    """Four declared classes, three present: each one-vs-rest problem gets epsilon / 4."""
    est = ObjPertLogisticRegression(epsilon=4.0, classes=["a", "b", "c", "d"], multi_class="ovr",
                                    random_state=0)
    solutions = est._releases(X, labels)
    single = ObjPertLogisticRegression(epsilon=1.0, random_state=0)._releases(X, labels == "a")
    assert len(solutions) == 4
    for solution in solutions:
        assert solution.calibration.noise_scale == pytest.approx(
            single[0].calibration.noise_scale)
