"""Loaders for the Adult and KDD Cup 99 benchmarks of the DP-ERM literature."""

import numbers

import numpy as np
from sklearn.utils import Bunch

from ..utils._docstrings import fill_doc
from ..utils.validation import clip_rows_to_norm

from ._base import (
    _check_data_norm,
    _import_pandas,
    _one_hot,
    _resolve_files,
    _scale_by_bounds,
)

__all__ = ["adult_preprocessor", "load_adult", "load_kddcup99", "load_mnist"]

# --------------------------------------------------------------------------- Adult

ADULT_COLUMNS = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "income",
)  # fmt: skip
ADULT_CATEGORICAL = (
    "workclass", "education", "marital-status", "occupation", "relationship",
    "race", "sex", "native-country",
)  # fmt: skip
ADULT_NUMERIC = (
    "age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week",
)  # fmt: skip

# Fixed upper bounds of the Adult numeric columns; every column is >= 0. Each
# column is divided by its bound (and clipped to [0, 1]), so the scaling does
# not depend on the rows loaded. Where the numbers come from:
#   age 90, hours-per-week 99, capital-gain 99,999: the top-codes of the 1994
#       CPS extract (the largest value the census release can contain);
#   education-num 16: the number of education levels listed in adult.names;
#   fnlwgt 1,490,400 and capital-loss 4,356: adult.names gives no range for
#       these two; the numbers are the maxima of the published UCI files (as
#       listed in the dataset documentation), so they are public only in the
#       sense that the released files are public.
# All six equal the column maxima over the 45,222 complete rows, so the result
# is identical to the max-scaling of the DP-ERM papers.
ADULT_NUMERIC_BOUNDS = {
    "age": 90.0,
    "fnlwgt": 1_490_400.0,
    "education-num": 16.0,
    "capital-gain": 99_999.0,
    "capital-loss": 4_356.0,
    "hours-per-week": 99.0,
}

ADULT_POSITIVE_LABEL = ">50K"

# The values of each categorical attribute as the dataset's public documentation,
# ``adult.names`` (UCI, Kohavi & Becker 1996; section "Attribute information"),
# lists them, in its order. Written down from that file, not computed from the
# data files. They differ from the vocabulary of the 45,222 complete rows (the
# one load_adult's default route one-hot encodes) in one value only:
# ``workclass=Never-worked`` is listed but occurs only in rows with a missing
# value, so its indicator is 0 on every row load_adult keeps (99 declared
# values against 98 in the data).
ADULT_CATEGORIES = {
    "workclass": (
        "Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov",
        "State-gov", "Without-pay", "Never-worked",
    ),
    "education": (
        "Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm",
        "Assoc-voc", "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th",
        "Doctorate", "5th-6th", "Preschool",
    ),
    "marital-status": (
        "Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed",
        "Married-spouse-absent", "Married-AF-spouse",
    ),
    "occupation": (
        "Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
        "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical",
        "Farming-fishing", "Transport-moving", "Priv-house-serv", "Protective-serv",
        "Armed-Forces",
    ),
    "relationship": (
        "Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried",
    ),
    "race": ("White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"),
    "sex": ("Female", "Male"),
    "native-country": (
        "United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany",
        "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece", "South", "China",
        "Cuba", "Iran", "Honduras", "Philippines", "Italy", "Poland", "Jamaica",
        "Vietnam", "Mexico", "Portugal", "Ireland", "France", "Dominican-Republic",
        "Laos", "Ecuador", "Taiwan", "Haiti", "Columbia", "Hungary", "Guatemala",
        "Nicaragua", "Scotland", "Thailand", "Yugoslavia", "El-Salvador",
        "Trinadad&Tobago", "Peru", "Hong", "Holand-Netherlands",
    ),
}  # fmt: skip

# ------------------------------------------------------------------- KDD Cup 99

KDD_COLUMNS = (
    "duration", "protocol_type", "service", "flag", "src_bytes", "dst_bytes", "land",
    "wrong_fragment", "urgent", "hot", "num_failed_logins", "logged_in",
    "num_compromised", "root_shell", "su_attempted", "num_root", "num_file_creations",
    "num_shells", "num_access_files", "num_outbound_cmds", "is_host_login",
    "is_guest_login", "count", "srv_count", "serror_rate", "srv_serror_rate",
    "rerror_rate", "srv_rerror_rate", "same_srv_rate", "diff_srv_rate",
    "srv_diff_host_rate", "dst_host_count", "dst_host_srv_count",
    "dst_host_same_srv_rate", "dst_host_diff_srv_rate", "dst_host_same_src_port_rate",
    "dst_host_srv_diff_host_rate", "dst_host_serror_rate", "dst_host_srv_serror_rate",
    "dst_host_rerror_rate", "dst_host_srv_rerror_rate", "label",
)  # fmt: skip
KDD_CATEGORICAL = ("protocol_type", "service", "flag")

