"""Which preprocessing steps learn nothing from the rows they are fitted on.

A step fitted before a private estimator is released with it, outside the
estimator's guarantee. A step qualifies only if fitting it learns nothing from
the rows: it maps each row by itself, or everything it keeps comes from declared
(public) parameters. That is decided here, once, by the step's exact type and its
parameters; a class name is not evidence, and a subclass may override ``fit``.
"""

import numpy as np
import scipy.special
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.impute import SimpleImputer
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import (Binarizer, FunctionTransformer, Normalizer,
                                   OneHotEncoder, OrdinalEncoder, PolynomialFeatures)

from ..preprocessing import BoundedScaler, Clipper

HOW_TO_MAKE_PUBLIC = (
    "To make it public, declare what it would learn: scale by declared bounds with "
    "skdp.preprocessing.BoundedScaler(lower, upper) or clip with "
    "skdp.preprocessing.Clipper(lower, upper) (bounds from a data dictionary, never "
    "from the private rows); encode with OneHotEncoder(categories=[[...], ...]) or "
    "OrdinalEncoder(categories=[[...], ...]) listing the declared categories; impute "
    "with SimpleImputer(strategy='constant', keep_empty_features=True); map values with "
    "FunctionTransformer(np.log1p) (a numpy ufunc) or rows with Normalizer(). Or fit the "
    "step on public data and use its fixed output as features. See the user guide, "
    "'Safe preprocessing in a Pipeline'."
)

_NO_OUTPUT = ("passthrough", "drop")


def _is_numpy_ufunc(func):
    """Whether ``func`` is one of numpy's (or scipy.special's) own ufuncs.

    A ufunc computes each output value from the matching input value alone. Only
    the library's own are trusted: ``np.frompyfunc`` makes a ufunc of any Python
    function, which could record the values it sees.

    Parameters
    ----------
    func : object
        The candidate function.

    Returns
    -------
    is_ufunc : bool
        True for ``np.log1p``, ``np.abs``, ``scipy.special.expit`` and the like.

    Examples
    --------
    >>> import numpy as np
    >>> _is_numpy_ufunc(np.log1p), _is_numpy_ufunc(np.frompyfunc(abs, 1, 1))
    (True, False)
    """
    if type(func) is not np.ufunc:
        return False
    name = func.__name__
    return any(getattr(module, name, None) is func for module in (np, scipy.special))


def _is_empty(kw_args):
    return kw_args is None or (type(kw_args) is dict and not kw_args)


def _function_transformer(step):
    if step.func is not None and not _is_numpy_ufunc(step.func):
        return (f"its func {step.func!r} is an arbitrary callable, which may compute "
                "statistics of the columns (sklearn.preprocessing.scale does); only func="
                "None or a numpy ufunc (elementwise, such as np.log1p or np.abs) is public")
    if not _is_empty(step.kw_args):
        return "its kw_args must be None (they reach the function with the rows)"
    fit_calls_inverse = step.check_inverse and step.func is not None
    if fit_calls_inverse and step.inverse_func is not None and not (
            _is_numpy_ufunc(step.inverse_func) and _is_empty(step.inv_kw_args)):
        return ("with check_inverse=True its fit calls inverse_func on the rows: use a "
                "numpy ufunc without inv_kw_args, or set check_inverse=False")
    return None


def _declared_categories(step):
    if isinstance(step.categories, str):
        return (f"categories={step.categories!r} learns the categories from the rows (a "
                "rare value reveals its record): declare them, categories=[[...], ...]")
    if step.min_frequency is not None or step.max_categories is not None:
        return ("min_frequency and max_categories group categories by their counts in "
                "the rows: leave both None")
    return None


def _simple_imputer(step):
    if not (isinstance(step.strategy, str) and step.strategy == "constant"):
        return (f"strategy={step.strategy!r} computes its fill values from the rows: use "
                "strategy='constant' with a declared fill_value")
    if not step.keep_empty_features:
        return ("with keep_empty_features=False it drops the columns that are missing in "
                "every row: set keep_empty_features=True")
    if step.add_indicator:
        return ("add_indicator=True keeps an indicator only for the columns with missing "
                "values in the rows: set add_indicator=False")
    return None


def _column_selector(columns):
    if callable(columns) and type(columns) is not make_column_selector:
        return (f"its column selector {columns!r} is a callable, which is given the rows; "
                "select columns by declared name, index, slice or mask")
    if type(columns) is make_column_selector and (columns.dtype_include is not None or
                                                  columns.dtype_exclude is not None):
        return ("make_column_selector(dtype_include=..., dtype_exclude=...) selects columns "
                "by the dtype pandas infers from their values (one '?' in a numeric column "
                "makes it an object column): select columns by declared name, index, slice "
                "or mask, or by make_column_selector(pattern=...) on the names alone")
    return None


