"""Shared test set-up: no test may depend on the machine's zone or hash seed by accident."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("DAGSTER_TELEMETRY_DISABLED", "1")


@pytest.fixture
def home(tmp_path):
    """A fresh data folder with a fixed, DST-observing user zone."""
    from capture.home import Home

    h = Home(tmp_path / "home")
    h.init(tz="Europe/Paris")
    return h
