"""Transformers whose fit learns nothing from the rows: every number is declared."""

from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import FLOAT_DTYPES, check_is_fitted, validate_data

from ..base import atomic_fit
from ..solvers._partitioned import is_dask_collection


def _declared_bounds(lower, upper, n_features, *, finite):
    """``(lower, upper)`` as float arrays of shape ``(n_features,)``, checked.

    Parameters
    ----------
    lower, upper : float or array-like of shape (n_features,)
        The declared bounds.
    n_features : int
        Number of features of the data.
    finite : bool
        Whether the bounds must be finite (a scaling divides by their gap).

    Returns
    -------
    lower, upper : ndarray of shape (n_features,)
        The bounds, broadcast to one per feature.

    Examples
    --------
    >>> _declared_bounds(0, [10, 90], 2, finite=True)
    (array([0., 0.]), array([10., 90.]))
    """
    bounds = []
    for name, value in (("lower", lower), ("upper", upper)):
        try:
            array = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError) as error:
            raise ValueError(f"{name} must be a number or one number per feature; "
                             f"got {value!r}.") from error
        if array.ndim > 1 or (array.ndim == 1 and array.shape[0] != n_features):
            raise ValueError(f"{name} must be a number or an array of shape "
                             f"({n_features},), one bound per feature; got shape "
                             f"{array.shape}.")
        if np.isnan(array).any() or (finite and not np.isfinite(array).all()):
            kind = "finite numbers" if finite else "numbers (not NaN)"
            raise ValueError(f"{name} must hold {kind}; got {value!r}.")
        bounds.append(np.broadcast_to(array, (n_features,)).copy())
    if np.any(bounds[0] > bounds[1]) or (finite and np.any(bounds[0] == bounds[1])):
        relation = "<" if finite else "<="
        raise ValueError(f"Every declared bound needs lower {relation} upper; got lower="
                         f"{lower!r}, upper={upper!r}.")
    return bounds[0], bounds[1]


