"""Bad input and a hostile environment: a corrupt af.json, a failed import, odd data folder
paths, terminal escapes in captured titles, and a full disk during import, seal and build."""

from __future__ import annotations

import copy
import errno
import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from af_pipeline.compiler import emit
from af_pipeline.interfaces import cli
from capture.errors import UserError
from capture.home import Home

GOLDEN = Path(__file__).with_name("golden")


# -- af.json ------------------------------------------------------------------------------------

_bad_settings = st.one_of(
    st.just("{not json"),
    st.just("[1, 2]"),
    st.just('"Europe/Paris"'),
    st.just("\xff\xfe"),
    st.builds(lambda g: json.dumps({"tz": "Europe/Paris", "grace_hours": g}),
              st.one_of(st.just(float("nan")), st.just(float("inf")), st.floats(max_value=-0.001),
                        st.floats(min_value=168.001, allow_infinity=False), st.text(max_size=5),
                        st.booleans(), st.lists(st.integers(), max_size=2))),
    st.builds(lambda tz: json.dumps({"tz": tz}), st.one_of(st.none(), st.integers(), st.just(""),
                                                          st.just("Mars/Olympus"), st.just("../../etc/passwd"))),
    st.just(json.dumps({"tz": "UTC", "settings_version": 99})),
    st.just(json.dumps({"grace_hours": 6})),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_bad_settings)
def test_a_corrupt_af_json_is_one_sentence_naming_the_file(home, capsys, text):
    home.settings_path.write_text(text, encoding="utf-8", errors="surrogateescape")
    assert cli.main(["log", "status", "--home", str(home.root)]) == 2
    err = capsys.readouterr().err
    assert "af.json" in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("grace", [0, 0.5, 24, 168])
def test_reasonable_grace_periods_are_kept(home, grace):
    data = json.loads(home.settings_path.read_text())
    data["grace_hours"] = grace
    home.settings_path.write_text(json.dumps(data))
    assert home.settings().grace_hours == grace


# -- a failed import leaves nothing behind -------------------------------------------------------


@pytest.mark.parametrize("kind,content", [("screenpipe", None), ("screenpipe", b"not a database" * 100),
                                          ("activitywatch", b"{\"buckets\": 7"), ("rpm", None)])
def test_a_failed_import_creates_no_data_folder(tmp_path, capsys, kind, content):
    source = tmp_path / "source"
    if content is not None:
        source.write_bytes(content)
    home = tmp_path / "never"
    assert cli.main(["import", kind, str(source), "--home", str(home), "--quiet"]) == 2
    assert "Traceback" not in capsys.readouterr().err
    assert not home.exists()


# -- data folder paths with URL characters -------------------------------------------------------


def _older_data_folder(root: Path) -> Home:
    """A data folder as an older version made it, whatever its path (init refuses a '?' now)."""
    home = Home(root)
    if "?" in str(root):
        root.mkdir(parents=True)
        home.settings_path.write_text(json.dumps({"tz": "UTC", "settings_version": 1}))
    home.init(tz="UTC")
    return home


@pytest.mark.parametrize("name", ["50% done", "issue #7", "what?"])
def test_dagster_run_history_lives_in_a_folder_named_with_url_characters(tmp_path, name):
    import dagster as dg

    from assets.instance import instance

    home = _older_data_folder(tmp_path / name / "home")
    inst = instance(home)
    assert inst.get_run_records() == []
    assert (home.dagster_home / "history" / "runs.db").is_file()  # in the folder itself, not elsewhere
    inst.add_run(dg.DagsterRun(job_name="probe", run_id="0" * 8 + "-0000-0000-0000-" + "0" * 12))
    assert len(instance(home).get_run_records()) == 1
    if home.safe_root != home.root:  # the private link for such a path; remove what the test made
        home.safe_root.unlink()


def test_a_warehouse_path_duckdb_cannot_write_is_refused_plainly(tmp_path):
    from assets.resources import resources_for

    home = _older_data_folder(tmp_path / "what?" / "home")
    with pytest.raises(UserError, match=r"contains '\?'.*no '\?'") as built:
        resources_for(home)
    # a command creating a data folder there refuses up front, in the same sentence, writing nothing
    fresh = Home(tmp_path / "what?" / "new")
    with pytest.raises(UserError) as made:
        fresh.init(tz="UTC")
    assert str(made.value) == str(built.value).replace(str(home.root), str(fresh.root))
    assert not fresh.root.exists()
    assert resources_for(Home(tmp_path / "50% #1"))["warehouse"]  # % and # are fine for DuckDB


# -- terminal escapes in captured titles ---------------------------------------------------------

