"""The Dagster instance of a data folder: ``<home>/dagster``, telemetry off, one warehouse writer.

Every ``af`` command and test that runs Dagster goes through :func:`use_home`, so run history,
schedules and sensors live next to the data they describe and nothing phones home.
"""

from __future__ import annotations

import os
from pathlib import Path

from capture.home import Home

WAREHOUSE_POOL = "af_warehouse"

# Why each setting: telemetry is off because the pipeline is local-only; pools default to one
# slot so two runs never write the DuckDB file at once (DuckDB allows one writer process).
DAGSTER_YAML = f"""\
# Written by activity-frames. Safe to edit; `af` only rewrites it when it is missing.
telemetry:
  enabled: false
concurrency:
  pools:
    default_limit: 1
    granularity: op
# The warehouse pool is {WAREHOUSE_POOL}; with default_limit 1 only one step writes DuckDB at a time.
"""


def prepare(home: Home) -> Path:
    """Create ``<home>/dagster`` with its dagster.yaml (if missing) and return the folder."""
    folder = home.dagster_home
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "dagster.yaml"
    if not config.exists():
        tmp = config.with_suffix(".yaml.tmp")
        tmp.write_text(DAGSTER_YAML, encoding="utf-8")
        os.replace(tmp, config)
    return folder


def use_home(home: Home) -> Path:
    """Point this process's Dagster at the data folder (DAGSTER_HOME, AF_HOME) and return DAGSTER_HOME."""
    folder = prepare(home)
    os.environ["DAGSTER_HOME"] = str(folder)
    os.environ["AF_HOME"] = str(home.root)
    os.environ["DAGSTER_TELEMETRY_DISABLED"] = "1"
    return folder


def instance(home: Home):  # -> dg.DagsterInstance (imported lazily: Dagster is slow to import)
    """The persistent Dagster instance stored under the data folder."""
    import dagster as dg

    use_home(home)
    return dg.DagsterInstance.get()
