"""The readers of a proto and a markdown specification (conformance/documents/proto.py,
protojson.py, prose.py), on the A2A documents: what they read is what the files say (the
expected figures are counted from the files' text, never typed here), and a document that
does not compile or no longer holds a citation fails with one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from conformance.documents.prose import error_table, section_of, statement
from conformance.documents.proto import ProtoError, load_proto
from conformance.documents.protojson import MessageSchemas
from conformance.documents.schemas import SpecError

ROOT = Path(__file__).resolve().parents[2]
PROTO = ROOT / "specs/a2a/a2a.proto"
SPEC = "specs/a2a/specification.md"
TEXT = PROTO.read_text(encoding="utf-8")


def test_every_rpc_with_its_http_rules_and_streaming():
    doc = load_proto(PROTO)
    methods = doc.service("A2AService")
    assert [m.name for m in methods] == re.findall(r"^\s*rpc (\w+)\(", TEXT, re.M)
    streaming = set(re.findall(r"rpc (\w+)\([^)]*\) returns \(stream ", TEXT))
    assert {m.name for m in methods if m.server_streaming} == streaming
    for m in methods:
        # the primary rule and one additional binding, as written in the file
        assert len(m.http) == 2, m
        assert m.http[1].path.startswith("/{tenant}") and m.http[1].variables[0] == "tenant"
        assert f'{m.http[0].verb}: "{m.http[0].path}"' in TEXT


def test_required_fields_and_optional_presence_are_read():
    doc = load_proto(PROTO)
    required = sum(1 for m in doc.messages.values() for f in m.fields if f.required)
    assert required == TEXT.count("(google.api.field_behavior) = REQUIRED")
    optional = sum(1 for m in doc.messages.values() for f in m.fields if f.optional)
    assert optional == len(re.findall(r"^\s*optional ", TEXT, re.M))
    part = doc.message("Part")
    assert {f.json_name for f in part.oneofs["content"]} == {"text", "raw", "url", "data"}
    assert doc.message("AgentCard").field("security_schemes").map
    assert doc.enums["TaskState"][0].endswith("UNSPECIFIED")


def test_a_proto_that_does_not_compile_is_one_line(tmp_path):
    bad = tmp_path / "bad.proto"
    bad.write_text('syntax = "proto3";\nmessage A { strin x = 1; }\n')
    with pytest.raises(ProtoError, match=r"bad.proto does not compile"):
        load_proto(bad)


def schemas() -> MessageSchemas:
    bundle = json.loads((ROOT / "specs/a2a/a2a.json").read_text())
    return MessageSchemas(load_proto(PROTO), bundle, {"one_of_required": ["SendMessageResponse.payload"],
                                                      "empty_lists_allowed": ["AgentCard.skills"]})


def test_answer_schemas_add_what_the_proto_requires_and_stay_open():
    s = schemas()
    valid = jsonschema.Draft202012Validator(s.schema("SendMessageResponse")).is_valid
    task = {"id": "t", "status": {"state": "TASK_STATE_COMPLETED"}}
    assert valid({"task": task})
    assert valid({"task": {**task, "somethingNew": 1}})  # open: section 5.7 lets a reader ignore it
    assert not valid({"task": {"id": "t"}})  # status is REQUIRED
    assert not valid({})  # exactly one of task or message (the profile's one_of_required)
    message = {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "x"}]}
    assert not valid({"task": task, "message": message})
    closed = jsonschema.Draft202012Validator(s.schema("SendMessageResponse", "closed")).is_valid
    assert closed({"task": task})
    assert not closed({"task": {**task, "somethingNew": 1}})


def test_request_schemas_want_one_content_per_part_and_a_part_at_least():
    valid = jsonschema.Draft202012Validator(schemas().schema("SendMessageRequest", "request")).is_valid
    message = {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
    assert valid({"message": message})
    assert not valid({"message": {**message, "parts": []}})  # a REQUIRED list is non-empty
    assert not valid({"message": {**message, "parts": [{"text": "a", "url": "b"}]}})  # one of
    assert not valid({"message": {**message, "parts": [{"mediaType": "text/plain"}]}})  # none of
    assert not valid({"message": {**message, "message_id": "m"}})  # the kit sends camelCase only


def test_a_required_list_the_document_shows_empty_is_allowed():
    valid = jsonschema.Draft202012Validator(schemas().schema("AgentCard")).is_valid
    card = {"name": "n", "description": "", "version": "1", "capabilities": {},
            "supportedInterfaces": [{"url": "u", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": []}
    assert valid(card)
    assert not valid({**card, "defaultInputModes": []})


def test_statements_are_cited_by_section_and_line():
    text = (ROOT / SPEC).read_text(encoding="utf-8")
    source = statement(SPEC, "MUST always be present")
    line = int(re.search(r"line (\d+)", source.pointer).group(1))
    assert "MUST always be present" in text.splitlines()[line - 1]
    assert source.pointer.startswith(f"§{section_of(text, line)} ")
    assert section_of(text, line) == "3.1.4"
    with pytest.raises(SpecError, match="has no line holding"):
        statement(SPEC, "a sentence the specification never wrote")


def test_the_error_table_is_read_with_codes_statuses_and_meanings():
    text = (ROOT / SPEC).read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+Error)`\s*\| `(-32\d+)`\s*\| `\w+`\s*\| `(\d{3}) ", text, re.M)
    columns = {"name": "A2A Error Type", "code": "JSON-RPC Code", "http": "HTTP Status"}
    table = error_table({"document": SPEC, "heading": "5.4. Error Code Mappings", "columns": columns,
                         "when": {"heading": "3.3.2. Error Handling",
                                  "columns": {"name": "Error Name", "when": "Description"}}})
    assert rows and {(e.name, e.code, e.http_status) for e in table.values()} == {
        (name, int(code), int(status)) for name, code, status in rows}
    assert all(e.when and e.source.file == SPEC for e in table.values())
    with pytest.raises(SpecError, match="no table"):
        error_table({"document": SPEC, "heading": "5.4. Error Code Mappings",
                     "columns": {"name": "Nope", "code": "JSON-RPC Code", "http": "HTTP Status"}})
