"""Resources: the data folder (event log, published/) and the DuckDB warehouse (one connection a run)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
from dagster_duckdb import DuckDBResource
from pydantic import PrivateAttr

from assets.dagster_adapter import check_captured_interrupt, quick_run_storage
from assets.instance import exclusive_run, warehouse_lock
from capture.home import Home, check_buildable
from capture.log import EventLog


class DataFolder(dg.ConfigurableResource):
    """The activity-frames data folder the pipeline reads its log from and publishes into."""

    root: str
    include_typed_text: bool = False  # the build-time half of the typed-text opt-in (paper 3.5)
    published_root: str = ""  # default <root>/published; certification rebuilds publish elsewhere

    @contextmanager
    def yield_for_execution(self, context: dg.InitResourceContext) -> Iterator[Any]:
        # Every run of these definitions (af build, the nightly schedule, the UI) holds the data
        # folder's warehouse lock for its whole length and first settles runs that died holding a
        # pool slot (assets/instance.py); `af` takes the lock before the run, so here it re-enters.
        run = context.run
        what = f"Dagster run {run.run_id[:8]} ({run.job_name})" if run else "a Dagster run"
        log = context.log
        say = (lambda m: log.warning(m)) if log is not None else (lambda _m: None)
        if context.instance is None:
            with warehouse_lock(self.home, what, say, check_captured_interrupt):
                yield self
            return
        with exclusive_run(self.home, context.instance, what, say, check_captured_interrupt), \
                quick_run_storage(context.instance):
            yield self

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


class Warehouse(DuckDBResource):
    """The data folder's DuckDB file, opened once for the whole run.

    Opening the file and closing it (which checkpoints) cost more than a small day's writes, and
    each asset and check used to do both; now every step of a run gets the run's one connection,
    closed when the run ends. Outside a run (a resource used directly) each get_connection opens
    its own, as DuckDBResource does. A killed run's connection dies with its process (DuckDB's
    file lock goes with it)."""

    _run_con: Any = PrivateAttr(default=None)

    @contextmanager
    def yield_for_execution(self, context: dg.InitResourceContext) -> Iterator[Any]:
        with super().get_connection() as con:
            self._run_con = con
            try:
                yield self
            finally:
                self._run_con = None
                con.close()

    @contextmanager
    def get_connection(self) -> Iterator[Any]:
        if self._run_con is None:
            with super().get_connection() as con:
                yield con
            return
        yield self._run_con


def warehouse(home: Home, path: Path | None = None) -> Warehouse:
    """The one DuckDB file of a data folder (``<home>/warehouse.duckdb`` unless told otherwise)."""
    target = path or home.warehouse_path
    check_buildable(path or home.root)  # before any run starts; the sentence creating a folder says too
    # A range build writes hundreds of MB through one connection: checkpointing every 16 MB of
    # WAL (the default) costs more than the writes; closing the connection checkpoints anyway.
    return Warehouse(database=str(target), connection_config={"checkpoint_threshold": "1GB"})


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
