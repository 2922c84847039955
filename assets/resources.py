"""Resources: the data folder (event log, published/) and the DuckDB warehouse."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
from dagster_duckdb import DuckDBResource

from capture.home import Home
from capture.log import EventLog


class DataFolder(dg.ConfigurableResource):
    """The activity-frames data folder the pipeline reads its log from and publishes into."""

    root: str
    include_typed_text: bool = False  # the build-time half of the typed-text opt-in (paper 3.5)
    published_root: str = ""  # default <root>/published; certification rebuilds publish elsewhere

    @property
    def home(self) -> Home:
        return Home(self.root)

    def log(self) -> EventLog:
        return EventLog(self.home)

    @property
    def tz(self) -> str:
        return self.home.settings().tz

    @property
    def published_dir(self) -> Path:
        return Path(self.published_root) if self.published_root else self.home.published_dir


def warehouse(home: Home, path: Path | None = None) -> DuckDBResource:
    """The one DuckDB file of a data folder (``<home>/warehouse.duckdb`` unless told otherwise)."""
    # A range build writes hundreds of MB through one connection: checkpointing every 16 MB of
    # WAL (the default) costs more than the writes; closing the connection checkpoints anyway.
    return DuckDBResource(database=str(path or home.warehouse_path), connection_config={"checkpoint_threshold": "1GB"})


def resources_for(
    home: Home,
    warehouse_path: Path | None = None,
    published_dir: Path | None = None,
    include_typed_text: bool = False,
) -> dict:
    return {
        "data_folder": DataFolder(
            root=str(home.root),
            include_typed_text=include_typed_text,
            published_root=str(published_dir) if published_dir else "",
        ),
        "warehouse": warehouse(home, warehouse_path),
    }