# Fixed upper bounds of the 38 numeric KDD columns (all columns are >= 0): the
# column maxima over all 494,021 rows of the published 10 % file
# kddcup.data_10_percent.gz (SHA-256 8045aca0...2a9fd9561), computed once and
# hard-coded. They are treated as public domain bounds: they do not depend on
# which rows are sampled, but they were computed from the released file, so
# they are "public" only if that file is. A bound of 0 (num_outbound_cmds,
# is_host_login: constant 0 in the file) makes the column identically 0.
KDD_NUMERIC_BOUNDS = {
    "duration": 58_329.0,
    "src_bytes": 693_375_640.0,
    "dst_bytes": 5_155_468.0,
    "land": 1.0,
    "wrong_fragment": 3.0,
    "urgent": 3.0,
    "hot": 30.0,
    "num_failed_logins": 5.0,
    "logged_in": 1.0,
    "num_compromised": 884.0,
    "root_shell": 1.0,
    "su_attempted": 2.0,
    "num_root": 993.0,
    "num_file_creations": 28.0,
    "num_shells": 2.0,
    "num_access_files": 8.0,
    "num_outbound_cmds": 0.0,
    "is_host_login": 0.0,
    "is_guest_login": 1.0,
    "count": 511.0,
    "srv_count": 511.0,
    "serror_rate": 1.0,
    "srv_serror_rate": 1.0,
    "rerror_rate": 1.0,
    "srv_rerror_rate": 1.0,
    "same_srv_rate": 1.0,
    "diff_srv_rate": 1.0,
    "srv_diff_host_rate": 1.0,
    "dst_host_count": 255.0,
    "dst_host_srv_count": 255.0,
    "dst_host_same_srv_rate": 1.0,
    "dst_host_diff_srv_rate": 1.0,
    "dst_host_same_src_port_rate": 1.0,
    "dst_host_srv_diff_host_rate": 1.0,
    "dst_host_serror_rate": 1.0,
    "dst_host_srv_serror_rate": 1.0,
    "dst_host_rerror_rate": 1.0,
    "dst_host_srv_rerror_rate": 1.0,
}
KDD_NUMERIC = tuple(KDD_NUMERIC_BOUNDS)

KDD_POSITIVE_LABEL = "normal."
KDD_TRAIN_FRACTION = 0.8



# the end of every loader's Returns section, and its Raises section
_LOADER_DOC = {"bunch_tail_and_raises": """data_norm : float
            The row-norm bound that was applied (``inf``: none).
        DESCR : str
            What preprocessing was applied, and which parts depend on the data.

    Raises
    ------
    FileNotFoundError
        If a data file is missing and ``download_if_missing=False``.
    OSError
        If a download fails (for example, no network) or a downloaded file has
        the wrong SHA-256 (it is then deleted)."""}
_LOADER_DOC["adult_bunch_tail_and_raises"] = _LOADER_DOC["bunch_tail_and_raises"].replace(
    """data_norm : float
            The row-norm bound that was applied (``inf``: none).""",
    """data_norm : float or None
            The row-norm bound that was applied (``inf``: none); ``None`` with
            ``as_frame=True`` (no scaling and no clipping is applied).""")

def _train_test_bunch(X, y, n_train, feature_names, data_norm, descr):
    """The loaders' Bunch: the first ``n_train`` rows train, the rest test."""
    return Bunch(X_train=X[:n_train], X_test=X[n_train:], y_train=y[:n_train],
                 y_test=y[n_train:], feature_names=feature_names, data_norm=data_norm,
                 DESCR=descr)


def _finish(X, data_norm):
    return clip_rows_to_norm(X, data_norm)


def _clip_text(data_norm):
    if np.isinf(data_norm):
        return "no row clipping (data_norm=inf)"
    return (
        f"every row clipped to L2 norm <= {data_norm:g} "
        "(x <- x * min(1, data_norm / ||x||))"
    )


# ------------------------------------------------------------------------ loaders


def _read_adult(pd, path, skiprows):
    dtype = {c: "float64" for c in ADULT_NUMERIC}
    dtype.update({c: str for c in ADULT_CATEGORICAL + ("income",)})
    return pd.read_csv(
        path,
        header=None,
        names=list(ADULT_COLUMNS),
        dtype=dtype,
        skiprows=skiprows,
        skipinitialspace=True,
        na_values=["?"],
        keep_default_na=False,
        skip_blank_lines=True,
    )


def _read_adult_complete(pd, data_home, download_if_missing):
    """The train and test frames of the raw files, rows with a missing value dropped."""
    train_path, test_path = _resolve_files("adult", data_home, download_if_missing)
    frames = []
    for path, skiprows in ((train_path, 0), (test_path, 1)):
        df = _read_adult(pd, path, skiprows)
        frames.append(df[df.notna().all(axis=1)])
    return frames


