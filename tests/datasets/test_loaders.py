"""Tests of skdp.datasets on the shared copies of Adult and KDD Cup 99."""

import gzip
import os
import shutil
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from skdp.datasets import (get_data_home, load_adult, load_kddcup99, load_mnist,
                           verify_checksums)
from skdp.datasets import _base

REQUIRED_FILES = (
    "adult/adult.data.gz",
    "adult/adult.test.gz",
    "kddcup99/kddcup.data_10_percent.gz",
)
ADULT_NUMERIC = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss",
                 "hours-per-week"]  # fmt: skip
ADULT_CAT_WIDTHS = {"workclass": 7, "education": 16, "marital-status": 7,
                    "occupation": 14, "relationship": 6, "race": 5, "sex": 2,
                    "native-country": 41}  # fmt: skip


def _find_shared_data():
    repo = Path(__file__).resolve().parents[2]
    candidates = [
        os.environ.get("SKDP_DATA_HOME", "/work/shared/datasets"),
        repo.parent / "shared" / "datasets",
    ]
    for cand in candidates:
        if all((Path(cand) / f).is_file() for f in REQUIRED_FILES):
            return str(cand)
    return None


SHARED = _find_shared_data()
needs_data = pytest.mark.skipif(
    SHARED is None, reason="shared Adult/KDD files not found"
)


def _norms(X):
    return np.linalg.norm(X, axis=1)


@pytest.fixture(scope="module")
def adult():
    return load_adult(data_home=SHARED, download_if_missing=False)


@pytest.fixture(scope="module")
def adult_raw():
    return load_adult(data_home=SHARED, download_if_missing=False, data_norm=np.inf)


@pytest.fixture(scope="module")
def kdd():
    return load_kddcup99(data_home=SHARED, download_if_missing=False)


@pytest.fixture(scope="module")
def kdd_raw():
    return load_kddcup99(data_home=SHARED, download_if_missing=False, data_norm=np.inf)


# ---------------------------------------------------------------------- checksums


@needs_data
def test_shared_files_match_published_checksums():
    result = verify_checksums(SHARED, datasets=("adult", "kddcup99"))
    assert result == {f: True for f in REQUIRED_FILES}


@needs_data
def test_verify_checksums_detects_a_modified_file(tmp_path):
    (tmp_path / "adult").mkdir()
    shutil.copy(Path(SHARED) / "adult" / "adult.test.gz", tmp_path / "adult")
    # Uncompressed copy of adult.data with one byte changed.
    content = gzip.decompress((Path(SHARED) / "adult" / "adult.data.gz").read_bytes())
    (tmp_path / "adult" / "adult.data").write_bytes(content[:-2] + b"X\n")
    assert verify_checksums(tmp_path, datasets="adult") == {
        "adult/adult.data": False,
        "adult/adult.test.gz": True,
    }
    with pytest.raises(FileNotFoundError, match="SKDP_DATA_HOME"):
        verify_checksums(tmp_path, datasets=["kddcup99"])
    with pytest.raises(ValueError, match="Unknown dataset"):
        verify_checksums(tmp_path, datasets=["cifar10"])


# ------------------------------------------------------------------------- Adult


@needs_data
def test_adult_shapes_labels_and_names(adult):
    assert adult.X_train.shape == (30162, 104)
    assert adult.X_test.shape == (15060, 104)
    assert adult.y_train.shape == (30162,) and adult.y_test.shape == (15060,)
    for X in (adult.X_train, adult.X_test):
        assert X.dtype == np.float64 and np.isfinite(X).all()
    for y in (adult.y_train, adult.y_test):
        assert np.issubdtype(y.dtype, np.integer)
        assert set(np.unique(y)) == {-1, 1}
    y = np.concatenate([adult.y_train, adult.y_test])
    assert abs(np.mean(y == 1) - 0.2478) < 1e-4

    names = adult.feature_names
    assert isinstance(names, np.ndarray) and names.shape == (104,)
    assert all(isinstance(n, str) for n in names)
    assert list(names[98:]) == ADULT_NUMERIC
    assert np.flatnonzero(names == "age")[0] == 98
    prefixes = [n.split("=")[0] for n in names[:98]]
    assert Counter(prefixes) == ADULT_CAT_WIDTHS
    # Columns in file order, categories sorted within each column.
    assert list(dict.fromkeys(prefixes)) == list(ADULT_CAT_WIDTHS)
    for col in ADULT_CAT_WIDTHS:
        cats = [n.split("=", 1)[1] for n in names[:98] if n.startswith(col + "=")]
        assert cats == sorted(cats)
    assert names[0] == "workclass=Federal-gov"
    assert "workclass=Never-worked" not in names
    assert adult.data_norm == 1.0
    assert "vocabulary" in adult.DESCR and "bounds" in adult.DESCR


