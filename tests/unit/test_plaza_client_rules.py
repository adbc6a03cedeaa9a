"""Plaza's generated "valid" requests send only what a client may send (issue 45): every
request the valid-input rows send (PLAZA-CMD-VALID-*, PLAZA-SEND-PARAMS-VALID,
PLAZA-GETTASK-PARAMS-VALID, with their set-up) is held to the document's client-side rules
(conformance/protocols/plaza/sending.py):

- the requiredHeaders on every request, ROLE_USER, no tenant;
- a fresh messageId and request_key for each intent (never one key for two bodies);
- a paired cursor both or neither (before_updated_at with before_id), never after_seq beside
  before_seq, and a cursor or reference (sending.RETURNED) only as a value the site returned;
- every id a command names (the branch's uuid fields, receive_ack's view_id and receipt) one
  the site returned, an agent the client knows, or one the client minted for a new object;
- one client_key per agent (the document: generate once, reuse it).

The rules are read off the recorded requests in the order the reference received them,
beside every answer it gave before each; a second test proves the checker finds each kind
of break it looks for."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from conformance.kit import locate
from conformance.protocols.plaza.sending import FRESH_KEYS, MINTED, NOT_TOGETHER, PAIRED, RETURNED
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.run.runner import execute

UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
ROWS = ("PLAZA-CMD-VALID-", "PLAZA-SEND-PARAMS-VALID", "PLAZA-GETTASK-PARAMS-VALID")
RETURNED_PATTERNS = {"receive_ack": ("view_id", "receipt")}  # not uuids, yet what the site gave


@dataclass
class Exchange:
    headers: dict[str, str]
    body: Any
    answer: Any = None


@dataclass
class Recorder:
    """What the reference received and answered, in order (its serve_a2a, spied)."""

    exchanges: list[Exchange] = field(default_factory=list)

    def attach(self, ref: Any) -> None:
        serve, finish = ref.serve_a2a, ref.finish_pending

        def serve_a2a(raw: bytes, headers: Any) -> Any:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            exchange = Exchange({k.lower(): v for k, v in dict(headers).items()}, body)
            self.exchanges.append(exchange)
            out = serve(raw, headers)
            if hasattr(out, "body"):
                exchange.answer = json.loads(out.body)
            else:
                out.exchange = exchange
            return out

        def finish_pending(pending: Any) -> Any:
            out = finish(pending)
            getattr(pending, "exchange", Exchange({}, None)).answer = json.loads(out.body)
            return out

        ref.serve_a2a, ref.finish_pending = serve_a2a, finish_pending


def strings(value: Any) -> Iterator[str]:
    for found in locate.walk(value, 12):
        if isinstance(found.value, str):
            yield found.value


def command_of(body: Any) -> dict[str, Any] | None:
    parts = locate.at(body, ("params", "message", "parts"))
    data = parts[0].get("data") if isinstance(parts, list) and parts and isinstance(parts[0], dict) else None
    return data if isinstance(data, dict) and isinstance(data.get("operation"), str) else None


def broken_rules(spec: dict[str, Any], exchanges: list[Exchange], agents: set[str]) -> list[str]:
    """Every client-side rule a recorded request breaks (a list of findings, [] when none)."""
    branches = {b["properties"]["operation"]["const"]: b for b in spec["schemas"]["command"]["anyOf"]}
    headers = {k.lower(): str(v) for k, v in spec["requiredHeaders"].items() if k != "Authorization"}
    returned: set[str] = set()
    minted: set[str] = set()
    keys_used: dict[tuple[str, str], str] = {}  # (caller, key) -> the body it was first used for
    client_keys: dict[str, set[str]] = {}
    found: list[str] = []
    for n, ex in enumerate(exchanges):
        where = f"request {n}"
        caller = ex.headers.get("authorization", "")
        for name, value in headers.items():
            got = ex.headers.get(name, "")
            if value not in got:
                found.append(f"{where}: header {name} is {got!r}, the document requires {value!r}")
        if not caller.startswith("Bearer "):
            found.append(f"{where}: no bearer credential")
        body = ex.body if isinstance(ex.body, dict) else {}
        params = body.get("params") if isinstance(body.get("params"), dict) else {}
        if "tenant" in params:
            found.append(f"{where}: a tenant the agent card does not name ({params['tenant']!r})")
        message = params.get("message")
        if isinstance(message, dict):
            if message.get("role") != spec["wireFormat"]["requestRole"]:
                found.append(f"{where}: role {message.get('role')!r}")
            mid = message.get("messageId")
            text = json.dumps({k: v for k, v in message.items() if k != "messageId"}, sort_keys=True)
            first = keys_used.setdefault((caller, f"messageId {mid}"), text)
            if first != text:
                found.append(f"{where}: messageId {mid} again for another message")
        if body.get("method") == "GetTask" and params.get("id") not in returned:
            found.append(f"{where}: GetTask of {params.get('id')!r}, no task the site returned")
        data = command_of(body)
        if data is not None:
            found += command_rules(where, data, branches.get(data["operation"], {}), caller, returned,
                                   minted | agents, keys_used, client_keys)
            made = [data.get(f) for f in MINTED.get(data["operation"], ())]
            made += [locate.at(data, ("bundle", "key_id")), locate.at(data, ("envelope", "message_id"))]
            minted |= {str(value) for value in made if isinstance(value, str)}
        returned |= set(strings(ex.answer))
    return found


def command_rules(where: str, data: dict[str, Any], branch: dict[str, Any], caller: str, returned: set[str],
                  known: set[str], keys_used: dict[tuple[str, str], str],
                  client_keys: dict[str, set[str]]) -> list[str]:
    operation, found = data["operation"], []
    for pair in PAIRED:
        if 0 < sum(f in data for f in pair) < len(pair):
            found.append(f"{where}: {operation} sends half of the paired cursor {pair}: {data}")
    for pair in NOT_TOGETHER:
        if all(f in data for f in pair):
            found.append(f"{where}: {operation} sends {pair[0]} beside {pair[1]}")
    for name in FRESH_KEYS:
        if name in data:
            body = json.dumps(data, sort_keys=True)
            if keys_used.setdefault((caller, f"{name} {data[name]}"), body) != body:
                found.append(f"{where}: {operation} {name} {data[name]} again for another intent")
    if "client_key" in data:
        client_keys.setdefault(caller, set()).add(str(data["client_key"]))
        if len(client_keys[caller]) > 1:
            found.append(f"{where}: a second client_key for one agent ({sorted(client_keys[caller])})")
    props = branch.get("properties", {})
    ids = [k for k, v in props.items() if isinstance(v, dict) and v.get("format") == "uuid"
           and k not in FRESH_KEYS and k not in MINTED.get(operation, ()) and k != "client_key"]
    ids += [k for k in RETURNED_PATTERNS.get(operation, ()) if k in props]
    for name in sorted(set(ids) | {f for f in RETURNED if f in props}):
        values = data.get(name)
        for value in values if isinstance(values, list) else [values] if name in data else []:
            if str(value) not in returned | known:
                found.append(f"{where}: {operation} {name} {value!r} is no value the site returned, no agent "
                             "the client knows and nothing it minted")
    return found


def valid_rows(seed: int) -> tuple[list[Exchange], Any, dict[str, str]]:
    profile = copy.copy(load_profile("agent-plaza"))
    run = open_run(profile, "reference", budget="quick", seed=seed, shrink=False)
    recorder = Recorder()
    recorder.attach(run.reference)
    verdicts = {req.id: execute(req, run) for req in profile.requirements if req.id.startswith(ROWS)}
    return recorder.exchanges, profile, {rid: v.status for rid, v in verdicts.items()}


def agents_of(profile: Any) -> set[str]:
    return {str(v["id"]) for v in profile.reference_credentials.values() if isinstance(v, dict) and "id" in v}


@pytest.mark.parametrize("seed", [1, 2])
def test_generated_valid_inputs_send_only_what_a_client_may(seed):
    exchanges, profile, verdicts = valid_rows(seed)
    assert set(verdicts.values()) <= {"passed", "untested"}, verdicts
    assert len(exchanges) > 500
    assert broken_rules(profile.spec, exchanges, agents_of(profile)) == []
    # the rules were exercised: inbox inputs with the paired cursor, references copied from answers
    sent = [command_of(ex.body) or {} for ex in exchanges]
    assert any(all(f in d for f in PAIRED[0]) for d in sent if d.get("operation") == "inbox")
    assert any("before_seq" in d for d in sent if d.get("operation") == "read_conversation")
    assert {f for d in sent for f in ("after", "reply_to", "request_id") if f in d} == {"after", "reply_to",
                                                                                        "request_id"}


def test_the_checker_finds_each_break():
    """A request per rule, each breaking it once, after an answer that returned some ids."""
    spec = load_profile("agent-plaza").spec
    ext, version = spec["requiredHeaders"]["A2A-Extensions"], spec["requiredHeaders"]["A2A-Version"]
    ok_headers = {"a2a-version": version, "a2a-extensions": ext, "content-type": "application/json",
                  "authorization": "Bearer t"}
    given = "11111111-1111-4111-8111-111111111111"
    made_up = "22222222-2222-4222-8222-222222222222"

    def command(data: dict[str, Any], mid: str, **message: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                "params": {"message": {"messageId": mid, "role": "ROLE_USER", "parts": [{"data": data}],
                                       **message}}}

    first = Exchange(ok_headers, command({"operation": "inbox"}, "m0"),
                     {"result": {"next_page_request": {"before_updated_at": "2026-01-01T00:00:00Z",
                                                       "before_id": given}}})
    cases = {
        "header": Exchange({**ok_headers, "a2a-version": "0.3"}, command({"operation": "status"}, "m1")),
        "role": Exchange(ok_headers, command({"operation": "status"}, "m2", role="ROLE_AGENT")),
        "half of the paired cursor": Exchange(ok_headers, command({"operation": "inbox", "before_id": given},
                                                                  "m3")),
        "no value the site returned": Exchange(ok_headers, command(
            {"operation": "read_conversation", "connection_id": made_up}, "m4")),
        "again for another intent": Exchange(ok_headers, command(
            {"operation": "group_create", "name": "b", "request_key": given}, "m6")),
        "messageId m0 again": Exchange(ok_headers, command({"operation": "friends"}, "m0")),
        "second client_key": Exchange(ok_headers, command({"operation": "receive_status",
                                                           "client_key": made_up}, "m7")),
    }
    before = [first, Exchange(ok_headers, command({"operation": "group_create", "name": "a",
                                                   "request_key": given}, "m5")),
              Exchange(ok_headers, command({"operation": "receive_status", "client_key": given}, "m8"))]
    assert broken_rules(spec, before, set()) == []
    for needle, exchange in cases.items():
        found = broken_rules(spec, [*before, exchange], set())
        assert len(found) == 1 and needle in found[0], (needle, found)