def _adult_labels(income):
    """``>50K`` -> +1, ``<=50K`` -> -1 (the test file's trailing ``.`` stripped)."""
    labels = income.str.rstrip(".").to_numpy(dtype=object)
    unknown = set(np.unique(labels)) - {"<=50K", ">50K"}
    if unknown:
        raise ValueError(
            f"Unexpected Adult labels {sorted(unknown)} in the data files."
        )
    return np.where(labels == ADULT_POSITIVE_LABEL, 1, -1).astype(np.int64)


@fill_doc(fragments=_LOADER_DOC)
def load_adult(*, data_home=None, download_if_missing=True, data_norm=1.0,
               as_frame=False):
    """Load the UCI Adult data with the standard DP-ERM preprocessing, or raw.

    Binary task: does a person's yearly income exceed $50K (label +1) or not
    (label -1)? The official UCI split is kept: ``adult.data`` is the training
    set and ``adult.test`` the test set. With ``as_frame=True`` the features
    are the 14 raw columns, for a public preprocessor such as
    :func:`adult_preprocessor` in a ``Pipeline``.

    ==============   ==============================
    Samples total    45,222 (30,162 train, 15,060 test)
    Dimensionality   104 (98 indicators + 6 numeric)
    Features         real, in [0, 1] before clipping
    Classes          2 (+1: ``>50K``, 24.78 %%)
    ==============   ==============================

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder holding ``adult/adult.data.gz`` and ``adult/adult.test.gz``
        (or the uncompressed ``adult/adult.data`` and ``adult/adult.test``).
        ``None`` means the environment variable ``SKDP_DATA_HOME``, else
        ``~/skdp_data``; see :func:`get_data_home`.
    download_if_missing : bool, default=True
        If a file is missing, download it from the UCI archive into
        ``data_home`` and check its SHA-256. If False, raise
        ``FileNotFoundError`` instead.
    data_norm : float, default=1.0
        Public bound ``L`` on the L2 norm of a feature row: every row is scaled
        by ``min(1, L / ||x||_2)``. ``np.inf`` disables the clipping. Not
        applied with ``as_frame=True`` (it is still validated): the raw rows
        are clipped by the estimator's own ``data_norm`` after the
        preprocessing.
    as_frame : bool, default=False
        If True, ``X_train`` and ``X_test`` are pandas DataFrames of the 14 raw
        feature columns, with no encoding, no scaling and no clipping: the
        complete rows of the default route, in the same order (indexed from
        0 in each part). The labels are the same.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with attributes:

        X_train : ndarray of shape (30162, 104), dtype float64, or DataFrame of shape (30162, 14)
            Training features (a DataFrame with ``as_frame=True``: the six
            numeric columns as float64, the eight categorical columns as
            strings).
        X_test : ndarray of shape (15060, 104), dtype float64, or DataFrame of shape (15060, 14)
            Test features.
        y_train : ndarray of shape (30162,), dtype int64
            Training labels, in {-1, +1}.
        y_test : ndarray of shape (15060,), dtype int64
            Test labels, in {-1, +1}.
        feature_names : ndarray of shape (104,) or (14,), dtype object
            ``"workclass=Federal-gov"``, ... then ``"age"``, ``"fnlwgt"``,
            ``"education-num"``, ``"capital-gain"``, ``"capital-loss"``,
            ``"hours-per-week"`` (the numeric columns start at index 98). With
            ``as_frame=True`` the 14 raw column names in file order, ``"age"``,
            ``"workclass"``, ..., ``"native-country"``.
        %(adult_bunch_tail_and_raises)s

    See Also
    --------
    adult_preprocessor : The public preprocessing of the raw columns.
    load_kddcup99 : The other DP-ERM benchmark dataset.
    verify_checksums : Check the SHA-256 of local copies of the files.

    Notes
    -----
    Preprocessing, as in Chaudhuri, Monteleoni & Sarwate (JMLR 2011) and
    Iyengar et al. (IEEE S&P 2019):

    1. Drop every row with a missing value (``?``): 32,561 -> 30,162 train and
       16,281 -> 15,060 test rows.
    2. One-hot encode the 8 categorical columns, in file order, with the
       categories sorted and taken from the pooled complete rows (train and
       test): 98 indicators (``workclass=Never-worked`` does not occur).
    3. Divide the 6 numeric columns by fixed public bounds (age 90, fnlwgt
       1,490,400, education-num 16, capital-gain 99,999, capital-loss 4,356,
       hours-per-week 99) and clip them to [0, 1]. These bounds equal the data
       maxima, so this is the papers' max-scaling without its data dependence.
    4. Clip every row to L2 norm ``data_norm``. Every row has norm > 1 after
       step 3 (eight indicators alone give sqrt(8)), so with ``data_norm=1``
       every row ends with norm exactly 1.
    5. Labels: ``>50K`` -> +1, ``<=50K`` -> -1 (the trailing ``.`` of the test
       labels is stripped).

    Data-dependent steps: the category vocabulary (step 2) comes from the data
    and is fitted on train and test together, as in the papers. The numeric
    bounds are constants; fnlwgt and capital-loss are not documented in
    ``adult.names`` and are the maxima of the published files.

    With ``as_frame=True`` only steps 1 and 5 are applied. The public route
    is then ``make_pipeline(adult_preprocessor(),
    ObjPertLogisticRegression(data_norm=np.sqrt(14)))``: the categories are
    the lists of ``adult.names``, the numeric bounds those of step 3, and
    ``adult_preprocessor().fit_transform(X_train)`` equals the default
    route's features before clipping (``data_norm=np.inf``) plus one
    indicator column, ``workclass=Never-worked``, that is 0 on every complete
    row.

    Local files are not checksummed on load; use :func:`verify_checksums`.

    Examples
    --------
    >>> from skdp.datasets import load_adult
    >>> data = load_adult()  # doctest: +SKIP
    >>> data.X_train.shape, data.X_test.shape  # doctest: +SKIP
    ((30162, 104), (15060, 104))
    >>> data.feature_names[98]  # doctest: +SKIP
    'age'
    >>> raw = load_adult(as_frame=True)  # doctest: +SKIP
    >>> raw.X_train.shape, list(raw.X_train.columns[:3])  # doctest: +SKIP
    ((30162, 14), ['age', 'workclass', 'fnlwgt'])
    """
    data_norm = _check_data_norm(data_norm)
    if not isinstance(as_frame, (bool, np.bool_)):
        raise ValueError(f"as_frame must be True or False, got {as_frame!r}.")
    pd = _import_pandas()
    frames = _read_adult_complete(pd, data_home, download_if_missing)
    n_train = len(frames[0])
    pooled = pd.concat(frames, ignore_index=True)
    y = _adult_labels(pooled["income"])
    if as_frame:
        return _adult_frames(frames, y, n_train)

    X_cat, cat_names = _one_hot(
        [pooled[c].to_numpy(dtype=object) for c in ADULT_CATEGORICAL],
        ADULT_CATEGORICAL,
    )
    X_num = _scale_by_bounds(
        pooled[list(ADULT_NUMERIC)].to_numpy(dtype=np.float64),
        [ADULT_NUMERIC_BOUNDS[c] for c in ADULT_NUMERIC],
    )
    X = _finish(np.hstack([X_cat, X_num]), data_norm)
    feature_names = np.asarray(cat_names + list(ADULT_NUMERIC), dtype=object)

    descr = (
        "UCI Adult (census income), DP-ERM preprocessing.\n"
        f"Official UCI split: {n_train} train / {len(pooled) - n_train} test rows "
        "after dropping rows with a missing value ('?').\n"
        f"{X_cat.shape[1]} one-hot indicators of the 8 categorical columns (sorted "
        "categories of the pooled complete train+test rows), then the 6 numeric "
        "columns divided by fixed public bounds "
        f"{ADULT_NUMERIC_BOUNDS} and clipped to [0, 1]; {_clip_text(data_norm)}.\n"
        "Labels: '>50K' -> +1, '<=50K' -> -1.\n"
        "Data-dependent: the category vocabulary (fitted on train and test "
        "together, as in the DP-ERM papers). Data-independent: the numeric bounds "
        "(constants; fnlwgt and capital-loss are the maxima of the published files) "
        "and the per-row clipping."
    )
    return _train_test_bunch(X, y, n_train, feature_names, data_norm, descr)


