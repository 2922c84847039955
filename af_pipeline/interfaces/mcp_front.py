"""The stdio front of ``af mcp``: the handshake, and the first tool calls, answered while the
MCP SDK loads.

Importing the official SDK costs about a second of CPU (it builds pydantic types for two
protocol versions), which alone misses the start-up targets (``initialize`` answered in under
1 s, a first answer about today in 0.5 s). The SDK stays the server: every message goes to it,
in order, except the tool calls the front answered itself. The front sits between the client and
the SDK on two pipes and:

- when it holds the SDK's own answers from an earlier start of the same code, replies at once to
  the three calls whose answers are a function of the code and the data folder's settings:
  ``initialize``, ``tools/list`` and ``prompts/list`` (first page). The SDK's late reply to those
  is dropped, after checking it against what was sent: a mismatch rewrites the record and is
  reported on stderr, and the next start answers from the SDK again;
- until the SDK is up, answers ``tools/call`` itself with the same tool functions over the same
  read model (``mcp_server.early_calls``), when every argument has exactly a type the recorded
  ``tools/list`` schema names (anything else waits for the SDK, which validates it);
- holds the SDK's import back until the first such answer is out, the client has been quiet for
  QUIET_S, or a request needs the SDK: imports and answers share one interpreter lock, so an
  import running beside the first answer would about double its time.

The record is keyed by the SDK's version, the source of this package's interfaces and the
settings the instructions name (zone, typed text); a first start, or any change to one of those,
answers from the SDK and records it. It lives in the user's cache folder
(``$XDG_CACHE_HOME/activity-frames``, else ``~/.cache/activity-frames``), never in the data
folder, which the server only reads; no captured data is in it.

Nothing here imports the SDK, pydantic or the read model: it must be running within
milliseconds of ``af mcp`` starting.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from importlib import metadata
from pathlib import Path
from typing import Any, BinaryIO

from capture.process import accept_stop

CACHE_PREFIX = "mcp-handshake-"
KEEP_RECORDS = 4  # records of other code versions or settings kept beside the current one
# Calls answered from the record: their answers depend on the code and the settings only.
# resources/list is not among them (it lists the published days, which change).
CACHEABLE = ("initialize", "tools/list", "prompts/list")
RECORD_VERSION = 1
# written into the SDK's output pipe once the SDK is done: no JSON-RPC message is this line
SDK_DONE = b"\x00af-mcp: the SDK is done\x00\n"
QUIET_S = 0.2  # s: a client silent this long after the handshake lets the SDK load
LONGEST_S = 2.0  # s from start: the SDK loads by then whatever the client does
# JSON Schema types and the Python values (from json.loads) that have exactly that type
JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,), "null": (type(None),),
}


def record_key(settings: dict[str, Any]) -> str:
    """What the recorded answers are a function of: the SDK version, this package's interface
    sources (tool and prompt definitions, descriptions, limits) and the named settings."""
    h = hashlib.sha256()
    try:
        h.update(metadata.version("mcp").encode())
    except metadata.PackageNotFoundError:
        h.update(b"mcp ?")
    h.update(json.dumps(settings, sort_keys=True).encode())
    package = Path(__file__).resolve().parent
    for path in sorted([*package.rglob("*.py"), package.parent / "about.py"]):
        h.update(path.name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def plain_arguments(arguments: Any, schema: Any) -> dict[str, Any] | None:
    """The arguments of a tool call as its function takes them, if each is a property of the
    tool's input schema and has exactly one of its JSON types (a number given as an integer
    becomes a float, as the SDK's validation makes it); None for anything else: the SDK then
    validates the call (and coerces, or refuses it in its own words)."""
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict) or not isinstance(schema, dict) or schema.get("type") != "object":
        return None
    props = schema.get("properties") or {}
    required = schema.get("required") or []
    if not isinstance(props, dict) or any(name not in arguments for name in required):
        return None
    out: dict[str, Any] = {}
    for name, value in arguments.items():
        prop = props.get(name)
        if not isinstance(prop, dict):
            return None
        choices = [c for c in prop.get("anyOf", ()) if isinstance(c, dict)] if "anyOf" in prop else [prop]
        types = {t for c in choices for t in _kinds(c)}
        if not any(_fits(value, c) for c in choices):
            return None
        if type(value) is int and "integer" not in types:
            if abs(value) > 2**53:  # not exactly a float: the SDK decides what it means
                return None
            value = float(value)
        out[name] = value
    return out


def _kinds(choice: dict[str, Any]) -> list[Any]:
    """The JSON types a schema names: its ``type``, or each of a list of them."""
    kind = choice.get("type")
    return list(kind) if isinstance(kind, list) else [kind]


def _fits(value: Any, choice: dict[str, Any]) -> bool:
    """Whether a JSON value has exactly this schema's type (and is one of its enum or its const)."""
    kinds = _kinds(choice)
    if isinstance(value, bool):  # a bool is an int in Python, never in JSON Schema
        typed = "boolean" in kinds
    else:
        typed = any(isinstance(value, JSON_TYPES.get(str(k), ())) for k in kinds)
    if not typed:
        return False
    if "enum" in choice and not any(type(value) is type(e) and value == e for e in choice["enum"]):
        return False
    return "const" not in choice or (type(value) is type(choice["const"]) and value == choice["const"])


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "activity-frames"


