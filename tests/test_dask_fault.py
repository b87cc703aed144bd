"""A worker killed in the middle of a dask fit: the fit completes with the undisturbed model.

A child process starts a ``LocalCluster`` of two worker processes (each under a nanny,
which restarts it) and fits on rows, labels and persons generated block by block on the
workers (each block from its own seed: recomputed alike anywhere). Each fit (DP-SGD,
objective perturbation and SSP, on rows and on persons) runs once undisturbed, then
again while a scheduler plugin kills one worker (``SIGKILL``) when half of the
undisturbed fit's tasks have finished: the kill falls inside the fit, whatever the
load of the machine. dask recomputes the lost partitions (the persisted clipped rows
and, with persons, the rows' person codes and counts) from their graph, and every
noise draw happens in the client, from the fit's stream, in the same order, so the model is the
undisturbed one: DP-SGD and SSP bit for bit (the partial sums are added in the order
of the graph), objective perturbation within the distance of two certified solves (a
partition recomputed on another worker may round its BLAS products differently).

No task draws randomness, so a recomputed task cannot draw twice: every ChaCha20 or
AES stream the client opens (randomgen's classes, replaced in the child by ones that
record their instances) ends at the same position in the disturbed and the undisturbed
fit. A fit whose partition kills its worker at every attempt fails (dask gives up after
the allowed failures, set to none for that fit: a retry could kill a worker whose nanny
is still starting it, and such a nanny does not restart it) and releases nothing: no noise is drawn, and the estimator holds
no fitted attribute (:func:`skdp.base.atomic_fit`).
"""

import pytest

from tests._dask_child import run_child

pytest.importorskip("dask.distributed")

_CHILD = """
    import randomgen
    from distributed.diagnostics.plugin import SchedulerPlugin
    from skdp import DPSGDClassifier, ObjPertLogisticRegression, SSPLinearRegression

    warnings.simplefilter("ignore")
    n_rows, n_features, chunk = 40_000, 10, 5_000
    fatal_block = 4
    dask.config.set({"distributed.scheduler.allowed-failures": 1})
    cluster, client = start_cluster(n_workers=2)

    streams = []   # every stream the client opens (the noise streams of a fit)

    def recorded(bit_generator):
        class Recorded(bit_generator):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                streams.append(self)
        return Recorded

    # both imported by skdp.utils._random at each use (ChaCha20; AES for DP-SGD's steps)
    randomgen.ChaCha = recorded(randomgen.ChaCha)
    randomgen.AESCounter = recorded(randomgen.AESCounter)

    def position(stream):   # how far a stream was drawn: its block counter (and offset)
        state = stream.state
        if "ctr" in state.get("state", {}):
            return [int(c) for c in state["state"]["ctr"]]
        return [int(state["s"]["counter"][0]), int(state["s"]["offset"]) % 64]

    def positions():
        return [position(s) for s in streams]

    class KillHalfway(SchedulerPlugin):
        # counts the tasks the scheduler sees finish; kills a worker at the target
        def __init__(self):
            self.done, self.target, self.victim, self.killed_at = 0, None, None, None

        def arm(self, target, victim):
            self.done, self.target, self.victim, self.killed_at = 0, target, victim, None

        def transition(self, key, start, finish, *args, **kwargs):
            if finish != "memory":
                return
            self.done += 1
            if self.target is not None and self.killed_at is None and \\
                    self.done >= self.target:
                os.kill(self.victim, signal.SIGKILL)
                self.killed_at = self.done

    plugin = KillHalfway()
    cluster.scheduler.add_plugin(plugin)

    def _allowed_failures(count, dask_scheduler=None):
        dask_scheduler.allowed_failures = count

    def fatal(block, block_info=None):   # kills its worker at every attempt
        if block_info[None]["chunk-location"][0] == fatal_block:
            os.kill(os.getpid(), signal.SIGKILL)
        return block

    # persons spread over blocks
    X, y, _, groups = lazy_data(n_rows, n_features, chunk, scale=3.0, label_weight=-1.0,
                                n_persons=7_000)
    X_fatal = X.map_blocks(fatal, dtype=float)
    estimators = {
        "dpsgd": lambda: DPSGDClassifier(sample_rate=0.1, epochs=4, data_norm=1.0,
                                         random_state=3),
        "objpert": lambda: ObjPertLogisticRegression(data_norm=1.0, max_rows_per_group=2.0,
                                                     random_state=3),
        "ssp": lambda: SSPLinearRegression(data_norm=1.0, y_bound=1.0,
                                           max_rows_per_group=2.0, random_state=3),
    }
    out = {}
    for name, make in estimators.items():
        for unit, persons_of in (("rows", {}), ("persons", {"groups": groups})):
            streams.clear()
            plugin.arm(None, None)
            reference = make().fit(X, y, **persons_of)
            undisturbed = {"tasks": plugin.done, "noise": positions()}
            streams.clear()
            plugin.arm(undisturbed["tasks"] // 2, sorted(client.run(os.getpid).values())[0])
            disturbed = make().fit(X, y, **persons_of)
            out[f"{name} {unit}"] = {
                "gap": float(np.linalg.norm(np.append(
                    disturbed.coef_ - reference.coef_,
                    disturbed.intercept_ - reference.intercept_))),
                "tol": getattr(reference, "tol", 0.0),
                "norm": float(np.linalg.norm(np.append(reference.coef_,
                                                       reference.intercept_))),
                "killed_after": [plugin.killed_at, undisturbed["tasks"]],
                "tasks": [plugin.done, undisturbed["tasks"]],
                "noise": [positions(), undisturbed["noise"]],
                "spent": [disturbed.epsilon_spent_, reference.epsilon_spent_],
            }
            client.wait_for_workers(2, timeout=120)
            plugin.arm(None, None)
            streams.clear()
            failed = make()
            # one death fails the fatal block: a second try could kill a worker its nanny
            # is still starting, which that nanny then never restarts
            client.run_on_scheduler(_allowed_failures, 0)
            try:
                failed.fit(X_fatal, y, **persons_of)
                error = None
            except Exception as exc:
                error = type(exc).__name__
            client.run_on_scheduler(_allowed_failures, 1)
            out[f"{name} {unit}"]["failed"] = {
                "error": error, "noise": positions(),
                "fitted": sorted(k for k in vars(failed) if k.endswith("_")
                                 and not k.startswith("_"))}
            client.wait_for_workers(2, timeout=120)
    client.close()
    cluster.close()
    print(json.dumps(out))
"""