ADULT_FEATURES = ADULT_COLUMNS[:-1]  # the 14 raw feature columns, in file order


def _adult_frames(frames, y, n_train):
    """The Bunch of ``load_adult(as_frame=True)``: raw columns, nothing applied."""
    X_train, X_test = (df[list(ADULT_FEATURES)].reset_index(drop=True) for df in frames)
    descr = (
        "UCI Adult (census income), raw columns (as_frame=True).\n"
        f"Official UCI split: {n_train} train / {len(X_test)} test rows after "
        "dropping rows with a missing value ('?'): the rows of the default route, in "
        "the same order.\n"
        "The 14 raw feature columns as pandas DataFrames (6 numeric as float64, 8 "
        "categorical as strings). No preprocessing is applied: no encoding, no "
        "scaling and no row clipping (data_norm is None); the estimator's own "
        "data_norm clips the rows after a preprocessor. "
        "skdp.datasets.adult_preprocessor() is a public one (categories declared "
        "in adult.names, fixed numeric bounds): every row it outputs has L2 norm at "
        "most sqrt(14).\n"
        "Labels: '>50K' -> +1, '<=50K' -> -1.\n"
        "Nothing here is fitted on the data; the rows kept are those without a "
        "missing value."
    )
    return Bunch(X_train=X_train, X_test=X_test, y_train=y[:n_train],
                 y_test=y[n_train:],
                 feature_names=np.asarray(ADULT_FEATURES, dtype=object),
                 data_norm=None, DESCR=descr)


