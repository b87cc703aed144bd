"""A private Table 1: the count, each categorical column's shares and each numeric
column's mean, under one budget split by a public rule.

The rule: ``epsilon`` (and ``delta``) split equally over ``1 + the number of described
columns`` releases (the count, each feature column, the label), by sequential
composition. Each release draws from its own noise stream.
"""

import numpy as np
import pandas as pd

from .._schema import Schema
from ..utils._random import noise_generator
from ._cells import Privacy, release_cells
from ._descriptive import category_codes
from ._release import check_budget

TABLE_COLUMNS = ["count", "share", "mean", "noise_std", "epsilon"]


def _schema(schema):
    return schema if isinstance(schema, Schema) else Schema.from_dict(schema)


def _as_text(frame, columns):
    """Categorical columns as text (the schema's categories are text); missing stays."""
    frame = frame.copy()
    for name in columns:
        frame[name] = frame[name].map(lambda v: v if pd.isna(v) else str(v))
    return frame


def describe(frame, schema, *, epsilon, delta=0.0, groups=None, max_rows_per_group=1.0,
             random_state=None):
    """A differentially private Table 1 of a table whose columns a schema declares.

    Parameters
    ----------
    frame : pandas.DataFrame
        The rows: every declared column and the label (an undeclared column is
        refused, as the command line refuses it).
    schema : skdp._schema.Schema or dict
        The data dictionary of ``python -m skdp`` (numeric columns with ``bounds``,
        categorical with ``categories``, the label with ``classes``). A missing value
        becomes the declared ``impute``.
    epsilon : float
        Total budget, in (0, inf], split equally over the count and the columns.
    delta : float, default=0.0
        Total ``delta`` (``0``: Laplace noise), split the same way.
    groups : array-like of shape (n_samples,), default=None
        Each row's person: the unit of privacy is then a person with all their rows.
    max_rows_per_group : float, default=1.0
        Public ``M``: each of a person's ``k`` rows weighs ``min(1, M / k)``.
    random_state : None, int, numpy.random.RandomState or Generator, default=None
        Source of the noise (``None``: fresh cryptographic noise).

    Returns
    -------
    table : pandas.DataFrame
        Indexed by ``(variable, level)``: the row ``("N", "")`` (the count), one row
        per level of each categorical column and of the label (its count and share),
        and one row per numeric column (its mean). ``noise_std`` is that of the share,
        the mean or the count; ``epsilon`` the row's share of the budget.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from skdp.stats import describe
    >>> schema = {"label": {"name": "y", "classes": ["no", "yes"]},
    ...           "columns": {"age": {"bounds": [0, 100]}}}
    >>> frame = pd.DataFrame({"age": [30.0, 50.0], "y": ["no", "yes"]})
    >>> describe(frame, schema, epsilon=np.inf)["mean"]["age"].tolist()
    [40.0]
    """
    check_budget(epsilon, delta)
    schema = _schema(schema)
    categorical = {**{name: cats for name, (cats, _) in schema.categorical.items()},
                   schema.label: schema.classes}
    parts = 1 + len(schema.numeric) + len(categorical)
    schema.check_header(list(frame.columns))
    X, y, _ = schema.check_table(_as_text(frame, categorical))
    X = X.fillna({name: fill for name, (_, _, fill) in schema.numeric.items()}
                 | {name: fill for name, (_, fill) in schema.categorical.items()})
    X[schema.label] = y
    rng = None if np.isinf(epsilon) else noise_generator(random_state)
    stream = Privacy(epsilon / parts, delta / parts, groups=groups,
                     max_rows_per_group=max_rows_per_group, random_state=rng)
    rows = [_count_row(len(X), stream)]
    rows += [_mean_row(name, X[name].to_numpy(float), bounds[:2], stream)
             for name, bounds in schema.numeric.items()]
    for name, categories in categorical.items():
        rows += _share_rows(name, X[name].to_numpy(object), categories, stream)
    return pd.DataFrame([values for _, values in rows], columns=TABLE_COLUMNS,
                        index=pd.MultiIndex.from_tuples([key for key, _ in rows],
                                                        names=["variable", "level"]))


def _count_row(n_rows, privacy):
    sums = release_cells(np.zeros(n_rows, dtype=np.intp), 1, privacy)
    count = sums.estimate(lambda flat: sums.weight(flat, 0), (0.0, np.inf))
    return ("N", ""), [count.value, np.nan, np.nan, count.noise_std, privacy.epsilon]


def _mean_row(name, values, bounds, privacy):
    sums = release_cells(np.zeros(values.size, dtype=np.intp), 1, privacy, values[:, None],
                         [bounds])
    mean = sums.estimate(lambda flat: sums.mean(flat, 0), bounds, denominators=[0])
    return (name, ""), [np.nan, np.nan, mean.value, mean.noise_std, privacy.epsilon]


def _share_rows(name, values, categories, privacy):
    codes = category_codes(values, categories, name)
    sums = release_cells(codes, len(categories), privacy)
    floor = sums.noise_std()

    def share(flat, k, clip=True):
        counts = sums.table(flat)[:, 0]
        counts = np.maximum(counts, 0.0) if clip else counts
        return counts[k] / max(counts.sum(), floor)

    rows = []
    for k, level in enumerate(categories):
        estimate = sums.estimate(lambda flat, k=k: share(flat, k), (0.0, 1.0),
                                 lambda flat, k=k: share(flat, k, clip=False))
        count = max(float(sums.weight(sums.noisy, k)), 0.0)
        rows.append(((name, level), [count, estimate.value, np.nan, estimate.noise_std,
                                     privacy.epsilon]))
    return rows
