import pytest

import skdp.linear_model._sufficient_statistics as ssp_module


@pytest.fixture
def no_ssp_noise(monkeypatch):
    """Fail a test whose SSP fit draws noise (refusals come before any)."""
    def refuse(*args, **kwargs):
        raise AssertionError("noise was drawn")
    monkeypatch.setattr(ssp_module, "noise_generator", refuse)
    monkeypatch.setattr(ssp_module, "draw_ssp_noise", refuse)