class _DeclaredBoundsTransformer(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Shared fit: validate the declared bounds against the shape of ``X``."""

    _finite_bounds = True

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True        # NaN stays NaN, for an imputer after it
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    def _validate_bounds(self, X):
        self.lower_, self.upper_ = _declared_bounds(
            self.lower, self.upper, X.shape[1], finite=self._finite_bounds)

    @atomic_fit(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Check the declared bounds against the number of features of ``X``.

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
            Data; only its shape and column names are used (a dask array's
            partitions are not computed).
        y : None
            Ignored.

        Returns
        -------
        self : object
            The fitted transformer.
        """
        if is_dask_collection(X):   # its shape is all fit reads: nothing is computed
            X = validate_data(self, _dask_array(X), skip_check_array=True)
        else:
            X = validate_data(self, X, dtype=FLOAT_DTYPES, ensure_all_finite=False)
        self._validate_bounds(X)
        return self

    def _checked(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=FLOAT_DTYPES, copy=True,
                          ensure_all_finite=False)
        return X, self.lower_.astype(X.dtype), self.upper_.astype(X.dtype)


class BoundedScaler(_DeclaredBoundsTransformer):
    """Scale each feature from declared bounds to a declared range, and clip.

    A value ``x`` of a feature declared to lie in ``[lower, upper]`` becomes
    ``a + (b - a) * (x - lower) / (upper - lower)`` with ``(a, b) =
    feature_range``; values outside the bounds are clipped to the range. This is
    scikit-learn's ``MinMaxScaler`` with the minimum and maximum declared
    instead of measured on the rows.

    Parameters
    ----------
    lower : float or array-like of shape (n_features,)
        Declared lower bound of each feature (one number for all features),
        taken from public knowledge such as a data dictionary, never from the
        private rows.
    upper : float or array-like of shape (n_features,)
        Declared upper bound of each feature; ``lower < upper``, both finite.
    feature_range : tuple (min, max), default=(0.0, 1.0)
        The range the bounds map to.
    clip : bool, default=True
        Clip transformed values to ``feature_range``. With ``False`` a value
        outside the declared bounds maps outside the range.

    Attributes
    ----------
    lower_ : ndarray of shape (`n_features_in_`,)
        The declared lower bounds, one per feature.
    upper_ : ndarray of shape (`n_features_in_`,)
        The declared upper bounds, one per feature.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    Clipper : Clip to declared bounds without rescaling.
    skdp.model_selection.check_public_preprocessing : Which steps learn nothing.

    Notes
    -----
    Fitting reads only the shape (and the column names) of ``X``, to check the
    declared bounds against the number of features: nothing is learned from the
    values of the rows, so the step may sit before a private estimator in a
    ``Pipeline`` at no privacy cost. The bounds are public: they must not be
    computed from the private data.

    On a dask array ``fit`` reads the shape alone and ``transform`` maps each
    partition lazily, so the step may also sit before a private estimator fitted
    on dask, in a composer too.

    NaN values are left as they are; infinite values are clipped like any other
    value out of bounds (with ``clip=True``). The output of a row depends on that
    row alone, and with the default range every feature lies in ``[0, 1]``: a row
    of ``d`` scaled features has an L2 norm of at most ``sqrt(d)``, a public
    ``data_norm`` for the private estimator that follows.

    Examples
    --------
    >>> from skdp.preprocessing import BoundedScaler
    >>> X = [[30.0, 40.0], [120.0, -5.0]]          # age, hours per week
    >>> BoundedScaler(lower=0, upper=[100, 80]).fit_transform(X)
    array([[0.3, 0.5],
           [1. , 0. ]])
    """

    _parameter_constraints = {
        "lower": [Real, "array-like"],
        "upper": [Real, "array-like"],
        "feature_range": [tuple],
        "clip": ["boolean"],
    }

    def __init__(self, lower, upper, *, feature_range=(0.0, 1.0), clip=True):
        self.lower = lower
        self.upper = upper
        self.feature_range = feature_range
        self.clip = clip

    def _validate_bounds(self, X):
        low, high = _range(self.feature_range)
        if not low < high:
            raise ValueError(f"feature_range must be (min, max) with min < max; got "
                             f"{self.feature_range!r}.")
        super()._validate_bounds(X)

    def transform(self, X):
        """Scale ``X`` from the declared bounds to ``feature_range``.

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
            The data to scale (a dask array lazily, partition by partition).

        Returns
        -------
        X_scaled : ndarray or dask array of shape (n_samples, n_features)
            The scaled data, clipped to ``feature_range`` when ``clip=True``.
        """
        if is_dask_collection(X):
            return _by_row_blocks(self.transform, X)
        X, lower, upper = self._checked(X)
        low, high = _range(self.feature_range)
        X -= lower
        X *= (high - low) / (upper - lower)
        X += low
        if self.clip:
            np.clip(X, low, high, out=X)
        return X

    def inverse_transform(self, X):
        """Map values of ``feature_range`` back to the declared bounds.

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
            Scaled data (a dask array lazily, partition by partition).

        Returns
        -------
        X_original : ndarray or dask array of shape (n_samples, n_features)
            The data on the scale of the declared bounds (values that were
            clipped come back as the bound they were clipped to).
        """
        if is_dask_collection(X):
            return _by_row_blocks(self.inverse_transform, X)
        X, lower, upper = self._checked(X)
        low, high = _range(self.feature_range)
        X -= low
        X *= (upper - lower) / (high - low)
        X += lower
        return X


class Clipper(_DeclaredBoundsTransformer):
    """Clip each feature to declared bounds.

    Parameters
    ----------
    lower : float or array-like of shape (n_features,)
        Declared lower bound of each feature (one number for all features);
        ``-np.inf`` leaves the feature unbounded below.
    upper : float or array-like of shape (n_features,)
        Declared upper bound of each feature, ``lower <= upper``; ``np.inf``
        leaves it unbounded above.

    Attributes
    ----------
    lower_ : ndarray of shape (`n_features_in_`,)
        The declared lower bounds, one per feature.
    upper_ : ndarray of shape (`n_features_in_`,)
        The declared upper bounds, one per feature.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    BoundedScaler : Clip and rescale to a declared range.
    skdp.model_selection.check_public_preprocessing : Which steps learn nothing.

    Notes
    -----
    Fitting reads only the shape (and the column names) of ``X``, to check the
    declared bounds against the number of features: nothing is learned from the
    values of the rows, so the step may sit before a private estimator in a
    ``Pipeline`` at no privacy cost. The bounds are public: they must not be
    computed from the private data.

    On a dask array ``fit`` reads the shape alone and ``transform`` maps each
    partition lazily, so the step may also sit before a private estimator fitted
    on dask, in a composer too.

    NaN values are left as they are.

    Examples
    --------
    >>> from skdp.preprocessing import Clipper
    >>> Clipper(lower=0, upper=[100, 80]).fit_transform([[130.0, 40.0], [-2.0, 99.0]])
    array([[100.,  40.],
           [  0.,  80.]])
    """

    _finite_bounds = False

    _parameter_constraints = {
        "lower": [Real, "array-like"],
        "upper": [Real, "array-like"],
    }

    def __init__(self, lower, upper):
        self.lower = lower
        self.upper = upper

    def transform(self, X):
        """Clip ``X`` to the declared bounds.

        Parameters
        ----------
        X : array-like or dask array of shape (n_samples, n_features)
            The data to clip (a dask array lazily, partition by partition).

        Returns
        -------
        X_clipped : ndarray or dask array of shape (n_samples, n_features)
            The clipped data.
        """
        if is_dask_collection(X):
            return _by_row_blocks(self.transform, X)
        X, lower, upper = self._checked(X)
        return np.clip(X, lower, upper, out=X)


def _dask_array(X):
    """``X`` if it is a dask array, else a clear error (a dask DataFrame's partitions
    would each be validated apart from its column names)."""
    if not hasattr(X, "map_blocks"):
        raise TypeError(f"{type(X).__name__} is not a dask array: pass "
                        "X.to_dask_array(lengths=True).")
    return X


def _by_row_blocks(method, X):
    """``method`` (a map of each row by itself) over the row blocks of the dask array
    ``X``, lazily: the same values as on the rows in memory, for any chunking."""
    X = _dask_array(X).rechunk({1: -1})
    dtype = X.dtype if X.dtype in FLOAT_DTYPES else np.dtype(np.float64)
    return X.map_blocks(method, dtype=dtype)


def _range(feature_range):
    """``feature_range`` as two floats, or a clear error."""
    try:
        low, high = (float(v) for v in feature_range)
    except (TypeError, ValueError) as error:
        raise ValueError("feature_range must be a tuple (min, max) of two numbers; got "
                         f"{feature_range!r}.") from error
    if not (np.isfinite(low) and np.isfinite(high)):
        raise ValueError(f"feature_range must be finite; got {feature_range!r}.")
    return low, high
