"""load_mnist on the shared copy of the IDX files (provenance: its README)."""

import gzip
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from skdp.datasets import _base, load_mnist, verify_checksums

FILES = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
         "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
TRAIN_COUNTS = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


def _find_shared_data():
    repo = Path(__file__).resolve().parents[2]
    for cand in (os.environ.get("SKDP_DATA_HOME", "/work/shared/datasets"),
                 repo.parent / "shared" / "datasets"):
        if all((Path(cand) / "mnist" / f).is_file() for f in FILES):
            return str(cand)
    return None


SHARED = _find_shared_data()
pytestmark = pytest.mark.skipif(SHARED is None, reason="shared MNIST files not found")


@pytest.fixture(scope="module")
def mnist_raw():
    return load_mnist(data_home=SHARED, download_if_missing=False, data_norm=np.inf)


def test_shapes_labels_and_the_published_statistics(mnist_raw):
    d = mnist_raw
    assert d.X_train.shape == (60_000, 784) and d.X_test.shape == (10_000, 784)
    assert d.X_train.dtype == np.float64 and d.y_train.dtype == np.int64
    assert np.bincount(d.y_train).tolist() == TRAIN_COUNTS
    assert np.bincount(d.y_test).tolist() == TEST_COUNTS
    assert d.X_train.min() == 0.0 and d.X_train.max() == 1.0
    assert abs(d.X_train.mean() - 0.130660) < 1e-6  # the README's pixel mean
    assert abs(d.X_test.mean() - 0.132515) < 1e-6
    assert d.feature_names[29] == "pixel_1_1" and len(d.feature_names) == 784


def test_rows_clipped_to_the_public_norm(mnist_raw):
    clipped = load_mnist(data_home=SHARED, download_if_missing=False, data_norm=2.0)
    norms = np.linalg.norm(clipped.X_train, axis=1)
    raw_norms = np.linalg.norm(mnist_raw.X_train, axis=1)
    assert norms.max() <= 2.0 * (1 + 1e-12)
    inside = raw_norms <= 2.0
    np.testing.assert_array_equal(clipped.X_train[inside], mnist_raw.X_train[inside])
    np.testing.assert_allclose(norms[~inside], 2.0)
    assert "clipped to L2 norm <= 2" in clipped.DESCR


def test_checksums_verify_and_a_changed_file_fails(tmp_path):
    assert verify_checksums(SHARED, datasets="mnist") == {f"mnist/{f}": True for f in FILES}
    (tmp_path / "mnist").mkdir()
    for name in FILES[1:]:
        shutil.copy(Path(SHARED) / "mnist" / name, tmp_path / "mnist")
    content = gzip.decompress((Path(SHARED) / "mnist" / FILES[0]).read_bytes())
    (tmp_path / "mnist" / FILES[0]).write_bytes(gzip.compress(content[:-1] + b"\x01"))
    result = verify_checksums(tmp_path, datasets="mnist")
    assert result[f"mnist/{FILES[0]}"] is False and sum(result.values()) == 3


@pytest.mark.parametrize("corrupt, match", [
    (lambda content: content[:-10], "holds 47039990 values; its header announces"),
    (lambda content: b"\x00\x00\x08\x01" + content[4:], "magic number 2049"),
])
def test_a_malformed_idx_file_gives_a_clear_error(tmp_path, corrupt, match):
    (tmp_path / "mnist").mkdir()
    for name in FILES[1:]:
        shutil.copy(Path(SHARED) / "mnist" / name, tmp_path / "mnist")
    content = gzip.decompress((Path(SHARED) / "mnist" / FILES[0]).read_bytes())
    (tmp_path / "mnist" / FILES[0]).write_bytes(gzip.compress(corrupt(content), 1))
    with pytest.raises(ValueError, match=match):
        load_mnist(data_home=tmp_path, download_if_missing=False)


def test_a_download_of_the_upstream_bytes_is_accepted(tmp_path, monkeypatch):
    """The mirror's .gz files differ byte for byte from the local recompressed one;
    the checksum of the decompressed content accepts both."""
    urls = []

    def fake_fetch(url, path):
        urls.append(url)
        content = gzip.decompress((Path(SHARED) / "mnist" / url.rsplit("/", 1)[1]).read_bytes())
        Path(path).write_bytes(gzip.compress(content, 6))  # other bytes, same content

    monkeypatch.setattr(_base, "_fetch_url", fake_fetch)
    data = load_mnist(data_home=tmp_path)
    assert data.X_test.shape == (10_000, 784)
    assert urls == [f"https://storage.googleapis.com/cvdf-datasets/mnist/{f}" for f in FILES]
