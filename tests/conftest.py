import os
from pathlib import Path

import numpy as np
import pytest


def _seeds():
    spec = os.environ.get("SKDP_TEST_SEEDS", "0")
    if "-" in spec:
        lo, hi = (int(v) for v in spec.split("-"))
        return list(range(lo, hi + 1))
    return [int(v) for v in spec.split(",")]


@pytest.fixture(params=_seeds())
def seed(request):
    """Seed for randomised tests; ``SKDP_TEST_SEEDS=0-9`` widens the run."""
    return request.param


def shared_data_home():
    """The datasets folder: ``SKDP_DATA_HOME`` or ``../shared/datasets``."""
    env = os.environ.get("SKDP_DATA_HOME")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


def pytest_configure(config):
    """Point the loaders at ``../shared/datasets`` when ``SKDP_DATA_HOME`` is unset and that
    folder exists, so the README's test command finds the data on a fresh clone (the
    loaders' own default, ``~/skdp_data``, is for users)."""
    home = shared_data_home()
    if "SKDP_DATA_HOME" not in os.environ and home.is_dir():
        os.environ["SKDP_DATA_HOME"] = str(home)


@pytest.fixture
def thread_cluster():
    """A one-worker, one-thread dask LocalCluster (threads, no processes) as the default
    scheduler inside the test; skipped where no cluster can start."""
    dask = pytest.importorskip("dask")
    distributed = pytest.importorskip("dask.distributed")
    try:
        cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1,
                                           processes=False, dashboard_address=None)
    except Exception as exc:  # noqa: BLE001 - e.g. no sockets in a sandbox
        pytest.skip(f"cannot start a dask LocalCluster here: {exc!r}")
    with cluster, distributed.Client(cluster) as client, \
            dask.config.set(scheduler=client.get):
        yield client


@pytest.fixture
def releases(monkeypatch):
    """Every call of ``skdp.stats``' noisy-sum release (the metrics' and statistics'
    one release), recorded as ``(exact sums, law, noisy sums)``."""
    import skdp.stats._cells as cells_module

    calls, original = [], cells_module.noisy_sums

    def recording(sums, law, random_state):
        noisy = original(sums, law, random_state)
        calls.append((np.asarray(sums, dtype=float).ravel(), law, noisy))
        return noisy

    monkeypatch.setattr(cells_module, "noisy_sums", recording)
    return calls


@pytest.fixture
def unit_ball_classification():
    """A small binary problem whose rows lie inside the unit ball."""
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=300, n_features=5, n_informative=3,
                               random_state=0)
    X /= np.linalg.norm(X, axis=1).max()
    return X, y


def pytest_terminal_summary(terminalreporter):
    """List every planted bug with the checks that caught it (tests/audit/test_planted_bugs.py)."""
    lines = []
    for report in terminalreporter.stats.get("passed", []):
        caught_by = dict(report.user_properties).get("caught_by")
        if caught_by is not None and report.when == "call":
            bug = report.nodeid.rsplit("[", 1)[-1].rstrip("]")
            lines.append(f"{bug}: caught by {caught_by}")
    if lines:
        terminalreporter.section("planted bugs and the checks that caught them")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture
def synchronous_dask():
    """Dask's synchronous scheduler for a test (a module opts in with
    ``pytestmark = pytest.mark.usefixtures("synchronous_dask")``)."""
    dask = pytest.importorskip("dask")
    with dask.config.set(scheduler="synchronous"):
        yield