def _adult_feature_name(feature, category):
    """``"workclass=Private"``: the indicator names of :func:`load_adult`."""
    return f"{feature}={category}"


def adult_preprocessor():
    """A public preprocessor of the raw Adult columns: declared categories and bounds.

    An unfitted ``ColumnTransformer`` for the frames of
    ``load_adult(as_frame=True)``: it one-hot encodes the 8 categorical
    columns with the category lists of the dataset's documentation
    (``adult.names``) and scales the 6 numeric columns by the fixed bounds of
    :func:`load_adult` (age 90, fnlwgt 1,490,400, education-num 16,
    capital-gain 99,999, capital-loss 4,356, hours-per-week 99) to [0, 1],
    clipping. Fitting it learns nothing from the rows, so it passes
    :func:`skdp.model_selection.check_public_preprocessing` and may precede
    a private estimator in a ``Pipeline``, including one given to
    :class:`skdp.EpsilonForUtility` or :class:`skdp.PrivateGridSearchCV`.

    Returns
    -------
    preprocessor : sklearn.compose.ColumnTransformer
        Unfitted; its output is a dense float64 array of 105 columns: 99
        indicators (``"workclass=Federal-gov"``, ..., the categories of each
        column sorted, the columns in file order), then ``"age"``,
        ``"fnlwgt"``, ``"education-num"``, ``"capital-gain"``,
        ``"capital-loss"`` and ``"hours-per-week"`` in [0, 1]
        (``get_feature_names_out`` gives these names).

    See Also
    --------
    load_adult : ``as_frame=True`` gives the raw columns this preprocessor takes.
    skdp.preprocessing.BoundedScaler : The scaling of the numeric columns.
    skdp.model_selection.check_public_preprocessing : Which steps are public.

    Notes
    -----
    The encoders are ``OneHotEncoder(categories=<declared lists>,
    handle_unknown="ignore", sparse_output=False)``: a value not listed in
    ``adult.names`` gives a row of zeros in its block, never an error whose
    occurrence would depend on the rows. The numeric block is
    ``BoundedScaler(lower=0, upper=<bounds>)``.

    Compared with the default route of :func:`load_adult`, whose vocabulary
    is read from the pooled complete rows (98 indicators), the declared lists
    add one value, ``workclass=Never-worked``: it occurs only in rows with a
    missing value, so on the complete rows its column is 0 and every other
    column equals the default route's features before clipping
    (``load_adult(data_norm=np.inf)``). The other seven lists are exactly the
    values found in the data.

    Every row it outputs has one 1 in each of the 8 indicator blocks (at most
    one, for a value not listed) and 6 numeric values in [0, 1], so its L2
    norm is at most ``sqrt(8 + 6) = sqrt(14)``, a bound declared without
    looking at the data: ``data_norm=np.sqrt(14)`` in the estimator clips
    nothing. ``data_norm=1`` instead rescales every row to norm 1, as the
    default route of :func:`load_adult` does (every row has norm > 1).

    The numeric bounds are public only as far as :func:`load_adult` argues:
    fnlwgt and capital-loss are not documented in ``adult.names``, and their
    bounds are the maxima of the published files.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.pipeline import make_pipeline
    >>> from skdp import ObjPertLogisticRegression
    >>> from skdp.datasets import adult_preprocessor, load_adult
    >>> from skdp.model_selection import check_public_preprocessing
    >>> check_public_preprocessing(adult_preprocessor())
    >>> data = load_adult(as_frame=True)  # doctest: +SKIP
    >>> model = make_pipeline(adult_preprocessor(),
    ...                       ObjPertLogisticRegression(data_norm=np.sqrt(14)))
    >>> model.fit(data.X_train, data.y_train)  # doctest: +SKIP
    Pipeline(...)
    >>> adult_preprocessor().fit_transform(data.X_train).shape  # doctest: +SKIP
    (30162, 105)
    """
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder

    from ..preprocessing import BoundedScaler

    encoder = OneHotEncoder(
        categories=[sorted(ADULT_CATEGORIES[c]) for c in ADULT_CATEGORICAL],
        handle_unknown="ignore",
        sparse_output=False,
        feature_name_combiner=_adult_feature_name,
    )
    scaler = BoundedScaler(
        lower=0.0, upper=[ADULT_NUMERIC_BOUNDS[c] for c in ADULT_NUMERIC])
    return ColumnTransformer(
        [("categorical", encoder, list(ADULT_CATEGORICAL)),
         ("numeric", scaler, list(ADULT_NUMERIC))],
        remainder="drop",
        sparse_threshold=0,
        verbose_feature_names_out=False,
    )


