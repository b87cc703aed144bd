"""A record of what a DP-SGD run computed, for the tests that replay its steps."""

import skdp.linear_model._dpsgd as dpsgd_module


class StepRecorder:
    """Wraps the DP-SGD module's ``_poisson_step_samples``, ``clipped_gradient_sum`` and
    ``_dp_sgd`` (with ``monkeypatch``): the batches a run sampled (``batches``), every
    clipped sum it computed with its arguments (``steps``: the keyword arguments,
    ``X``, ``Y``, ``theta``, ``loss``, ``max_grad_norm``, ``row_norms`` and the
    pre-noise ``clipped_sum``) and every run with its result (``runs``: the keyword
    arguments, ``X`` and ``result``). ``clipped`` is the unwrapped
    ``clipped_gradient_sum``, to replay a step."""

    def __init__(self, monkeypatch):
        self.reset()
        samples, clipped, run = (dpsgd_module._poisson_step_samples,
                                 dpsgd_module.clipped_gradient_sum, dpsgd_module._dp_sgd)
        self.clipped = clipped

        def recorded_samples(n, q, rng, n_steps):
            for idx in samples(n, q, rng, n_steps):
                self.batches.append(idx.copy())
                yield idx

        def recorded_clipped(X, Y, theta, loss, max_grad_norm, row_norms, out=None,
                             **kwargs):
            # the pre-noise sum recorded, then added into the run's noisy sum ``out``
            total, factors = clipped(X, Y, theta, loss, max_grad_norm, row_norms, **kwargs)
            self.steps.append(dict(kwargs, X=X, Y=Y, theta=theta.copy(), loss=loss,
                                   max_grad_norm=max_grad_norm, row_norms=row_norms,
                                   clipped_sum=total.copy()))
            if out is not None:
                out += total
            return (total if out is None else out), factors

        def recorded_run(*args, **kwargs):
            result = run(*args, **kwargs)
            self.runs.append(dict(kwargs, X=args[0], result=result))
            return result

        monkeypatch.setattr(dpsgd_module, "_poisson_step_samples", recorded_samples)
        monkeypatch.setattr(dpsgd_module, "clipped_gradient_sum", recorded_clipped)
        monkeypatch.setattr(dpsgd_module, "_dp_sgd", recorded_run)

    def reset(self):
        """Forget what was recorded."""
        self.steps, self.batches, self.runs = [], [], []

    def batch_sizes(self, partitioned):
        """The batch sizes of the last run on a dask array (``partitioned``) or in
        memory."""
        return next(run["result"].batch_sizes for run in reversed(self.runs)
                    if getattr(run["X"], "partitioned", False) == partitioned)
