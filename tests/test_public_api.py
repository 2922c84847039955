"""The public Python API as docs/api.md shows it: ``from af_pipeline import Memory`` on a data
folder with one published day and one that is not, for a script or a notebook."""

from __future__ import annotations

import json

import duckdb
import pytest
from dagster_support import TZ, corpus, days_of

import af_pipeline
from af_pipeline import Memory
from af_pipeline.compiler import tokens
from af_pipeline.compiler.compile import compile_day
from af_pipeline.compiler.emit import canonical_bytes
from af_pipeline.interfaces.memory import BadArgument, Period, Tampered
from af_pipeline.warehouse import day_work
from af_pipeline.warehouse.version import code_version
from capture.home import Home
from capture.log import EventLog


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Two days in the log; the first built and published (without Dagster), the second not."""
    home = Home(tmp_path_factory.mktemp("api") / "home")
    home.init(tz=TZ)
    batch = corpus()
    log = EventLog(home)
    log.append(batch)
    days = days_of(batch)
    con = duckdb.connect(str(home.warehouse_path))
    try:
        day_work.build_day(con, log, days[0], home.published_dir, False, code_version())
    finally:
        con.close()
    return home, days


def test_memory_is_the_package_api(folder):
    home, days = folder
    assert af_pipeline.Memory is Memory and "Memory" in af_pipeline.__all__
    memory = Memory(str(home.root))  # a path is enough
    assert memory.days() == days

    # published and verified: the published document, its own bytes
    published = home.published_dir / days[0]
    doc = memory.document(days[0])
    assert doc == json.loads((published / "document.json").read_text(encoding="utf-8"))
    assert memory.day_document(days[0])[1] == f"published/{days[0]}/document.json"

    # not published: compiled live from the log, the same document the build would make
    live = memory.document(days[1])
    assert memory.day_document(days[1])[1].startswith("compiled")
    assert canonical_bytes(live) == canonical_bytes(compile_day(EventLog(home).read_day(days[1])))


def test_render_every_format_and_the_context_budget(folder):
    home, days = folder
    memory = Memory(home)
    doc = memory.document(days[0])
    published = home.published_dir / days[0]
    assert memory.render(doc, "json").startswith("{")
    assert "generated_at" not in doc  # published bytes carry no wall-clock stamp
    for fmt, name in (("json", "document.json"), ("yaml", "document.yaml"), ("md", "document.md"),
                      ("context", "context.txt")):
        assert memory.render(doc, fmt) == (published / name).read_text(encoding="utf-8"), fmt
    with pytest.raises(BadArgument, match="format must be one of"):
        memory.render(doc, "html")

    assert memory.context_block(days[0]) == (published / "context.txt").read_text(encoding="utf-8")
    # (the header, ledger and closing lines are always whole, so a budget far below them is not met)
    small = memory.context_block(days[0], budget_tokens=800)
    assert "| budget 800" in small and 0 < tokens.count(small) <= 800 < tokens.count(memory.context_block(days[0]))


def test_the_period_forms_of_the_mcp_tools(folder):
    """Each MCP tool's body takes a day as a script writes it, or any Period."""
    home, days = folder
    memory = Memory(home)
    day = days[1]
    as_period = memory.period(day=day)
    assert memory.as_period(day) == as_period and memory.as_period(as_period) is as_period
    assert memory.summary(day) == memory.summary(as_period)
    assert memory.activity(day) == memory.activity(as_period)
    assert memory.communications(day) == memory.communications(as_period)
    assert memory.context(day) == memory.context(as_period)
    # a part of a day: frames that overlap it, day-qualified ids, and a block naming the window
    morning = memory.period(start=f"{day}T09:00", end=f"{day}T09:30")
    assert isinstance(morning, Period) and morning.kind == "range"
    frames = memory.activity(morning)["frames"]
    assert frames and all(f["id"].startswith(f"{day}/f-") for f in frames)
    assert memory.resolve_frame(frames[0]["id"]).day == day
    assert memory.context_block(morning) != memory.context_block(day)
    with pytest.raises(BadArgument, match="day must be"):
        memory.summary("last tuesday")


def test_a_tampered_published_file_is_refused_not_replaced(folder, tmp_path):
    import shutil

    home, days = folder
    copy = Home(tmp_path / "copy")
    shutil.copytree(home.root, copy.root)
    md = copy.published_dir / days[0] / "document.md"
    md.write_text(md.read_text(encoding="utf-8").replace("Activity", "Activlty", 1), encoding="utf-8")
    memory = Memory(copy)
    with pytest.raises(Tampered, match="document.md"):
        memory.published_text(days[0], "md")
    assert memory.document(days[0], live=True)["frames"]  # asked for explicitly: compiled from the log
