"""Data location, download, checksum and row-clipping helpers for the loaders."""

import gzip
import hashlib
import http.client
import os
import shutil
import urllib.error
import urllib.request
from collections import namedtuple
from numbers import Real

import numpy as np

__all__ = ["get_data_home", "verify_checksums"]

ENV_DATA_HOME = "SKDP_DATA_HOME"
DEFAULT_DATA_HOME = os.path.join("~", "skdp_data")

# What a failed or unreachable download raises.
_NETWORK_ERRORS = (
    urllib.error.URLError,
    http.client.HTTPException,
    ConnectionError,
    TimeoutError,
)

# Seconds without data before a download is abandoned.
_DOWNLOAD_TIMEOUT = 60

# One data file a loader reads.
#
# ``candidates``: file names tried in order inside ``<data_home>/<subdir>``.
# ``sha256``: SHA-256 of the file's *content*; for a ``.gz`` candidate with
#     ``content_is_decompressed=True`` the hash is taken after decompression.
# ``content_is_decompressed``: see above (True for Adult, whose canonical UCI
#     files are plain text; False for KDD, whose canonical file is the ``.gz``).
# ``url``: where a missing file is downloaded from; ``download_name`` is the
#     name it is stored under (one of ``candidates``). The downloaded bytes are
#     checked against ``sha256`` before the file is moved into place.
_DataFile = namedtuple(
    "_DataFile",
    [
        "subdir",
        "candidates",
        "sha256",
        "content_is_decompressed",
        "url",
        "download_name",
    ],
)

_UCI_ADULT = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/"

DATA_FILES = {
    "adult": (
        _DataFile(
            subdir="adult",
            candidates=("adult.data.gz", "adult.data"),
            sha256="5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
            content_is_decompressed=True,
            url=_UCI_ADULT + "adult.data",
            download_name="adult.data",
        ),
        _DataFile(
            subdir="adult",
            candidates=("adult.test.gz", "adult.test"),
            sha256="a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
            content_is_decompressed=True,
            url=_UCI_ADULT + "adult.test",
            download_name="adult.test",
        ),
    ),
    "kddcup99": (
        _DataFile(
            subdir="kddcup99",
            candidates=("kddcup.data_10_percent.gz",),
            sha256="8045aca0d84e70e622d1148d7df782496f6333bf6eb979a1b0837c42a9fd9561",
            content_is_decompressed=False,
            url="http://kdd.ics.uci.edu/databases/kddcup99/kddcup.data_10_percent.gz",
            download_name="kddcup.data_10_percent.gz",
        ),
    ),
    # MNIST: the hash is of the decompressed IDX content, which the local copy (whose
    # train-images .gz was recompressed) and the mirror's .gz files share
    "mnist": tuple(
        _DataFile(
            subdir="mnist",
            candidates=(name,),
            sha256=sha256,
            content_is_decompressed=True,
            url="https://storage.googleapis.com/cvdf-datasets/mnist/" + name,
            download_name=name,
        )
        for name, sha256 in (
            ("train-images-idx3-ubyte.gz",
             "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"),
            ("train-labels-idx1-ubyte.gz",
             "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"),
            ("t10k-images-idx3-ubyte.gz",
             "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7"),
            ("t10k-labels-idx1-ubyte.gz",
             "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2"),
        )
    ),
}


def get_data_home(data_home=None):
    """Return the folder the dataset loaders read from and download into.

    The folder is ``data_home`` if given, else the value of the environment
    variable ``SKDP_DATA_HOME``, else ``~/skdp_data``. Inside it the loaders
    expect ``adult/adult.data.gz`` (or ``adult/adult.data``),
    ``adult/adult.test.gz`` (or ``adult/adult.test``),
    ``kddcup99/kddcup.data_10_percent.gz`` and the four MNIST IDX files
    ``mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz``.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder to use. ``~`` is expanded.

    Returns
    -------
    data_home : str
        The resolved folder. It is not created: the loaders create it only
        when they download a file.

    Examples
    --------
    >>> from skdp.datasets import get_data_home
    >>> get_data_home("/tmp/my_skdp_data")
    '/tmp/my_skdp_data'
    """
    if data_home is None:
        data_home = os.environ.get(ENV_DATA_HOME) or DEFAULT_DATA_HOME
    return os.path.expanduser(os.fspath(data_home))