def _fixed_density(transformer):
    """Whether the share of non-zeros in the output of ``transformer`` is fixed by shape.

    ColumnTransformer makes its output sparse or dense by comparing that share
    with ``sparse_threshold``: the choice, kept as ``sparse_output_``, must not
    depend on the values of the rows.
    """
    if transformer is None or (type(transformer) is str and transformer == "drop"):
        return True
    if type(transformer) in (BoundedScaler, Clipper, OrdinalEncoder):
        return True                              # dense output, whatever the input
    if type(transformer) is OneHotEncoder:       # one 1 per feature and row, or dense
        return not transformer.sparse_output or (
            transformer.handle_unknown == "error" and transformer.drop is None)
    if type(transformer) is Pipeline:
        steps = [s for _, s in transformer.steps
                 if not (s is None or (type(s) is str and s == "passthrough"))]
        return bool(steps) and _fixed_density(steps[-1])
    return False      # passes sparse input on (or stacks blocks) with its own non-zeros


def _column_transformer(step, where):
    blocks = [(name, transformer) for name, transformer, _ in step.transformers]
    for name, transformer, columns in step.transformers:
        if (reason := _column_selector(columns)) is not None:
            return f"{where} > columns of transformer {name!r}", reason
    blocks.append(("remainder", step.remainder))
    if (found := _first_refusal(blocks, where, "transformer")) is not None:
        return found
    if step.sparse_threshold > 0 and not all(_fixed_density(t) for _, t in blocks):
        return where, (
            f"with sparse_threshold={step.sparse_threshold} it chooses a sparse or a dense "
            "output from the share of non-zeros in the transformed rows, which depends on "
            "their values for 'passthrough' blocks and for most transformers given sparse "
            "input: set sparse_threshold=0 (always dense), or use only BoundedScaler, "
            "Clipper, OrdinalEncoder and OneHotEncoder with sparse_output=False or "
            "handle_unknown='error' and drop=None")
    return None


def _first_refusal(named_steps, where, kind):
    for name, step in named_steps:
        found = _refusal(step, f"{where} > {kind} {name!r}")
        if found is not None:
            return found
    return None


def _row_wise(step):
    """No parameter makes these learn from the rows: each maps one row by itself."""
    return None


_RULES = {
    Normalizer: _row_wise,
    Binarizer: _row_wise,
    PolynomialFeatures: _row_wise,
    BoundedScaler: _row_wise,                  # declared bounds
    Clipper: _row_wise,
    FunctionTransformer: _function_transformer,
    OneHotEncoder: _declared_categories,
    OrdinalEncoder: _declared_categories,
    SimpleImputer: _simple_imputer,
}

_COMPOSITES = {
    Pipeline: lambda step, where: _first_refusal(step.steps, where, "step"),
    FeatureUnion: lambda step, where: _first_refusal(step.transformer_list, where,
                                                     "transformer"),
    ColumnTransformer: _column_transformer,
}


def _describe(step):
    kind = type(step)
    return f"{kind.__module__}.{kind.__qualname__}"


def _shadowed_methods(step):
    """Methods of the class that the instance replaces with its own attributes."""
    return sorted(name for name in vars(step)
                  if callable(getattr(type(step), name, None)))


def _refusal(step, where):
    """``(where, reason)`` of the first step inside ``step`` that is not public, or None."""
    if step is None or (type(step) is str and step in _NO_OUTPUT):
        return None
    kind = type(step)
    where = f"{where} ({kind.__qualname__})"
    if kind not in _RULES and kind not in _COMPOSITES:
        return where, (f"{_describe(step)} is not one of the steps known to learn nothing "
                       "from the rows (checked by exact type: a subclass, or a class of the "
                       "same name, may learn anything in its fit)")
    if shadowed := _shadowed_methods(step):
        return where, f"the instance replaces the methods {shadowed} of its class"
    if kind in _COMPOSITES:
        return _COMPOSITES[kind](step, where)
    reason = _RULES[kind](step)
    return None if reason is None else (where, reason)


def is_public_step(step):
    """Whether fitting ``step`` learns nothing from the rows.

    Parameters
    ----------
    step : estimator, None, "passthrough" or "drop"
        A preprocessing step, as it would appear in a ``Pipeline``,
        ``ColumnTransformer`` or ``FeatureUnion``.

    Returns
    -------
    public : bool
        True if :func:`check_public_preprocessing` accepts ``step``.

    See Also
    --------
    check_public_preprocessing : The same decision, with the reason and the remedy.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.preprocessing import FunctionTransformer, StandardScaler, scale
    >>> from skdp.model_selection import is_public_step
    >>> from skdp.preprocessing import BoundedScaler
    >>> is_public_step(BoundedScaler(lower=0, upper=90)), is_public_step(StandardScaler())
    (True, False)
    >>> is_public_step(FunctionTransformer(np.log1p)), is_public_step(FunctionTransformer(scale))
    (True, False)
    """
    return _refusal(step, "step") is None


