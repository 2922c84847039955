"""`af day` and `af context` on a data folder: live compile, published artifacts, clear errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from af_pipeline import cli, emit
from af_pipeline.compile import compile_day
from capture.log import EventLog
from capture.model import CaptureBatch

sys.path.insert(0, str(Path(__file__).parent / "golden"))
from day_fixture import golden_day  # noqa: E402

DAY = "2026-03-16"


def land(home) -> None:
    cap = golden_day()
    batch = CaptureBatch(source_id="synth:golden", recorder="synth", snapshots=cap.snapshots, inputs=cap.inputs,
                         elements=cap.elements, streams=cap.streams)
    EventLog(home).append(batch, seal=False)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_day_compiles_live_from_the_log(home, capsys):
    land(home)
    code, out, _ = run(capsys, "day", DAY, "--home", str(home.root))
    assert code == 0
    doc = json.loads(out)
    assert doc["day"] == DAY and doc["tz"] == "Europe/Paris" and "generated_at" in doc
    assert doc["coverage"]["distinct_apps"] == 5
    code, block, _ = run(capsys, "day", DAY, "-f", "context", "--budget", "300", "--home", str(home.root))
    assert code == 0 and block.startswith("AF-CONTEXT v1\n") and "Google Chrome | 3.0 | 3.0 | 1" in block
    code, md, _ = run(capsys, "day", DAY, "-f", "md", "--min-minutes", "2", "--home", str(home.root))
    assert code == 0 and "frames shorter than 2.00 min omitted" in md
    code, ctx, _ = run(capsys, "context", "--day", DAY, "--home", str(home.root))
    assert code == 0 and ctx == emit.context_block(json.loads(out))


def test_typed_text_only_with_the_flag(home, capsys):
    land(home)
    _, out, _ = run(capsys, "day", DAY, "-f", "yaml", "--home", str(home.root))
    assert "hello world" not in out
    _, out, _ = run(capsys, "day", DAY, "-f", "yaml", "--include-typed-text", "--home", str(home.root))
    assert "hello world" in out


def test_published_artifacts_are_printed_as_published(home, capsys):
    folder = home.published_dir / DAY
    folder.mkdir(parents=True)
    doc = dict(compile_day(golden_day()), generated_at="2026-03-17T00:00:00Z")
    (folder / "document.json").write_text(emit.to_json(doc), encoding="utf-8")
    (folder / "document.md").write_text("published markdown\n", encoding="utf-8")
    (folder / "context.txt").write_text(emit.context_block(doc), encoding="utf-8")
    (folder / "manifest.json").write_text("{}", encoding="utf-8")
    code, out, _ = run(capsys, "day", DAY, "-f", "md", "--home", str(home.root))
    assert (code, out) == (0, "published markdown\n")  # no log needed: the published file
    code, out, _ = run(capsys, "day", DAY, "--home", str(home.root))
    assert json.loads(out)["generated_at"] == "2026-03-17T00:00:00Z"
    # other options than the published build: compile live (and the log has nothing)
    code, _, err = run(capsys, "day", DAY, "--min-minutes", "1", "--home", str(home.root))
    assert code == 2 and "no capture" in err


def test_clear_errors(home, capsys, tmp_path):
    code, _, err = run(capsys, "day", "2026-02-30", "--home", str(home.root))
    assert code == 2 and "not a day" in err
    code, _, err = run(capsys, "day", DAY, "--home", str(home.root))
    assert code == 2 and f"day {DAY} has no capture" in err
    code, _, err = run(capsys, "day", DAY, "--layout", "dvorakish", "--home", str(home.root))
    assert code == 2 and "unknown keyboard layout" in err
    code, _, err = run(capsys, "context", "--hours", "0", "--home", str(home.root))
    assert code == 2 and "--hours" in err
    code, _, err = run(capsys, "context", "--hours", "2", "--home", str(home.root))
    assert code == 2 and "the last 2 hours has no capture" in err
    code, _, err = run(capsys, "day", DAY, "--home", str(tmp_path / "nowhere"))
    assert code == 2 and "not an activity-frames data folder" in err


def test_context_for_recent_hours(home, capsys):
    import time

    from capture.model import Snapshot

    now = int(time.time() * 1_000_000)
    rows = [Snapshot(ref=f"recent:frames:{i}", ts_us=now - (40 - i * 10) * 60_000_000 // 10, stream="m1",
                     app="Editor" if i < 3 else "Browser", window="w") for i in range(5)]
    EventLog(home).append(CaptureBatch(source_id="recent", recorder="synth", snapshots=rows), seal=False)
    code, out, err = run(capsys, "context", "--hours", "1", "--budget", "400", "--home", str(home.root))
    assert code == 0, err
    assert out.startswith("AF-CONTEXT v1\n")
    assert "\nEditor | " in out and "\nBrowser | " in out