def _sha256_of(path, *, decompress=False):
    """SHA-256 hex digest of a file, of its gzip-decompressed content if asked."""
    h = hashlib.sha256()
    opener = gzip.open if decompress else open
    with opener(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _file_sha256(path, data_file):
    """SHA-256 of ``path`` as defined by ``data_file`` (see ``_DataFile``)."""
    decompress = data_file.content_is_decompressed and path.endswith(".gz")
    return _sha256_of(path, decompress=decompress)


def _find_local(data_home, data_file):
    """Path of the first existing candidate file, or None."""
    folder = os.path.join(data_home, data_file.subdir)
    for name in data_file.candidates:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return path
    return None


def _expected_files_text(data_file):
    return " or ".join(f"'{data_file.subdir}/{name}'" for name in data_file.candidates)


def _local_copy_hint(data_home, dataset):
    files = "; ".join(_expected_files_text(f) for f in DATA_FILES[dataset])
    return (
        f"To use a local copy, set the environment variable {ENV_DATA_HOME} (or pass "
        f"data_home=...) to a folder that contains {files}. The folder searched was "
        f"'{data_home}'."
    )


def _fetch_url(url, path):
    """Download ``url`` to ``path`` (overwriting it). Network errors propagate."""
    with urllib.request.urlopen(url, timeout=_DOWNLOAD_TIMEOUT) as response:
        with open(path, "wb") as f:
            shutil.copyfileobj(response, f)


def _remove_quietly(path):
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def _download(data_home, dataset, data_file):
    """Download one file into ``data_home``, check its SHA-256, return its path."""
    folder = os.path.join(data_home, data_file.subdir)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, data_file.download_name)
    part = path + ".part"
    try:
        _fetch_url(data_file.url, part)
    except _NETWORK_ERRORS as exc:
        _remove_quietly(part)
        raise OSError(
            f"Could not download {data_file.url} ({exc}). This machine appears to be "
            f"offline, or the server cannot be reached. "
            + _local_copy_hint(data_home, dataset)
        ) from exc
    except BaseException:
        _remove_quietly(part)
        raise
    try:
        digest = _sha256_of(part, decompress=data_file.content_is_decompressed
                            and data_file.download_name.endswith(".gz"))
    except (OSError, EOFError):  # not the gzip file it should be
        digest = "that of a file that is not gzip"
    if digest != data_file.sha256:
        _remove_quietly(part)
        raise OSError(
            f"SHA-256 checksum mismatch for {data_file.url}: expected "
            f"{data_file.sha256}, got {digest}. The downloaded file was deleted. "
            + _local_copy_hint(data_home, dataset)
        )
    os.replace(part, path)
    return path


def _resolve_files(dataset, data_home, download_if_missing):
    """Local paths of the files of ``dataset``, downloading missing ones if allowed.

    Only downloaded files are checksummed here; use :func:`verify_checksums`
    for files that were already present.
    """
    data_home = get_data_home(data_home)
    paths = []
    for data_file in DATA_FILES[dataset]:
        path = _find_local(data_home, data_file)
        if path is None:
            if not download_if_missing:
                raise FileNotFoundError(
                    f"The {dataset} data file {_expected_files_text(data_file)} "
                    "was not found and download_if_missing=False. "
                    + _local_copy_hint(data_home, dataset)
                )
            path = _download(data_home, dataset, data_file)
        paths.append(path)
    return paths