def check_public_preprocessing(step, *, name=None):
    """Refuse a preprocessing step whose fit learns something from the rows.

    A step fitted before a private estimator is released with it, outside the
    estimator's guarantee, so only steps whose fit learns nothing from the
    rows are public. They are recognised by their exact type (``type(step)
    is X``: a subclass or a class of the same name may learn anything in its
    ``fit``) and their parameters:

    - ``None``, ``"passthrough"`` and ``"drop"``;
    - maps of one row at a time: ``Normalizer``, ``Binarizer``,
      ``PolynomialFeatures``, and ``FunctionTransformer`` whose ``func`` is
      None or one of numpy's (or ``scipy.special``'s) own ufuncs, with
      ``kw_args=None`` (and, when ``check_inverse`` makes ``fit`` call it, an
      ``inverse_func`` that is None or such a ufunc, without
      ``inv_kw_args``);
    - :class:`skdp.preprocessing.BoundedScaler` and
      :class:`skdp.preprocessing.Clipper` (declared bounds);
    - ``OneHotEncoder`` and ``OrdinalEncoder`` with declared categories (a
      list, not ``"auto"``), ``min_frequency=None`` and
      ``max_categories=None``; any ``drop``, ``handle_unknown`` and
      ``unknown_value``, which then depend on the declared categories only;
    - ``SimpleImputer(strategy="constant", keep_empty_features=True,
      add_indicator=False)``;
    - ``Pipeline`` and ``FeatureUnion`` whose steps are all public, and
      ``ColumnTransformer`` whose transformers and remainder are all public,
      whose columns are selected by name, index, slice, mask or
      ``make_column_selector(pattern=...)`` (declared names), not by dtype or
      another callable, and whose
      choice between a sparse and a dense output cannot depend on the rows:
      ``sparse_threshold=0``, or every block's share of non-zeros fixed
      (``BoundedScaler``, ``Clipper``, ``OrdinalEncoder``, ``OneHotEncoder``
      with ``sparse_output=False`` or with ``handle_unknown="error"`` and
      ``drop=None``, or a ``Pipeline`` ending in one of them).

    Everything else is refused: ``StandardScaler``, ``MinMaxScaler``,
    ``PCA``, ``SplineTransformer`` (its knots come from the data),
    ``KBinsDiscretizer``, any class of your own. So is an instance that
    replaces a method of its class with an attribute of its own.

    Parameters
    ----------
    step : estimator, None, "passthrough" or "drop"
        A preprocessing step, as it would appear in a ``Pipeline``,
        ``ColumnTransformer`` or ``FeatureUnion``. Check the object that is
        fitted (the clone, after ``set_params``), not one changed later.
    name : str, default=None
        How the error message names the step (for example
        ``"Pipeline step 'scale'"``).

    Raises
    ------
    ValueError
        If ``step``, or a step inside it, is not public; the message names it,
        says what it would learn, and how to declare it instead.

    See Also
    --------
    is_public_step : The same decision as a bool.
    skdp.preprocessing.BoundedScaler : Scale from declared bounds.

    Notes
    -----
    Whether a fitted step is public is a property of its code, which this
    function cannot read: it trusts scikit-learn's implementations of the
    classes it names (version 1.6 to 1.9), and checks the parameters that make
    them learn from the rows. A failure of such a step (an unknown category
    with ``handle_unknown="error"``, a string in a numeric column) raises an
    error that depends on the rows, as every input validation does.

    Examples
    --------
    >>> from sklearn.compose import ColumnTransformer
    >>> from sklearn.preprocessing import OneHotEncoder, StandardScaler
    >>> from skdp.model_selection import check_public_preprocessing
    >>> from skdp.preprocessing import BoundedScaler
    >>> check_public_preprocessing(ColumnTransformer([
    ...     ("cat", OneHotEncoder(categories=[["a", "b"]]), [0]),
    ...     ("num", BoundedScaler(lower=0, upper=90), [1])]))
    >>> check_public_preprocessing(StandardScaler(), name="Pipeline step 'scale'")
    Traceback (most recent call last):
    ...
    ValueError: Pipeline step 'scale' (StandardScaler) would be fitted on the private ...
    """
    found = _refusal(step, name or "step")
    if found is not None:
        where, reason = found
        raise ValueError(f"{where} would be fitted on the private rows outside any privacy "
                         f"guarantee: {reason}. {HOW_TO_MAKE_PUBLIC}")
