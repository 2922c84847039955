"""The stdio front of `af mcp` (af_pipeline/interfaces/mcp_front.py, issue 43) routes tool calls:
before the SDK is up it answers those whose arguments have exactly the schema's types with the
read model's own tool functions, and the SDK never sees them; anything else, and everything once
the SDK has spoken, goes to the SDK. The SDK here is two pipes the test plays."""

from __future__ import annotations

import json
import os
import queue
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from af_pipeline.interfaces.mcp_front import RECORD_VERSION, Front, plain_arguments

VERSION = "2025-11-25"
WAIT_S = 30.0  # the longest any step may take on a loaded machine: a failure, never a pause
HOURS = {"anyOf": [{"type": "number"}, {"type": "null"}], "default": None}
SCHEMA = {"type": "object", "properties": {"hours": HOURS, "top": {"type": "integer", "default": 20},
                                           "query": {"type": "string"},
                                           "order": {"enum": ["relevance", "recent"], "type": "string"},
                                           "group_by": {"anyOf": [{"const": "day", "type": "string"}, {"type": "null"}]}},
          "required": ["query"]}


class Lines:
    """A pipe's read end as a queue of parsed JSON lines (a reader thread fills it)."""

    def __init__(self, fd: int) -> None:
        self.q: queue.Queue[Any] = queue.Queue()
        fh = os.fdopen(fd, "rb")
        threading.Thread(target=lambda: [self.q.put(json.loads(line)) for line in iter(fh.readline, b"")],
                         daemon=True).start()

    def next(self) -> Any:
        return self.q.get(timeout=WAIT_S)

    def empty(self) -> bool:
        return self.q.empty()


@pytest.fixture
def wired(tmp_path: Path) -> Any:
    """A Front between a client and an SDK the test plays, its record holding the handshake."""
    record = tmp_path / "record.json"
    answers = {f"initialize {VERSION}": {"protocolVersion": VERSION, "capabilities": {}, "serverInfo": {"name": "t"}},
               f"tools/list {VERSION}": {"tools": [{"name": "search", "inputSchema": SCHEMA}]}}
    record.write_text(json.dumps({"version": RECORD_VERSION, "key": "k", "answers": answers}))
    c_in_r, c_in_w = os.pipe()
    c_out_r, c_out_w = os.pipe()
    s_in_r, s_in_w = os.pipe()
    s_out_r, s_out_w = os.pipe()
    front = Front(os.fdopen(c_in_r, "rb", buffering=0), os.fdopen(c_out_w, "wb"), os.fdopen(s_in_w, "wb", buffering=0),
                  os.fdopen(s_out_r, "rb"), record, "k", lambda m: None)
    threading.Thread(target=front.from_client, daemon=True).start()
    threading.Thread(target=front.from_sdk, daemon=True).start()
    client_w, sdk_w = os.fdopen(c_in_w, "wb", buffering=0), os.fdopen(s_out_w, "wb", buffering=0)

    def send(to: Any, msg: dict[str, Any]) -> None:
        to.write(json.dumps({"jsonrpc": "2.0", **msg}).encode() + b"\n")

    yield front, (lambda m: send(client_w, m)), (lambda m: send(sdk_w, m)), Lines(c_out_r), Lines(s_in_r)
    client_w.close()
    sdk_w.close()


def _initialize() -> dict[str, Any]:
    return {"id": 1, "method": "initialize", "params": {"protocolVersion": VERSION, "capabilities": {},
                                                        "clientInfo": {"name": "test", "version": "1"}}}


def _call(ident: int, **arguments: Any) -> dict[str, Any]:
    return {"id": ident, "method": "tools/call", "params": {"name": "search", "arguments": arguments}}


def test_tool_calls_before_the_sdk_are_answered_by_the_front_and_after_it_by_the_sdk(wired: Any) -> None:
    front, client, sdk, to_client, to_sdk = wired
    seen: list[tuple[str, dict[str, Any]]] = []
    release = threading.Event()

    def caller(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        seen.append((name, arguments))
        release.wait(WAIT_S)
        return {"content": [{"type": "text", "text": f"answer {len(seen)}"}], "isError": False}

    front.offer(caller)
    client(_initialize())
    assert to_client.next()["result"]["protocolVersion"] == VERSION  # from the record
    assert to_sdk.next()["method"] == "initialize"  # the SDK still gets the handshake

    turn = threading.Thread(target=front.sdk_turn, kwargs={"quiet_s": 0.0, "longest_s": 3600.0}, daemon=True)
    client(_call(2, query="PROJ-42", hours=3))
    while not front.busy:  # the front is computing the answer
        with front.turn:
            front.turn.wait(0.05)
    turn.start()  # the client is quiet, but an answer is being made: the SDK's import waits
    assert turn.is_alive()
    release.set()
    assert to_client.next() == {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "answer 1"}],
                                                                       "isError": False}}
    turn.join(WAIT_S)
    assert not turn.is_alive()  # the first answer is out: the SDK may load
    assert seen == [("search", {"query": "PROJ-42", "hours": 3.0})]  # a number, as the SDK's validation makes it

    client(_call(3, query="x", hours="3"))  # not exactly the schema's type: the SDK validates it
    assert to_sdk.next()["id"] == 3
    sdk({"id": 1, "result": {"protocolVersion": VERSION}})  # the SDK is up
    while not front.sdk_up:
        with front.turn:
            front.turn.wait(0.05)
    client(_call(4, query="y"))
    assert to_sdk.next()["id"] == 4  # answered by the SDK from now on
    assert len(seen) == 1 and to_client.empty()


def test_a_request_only_the_sdk_answers_lets_it_load_at_once(wired: Any) -> None:
    front, client, _sdk, to_client, to_sdk = wired
    front.offer(None)
    client(_initialize())
    to_client.next()
    client({"id": 2, "method": "resources/list"})
    assert to_sdk.next()["method"] == "initialize" and to_sdk.next()["id"] == 2
    front.sdk_turn(quiet_s=3600.0, longest_s=3600.0)  # returns: a request is waiting for the SDK
    client(_call(3, query="z"))  # no caller offered: the SDK answers
    assert to_sdk.next()["id"] == 3


@given(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=3)))
def test_only_exact_schema_types_pass(value: Any) -> None:
    out = plain_arguments({"query": "q", "hours": value}, SCHEMA)
    exact = value is None or type(value) is float or (type(value) is int and abs(value) <= 2**53)
    assert (out is not None) == exact
    if out is not None:
        assert out["hours"] == value and (value is None or type(out["hours"]) is float)
    top = plain_arguments({"query": "q", "top": value}, SCHEMA)
    assert (top is not None) == (type(value) is int)  # an integer stays an integer; 2.0 goes to the SDK
    assert plain_arguments({"hours": 1}, SCHEMA) is None  # a required argument missing
    # closed choices: only one of them, of its type
    assert (plain_arguments({"query": "q", "order": value}, SCHEMA) is not None) == (value in ("relevance", "recent")
                                                                                    and type(value) is str)
    assert (plain_arguments({"query": "q", "group_by": value}, SCHEMA) is not None) == (value is None or value == "day")
    assert plain_arguments({"query": "q", "other": 1}, SCHEMA) is None  # an argument the tool has not
