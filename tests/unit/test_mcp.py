"""The kit's MCP client (conformance/transport/mcp.py) against the strict server the
references share (conformance/protocols/mcp/server.py): every header each revision
asks of a client, the handshake and its downgrade, session expiry, stateless
requests with mirrored headers, and answers validated against each schema.json."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

from conformance.protocols.mcp.server import McpServer, to_response
from conformance.run.launch import open_run, reference_app
from conformance.run.profiles import load_profile
from conformance.run.runner import execute
from conformance.transport.binding import make_binding
from conformance.transport.http import HttpTransport
from conformance.transport.mcp import (
    McpClient,
    decode_header_value,
    header_value,
    known_revisions,
    newest_handshake,
    revision,
)
from tests.conftest import conformance

CANON, WEVER = load_profile("canon-verbs"), load_profile("wever-connect")


def binding_over(profile: Any, name: str, **options: Any) -> tuple[Any, Any]:
    """The profile's binding ``name`` against its in-process reference, and the reference."""
    app = reference_app(profile, **options)
    tokens = profile.reference_credentials

    def token(label: str, required: bool) -> str | None:
        value = tokens.get(label)
        return value.get("token") if isinstance(value, dict) else value

    return (make_binding(name, profile.settings["bindings"][name], HttpTransport(app=app), token),
            app.state.reference)


def test_the_kit_knows_each_revision_from_its_documents():
    assert known_revisions() == ("2025-06-18", "2025-11-25", "2026-07-28")
    assert [revision(r).stateless for r in known_revisions()] == [False, False, True]
    assert newest_handshake() == "2025-11-25"
    modern = revision("2026-07-28")
    assert ((modern.error_code("HeaderMismatchError"), modern.error_code("UnsupportedProtocolVersionError"))
            == (-32020, -32022))
    assert revision("2025-06-18").request_def("tools/call") == "CallToolRequest"


@pytest.mark.parametrize(("profile", "name", "agreed"),
                         [(CANON, "mcp", "2025-06-18"), (WEVER, "mcp", "2025-11-25")])
def test_handshake_headers_on_every_request(profile, name, agreed):
    """initialize (asking the newest handshake revision the kit knows) carries no session
    or version header; every later POST carries the agreed MCP-Protocol-Version and the
    session id the server issued, and an Accept listing both answer types."""
    binding, ref = binding_over(profile, name)
    tool = "list_contacts" if profile is CANON else "get_mailbox"
    assert binding.call(tool, {}).ok
    assert binding.list_tools()
    received = ref.mcp.received
    first, note, *rest = received
    assert (first["method"] == "initialize"
            and first["message"]["params"]["protocolVersion"] == newest_handshake())
    assert "mcp-session-id" not in first["headers"] and "mcp-protocol-version" not in first["headers"]
    assert binding.client.negotiated.name == agreed  # Canon's server downgrades to the revision it speaks
    session = binding.client.session_id
    assert session and session in ref.mcp.sessions
    assert note["method"] == "notifications/initialized" and "id" not in note["message"]
    for message in [note, *rest]:
        headers = message["headers"]
        assert headers["mcp-protocol-version"] == agreed, message
        assert headers["mcp-session-id"] == session, message
    for message in received:
        accept = message["headers"]["accept"]
        assert "application/json" in accept and "text/event-stream" in accept
        definition = revision(agreed).request_def(message["method"])
        assert definition and revision(agreed).violations(definition, message["message"]) == [], message


def test_stateless_requests_carry_meta_and_mirrored_headers():
    binding, ref = binding_over(WEVER, "mcp-stateless")
    assert binding.call("get_mailbox", {}).ok
    assert binding.call("get_task", {"task_id": "task_" + "0" * 32}).flagged
    received = ref.mcp.received
    assert received and all(m["method"] != "initialize" for m in received)
    for message in received:
        headers, body = message["headers"], message["message"]
        meta = body["params"]["_meta"]
        assert (meta["io.modelcontextprotocol/protocolVersion"] == headers["mcp-protocol-version"]
                == "2026-07-28")
        assert meta["io.modelcontextprotocol/clientCapabilities"] == {}
        assert headers["mcp-method"] == body["method"]
        if body["method"] == "tools/call":
            assert headers["mcp-name"] == body["params"]["name"]
        assert revision("2026-07-28").violations(revision("2026-07-28").request_def(body["method"]),
                                                 body) == []


def test_the_strict_server_refuses_a_client_that_forgets_a_header():
    binding, ref = binding_over(WEVER, "mcp")
    client = binding.client
    client.ensure_started()
    for left_out in ("MCP-Protocol-Version", "Mcp-Session-Id"):
        answer = client.request("tools/list", {}, headers={left_out: None}, request_id=5)
        assert answer.http.status in (400, 404) and answer.error, left_out
    stateless, _ = binding_over(WEVER, "mcp-stateless")
    for left_out in ("Mcp-Method", "Mcp-Name", "MCP-Protocol-Version"):
        answer = stateless.client.request("tools/call", {"name": "get_mailbox", "arguments": {}},
                                          headers={left_out: None})
        assert answer.http.status == 400 and answer.error_code == -32020, left_out


