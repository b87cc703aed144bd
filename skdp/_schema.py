"""A data dictionary for a CSV table: the public facts a private fit may use.

A schema is a JSON file written by the data holder before the analysis::

    {"label": {"name": "income", "classes": ["<=50K", ">50K"]},
     "columns": {"age": {"bounds": [17, 90]},
                 "workclass": {"categories": ["Private", "Self-emp", "Gov"]}},
     "ignore": ["visit_id"]}

A column with ``bounds`` is numeric: a missing value becomes the declared
``"impute"`` constant (default the lower bound), then the column is scaled from its
bounds to [0, 1] and clipped. A column with ``categories`` is categorical: a missing
value becomes the declared ``"impute"`` category (default the level ``"(missing)"``,
added to the categories), then it is one-hot encoded, sparse, from the declared
categories only. Columns under ``"ignore"`` (ids, free text) are never read. Every
number and every category comes from the schema, never from the rows, so the
preprocessing passes :func:`skdp.model_selection.check_public_preprocessing`.

Anything the schema does not declare is refused before any noise is drawn, by a
message that names the column (the header is the data holder's own) but never a value
or a count read from the rows.
"""

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder

from .preprocessing import BoundedScaler

MISSING_LEVEL = "(missing)"
"""The category a missing categorical value becomes unless the schema says otherwise."""

_ID_NAMES = {"id", "uuid", "mrn"}
_ID_SUFFIXES = ("_id", "-id", " id", "_uuid", "_mrn")


class SchemaError(ValueError):
    """The schema or the table does not declare what the fit needs (nothing was spent)."""