FITS = [f"{name} {unit}" for name in ("dpsgd", "objpert", "ssp")
        for unit in ("rows", "persons")]


@pytest.fixture(scope="module")
def faults():
    out = run_child(_CHILD, timeout=1500, one_arena=False)
    assert sorted(out) == sorted(FITS)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", FITS)
def test_a_worker_killed_mid_fit_changes_nothing(faults, name):
    fit = faults[name]
    killed_at, total = fit["killed_after"]
    assert killed_at is not None and killed_at < total      # inside the fit
    assert fit["tasks"][0] > fit["tasks"][1]                # lost work was recomputed
    if name.startswith("dpsgd"):   # the same sums in the same order: bit for bit
        assert fit["gap"] == 0.0
    elif name.startswith("objpert"):   # two certified solves (a recomputed partition
        assert fit["gap"] <= 2 * fit["tol"]   # may round its BLAS products differently)
    else:   # SSP: sums of 40,000 terms in another order change each statistic by less
        # than n * 2**-52 of its magnitude (4e-12); the well-conditioned solve keeps that
        assert fit["gap"] <= 1e-11 * fit["norm"]
    assert fit["spent"][0] == fit["spent"][1]


@pytest.mark.slow
@pytest.mark.parametrize("name", FITS)
def test_no_noise_is_drawn_twice(faults, name):
    """The disturbed fit opens the same noise streams and draws each exactly as far."""
    disturbed, undisturbed = faults[name]["noise"]
    assert disturbed == undisturbed
    assert any(any(position) for position in undisturbed)    # the record is live


@pytest.mark.slow
@pytest.mark.parametrize("name", FITS)
def test_a_fit_that_fails_releases_nothing(faults, name):
    """A partition that kills its worker at every attempt: dask gives up, the error
    reaches the user, no noise was drawn, and the estimator holds no fitted attribute
    (not even those its fit set before reading the rows)."""
    failed = faults[name]["failed"]
    assert failed["error"] == "KilledWorker"
    assert failed["fitted"] == []
    assert not any(any(position) for position in failed["noise"])
