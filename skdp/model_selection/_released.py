"""What a model-selection meta-estimator does with the model it released."""

from sklearn.pipeline import Pipeline
from sklearn.utils.metaestimators import available_if

from ..utils._docstrings import fill_doc


def _best_has(name):
    def check(self):
        if hasattr(self, "best_estimator_"):
            return hasattr(self.best_estimator_, name)
        return hasattr(self._inner(), name)
    return check


@fill_doc
class ReleasedModelMixin:
    """``predict``, ``score`` and the like of ``best_estimator_``, and its tags.

    The meta-estimator implements ``_inner()`` (the estimator it searches over) and
    ``_released()`` (``best_estimator_``, or ``NotFittedError`` saying why there is
    none).
    """

    def _named(self, model):
        """``model``, about to be released, with the column names the meta-estimator
        recorded from its input (``feature_names_in_``, public metadata) set where a
        fit on that frame records them: on its first step that reads the rows (a
        Pipeline's first step that is not ``"passthrough"``, or the estimator itself).
        Its fits may have read the rows without their names (a bare estimator fitted
        on the validated array, any fit on a dask DataFrame's values), and would then
        warn on the frame they were given. Returns ``model``."""
        names = getattr(self, "feature_names_in_", None)
        if names is None:
            return model
        steps = [step for _, step in model.steps] if isinstance(model, Pipeline) else [model]
        first = next(step for step in steps
                     if not (step is None or (type(step) is str and step == "passthrough")))
        first.feature_names_in_ = names
        return model

    @available_if(_best_has("predict"))
    def predict(self, X):
        """Predict with ``best_estimator_``.

        %(X_rows)s

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        return self._released().predict(X)

    @available_if(_best_has("predict_proba"))
    def predict_proba(self, X):
        """Class probabilities from ``best_estimator_``.

        %(X_rows)s

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        return self._released().predict_proba(X)

    @available_if(_best_has("decision_function"))
    def decision_function(self, X):
        """Decision function of ``best_estimator_``.

        %(X_rows)s

        Returns
        -------
        scores : ndarray
        """
        return self._released().decision_function(X)

    def score(self, X, y):
        """Score of ``best_estimator_`` (its own ``score`` method).

        %(X_y_rows)s

        Returns
        -------
        score : float
        """
        return self._released().score(X, y)

    @property
    def classes_(self):
        """Class labels of ``best_estimator_``."""
        return self._released().classes_

    def __sklearn_tags__(self):
        from sklearn.utils import get_tags

        tags = super().__sklearn_tags__()
        inner = get_tags(self._inner())
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = inner.classifier_tags
        tags.regressor_tags = inner.regressor_tags
        tags.input_tags.sparse = inner.input_tags.sparse
        return tags