@dataclass(frozen=True)
class Schema:
    """A checked data dictionary (see the module docstring for the JSON format).

    Parameters
    ----------
    label : str
        The label column.
    classes : tuple of str
        The declared label set (public): ``classes_`` of the released model.
    numeric : dict
        ``{column: (lower, upper, fill)}`` for each numeric column.
    categorical : dict
        ``{column: (categories, fill)}`` for each categorical column; ``categories``
        includes ``fill``.
    ignore : tuple of str
        Columns never read.
    sha256 : str
        SHA-256 of the schema file's bytes (for the privacy card).

    Examples
    --------
    >>> schema = Schema.from_dict({"label": {"name": "y", "classes": ["no", "yes"]},
    ...                            "columns": {"age": {"bounds": [0, 100]}}})
    >>> schema.numeric, schema.row_norm_bound()
    ({'age': (0.0, 100.0, 0.0)}, 1.0)
    """

    label: str
    classes: tuple
    numeric: dict
    categorical: dict
    ignore: tuple = ()
    sha256: str = ""

    @classmethod
    def from_file(cls, path):
        """Read and check a schema file.

        Parameters
        ----------
        path : str or Path
            The JSON file.

        Returns
        -------
        schema : Schema
        """
        raw = Path(path).read_bytes()
        try:
            spec = json.loads(raw)
        except json.JSONDecodeError as error:
            raise SchemaError(f"The schema {path} is not valid JSON: {error}.") from None
        return cls.from_dict(spec, sha256=hashlib.sha256(raw).hexdigest())

    @classmethod
    def from_dict(cls, spec, sha256=""):
        """Check a schema given as a dict (the parsed JSON).

        Parameters
        ----------
        spec : dict
            The data dictionary.
        sha256 : str, default=""
            Hash of the file it came from.

        Returns
        -------
        schema : Schema
        """
        if not isinstance(spec, dict) or not isinstance(spec.get("columns"), dict):
            raise SchemaError('A schema is a JSON object with "label" and "columns"; see '
                              "`python -m skdp --help` (--write-schema).")
        label, classes = _label(spec.get("label"))
        numeric, categorical = {}, {}
        for name, column in spec["columns"].items():
            if name == label:
                raise SchemaError(f"Column {name!r} is the label: declare it under "
                                  '"label" only.')
            if _is_numeric(name, column):
                numeric[name] = _bounds(name, column)
            else:
                categorical[name] = _categories(name, column)
        if not numeric and not categorical:
            raise SchemaError('The schema declares no feature column under "columns".')
        ignore = spec.get("ignore", [])
        if not isinstance(ignore, list) or not all(isinstance(c, str) for c in ignore):
            raise SchemaError('"ignore" must be a list of column names.')
        if twice := sorted(set(ignore) & (set(numeric) | set(categorical) | {label})):
            raise SchemaError(f"Columns {twice} are both ignored and declared: choose one.")
        return cls(label, classes, numeric, categorical, tuple(ignore), sha256)

    @property
    def features(self):
        """The declared feature columns, numeric first, in schema order."""
        return list(self.numeric) + list(self.categorical)

    def row_norm_bound(self):
        """Public bound on a preprocessed row's L2 norm: ``sqrt(number of columns)``.

        Every numeric column lies in [0, 1] and every categorical column is one 1.
        """
        return float(np.sqrt(len(self.numeric) + len(self.categorical)))

    def preprocessor(self):
        """The public preprocessing the schema declares (a ``ColumnTransformer``).

        Returns
        -------
        transformer : ColumnTransformer
            Numeric columns: constant imputation, then ``BoundedScaler`` from the
            declared bounds. Categorical columns: constant imputation, then a sparse
            ``OneHotEncoder`` of the declared categories (an undeclared value is an
            error, as :meth:`check_table` already refused it).
        """
        blocks = [(f"num:{name}", Pipeline([
            ("impute", SimpleImputer(strategy="constant", fill_value=fill,
                                     keep_empty_features=True)),
            ("scale", BoundedScaler(lower=lower, upper=upper))]), [name])
            for name, (lower, upper, fill) in self.numeric.items()]
        blocks += [(f"cat:{name}", Pipeline([
            ("impute", SimpleImputer(strategy="constant", fill_value=fill,
                                     keep_empty_features=True)),
            ("onehot", OneHotEncoder(categories=[list(categories)],
                                     handle_unknown="error", sparse_output=True))]), [name])
            for name, (categories, fill) in self.categorical.items()]
        return ColumnTransformer(blocks, remainder="drop", sparse_threshold=1.0)

    def read_table(self, path, groups_column=None):
        """Read the declared columns of a CSV file, refusing anything undeclared.

        Parameters
        ----------
        path : str or Path
            The CSV file (header in the first line).
        groups_column : str, default=None
            The column naming each row's person (read as labels, never encoded).

        Returns
        -------
        X : DataFrame
            The feature columns (numeric as float, categorical as object).
        y : ndarray
            The labels, as strings of the declared classes.
        groups : ndarray or None
            Each row's person.
        """
        header = list(pd.read_csv(path, nrows=0).columns)
        self.check_header(header, groups_column)
        wanted = self.features + [self.label] + ([groups_column] if groups_column else [])
        try:
            table = pd.read_csv(path, usecols=wanted, dtype=object, keep_default_na=False,
                                na_values=[""])
        except pd.errors.ParserError:   # its message quotes a line number of the rows
            raise SchemaError(f"{path} is not a well-formed CSV file (the parser's own "
                              "message is not shown: it quotes the rows).") from None
        return self.check_table(table, groups_column)

    def check_header(self, header, groups_column=None):
        """Refuse a header with an undeclared or a missing column (names only).

        Parameters
        ----------
        header : list of str
            The table's column names.
        groups_column : str, default=None
            The person column, which the schema need not declare.
        """
        known = set(self.features) | set(self.ignore) | {self.label}
        if groups_column is not None:
            if groups_column in set(self.features) | {self.label}:
                raise SchemaError(f"The groups column {groups_column!r} is declared as a "
                                  "feature or the label: a person id is never a feature; "
                                  "remove it from \"columns\".")
            known.add(groups_column)
        if undeclared := [c for c in header if c not in known]:
            raise SchemaError(
                f"Columns {undeclared} are in the table but not in the schema: declare each "
                'under "columns" (numeric with "bounds": [lower, upper], categorical with '
                '"categories": [...]) or list it under "ignore". Nothing was fitted.')
        if absent := [c for c in known - set(self.ignore) if c not in header]:
            raise SchemaError(f"Columns {sorted(absent)} are declared but not in the table.")

    def check_table(self, table, groups_column=None):
        """Check the values of a table against the schema and split it.

        The messages name a column, never a value or a count of the rows.

        Parameters
        ----------
        table : DataFrame
            The declared columns, as read from the file (strings, NaN for missing).
        groups_column : str, default=None
            The person column.

        Returns
        -------
        X, y, groups
            As :meth:`read_table`.
        """
        X = pd.DataFrame(index=table.index)
        for name in self.numeric:
            X[name] = _numbers(table[name], name)
        for name, (categories, _) in self.categorical.items():
            values = table[name].astype(object)
            if not values.isin(categories + (np.nan,)).all():
                raise SchemaError(
                    f"Column {name!r} holds a value that is not among its declared "
                    f"categories: add every value the column can take to its "
                    '"categories" (the value is not shown: it comes from the private '
                    "rows). Nothing was fitted.")
            X[name] = values
        y = table[self.label].astype(object)
        if not y.isin(self.classes).all():
            raise SchemaError(
                f"The label column {self.label!r} holds a missing value or a value that is "
                'not among the declared "classes" (not shown: it comes from the private '
                "rows): declare every class, or remove the rows without a label. Nothing "
                "was fitted.")
        groups = None
        if groups_column is not None:
            groups = table[groups_column].to_numpy(dtype=object)
            if pd.isna(groups).any():
                raise SchemaError(f"The groups column {groups_column!r} holds a missing "
                                  "value: give every row its person.")
        return X, y.to_numpy(dtype=object), groups