def test_a_session_that_ends_is_started_again_without_its_id():
    binding, ref = binding_over(CANON, "mcp", mcp_sessions=True)
    ref.mcp.session_requests = 2
    for _ in range(5):
        assert binding.call("list_contacts", {}).ok
    assert binding.client.new_sessions >= 1
    starts = [m for m in ref.mcp.received if m["method"] == "initialize"]
    assert len(starts) == 1 + binding.client.new_sessions
    assert all("mcp-session-id" not in m["headers"] for m in starts)


def test_a_server_issuing_no_session_and_paging_its_tools():
    binding, ref = binding_over(WEVER, "mcp", mcp_sessions=False, mcp_page_size=4)
    tools, answers, problem = binding.client.list_tools()
    assert not problem and len(answers) > 1
    assert [t["name"] for t in tools] == [t["name"] for t in ref.mcp_tools()]
    assert binding.client.session_id is None and binding.call("get_mailbox", {}).ok


@pytest.mark.parametrize(("value", "sent"), [("us-west1", "us-west1"), (42, "42"), (True, "true"),
                                              ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
                                              (" padded ", "=?base64?IHBhZGRlZCA=?="),
                                              ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=")])
def test_header_values_follow_the_value_encoding_table(value, sent):
    """The examples of 2026-07-28 streamable-http "Value Encoding"."""
    assert header_value(value) == sent
    assert decode_header_value(sent) == (value if isinstance(value, str) else sent)


class Host:
    """A one-tool MCP host whose tool mirrors ``region`` into a header."""

    mcp_versions = ["2026-07-28"]

    def mcp_tool_names(self) -> list[str]:
        return ["execute_sql"]

    def mcp_input_schema(self, name: Any) -> Any:
        return self.mcp_tools()[0]["inputSchema"] if name == "execute_sql" else None

    def mcp_tools(self) -> list[dict[str, Any]]:
        return [{"name": "execute_sql",
                 "inputSchema": {"type": "object", "required": ["region", "query"], "properties": {
                     "region": {"type": "string", "x-mcp-header": "Region"}, "query": {"type": "string"}}}}]

    def mcp_call_tool(self, caller: Any, params: dict[str, Any], headers: Any) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "{}"}],
                "structuredContent": {"ran": params["arguments"]["query"]}}

    def mcp_server_info(self) -> dict[str, str]:
        return {"name": "host", "version": "1"}


def test_x_mcp_header_parameters_are_mirrored_and_checked():
    server = McpServer(Host())

    async def endpoint(request: Request) -> Any:
        return to_response(server.handle(request.method, None, await request.body(), request.headers))

    http = HttpTransport(app=Starlette(routes=[Route("/mcp", endpoint, methods=["POST"])]))
    client = McpClient(http, "/mcp", "2026-07-28", dict)
    answer = client.request("tools/call",
                            {"name": "execute_sql", "arguments": {"region": "Zürich", "query": "select 1"}})
    assert (answer.result["structuredContent"] == {"ran": "select 1"}
            and answer.result["resultType"] == "complete")
    assert (answer.sent_headers["Mcp-Param-Region"] == header_value("Zürich")
            and "base64" in answer.sent_headers["Mcp-Param-Region"])
    wrong = client.request("tools/call", {"name": "execute_sql", "arguments": {"region": "eu", "query": "x"}},
                           headers={"Mcp-Param-Region": "us"})
    assert wrong.http.status == 400 and wrong.error_code == -32020
    assert not answer.violations and not wrong.violations


def test_answers_that_break_the_schema_are_quoted_with_their_path():
    found = revision("2025-06-18").validate_answer("tools/call",
                                                   {"jsonrpc": "2.0", "id": 1, "result": {"isError": False}})
    assert found and found[0].startswith("/result") and "content" in found[0]
    assert revision("2026-07-28").validate_answer("tools/list",
                                                  {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}})