def _check_kdd_random_state(random_state):
    """A legacy RandomState: the dpml-benchmark sample needs its exact stream."""
    if random_state is None:
        return np.random.RandomState()  # fresh OS entropy; never the global RNG
    if isinstance(random_state, np.random.RandomState):
        return random_state
    if isinstance(random_state, numbers.Integral) and not isinstance(
        random_state, bool
    ):
        return np.random.RandomState(int(random_state))
    raise ValueError(
        "random_state must be None, an int or a numpy.random.RandomState (the "
        "sample reproduces the legacy np.random.seed stream), got "
        f"{random_state!r}."
    )


@fill_doc(fragments=_LOADER_DOC)
def load_kddcup99(
    *,
    data_home=None,
    download_if_missing=True,
    data_norm=1.0,
    n_samples=70000,
    random_state=10000019,
):
    """Load a sample of KDD Cup 99 (10 %%) with the standard DP-ERM preprocessing.

    Binary task: is a network connection normal (label +1) or an attack
    (label -1)? The defaults reproduce the 70,000-row sample of Iyengar et al.
    (IEEE S&P 2019, code ``dpml-benchmark``), with the numeric columns scaled as
    Chaudhuri, Monteleoni & Sarwate (JMLR 2011) describe.

    ==============   ==============================================
    Samples total    70,000 (56,000 train, 14,000 test) by default
    Dimensionality   113 for the default sample (75 indicators + 38
                     numeric); the indicator count depends on the sample
    Features         real, in [0, 1] before clipping
    Classes          2 (+1: ``normal.``, 19.87 %% of the default sample)
    ==============   ==============================================

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder holding ``kddcup99/kddcup.data_10_percent.gz``. ``None`` means
        the environment variable ``SKDP_DATA_HOME``, else ``~/skdp_data``; see
        :func:`get_data_home`.
    download_if_missing : bool, default=True
        If the file is missing, download it from the UCI KDD archive into
        ``data_home`` and check its SHA-256. If False, raise
        ``FileNotFoundError`` instead.
    data_norm : float, default=1.0
        Public bound ``L`` on the L2 norm of a feature row: every row is scaled
        by ``min(1, L / ||x||_2)``. ``np.inf`` disables the clipping.
    n_samples : int, default=70000
        Number of rows drawn, uniformly **with replacement**, from the 494,021
        rows of the file. At least 2.
    random_state : int, numpy.random.RandomState or None, default=10000019
        Seed of the legacy :class:`numpy.random.RandomState` used for the draw
        and the shuffle; the default gives the dpml-benchmark sample. The
        global NumPy RNG is never used (``None`` seeds a fresh RandomState from
        the operating system). A RandomState instance is used as is and
        advances.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with attributes:

        X_train : ndarray of shape (int(0.8 * n_samples), n_features), dtype float64
            Training features.
        X_test : ndarray of shape (n_samples - int(0.8 * n_samples), n_features)
            Test features.
        y_train : ndarray of shape (int(0.8 * n_samples),), dtype int64
            Training labels, in {-1, +1}.
        y_test : ndarray of shape (n_samples - int(0.8 * n_samples),)
            Test labels, in {-1, +1}.
        feature_names : ndarray of shape (n_features,), dtype object
            ``"protocol_type=icmp"``, ..., ``"service=..."``, ``"flag=..."``,
            then the 38 numeric column names, ``"duration"`` first.
        %(bunch_tail_and_raises)s

    See Also
    --------
    load_adult : The other DP-ERM benchmark dataset.
    verify_checksums : Check the SHA-256 of a local copy of the file.

    Notes
    -----
    Preprocessing:

    1. Sample: ``rs = np.random.RandomState(random_state)``,
       ``idx = rs.randint(494021, size=n_samples)``; rows ``idx`` in that
       order. This is the same draw as dpml-benchmark's
       legacy seeded draw (seed 10000019, ``randint(494021, size=70000)``)
       (65,371 distinct rows by default).
    2. One-hot encode ``protocol_type``, ``service`` and ``flag`` with the
       sorted categories present in the sample (3 + 62 + 10 = 75 by
       default). ``land``, ``logged_in``, ``is_host_login`` and
       ``is_guest_login`` are already 0/1 and stay numeric.
    3. Divide the 38 numeric columns by fixed bounds, the column maxima over
       the whole 494,021-row file (hard-coded), and clip to [0, 1]. Columns
       with bound 0 stay 0. Unlike the data maxima of the sample, these bounds
       do not depend on which rows were drawn; ``src_bytes`` for example is
       divided by 693,375,640 although the default sample's maximum is
       5,135,678.
    4. Clip every row to L2 norm ``data_norm``. Each row has three indicators,
       so its norm is > 1 after step 3; with ``data_norm=1`` every row ends
       with norm exactly 1.
    5. Labels: ``normal.`` -> +1, any attack -> -1.
    6. Shuffle the rows with the same RandomState stream
       (``rs.shuffle``, as dpml-benchmark's ``np.random.shuffle``) and put the
       first ``int(0.8 * n_samples)`` rows in the training set.

    Data-dependent steps: the indicator vocabulary (step 2) comes from the
    sample. The numeric bounds are computed from the released file, so they
    are public only insofar as that file is. Because the draw is with
    replacement and the file is heavily duplicated, most test rows (68.9 %% for
    the default sample) also occur exactly in the training set: test accuracy
    is close to training accuracy.

    The local file is not checksummed on load; use :func:`verify_checksums`.

    Examples
    --------
    >>> from skdp.datasets import load_kddcup99
    >>> data = load_kddcup99()  # doctest: +SKIP
    >>> data.X_train.shape, data.X_test.shape  # doctest: +SKIP
    ((56000, 113), (14000, 113))
    >>> float((data.y_train == 1).mean())  # doctest: +SKIP
    0.198...
    """
    data_norm = _check_data_norm(data_norm)
    if (
        isinstance(n_samples, bool)
        or not isinstance(n_samples, numbers.Integral)
        or n_samples < 2
    ):
        raise ValueError(f"n_samples must be an int >= 2, got {n_samples!r}.")
    n_samples = int(n_samples)
    rs = _check_kdd_random_state(random_state)
    pd = _import_pandas()
    (path,) = _resolve_files("kddcup99", data_home, download_if_missing)

    dtype = {c: "float64" for c in KDD_NUMERIC}
    dtype.update({c: "category" for c in KDD_CATEGORICAL + ("label",)})
    df = pd.read_csv(path, header=None, names=list(KDD_COLUMNS), dtype=dtype)
    n_rows = len(df)

    idx = rs.randint(n_rows, size=n_samples)
    sample = df.iloc[idx]

    y = np.where(
        sample["label"].to_numpy(dtype=object) == KDD_POSITIVE_LABEL, 1, -1
    ).astype(np.int64)
    X_cat, cat_names = _one_hot(
        [sample[c].to_numpy(dtype=object) for c in KDD_CATEGORICAL], KDD_CATEGORICAL
    )
    X_num = _scale_by_bounds(
        sample[list(KDD_NUMERIC)].to_numpy(dtype=np.float64),
        [KDD_NUMERIC_BOUNDS[c] for c in KDD_NUMERIC],
    )
    X = _finish(np.hstack([X_cat, X_num]), data_norm)

    order = np.arange(n_samples)
    rs.shuffle(order)
    X, y = X[order], y[order]
    n_train = int(n_samples * KDD_TRAIN_FRACTION)
    feature_names = np.asarray(cat_names + list(KDD_NUMERIC), dtype=object)

    descr = (
        "KDD Cup 1999, 10 % file, DP-ERM preprocessing (Iyengar et al. 2019 sample, "
        "CMS11 scaling).\n"
        f"{n_samples} rows drawn with replacement from the {n_rows} rows of the file "
        f"(legacy RandomState, random_state={random_state!r}); shuffled with the same "
        f"stream and split {n_train} train / {n_samples - n_train} test.\n"
        f"{X_cat.shape[1]} one-hot indicators of protocol_type, service and flag "
        "(sorted categories present in the sample), then the 38 numeric columns "
        "divided by fixed bounds (maxima over the whole published 10 % file; bound 0 "
        f"-> column 0) and clipped to [0, 1]; {_clip_text(data_norm)}.\n"
        "Labels: 'normal.' -> +1, any attack -> -1.\n"
        "Data-dependent: the indicator vocabulary (from the sample); the numeric "
        "bounds come from the released file, not from the sample. Data-independent: "
        "the row draw and the per-row clipping.\n"
        "Caveat: the draw is with replacement and the file is heavily duplicated, so "
        "many test rows also occur exactly in the training set."
    )
    return _train_test_bunch(X, y, n_train, feature_names, data_norm, descr)