def _slot(method: str, params: Any, version: str | None) -> str | None:
    """The record's slot for a request, or None if its answer must come from the SDK."""
    params = params if isinstance(params, dict) else {}
    if method == "initialize":
        requested = params.get("protocolVersion")
        return f"initialize {requested}" if isinstance(requested, str) else None
    if method in CACHEABLE and version and not params.get("cursor"):
        return f"{method} {version}"
    return None


class Front:
    """Pumps JSON-RPC lines between the client (the process's real stdin/stdout) and the SDK
    (which reads fd 0 and writes fd 1, now pipes), answering recorded calls early."""

    def __init__(self, client_in: BinaryIO, client_out: BinaryIO, sdk_in: BinaryIO, sdk_out: BinaryIO,
                 record_path: Path | None, key: str, warn: Callable[[str], None]):
        self.client_in, self.client_out = client_in, client_out
        self.sdk_in, self.sdk_out = sdk_in, sdk_out
        self.record_path, self.key, self.warn = record_path, key, warn
        self.answers: dict[str, Any] = self._load()
        self.pending: dict[Any, str] = {}  # request id -> slot, for the SDK's answer
        self.early: set[Any] = set()  # ids already answered from the record
        self.version: str | None = None  # the protocol version this session agreed on
        self.lock = threading.Lock()
        self.dirty = False
        self.input_lock = threading.Lock()  # a write to the SDK, or ending its input: one at a time
        self.input_ended = False
        # tool calls before the SDK is up (see the module's docstring)
        self.caller: Callable[[str, dict[str, Any]], dict[str, Any] | None] | None = None
        self.offered = threading.Event()  # set once the caller is known (or never will be)
        self.turn = threading.Condition()  # guards the four fields below; notified on each change
        self.sdk_up = False  # the SDK has written its first line
        self.need_sdk = False  # a request only the SDK can answer is waiting
        self.busy = False  # the front is answering a tool call
        self.tool_answered = False
        self.heard = time.monotonic()  # when the client last wrote
        self.started = self.heard
        self.outbound: threading.Thread | None = None

    def _load(self) -> dict[str, Any]:
        if self.record_path is None:
            return {}
        try:
            data = json.loads(self.record_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("version") != RECORD_VERSION or data.get("key") != self.key:
            return {}
        answers = data.get("answers")
        return answers if isinstance(answers, dict) else {}

    def _save(self) -> None:
        if self.record_path is None or not self.dirty:
            return
        self.dirty = False
        body = json.dumps({"version": RECORD_VERSION, "key": self.key, "answers": self.answers},
                          sort_keys=True, separators=(",", ":"))
        try:
            folder = self.record_path.parent
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp = folder / f".{self.record_path.name}.{os.getpid()}"
            tmp.write_text(body, encoding="utf-8")
            os.replace(tmp, self.record_path)
            others = sorted((p for p in folder.glob(f"{CACHE_PREFIX}*.json") if p != self.record_path),
                            key=lambda p: p.stat().st_mtime, reverse=True)
            for old in others[KEEP_RECORDS:]:
                old.unlink(missing_ok=True)
        except OSError as exc:  # a read-only data folder only costs the next start its speed
            self.warn(f"could not record the MCP handshake in {self.record_path}: {exc}")

    def _to_client(self, line: bytes) -> None:
        with self.lock:
            self.client_out.write(line if line.endswith(b"\n") else line + b"\n")
            self.client_out.flush()

    def from_client(self) -> None:
        """Client -> SDK: every line is forwarded; a recorded call is also answered now."""
        try:
            for line in iter(self.client_in.readline, b""):
                with self.turn:
                    self.heard = time.monotonic()
                if self._early_answer(line):
                    continue  # a tool call answered here: the SDK never sees it
                with self.input_lock:
                    if self.input_ended:
                        break
                    self.sdk_in.write(line)
                    self.sdk_in.flush()
        except (OSError, ValueError):
            pass
        finally:
            self.end_input()  # end of input: the SDK's session ends, and the process

    def end_input(self) -> None:
        """Close the SDK's input, as the client closing stdin does: its session ends and
        ``serve`` returns. Safe from any thread, and again."""
        with self.input_lock:
            if self.input_ended:
                return
            self.input_ended = True
            try:
                self.sdk_in.close()
            except OSError:
                pass

    def finish(self) -> None:
        """The SDK is done: mark the end of its output and replace its end of the output pipe
        with /dev/null, so the pump reads the last answers, then the mark, and records what it
        learned. The mark, not end of file: the MCP SDK keeps a duplicate of fd 1 open for the
        life of the process (mcp/server/stdio.py, _claim_fd), so end of file came only with the
        join's 5 s timeout, and every stop of `af mcp` took 5 s (issue 43)."""
        self.offer(None)  # a tool call still waiting for the caller goes to the SDK's end
        sys.stdout.flush()
        with suppress(OSError):
            os.write(1, SDK_DONE)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
        if self.outbound is not None:
            self.outbound.join(timeout=5)

    def _early_answer(self, line: bytes) -> bool:
        """Answer a recorded call at once (the SDK's reply is dropped later) or a tool call
        before the SDK is up; True when the SDK must not see the line (a tool call answered)."""
        try:
            msg = json.loads(line)
        except ValueError:
            return False
        if not isinstance(msg, dict) or "id" not in msg or not isinstance(msg.get("method"), str):
            return False
        ident = msg["id"]
        if msg["method"] == "tools/call":
            result = self._tool_call(msg.get("params"))
            if result is None:
                self._needs_sdk()
                return False
            self._reply(ident, result)
            return True
        slot = _slot(msg["method"], msg.get("params"), self.version)
        if slot is None:
            self._needs_sdk()
            return False
        with self.lock:
            self.pending[ident] = slot
            result = self.answers.get(slot)
            if result is None:
                self._needs_sdk()
                return False
            self.early.add(ident)
            if msg["method"] == "initialize":
                self.version = result.get("protocolVersion")
        self._reply(ident, result)
        return False

    def _reply(self, ident: Any, result: Any) -> None:
        self._to_client(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result},
                                   separators=(",", ":")).encode())

    def _needs_sdk(self) -> None:
        with self.turn:
            self.need_sdk = True
            self.turn.notify_all()

    def _tool_call(self, params: Any) -> dict[str, Any] | None:
        """The result of a tool call answered before the SDK is up, or None (the SDK answers)."""
        with self.turn:
            if self.sdk_up:
                return None
        if self.version is None or not isinstance(params, dict):
            return None  # no handshake answered here: the SDK holds the session
        schema = self._input_schema(params.get("name"))
        arguments = plain_arguments(params.get("arguments"), schema)
        if arguments is None:
            return None
        self.offered.wait()
        if self.caller is None:
            return None
        with self.turn:
            self.busy = True
        result = None
        try:
            result = self.caller(str(params["name"]), arguments)
        finally:
            with self.turn:
                self.busy = False
                self.tool_answered = self.tool_answered or result is not None
                self.turn.notify_all()
        return result

    def _input_schema(self, name: Any) -> Any:
        listing = self.answers.get(f"tools/list {self.version}")
        tools = listing.get("tools") if isinstance(listing, dict) else None
        for tool in tools if isinstance(tools, list) else ():
            if isinstance(tool, dict) and tool.get("name") == name:
                return tool.get("inputSchema")
        return None

    def answers_tools(self) -> bool:
        """Whether this start can answer the handshake and tool calls before the SDK loads."""
        return any(slot.startswith("initialize ") for slot in self.answers) and \
            any(slot.startswith("tools/list ") for slot in self.answers)

    def offer(self, caller: Callable[[str, dict[str, Any]], dict[str, Any] | None] | None) -> None:
        """Give the front the tool calls it may answer (None: it answers none)."""
        self.caller = caller
        self.offered.set()

    def sdk_turn(self, quiet_s: float = QUIET_S, longest_s: float = LONGEST_S) -> None:
        """Block until the SDK should load: a request needs it, the first tool answer is out,
        the client has been quiet for ``quiet_s``, or ``longest_s`` have passed since the start."""
        with self.turn:
            while not (self.need_sdk or self.tool_answered or self.sdk_up):
                now = time.monotonic()
                quiet = now - self.heard
                if (not self.busy and quiet >= quiet_s) or now - self.started >= longest_s:
                    return
                self.turn.wait(max(0.01, min(quiet_s - quiet, self.started + longest_s - now)))

    def from_sdk(self) -> None:
        """SDK -> client: forwarded, except the SDK's answers to calls already answered."""
        try:
            for line in iter(self.sdk_out.readline, b""):
                if line == SDK_DONE:
                    break
                if not self.sdk_up:
                    with self.turn:
                        self.sdk_up = True  # the SDK answers tool calls from now on
                        self.turn.notify_all()
                if not self._late_answer(line):
                    self._to_client(line)
        except (OSError, ValueError):
            pass

    def _late_answer(self, line: bytes) -> bool:
        """Record the SDK's answer to a recordable call; True if the client has it already."""
        try:
            msg = json.loads(line)
        except ValueError:
            return False
        if not isinstance(msg, dict) or "id" not in msg or "method" in msg:
            return False
        with self.lock:
            slot = self.pending.pop(msg["id"], None)
            if slot is None:
                return False
            result = msg.get("result")
            answered = msg["id"] in self.early
            self.early.discard(msg["id"])
            if slot.startswith("initialize ") and isinstance(result, dict):
                # set before the client sees this answer, so its listings find their slots
                self.version = result.get("protocolVersion")
            if result is not None and self.answers.get(slot) != result:
                if answered:
                    self.warn("the recorded MCP handshake differed from the server's own answer; "
                              "the record now holds the server's answer")
                self.answers[slot] = result
                self.dirty = True
            elif result is None and slot in self.answers:  # the SDK refused: never answer it early again
                del self.answers[slot]
                self.dirty = True
        self._save()  # now, not at the end: a client may stop the process instead of closing it
        return answered