def test_a_text_only_tool_result_is_a_finding_not_an_unreachable_target(tmp_path):
    """Results found in their text content: the verb rows pass, the structuredContent
    SHOULD fails, and nothing ends the run as not speaking the protocol."""
    run = open_run(CANON, "reference", faults=("mcp_text_only_results",), budget="quick", seed=1,
                   binding="mcp")
    by_id = {r.id: r for r in CANON.requirements}
    verdicts = {rid: execute(by_id[rid], run)
                for rid in ("MCP-STRUCTURED", "MCP-SCHEMA", "CANON-RESULT-LIST-CONTACTS")}
    assert (verdicts["MCP-STRUCTURED"].status == "failed"
            and "structuredContent" in verdicts["MCP-STRUCTURED"].message)
    assert verdicts["MCP-SCHEMA"].status == "passed"
    assert verdicts["CANON-RESULT-LIST-CONTACTS"].status == "passed"
    done = conformance("run", "canon-verbs", "--binding", "mcp", "--fault", "mcp_text_only_results",
                       "--only", "MCP-STRUCTURED", "--only", "CANON-RESULT-LIST-CONTACTS",
                       "--report", str(tmp_path / "r"))
    # a SHOULD finding under the MUST gate, never exit 3
    assert done.returncode == 0, done.stdout + done.stderr
    assert ("FAIL     SHOULD MCP-STRUCTURED" in done.stdout
            and "PASS     MUST   CANON-RESULT-LIST-CONTACTS" in done.stdout)
    broken = conformance("run", "canon-verbs", "--binding", "mcp",
                         "--fault", "mcp_tool_result_without_content",
                         "--only", "MCP-SCHEMA", "--report", str(tmp_path / "s"))
    assert broken.returncode == 1, broken.stdout + broken.stderr  # a MUST broken by a JSON-RPC answer: exit 1
    assert "/result" in broken.stdout and "content" in broken.stdout


def test_every_mcp_row_cites_its_revisions_page_and_canon_gets_no_stateless_rows():
    for profile in (CANON, WEVER):
        for row in [r for r in profile.requirements if r.id.startswith("MCP-")]:
            assert (row.source.is_profile
                    or row.source.file.startswith(("specs/mcp/", profile.spec_relpath))), row.id
            if row.source.file.endswith(".mdx"):
                assert row.source.pointer.startswith("line "), row.id
    assert not any(r.id.startswith("MCP-STATELESS-") for r in CANON.requirements)
    assert {r.id for r in WEVER.requirements if r.id.startswith("MCP-STATELESS-")} >= {
        "MCP-STATELESS-SCHEMA", "MCP-STATELESS-HEADER-MISMATCH", "MCP-STATELESS-VERSION-UNSUPPORTED"}
    levels = {r.id: r.level for r in CANON.requirements}
    assert levels["MCP-INPUT-SCHEMA"] == levels["MCP-STRUCTURED"] == "SHOULD"  # the profile's choices
    assert levels["MCP-VERSION-HEADER"] == "MUST"


def _mcp_verdict(profile: Any, rid: str, binding: str, faults: tuple[str, ...] = (), **settings: Any) -> Any:
    run = open_run(profile, "reference", faults=faults, budget="quick", binding=binding, shrink=False)
    try:
        for name, value in settings.items():
            setattr(run.reference, name, value)
        return execute(profile.requirement(rid), run)
    finally:
        run.http.close()


@pytest.mark.parametrize(("profile", "binding", "prefix"),
                         [(CANON, "mcp", "MCP"), (WEVER, "mcp", "MCP"),
                          (WEVER, "mcp-stateless", "MCP-STATELESS")])
def test_a_notification_gets_no_response_in_every_revision(profile, binding, prefix):
    """Every MCP binding (handshake and stateless revisions) gets the row, citing its own
    transport page; 202 with no body and a refusal with an error that has no id both pass,
    an answer does not."""
    rid = f"{prefix}-NOTIFICATION-NO-RESPONSE"
    row = profile.requirement(rid)
    assert row.level == "MUST" and "transports" in row.source.file and row.source.pointer.startswith("line ")
    assert _mcp_verdict(profile, rid, binding).status == "passed"
    assert _mcp_verdict(profile, rid, binding, mcp_refuse_notifications=True).status == "passed"
    for fault in ("mcp_notification_answered", "mcp_notification_error_200"):
        assert _mcp_verdict(profile, rid, binding, (fault,)).status == "failed", fault


@pytest.mark.parametrize(("profile", "binding", "prefix"),
                         [(CANON, "mcp", "MCP"), (WEVER, "mcp-stateless", "MCP-STATELESS")])
def test_a_batch_is_refused_or_answered_as_json_rpc_answers_one(profile, binding, prefix):
    """The revisions removed batching and say nothing of a server's answer: a SHOULD of the
    profile that accepts the strict server's refusal and JSON-RPC 2.0's array alike."""
    rid = f"{prefix}-BATCH"
    row = profile.requirement(rid)
    assert row.level == "SHOULD" and row.source.is_profile and "batching" in str(row.source)
    assert _mcp_verdict(profile, rid, binding).status == "passed"  # HTTP 400, -32600 without id
    assert _mcp_verdict(profile, rid, binding, mcp_batches=True).status == "passed"  # an array of answers
    for fault in ("mcp_batch_crashes", "mcp_batch_first_only"):
        assert _mcp_verdict(profile, rid, binding, (fault,)).status == "failed", fault
