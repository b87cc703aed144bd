import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV, RandomizedSearchCV

from skdp import ObjPertLogisticRegression
from skdp.model_selection import privacy_cost_of_search

X, y = make_classification(n_samples=300, n_features=4, random_state=0)


def test_grid_search_cost_is_the_hand_composition():
    grid = GridSearchCV(ObjPertLogisticRegression(delta=1e-6, random_state=0),
                        {"epsilon": [0.5, 2.0], "C": [0.1, 1.0]}, cv=4).fit(X, y)
    report = privacy_cost_of_search(grid)
    best = grid.best_params_["epsilon"]
    # 2 epsilons x 2 C values x 4 folds, then the refit
    assert report["n_fits"] == 17
    assert report["total_epsilon"] == pytest.approx(2 * 4 * (0.5 + 2.0) + best)
    assert report["total_delta"] == pytest.approx(17 * 1e-6)
    assert "data-dependent" in report["statement"]


def test_epsilon_outside_the_grid_comes_from_the_base_estimator():
    search = RandomizedSearchCV(ObjPertLogisticRegression(epsilon=0.25, random_state=0),
                                {"C": [0.1, 1.0, 10.0]}, n_iter=2, cv=3, refit=False,
                                random_state=0).fit(X, y)
    assert privacy_cost_of_search(search)["total_epsilon"] == pytest.approx(2 * 3 * 0.25)


def test_list_of_fitted_estimators():
    fitted = [ObjPertLogisticRegression(epsilon=e, random_state=0).fit(X, y)
              for e in (0.1, 0.4, np.inf)]
    assert privacy_cost_of_search(fitted[:2])["total_epsilon"] == pytest.approx(0.5)
    assert privacy_cost_of_search(fitted)["total_epsilon"] == np.inf
    with pytest.raises(ValueError, match="not a fitted skdp estimator"):
        privacy_cost_of_search([ObjPertLogisticRegression()])