# --------------------------------------------------------------------------- MNIST

MNIST_SHAPE = (28, 28)
# IDX magic numbers: unsigned bytes, 3 dimensions (images) or 1 (labels)
_IDX_IMAGES, _IDX_LABELS = 2051, 2049


def _read_idx(path, magic, n_dims):
    """The array of an IDX file (gzip): big-endian header, then unsigned bytes."""
    import gzip

    with gzip.open(path, "rb") as f:
        content = f.read()
    header = 4 * (1 + n_dims)
    if len(content) < header:
        raise ValueError(f"{path} is not an IDX file: {len(content)} bytes.")
    found, *dims = np.frombuffer(content[:header], dtype=">u4").tolist()
    if found != magic:
        raise ValueError(f"{path} has IDX magic number {found}; expected {magic}.")
    if len(content) - header != int(np.prod(dims)):
        raise ValueError(f"{path} holds {len(content) - header} values; its header "
                         f"announces {dims}.")
    return np.frombuffer(content, dtype=np.uint8, offset=header).reshape(dims)


@fill_doc(fragments=_LOADER_DOC)
def load_mnist(*, data_home=None, download_if_missing=True, data_norm=1.0):
    """Load MNIST (handwritten digits) with the DP-ERM preprocessing.

    Ten classes (the digits 0-9). The standard split is kept: 60,000 training
    and 10,000 test images of 28 x 28 grey levels.

    ==============   ==============================
    Samples total    70,000 (60,000 train, 10,000 test)
    Dimensionality   784 (28 x 28 pixels)
    Features         real, in [0, 1] before clipping
    Classes          10
    ==============   ==============================

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder holding ``mnist/train-images-idx3-ubyte.gz``,
        ``mnist/train-labels-idx1-ubyte.gz``, ``mnist/t10k-images-idx3-ubyte.gz``
        and ``mnist/t10k-labels-idx1-ubyte.gz``. ``None`` means the environment
        variable ``SKDP_DATA_HOME``, else ``~/skdp_data``; see
        :func:`get_data_home`.
    download_if_missing : bool, default=True
        If a file is missing, download it from the CVDF mirror of LeCun et al.'s
        files into ``data_home`` and check its SHA-256. If False, raise
        ``FileNotFoundError`` instead.
    data_norm : float, default=1.0
        Public bound ``L`` on the L2 norm of a row: every row is scaled by
        ``min(1, L / ||x||_2)``. ``np.inf`` disables the clipping.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with attributes:

        X_train : ndarray of shape (60000, 784), dtype float64
            Training images, one row per image (row-major pixels).
        X_test : ndarray of shape (10000, 784), dtype float64
            Test images.
        y_train : ndarray of shape (60000,), dtype int64
            Training digits, 0 to 9.
        y_test : ndarray of shape (10000,), dtype int64
            Test digits.
        feature_names : ndarray of shape (784,), dtype object
            ``"pixel_<row>_<column>"``.
        %(bunch_tail_and_raises)s

    See Also
    --------
    load_adult, load_kddcup99 : The binary DP-ERM benchmark datasets.
    verify_checksums : Check the SHA-256 of local copies of the files.

    Notes
    -----
    Preprocessing, data-independent: grey levels divided by 255, then every row
    clipped to L2 norm ``data_norm``. An image's norm after scaling is about 9
    to 10 (about 100 to 150 lit pixels), so ``data_norm=1`` rescales nearly
    every row to norm 1: a fixed, per-row normalisation, as in Iyengar et al.
    (IEEE S&P 2019). The checksums are of the decompressed IDX content, so a
    file recompressed locally and the mirror's file both verify. Local files
    are not checksummed on load; use :func:`verify_checksums`. MNIST: LeCun,
    Cortes and Burges; cite LeCun et al. (1998).

    Examples
    --------
    >>> from skdp.datasets import load_mnist
    >>> data = load_mnist()  # doctest: +SKIP
    >>> data.X_train.shape, data.X_test.shape  # doctest: +SKIP
    ((60000, 784), (10000, 784))
    """
    data_norm = _check_data_norm(data_norm)
    paths = _resolve_files("mnist", data_home, download_if_missing)
    train_images, train_labels, test_images, test_labels = (
        _read_idx(path, magic, n_dims) for path, magic, n_dims in zip(
            paths, (_IDX_IMAGES, _IDX_LABELS) * 2, (3, 1) * 2))
    if len(train_images) != len(train_labels) or len(test_images) != len(test_labels):
        raise ValueError("The MNIST image and label files hold different numbers of rows.")
    images = np.concatenate([train_images, test_images]).reshape(-1, np.prod(MNIST_SHAPE))
    X = _finish(images / 255.0, data_norm)
    y = np.concatenate([train_labels, test_labels]).astype(np.int64)
    rows, columns = np.indices(MNIST_SHAPE).reshape(2, -1)
    feature_names = np.array([f"pixel_{r}_{c}" for r, c in zip(rows, columns)], dtype=object)
    descr = (
        "MNIST handwritten digits (LeCun, Cortes & Burges), DP-ERM preprocessing.\n"
        f"Standard split: {len(train_images)} train / {len(test_images)} test images of "
        "28 x 28 pixels, one row per image.\n"
        f"Grey levels divided by 255; {_clip_text(data_norm)}.\n"
        "Labels: the digits 0-9. Nothing depends on the data."
    )
    return _train_test_bunch(X, y, len(train_images), feature_names, data_norm, descr)