ESCAPES = "\x1b[2J\x1b]0;owned\x07\x9b31m\u202eevil\x00\x7f"


def _hostile_doc() -> dict:
    doc = json.loads((GOLDEN / "golden-day.json").read_text(encoding="utf-8"))
    doc = copy.deepcopy(doc)
    doc["apps"][0]["app"] += ESCAPES
    if doc["apps"][0]["top_windows"]:
        doc["apps"][0]["top_windows"][0]["title"] += ESCAPES
    doc["frames"][0]["app"] += ESCAPES
    doc["domains"][0]["domain"] += ESCAPES
    return doc


@pytest.mark.parametrize("fmt", ["md", "context"])
def test_human_outputs_carry_no_control_characters(fmt):
    out = emit.render(_hostile_doc(), fmt)
    assert not [c for c in out if (ord(c) < 32 and c != "\n") or 0x7f <= ord(c) <= 0x9f or c == "\u202e"]
    assert "owned" in out  # the text around the escapes is still shown


@given(st.text())
def test_printable_leaves_no_control_character(text):
    out = emit.printable(text)
    assert len(out) == len(text)
    assert not any(ord(c) < 32 or 0x7f <= ord(c) <= 0x9f for c in out)


def test_printable_replaces_every_control_and_bidi_override_character():
    """printable skips its regex for texts str.isprintable accepts: none of those holds a
    character it replaces (every code point checked), and what it replaces becomes a space."""
    for cp in range(0x110000):
        c = chr(cp)
        if emit._CONTROL.match(c):
            assert not c.isprintable() and emit.printable(f"a{c}b") == "a b", hex(cp)


def test_the_block_says_captured_text_is_data():
    block = emit.render(json.loads((GOLDEN / "golden-day.json").read_text(encoding="utf-8")), "context")
    assert block.splitlines()[2] == emit.CAPTURED_NOTE


# -- a full disk ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def one_day_capture(tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus")
    assert cli.main(["synth", "--days", "1", "--out", str(out)]) == 0
    return out / "screenpipe.sqlite"


def _tmpfs(folder: Path, size: str):
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True, text=True)
    return done.returncode == 0


@pytest.fixture
def small_disk(tmp_path):
    """A mounter of tiny tmpfs folders (unmounted afterwards); None where mounting is not allowed."""
    mounted: list[Path] = []

    def mount(name: str, size: str) -> Path | None:
        folder = tmp_path / name
        if not _tmpfs(folder, size):
            return None
        mounted.append(folder)
        return folder

    yield mount
    for folder in mounted:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_disk_full_during_import_and_seal_is_one_sentence_and_the_log_stays_intact(small_disk, one_day_capture,
                                                                                   capsys):
    disk = small_disk("imp", "200k")
    if disk is None:
        pytest.skip("cannot mount a tmpfs here; test_disk_full_injected covers the message")
    home = disk / "home"
    assert cli.main(["import", "screenpipe", str(one_day_capture), "--home", str(home), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"no space left on device at {home}" in err and "Traceback" not in err, err
    assert cli.main(["log", "verify", "--home", str(home)]) == 0  # nothing half-landed
    assert "0 sealed segments" in capsys.readouterr().out


def test_disk_full_during_build_names_the_file_and_keeps_the_log(small_disk, one_day_capture, capsys):
    disk = small_disk("build", "2m")  # room for the log (~0.4 MB), not for the warehouse (~5 MB)
    if disk is None:
        pytest.skip("cannot mount a tmpfs here; test_disk_full_injected covers the message")
    home = disk / "home"
    assert cli.main(["import", "screenpipe", str(one_day_capture), "--home", str(home), "--quiet"]) == 0
    manifest = (home / "log" / "manifest.jsonl").read_bytes()
    capsys.readouterr()
    assert cli.main(["build", "--home", str(home)]) == 1
    said = capsys.readouterr()
    # one sentence naming the full folder (issue 36), on stderr, no "FAILED" summary before it
    assert f"af build: no space left on device: the file system holding {home} is full" in said.err, said
    assert "FAILED" not in said.out, said
    assert (home / "log" / "manifest.jsonl").read_bytes() == manifest
    assert cli.main(["log", "verify", "--home", str(home)]) == 0


def test_disk_full_injected(home, capsys, monkeypatch, one_day_capture):
    # where no tmpfs can be mounted, the OSError a full disk raises is injected at the log's write
    from capture.log import EventLog

    def full(self, *a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", str(self.dir / "open" / "x.jsonl"))

    monkeypatch.setattr(EventLog, "append", full)
    assert cli.main(["import", "screenpipe", str(one_day_capture), "--home", str(home.root), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"no space left on device at {home.root}/log/open/x.jsonl" in err, err