def start(settings: dict[str, Any]) -> Front:
    """Put the front between the client and fd 0/1, and return it: ``offer`` it the tool calls,
    wait for ``sdk_turn``, run the SDK's server, then ``finish`` it. Before this, nothing may
    have read stdin."""
    key = record_key(settings)
    client_in = os.fdopen(os.dup(0), "rb", buffering=0)
    client_out = os.fdopen(os.dup(1), "wb")
    to_sdk_r, to_sdk_w = os.pipe()
    from_sdk_r, from_sdk_w = os.pipe()
    os.dup2(to_sdk_r, 0)
    os.dup2(from_sdk_w, 1)
    os.close(to_sdk_r)
    os.close(from_sdk_w)
    # sys.stdin and sys.stdout keep their objects: they now read and write the pipes (nothing
    # has been read or written through them yet, so no buffer holds the client's bytes).
    front = Front(client_in, client_out, os.fdopen(to_sdk_w, "wb", buffering=0), os.fdopen(from_sdk_r, "rb"),
                  cache_dir() / f"{CACHE_PREFIX}{key[:24]}.json", key,
                  lambda m: print(f"af mcp: {m}", file=sys.stderr, flush=True))
    inbound = threading.Thread(target=front.from_client, name="af-mcp-in", daemon=True)
    front.outbound = threading.Thread(target=front.from_sdk, name="af-mcp-out", daemon=True)
    inbound.start()
    front.outbound.start()

    # SIGTERM / SIGINT (issue 43): end the SDK's input, as a client closing stdin does, from a
    # thread (the pump may hold the lock). Left to their defaults, SIGTERM killed the process
    # outright and SIGINT's KeyboardInterrupt left it waiting on the SDK's stdin reader thread.
    def on_signal(_signum: int, _frame: Any) -> None:
        threading.Thread(target=front.end_input, name="af-mcp-stop", daemon=True).start()

    accept_stop(on_signal)
    return front