@needs_data
def test_adult_features_before_clipping(adult_raw):
    X = np.vstack([adult_raw.X_train, adult_raw.X_test])
    assert adult_raw.data_norm == np.inf
    assert set(np.unique(X[:, :98])) == {0.0, 1.0}
    np.testing.assert_array_equal(X[:, :98].sum(axis=1), 8.0)
    num = X[:, 98:]
    assert num.min() >= 0.0 and num.max() <= 1.0
    # The public bounds equal the data maxima of the complete rows.
    np.testing.assert_array_equal(num.max(axis=0), 1.0)
    assert _norms(X).min() > 1.0


@needs_data
def test_adult_rows_clipped(adult, adult_raw):
    for X in (adult.X_train, adult.X_test):
        np.testing.assert_allclose(_norms(X), 1.0, rtol=0, atol=1e-9)
    # Clipping is exactly x * min(1, L / ||x||) applied to the unclipped rows.
    X_raw = adult_raw.X_train
    expected = X_raw / np.maximum(1.0, _norms(X_raw))[:, None]
    np.testing.assert_allclose(adult.X_train, expected, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(adult.y_train, adult_raw.y_train)


@needs_data
@pytest.mark.parametrize("data_norm", [0.1, 2.5])
def test_adult_other_data_norm(data_norm, adult_raw):
    data = load_adult(data_home=SHARED, data_norm=data_norm)
    norms = _norms(data.X_train)
    assert norms.max() <= data_norm + 1e-12
    raw_norms = _norms(adult_raw.X_train)
    unclipped = raw_norms <= data_norm
    np.testing.assert_array_equal(data.X_train[unclipped], adult_raw.X_train[unclipped])
    np.testing.assert_allclose(norms[~unclipped], data_norm, rtol=1e-12)
    assert data.data_norm == data_norm


@needs_data
def test_adult_logistic_regression_baseline(adult):
    from sklearn.linear_model import LogisticRegression

    clf = LogisticRegression(max_iter=5000).fit(adult.X_train, adult.y_train)
    assert abs(clf.score(adult.X_test, adult.y_test) - 0.8402) <= 0.005


@needs_data
def test_adult_reads_uncompressed_files_and_env_var(tmp_path, monkeypatch, adult):
    (tmp_path / "adult").mkdir()
    for name in ("adult.data", "adult.test"):
        content = gzip.decompress((Path(SHARED) / "adult" / f"{name}.gz").read_bytes())
        (tmp_path / "adult" / name).write_bytes(content)
    monkeypatch.setenv("SKDP_DATA_HOME", str(tmp_path))
    data = load_adult(download_if_missing=False)
    for key in ("X_train", "X_test", "y_train", "y_test", "feature_names"):
        np.testing.assert_array_equal(data[key], adult[key])


# --------------------------------------------------------------------------- KDD


@needs_data
def test_kdd_shapes_labels_and_names(kdd):
    assert kdd.X_train.shape == (56000, 113)
    assert kdd.X_test.shape == (14000, 113)
    for X in (kdd.X_train, kdd.X_test):
        assert X.dtype == np.float64 and np.isfinite(X).all()
    y = np.concatenate([kdd.y_train, kdd.y_test])
    assert np.issubdtype(y.dtype, np.integer) and set(np.unique(y)) == {-1, 1}
    assert abs(np.mean(y == 1) - 0.1987) < 1e-4

    names = kdd.feature_names
    assert names.shape == (113,) and all(isinstance(n, str) for n in names)
    prefixes = [n.split("=")[0] for n in names[:75]]
    assert Counter(prefixes) == {"protocol_type": 3, "service": 62, "flag": 10}
    assert list(dict.fromkeys(prefixes)) == ["protocol_type", "service", "flag"]
    assert list(names[:3]) == [
        "protocol_type=icmp",
        "protocol_type=tcp",
        "protocol_type=udp",
    ]
    assert names[75] == "duration" and names[-1] == "dst_host_srv_rerror_rate"
    assert not any("=" in n for n in names[75:])
    assert "label" not in names
    for col in ("land", "logged_in", "is_host_login", "is_guest_login"):
        assert col in names


@needs_data
def test_kdd_features_and_clipping(kdd, kdd_raw):
    X_raw = np.vstack([kdd_raw.X_train, kdd_raw.X_test])
    assert set(np.unique(X_raw[:, :75])) == {0.0, 1.0}
    np.testing.assert_array_equal(X_raw[:, :75].sum(axis=1), 3.0)
    num = X_raw[:, 75:]
    assert num.min() >= 0.0 and num.max() <= 1.0
    names = list(kdd.feature_names)
    for col in ("urgent", "num_outbound_cmds", "is_host_login"):
        assert not X_raw[:, names.index(col)].any()
    assert _norms(X_raw).min() > 1.0

    for X in (kdd.X_train, kdd.X_test):
        np.testing.assert_allclose(_norms(X), 1.0, rtol=0, atol=1e-9)
    np.testing.assert_allclose(
        kdd.X_train, kdd_raw.X_train / _norms(kdd_raw.X_train)[:, None], rtol=1e-12
    )
    np.testing.assert_array_equal(kdd.y_train, kdd_raw.y_train)


@needs_data
def test_kdd_reproducible_and_global_rng_untouched(kdd):
    np.random.seed(0)
    state = np.random.get_state()[1].copy()
    small = load_kddcup99(data_home=SHARED, n_samples=1000, random_state=10000019)
    assert np.array_equal(np.random.get_state()[1], state)

    # A smaller sample's draw is a prefix of the default draw (same legacy stream).
    idx_big = np.random.RandomState(10000019).randint(494021, size=70000)
    idx_small = np.random.RandomState(10000019).randint(494021, size=1000)
    np.testing.assert_array_equal(idx_big[:1000], idx_small)
    assert small.X_train.shape[0] == 800 and small.X_test.shape[0] == 200

    again = load_kddcup99(
        data_home=SHARED, random_state=np.random.RandomState(10000019)
    )
    for key in ("X_train", "X_test", "y_train", "y_test", "feature_names"):
        np.testing.assert_array_equal(again[key], kdd[key])

    other = load_kddcup99(data_home=SHARED, n_samples=1000, random_state=1)
    assert not np.array_equal(other.y_train, small.y_train)


# ------------------------------------------------------------- paths and errors


def test_get_data_home(tmp_path, monkeypatch):
    assert get_data_home(tmp_path) == str(tmp_path)
    monkeypatch.setenv("SKDP_DATA_HOME", str(tmp_path / "env"))
    assert get_data_home() == str(tmp_path / "env")
    monkeypatch.delenv("SKDP_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert get_data_home() == str(tmp_path / "home" / "skdp_data")
    assert not (tmp_path / "home").exists()  # resolving creates nothing


@pytest.mark.parametrize("loader", [load_adult, load_kddcup99, load_mnist])
def test_missing_files_without_download(loader, tmp_path):
    with pytest.raises(FileNotFoundError, match="SKDP_DATA_HOME") as excinfo:
        loader(data_home=tmp_path, download_if_missing=False)
    assert "data_home" in str(excinfo.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("loader", [load_adult, load_kddcup99, load_mnist])
def test_offline_download_gives_clear_oserror(loader, tmp_path, monkeypatch):
    def offline(*args, **kwargs):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(OSError, match="offline") as excinfo:
        loader(data_home=tmp_path)
    assert "SKDP_DATA_HOME" in str(excinfo.value)
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


@pytest.mark.parametrize("loader", [load_adult, load_kddcup99, load_mnist])
def test_checksum_mismatch_deletes_download(loader, tmp_path, monkeypatch):
    def wrong_bytes(url, path):
        Path(path).write_bytes(b"<html>not the data</html>\n")

    monkeypatch.setattr(_base, "_fetch_url", wrong_bytes)
    with pytest.raises(OSError, match="checksum mismatch"):
        loader(data_home=tmp_path)
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


@needs_data
def test_download_path_with_correct_bytes(tmp_path, monkeypatch, adult):
    """A download that yields the UCI bytes is accepted and then loaded."""
    shared = Path(SHARED)
    served = {
        "adult.data": gzip.decompress((shared / "adult/adult.data.gz").read_bytes()),
        "adult.test": gzip.decompress((shared / "adult/adult.test.gz").read_bytes()),
        "kddcup.data_10_percent.gz": (
            shared / "kddcup99/kddcup.data_10_percent.gz"
        ).read_bytes(),
    }
    urls = []

    def fake_fetch(url, path):
        urls.append(url)
        Path(path).write_bytes(served[url.rsplit("/", 1)[1]])

    monkeypatch.setattr(_base, "_fetch_url", fake_fetch)
    data = load_adult(data_home=tmp_path)
    np.testing.assert_array_equal(data.X_test, adult.X_test)
    assert sorted(p.name for p in (tmp_path / "adult").iterdir()) == [
        "adult.data",
        "adult.test",
    ]
    # Already present now: no second download.
    load_adult(data_home=tmp_path)
    assert urls == [
        "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/adult.data",
        "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/adult.test",
    ]

    small = load_kddcup99(data_home=tmp_path, n_samples=500)
    assert small.X_train.shape[0] == 400
    assert urls[-1] == (
        "http://kdd.ics.uci.edu/databases/kddcup99/kddcup.data_10_percent.gz"
    )
    assert all(verify_checksums(tmp_path, datasets=("adult", "kddcup99")).values())


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), None, "1"])
@pytest.mark.parametrize("loader", [load_adult, load_kddcup99, load_mnist])
def test_invalid_data_norm(loader, bad, tmp_path):
    with pytest.raises(ValueError, match="data_norm"):
        loader(data_home=tmp_path, data_norm=bad)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_samples": 1}, "n_samples"),
        ({"n_samples": 10.0}, "n_samples"),
        ({"random_state": np.random.default_rng(0)}, "random_state"),
    ],
)
def test_kdd_invalid_params(kwargs, match, tmp_path):
    with pytest.raises(ValueError, match=match):
        load_kddcup99(data_home=tmp_path, **kwargs)