def verify_checksums(data_home=None, *, datasets=("adult", "kddcup99", "mnist")):
    """Check the SHA-256 of the local data files against the published values.

    The loaders check checksums only when they download a file, because hashing
    the decompressed content on every load would be slow. Call this function to
    check a local copy, e.g. one you placed in ``SKDP_DATA_HOME`` yourself.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Data folder, resolved as in :func:`get_data_home`.
    datasets : iterable of str, default=("adult", "kddcup99", "mnist")
        Datasets whose files to check, among ``"adult"``, ``"kddcup99"`` and
        ``"mnist"``.

    Returns
    -------
    result : dict of str to bool
        Maps each checked file, as a path relative to ``data_home`` (for
        example ``"adult/adult.data.gz"``), to whether its checksum matches.
        For Adult the hash is taken over the decompressed content (the original
        UCI bytes, whether the local file is gzipped or not); for KDD Cup 99
        over the ``.gz`` file itself; for MNIST over the decompressed IDX
        content.

    Raises
    ------
    FileNotFoundError
        If a file of a requested dataset is not present.
    ValueError
        If an unknown dataset name is given.

    Examples
    --------
    >>> from skdp.datasets import verify_checksums
    >>> verify_checksums(datasets=["adult"])  # doctest: +SKIP
    {'adult/adult.data.gz': True, 'adult/adult.test.gz': True}
    """
    if isinstance(datasets, str):
        datasets = [datasets]
    data_home = get_data_home(data_home)
    result = {}
    for dataset in datasets:
        if dataset not in DATA_FILES:
            raise ValueError(
                f"Unknown dataset {dataset!r}; expected one of {sorted(DATA_FILES)}."
            )
        for data_file in DATA_FILES[dataset]:
            path = _find_local(data_home, data_file)
            if path is None:
                raise FileNotFoundError(
                    f"The {dataset} data file {_expected_files_text(data_file)} "
                    "was not found. " + _local_copy_hint(data_home, dataset)
                )
            rel = os.path.relpath(path, data_home).replace(os.sep, "/")
            result[rel] = _file_sha256(path, data_file) == data_file.sha256
    return result


def _check_data_norm(data_norm):
    """Validate ``data_norm``: a positive float, ``np.inf`` meaning no clipping."""
    if isinstance(data_norm, bool) or not isinstance(data_norm, Real):
        raise ValueError(
            f"data_norm must be a positive number or np.inf, got {data_norm!r}."
        )
    data_norm = float(data_norm)
    if not data_norm > 0:  # also rejects NaN
        raise ValueError(
            f"data_norm must be a positive number or np.inf, got {data_norm!r}."
        )
    return data_norm


def _one_hot(columns, names):
    """One-hot encode string columns, sorted categories of the values present.

    Parameters
    ----------
    columns : list of ndarray of shape (n_samples,)
        Columns of strings without missing values.
    names : list of str
        Column names, used for the feature names ``"<name>=<category>"``.

    Returns
    -------
    X : ndarray of shape (n_samples, n_indicators)
    feature_names : list of str
    """
    n = len(columns[0]) if columns else 0
    cats_and_codes = [np.unique(col, return_inverse=True) for col in columns]
    widths = [len(cats) for cats, _ in cats_and_codes]
    X = np.zeros((n, sum(widths)), dtype=np.float64)
    rows = np.arange(n)
    offset = 0
    feature_names = []
    for name, (cats, codes), width in zip(names, cats_and_codes, widths):
        X[rows, offset + codes.ravel()] = 1.0
        feature_names.extend(f"{name}={cat}" for cat in cats)
        offset += width
    return X, feature_names


def _scale_by_bounds(X_num, bounds):
    """Divide each column by its public bound, clip to [0, 1]; bound 0 gives 0."""
    bounds = np.asarray(bounds, dtype=np.float64)
    scale = np.divide(1.0, bounds, out=np.zeros_like(bounds), where=bounds > 0)
    return np.clip(X_num * scale, 0.0, 1.0)


def _import_pandas():
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - pandas is installed in tests
        raise ImportError(
            "The skdp dataset loaders need pandas to parse the raw files: "
            "pip install pandas"
        ) from exc
    return pd
