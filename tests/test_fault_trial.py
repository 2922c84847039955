"""The held-out fault trial (bench/faults/run_faults.py, issue 36) keeps working: two of its
small cases run through the real CLI and report no doubling, no loss, no traceback, no adoption."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from screenpipe_eras import migrations_dir

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "bench" / "faults" / "run_faults.py"
AF = str(Path(sys.executable).with_name("af"))


@pytest.mark.timeout(60)
def test_two_held_out_cases_run_and_report_each_event_once(tmp_path: Path) -> None:
    migrations_dir()  # the screenpipe case builds its database from screenpipe's migrations
    work = tmp_path / "faults"
    p = subprocess.run([sys.executable, str(SCRIPT), "--work", str(work), "--af", AF,
                        "--only", "retention-3-rounds", "foreign-folder"],
                       capture_output=True, text=True, timeout=55, cwd=tmp_path)
    assert "Traceback" not in p.stderr, p.stderr
    report = (work / "faults.md").read_text()
    rows = {line.split(" | ")[0].strip("| "): line.strip("| ").split(" | ")
            for line in report.splitlines() if line.startswith("| ") and not line.startswith("| case")}
    assert set(rows) == {"retention-3-rounds", "foreign-folder"}, report
    retention = rows["retention-3-rounds"]
    # case, events, landed once, doubled, lost, quarantined, tracebacks, adopted, exits, checks, result
    assert int(retention[1]) > 30 and retention[2] == retention[1], report
    assert retention[3:7] == ["0", "0", "0", "0"], report
    folder = rows["foreign-folder"]
    assert folder[1] == folder[2] and folder[6:8] == ["0", "0"], report
    assert [r[-1] for r in rows.values()] == ["PASS", "PASS"], p.stdout
    assert p.returncode == 0, p.stdout + p.stderr
    assert "retention-3-rounds" in p.stdout and "landed once" in p.stdout  # the table is printed too