def schema_template(header, label=None, groups_column=None):
    """A schema to fill in, from the column names alone (never a value).

    Parameters
    ----------
    header : list of str
        The table's column names.
    label : str, default=None
        The label column (default: the last column).
    groups_column : str, default=None
        The person column, left out of the template's columns.

    Returns
    -------
    template : dict
        ``label`` with an empty ``classes`` list, every other column with empty
        ``bounds`` and ``categories`` (keep the one that applies, fill it in), and
        the columns whose names look like identifiers under ``ignore``.

    Examples
    --------
    >>> schema_template(["visit_id", "age", "sex", "readmitted"])["ignore"]
    ['visit_id']
    """
    label = label if label is not None else header[-1]
    others = [c for c in header if c not in (label, groups_column)]
    ignore = [c for c in others if _looks_like_id(c)]
    return {
        "label": {"name": label, "classes": []},
        "columns": {c: {"bounds": [None, None], "categories": []}
                    for c in others if c not in ignore},
        "ignore": ignore,
    }


def _looks_like_id(name):
    lower = name.lower()
    return lower in _ID_NAMES or lower.endswith(_ID_SUFFIXES)


def _label(label):
    if not (isinstance(label, dict) and isinstance(label.get("name"), str)):
        raise SchemaError('The schema needs "label": {"name": ..., "classes": [...]}.')
    classes = label.get("classes")
    if not isinstance(classes, list) or len(classes) < 2:
        raise SchemaError(f'Declare the label\'s "classes" (at least two) for '
                          f"{label['name']!r}: the label set is public.")
    return label["name"], tuple(str(c) for c in classes)


def _is_numeric(name, column):
    if not isinstance(column, dict):
        raise SchemaError(f"Column {name!r}: declare an object with \"bounds\" or "
                          '"categories".')
    has_bounds = column.get("bounds") not in (None, [None, None])
    has_categories = bool(column.get("categories"))
    if has_bounds == has_categories:
        raise SchemaError(f"Column {name!r}: declare exactly one of \"bounds\": [lower, "
                          'upper] (numeric) or "categories": [...] (categorical), or '
                          'list the column under "ignore".')
    return has_bounds


def _bounds(name, column):
    bounds = column["bounds"]
    ok = (isinstance(bounds, list) and len(bounds) == 2
          and all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds)
          and np.all(np.isfinite(bounds)) and bounds[0] < bounds[1])
    if not ok:
        raise SchemaError(f"Column {name!r}: \"bounds\" must be [lower, upper], finite "
                          "numbers with lower < upper.")
    fill = column.get("impute", bounds[0])
    if isinstance(fill, bool) or not isinstance(fill, (int, float)) or not np.isfinite(fill):
        raise SchemaError(f"Column {name!r}: \"impute\" must be a finite number.")
    return float(bounds[0]), float(bounds[1]), float(fill)


def _categories(name, column):
    categories = [str(c) for c in column["categories"]]
    if len(set(categories)) != len(categories):
        raise SchemaError(f"Column {name!r}: a category is listed twice.")
    fill = str(column.get("impute", MISSING_LEVEL))
    if fill not in categories:
        categories.append(fill)
    return tuple(categories), fill


def _numbers(values, name):
    numbers = pd.to_numeric(values, errors="coerce").astype(np.float64)
    if (numbers.isna() & values.notna()).any() or np.isinf(numbers).any():
        raise SchemaError(f"Column {name!r} is declared numeric but holds a value that is "
                          "not a finite number (not shown: it comes from the private "
                          "rows): clean the column or declare it categorical.")
    return numbers
