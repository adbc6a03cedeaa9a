"""The Wever Connect surfaces beyond the HTTP actions: the rest of the A2A adapter's
strict profile and limits, MCP's versions, bearer and tool errors, one task seen the
same through all three, and the profile and discovery rules of update_mailbox and
find_peers."""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable
from typing import Any

from conformance import locate
from conformance.check import CheckContext
from conformance.checks.errors import expect_refused, expect_result
from conformance.documents.schemas import validator_for
from conformance.generation.invalid import InvalidInstance, invalid_strategy
from conformance.locate import Search
from conformance.model import Requirement
from conformance.protocols.wever.client import (
    MARKER_FIELD,
    RECIPIENT,
    SENDER,
    STRANGER,
    WeverClient,
    dig,
    refused_rpc,
    served_rpc,
)
from conformance.protocols.wever.reads import listing_ids
from conformance.transport.http import HttpReply

HOUR_S = 3600


# ----------------------------------------------------------------------------------
# A2A
# ----------------------------------------------------------------------------------
def check_a2a_card(ctx: CheckContext) -> None:
    """The agent card at protocols.a2a.agent_card names the adapter's endpoint and A2A version."""
    a2a = ctx.profile.spec["protocols"]["a2a"]
    reply = ctx.http.request("GET", a2a["agent_card"])
    card = reply.json()
    ctx.expect(reply.status == 200 and isinstance(card, dict), f"GET {a2a['agent_card']}: HTTP {reply.status} {reply.text[:200]}")
    text = json.dumps(card)
    ctx.expect(a2a["endpoint"] in text, f"the agent card does not name the endpoint {a2a['endpoint']}: {text[:300]}", kind="schema_mismatch")
    ctx.expect(f'"{a2a["protocol_version"]}"' in text, f"the agent card does not name protocol version {a2a['protocol_version']}",
               kind="schema_mismatch")


def check_a2a_data_schema(ctx: CheckContext) -> None:
    """A SendMessage whose data breaks data_schema, or whose message breaks the profile's
    role, part count or media type, is rejected before any delivery."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    spec = c.a2a["send_message"]
    watch = c.watch(RECIPIENT)
    marked, marker = c.marked()

    def shaped(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        params = c.a2a_message(data=marked)
        change(params["message"])
        return params

    part = c.a2a_message(data=marked)["message"]["parts"][0]
    cases = {
        "role user (not ROLE_USER)": shaped(lambda m: m.update(role="user")),
        f"{spec['part_count'] + 1} parts": shaped(lambda m: m.update(parts=[copy.deepcopy(part)] * (spec["part_count"] + 1))),
        "mediaType text/plain": shaped(lambda m: m["parts"][0].update(mediaType="text/plain")),
        # beside the generated breaks, two that only the data schema forbids
        "data with an unknown property": shaped(lambda m: m["parts"][0]["data"].update(x_conformance_unknown=True)),
        "task data that is not an object": shaped(lambda m: m["parts"][0]["data"].update(task="not an object")),
    }
    for what, params in cases.items():
        with ctx.subcheck(what):
            refused_rpc(ctx, c.a2a_call("SendMessage", params), f"SendMessage with {what}")

    real = {"recipient_id": c.mailbox(RECIPIENT), "capability": c.capability}
    validator = validator_for(spec["data_schema"])

    def body(bad: InvalidInstance) -> None:
        """The data breaks one keyword; where it names a recipient or capability outside
        the break, the real ones, so it is refused for the break and nothing else."""
        data = bad.instance
        if isinstance(data, dict):
            named = {k: (real[k] if k in real and not bad.violation.pointer.startswith(f"/{k}") else v) for k, v in data.items()}
            task = named.get("task")
            if isinstance(task, dict) and not bad.violation.pointer.startswith("/task"):
                named["task"] = {**task, MARKER_FIELD: marker}  # found again if it were delivered
            data = data if validator.is_valid(named) else named
        params = c.a2a_message()
        params["message"]["parts"][0]["data"] = data
        refused_rpc(ctx, c.a2a_call("SendMessage", params), f"SendMessage with data breaking '{bad.violation.keyword}' at "
                                                              f"{bad.violation.pointer or '(root)'}")

    ctx.for_all(invalid_strategy(spec["data_schema"]), body)
    watch.nothing_delivered(marker, "a rejected SendMessage")


def check_a2a_output_modes(ctx: CheckContext) -> None:
    """acceptedOutputModes may be absent, empty, or a list containing application/json;
    a list without it is rejected."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    media = c.a2a["send_message"]["part_media_type"]
    for what, modes in (("absent", None), ("empty", []), (f"[{media}]", [media]), (f"[text/plain, {media}]", ["text/plain", media])):
        with ctx.subcheck(f"acceptedOutputModes {what}"):
            params = c.a2a_message()
            if modes is None:
                params["configuration"].pop("acceptedOutputModes", None)
            else:
                params["configuration"]["acceptedOutputModes"] = modes
            served_rpc(ctx, c.a2a_call("SendMessage", params), f"SendMessage with acceptedOutputModes {what}")
    with ctx.subcheck("acceptedOutputModes [text/plain]"):
        params = c.a2a_message()
        params["configuration"]["acceptedOutputModes"] = ["text/plain"]
        refused_rpc(ctx, c.a2a_call("SendMessage", params), "SendMessage with acceptedOutputModes [text/plain]")


def nested(depth: int) -> dict[str, Any]:
    """An object ``depth`` containers deep."""
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"d": value}
    return value


def check_a2a_limits(ctx: CheckContext) -> None:
    """The adapter's own limits, each at its edge and one past it."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    lim = {name: int(v.value) for name, v in ctx.profile.limits.items() if name.startswith("a2a_")}
    with ctx.subcheck("messageId bytes"):
        size = lim["a2a_message_id_bytes"]
        served_rpc(ctx, c.a2a_call("SendMessage", c.a2a_message("é" * (size // 2) + "m" * (size % 2))), f"a messageId of {size} UTF-8 bytes")
        refused_rpc(ctx, c.a2a_call("SendMessage", c.a2a_message("é" * (size // 2) + "mm")), f"a messageId of {size + 1 + size % 2} UTF-8 bytes")
    with ctx.subcheck("historyLength"):
        top = lim["a2a_history_length_maximum_count"]
        task = served_rpc(ctx, c.a2a_call("SendMessage", c.a2a_message()), "SendMessage")
        task_id = dig(task, "task", "id")
        ctx.expect(isinstance(task_id, str), f"SendMessage: no result.task.id in {str(task)[:200]}", kind="malformed_answer")
        served_rpc(ctx, c.a2a_call("GetTask", {"id": task_id, "historyLength": top}), f"GetTask historyLength {top}")
        for bad in (-1, top + 1):
            refused_rpc(ctx, c.a2a_call("GetTask", {"id": task_id, "historyLength": bad}), f"GetTask historyLength {bad}")
    with ctx.subcheck("JSON depth"):
        depth = lim["a2a_json_depth_count"]
        deep = c.a2a_message(data=nested(depth + 1))
        refused_rpc(ctx, c.a2a_call("SendMessage", deep), f"a request nested over {depth} containers")
    with ctx.subcheck("request bytes"):
        size = lim["a2a_request_bytes"]
        params = c.a2a_message()
        params["padding"] = "x" * size
        refused_rpc(ctx, c.a2a_call("SendMessage", params), f"a request over {size} bytes")


def check_a2a_no_grant(ctx: CheckContext) -> None:
    """The bridge never creates sender grants: without one, SendMessage is refused and
    afterwards there still is none."""
    c = WeverClient(ctx)
    c.advertise(RECIPIENT)
    c.ungranted(SENDER, RECIPIENT)
    sender = c.mailbox(SENDER)
    before = locate.holds(expect_result(ctx, c.call("get_mailbox", {}, RECIPIENT), "get_mailbox"), sender)
    refused_rpc(ctx, c.a2a_call("SendMessage", c.a2a_message()), "SendMessage without the recipient's grant")
    after = expect_result(ctx, c.call("get_mailbox", {}, RECIPIENT), "get_mailbox")
    ctx.expect(before or not locate.holds(after, sender), f"after a refused SendMessage the recipient's get_mailbox names the sender "
               f"{sender} (an allowed sender?): {str(after)[:200]}", kind="auth_not_enforced")
    expect_refused(ctx, c.send(SENDER, RECIPIENT), "send_task after a refused SendMessage")


def check_a2a_bearer(ctx: CheckContext) -> None:
    """The adapter needs the mailbox token (required_headers Authorization)."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    watch = c.watch(RECIPIENT)
    data, marker = c.marked()
    with ctx.subcheck("no token"):
        refused_rpc(ctx, c.a2a_call("SendMessage", c.a2a_message(data=data), who=None), "SendMessage with no token")
    with ctx.subcheck("an unknown token"):
        headers = {**c.a2a_headers(None), "Authorization": f"Bearer conformance-not-a-token-{uuid.uuid4().hex}"}
        reply = ctx.http.request("POST", c.a2a["endpoint"], headers=headers,
                                 content=json.dumps(rpc("SendMessage", c.a2a_message(data=data))))
        refused_rpc(ctx, reply, "SendMessage with a token the relay never issued")
    watch.nothing_delivered(marker, "a SendMessage without a valid token", kind="auth_not_enforced")


def check_a2a_capability(ctx: CheckContext) -> None:
    """SendMessage for a capability the recipient does not advertise delivers nothing."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    data, marker = c.marked()
    params = c.a2a_message(data=data)
    params["message"]["parts"][0]["data"]["capability"] = "conformance.not.advertised"
    watch = c.watch(RECIPIENT)
    refused_rpc(ctx, c.a2a_call("SendMessage", params), "SendMessage for a capability the recipient does not advertise")
    watch.nothing_delivered(marker, "a refused SendMessage", kind="auth_not_enforced")


def check_a2a_task_id(ctx: CheckContext) -> None:
    """A supplied taskId is read with participant authorization, then continuation is
    refused: a stranger and a participant are both refused, and nothing is delivered."""
    c = WeverClient(ctx)
    task = c.new_task("offered")
    c.allow(STRANGER, RECIPIENT)
    watch = c.watch(RECIPIENT)
    data, marker = c.marked()
    for who in (SENDER, STRANGER):
        with ctx.subcheck(f"as the {'sender' if who == SENDER else 'stranger'}"):
            params = c.a2a_message(data=data)
            params["message"]["taskId"] = task.id
            refused_rpc(ctx, c.a2a_call("SendMessage", params, who=who), "SendMessage continuing an existing task")
    watch.nothing_delivered(marker, "a task continuation")


def a2a_sent_id(ctx: CheckContext, reply: Any, what: str) -> str:
    """The id of the A2A Task a SendMessage answered (result.task.id: the manifest's and A2A's names)."""
    task_id = dig(served_rpc(ctx, reply, what), "task", "id")
    if not isinstance(task_id, str):
        ctx.fail(f"{what}: " + Search("result.task.id (protocols.a2a.send_message.result_shape)").looked_for(reply.json()),
                 kind="malformed_answer")
    return str(task_id)


def check_a2a_retry_gone(ctx: CheckContext) -> None:
    """A messageId whose task was deleted, or expired, names no new work while its
    tombstone lives ("expired/deleted retained work is unavailable")."""
    if ctx.run.live:
        ctx.needs_control(f"advance_clock past task_hours ({ctx.profile.limits['task_hours'].value}): an expired task's messageId")
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    deleted, expired = (f"conformance-{uuid.uuid4().hex}" for _ in range(2))
    (data, marker), (late_data, late_marker) = c.marked(), c.marked()
    task_id = a2a_sent_id(ctx, c.a2a_call("SendMessage", c.a2a_message(deleted, data=data)), "SendMessage")
    a2a_sent_id(ctx, c.a2a_call("SendMessage", c.a2a_message(expired, data=late_data)), "SendMessage of a task left to expire")
    with ctx.subcheck("deleted"):
        expect_result(ctx, c.call("cancel_task", {"task_id": task_id}, SENDER), "cancel_task")
        expect_result(ctx, c.call("delete_task_content", {"task_id": task_id}, SENDER), "delete_task_content")
        watch = c.watch(RECIPIENT)
        refused_rpc(ctx, c.a2a_call("SendMessage", c.a2a_message(deleted, data=data)), "SendMessage retrying a deleted task's messageId")
        watch.nothing_delivered(marker, "a retry of a deleted task's messageId")
    with ctx.subcheck("expired"):
        c.advance(ctx.limit("task_hours") * HOUR_S + HOUR_S)  # within the tombstone's hours
        watch = c.watch(RECIPIENT)
        refused_rpc(ctx, c.a2a_call("SendMessage", c.a2a_message(expired, data=late_data)),
                    "SendMessage retrying an expired task's messageId")
        watch.nothing_delivered(late_marker, "a retry of an expired task's messageId")


# ----------------------------------------------------------------------------------
# MCP
# ----------------------------------------------------------------------------------
def mcp_post(c: WeverClient, body: dict[str, Any], who: str | None = SENDER, headers: dict[str, str] | None = None) -> HttpReply:
    route = c.spec["protocols"]["mcp"]["endpoint"]
    hdrs = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers or {})}
    if who is not None:
        hdrs["Authorization"] = f"Bearer {c.token(who)}"
    return c.ctx.http.request("POST", route, headers=hdrs, content=json.dumps(body))


def rpc(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}


def tools_of(reply: HttpReply) -> list[str]:
    tools = dig(reply.json(), "result", "tools")
    return [str(t.get("name")) for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []


def check_mcp_versions(ctx: CheckContext) -> None:
    """Each listed protocol version is served in its own era, as the kit's MCP client
    speaks it (transport/mcp.py): initialize agreeing on a handshake revision, a
    stateless revision's server/discover listing it. A version the kit has no
    documents for is not judged."""
    from conformance.transport.mcp import McpClient, known_revisions, revision

    c = WeverClient(ctx)
    route = c.spec["protocols"]["mcp"]["endpoint"]
    bearer = {"Authorization": f"Bearer {c.token(SENDER)}"}
    for version in c.spec["protocols"]["mcp"]["versions"]:
        if version not in known_revisions():
            continue
        with ctx.subcheck(version):
            client = McpClient(ctx.http, route, version, lambda: dict(bearer))
            if revision(version).stateless:
                answer = client.request("server/discover", {})
                listed = answer.result.get("supportedVersions") if isinstance(answer.result, dict) else None
                ctx.expect(isinstance(listed, list) and version in listed,
                           f"MCP {version}: server/discover answered HTTP {answer.http.status} {answer.http.text[:200]!r}", kind="rejected_valid")
            else:
                answer = client.start(asked=version)
                agreed = answer.result.get("protocolVersion") if isinstance(answer.result, dict) else None
                ctx.expect(agreed == version, f"MCP {version}: initialize asking it answered HTTP {answer.http.status} "
                           f"{answer.http.text[:200]!r}", kind="rejected_valid")


def check_mcp_bearer(ctx: CheckContext) -> None:
    from conformance.transport.mcp import McpClient, McpError, known_revisions

    c = WeverClient(ctx)
    for version in [v for v in c.spec["protocols"]["mcp"]["versions"] if v in known_revisions()]:
        with ctx.subcheck(version):
            client = McpClient(ctx.http, c.spec["protocols"]["mcp"]["endpoint"], version, dict)  # no Authorization
            try:
                answer = client.request("tools/list", {})
            except McpError:
                continue  # initialize itself was refused
            served = isinstance(answer.result, dict) and isinstance(answer.result.get("tools"), list)
            ctx.expect(not served, f"MCP {version} tools/list with no token was served: HTTP {answer.http.status} "
                       f"{answer.http.text[:200]}", kind="auth_not_enforced")


# ----------------------------------------------------------------------------------
# one task, three surfaces
# ----------------------------------------------------------------------------------
def check_surfaces_agree(ctx: CheckContext) -> None:
    """A task sent over A2A reads the same over HTTP, MCP and A2A, before and after the
    recipient accepts it."""
    c = WeverClient(ctx)
    c.allow(SENDER, RECIPIENT)
    mapping = c.a2a["state_mapping"]
    task_id = a2a_sent_id(ctx, c.a2a_call("SendMessage", c.a2a_message()), "SendMessage")
    http = c.binding if c.binding.kind == "http-action" else ctx.binding_named("http")
    mcp = c.binding if c.binding.kind == "mcp-tools" else ctx.binding_named("mcp")
    for step in (c.vocab.state("offered"), c.vocab.state("accepted")):
        with ctx.subcheck(step):
            if step == "accepted":
                expect_result(ctx, c.via(http, "accept_task", {"task_id": task_id}, c.label(RECIPIENT), None), "accept_task")
            states = {}
            for surface, binding in (("HTTP", http), ("MCP", mcp)):
                seen = c.task_of(c.via(binding, "get_task", {"task_id": task_id}, c.label(SENDER), None),
                                 f"get_task over {surface}", known=task_id)
                states[surface] = c.state_shown(seen, f"get_task over {surface}")
            ctx.expect(states["HTTP"] == states["MCP"], f"HTTP and MCP disagree on the task's state: {states}", kind="state_changed")
            ctx.expect(states["HTTP"] == step, f"the task is {states['HTTP']!r}, expected {step}")
            state = dig(served_rpc(ctx, c.a2a_call("GetTask", {"id": task_id}), "GetTask"), "status", "state")
            ctx.expect(state == mapping[step], f"A2A says {state!r} for a {step} task; state_mapping says {mapping[step]}")


# ----------------------------------------------------------------------------------
# profiles and discovery
# ----------------------------------------------------------------------------------
def check_update_mailbox(ctx: CheckContext) -> None:
    """accepts_connection_requests: set, kept when omitted, and opting out revokes no grant."""
    c = WeverClient(ctx)
    c.advertise(RECIPIENT, accepts_connection_requests=True)
    with ctx.subcheck("omitted flag"):
        c.advertise(RECIPIENT)
        reply = c.call("request_connection", {"recipient_id": c.mailbox(RECIPIENT)}, SENDER)
        ctx.expect(reply.ok, f"after an update_mailbox without accepts_connection_requests, a connection request to the mailbox "
                   f"(which had opted in) was refused: {reply.describe()}")
    with ctx.subcheck("opting out keeps grants"):
        expect_result(ctx, c.grant(SENDER, RECIPIENT), "allow_sender")
        c.advertise(RECIPIENT, accepts_connection_requests=False)
        c.task_of(c.send(SENDER, RECIPIENT), "send_task after the recipient opted out of requests")


def check_discovery(ctx: CheckContext) -> None:
    """find_peers lists discoverable mailboxes only, filters by capability, and pages
    with limit and after. Without control it publishes mailboxes of the run's own only."""
    c = WeverClient(ctx, own=True)
    c.advertise(RECIPIENT, discoverable=True)
    c.advertise(STRANGER, discoverable=False)
    c.advertise(SENDER, capabilities=[f"{c.capability}.other"], discoverable=True)
    ids = {who: c.mailbox(who) for who in (SENDER, RECIPIENT, STRANGER)}
    pattern = c.vocab.mailbox_id

    def peers(params: dict[str, Any], what: str) -> list[list[str]]:
        """The mailbox ids of each listed peer (the listing: the list whose items carry our ids)."""
        return listing_ids(expect_result(ctx, c.open_call("find_peers", params), what), ids.values(), pattern)

    listed = [i for item in peers({}, "find_peers") for i in item]
    ctx.expect(ids[RECIPIENT] in listed and ids[SENDER] in listed, f"find_peers misses discoverable mailboxes: {listed}")
    ctx.expect(ids[STRANGER] not in listed, "find_peers lists a mailbox that is not discoverable", kind="auth_not_enforced")
    with ctx.subcheck("capability filter"):
        only = [i for item in peers({"capability": c.capability}, "find_peers by capability") for i in item]
        ctx.expect(ids[RECIPIENT] in only and ids[SENDER] not in only, f"find_peers capability={c.capability} answered {only}")
    with ctx.subcheck("limit and after"):
        first = peers({"limit": 1}, "find_peers limit=1")
        ctx.expect(len(first) == 1 and len(first[0]) == 1, f"find_peers limit=1 answered {len(first)} peers: {first}")
        rest = [i for item in peers({"after": first[0][0]}, "find_peers after") for i in item]
        ctx.expect(first[0][0] not in rest, f"find_peers after={first[0][0]} lists that peer again")


def check_inbox(ctx: CheckContext) -> None:
    """inbox: offered and accepted tasks addressed to the caller, nothing else."""
    c = WeverClient(ctx)
    offered, accepted, declined = c.new_task("offered"), c.new_task("accepted"), c.new_task("declined")
    shown = c.inbox_ids(RECIPIENT)
    ctx.expect(offered.id in shown and accepted.id in shown, f"the inbox misses offered or accepted tasks: {shown}")
    ctx.expect(declined.id not in shown, "the inbox shows a declined task")
    mine = {offered.id, accepted.id, declined.id}
    ctx.expect(not mine & set(c.inbox_ids(SENDER)), "the sender's inbox shows tasks it sent", kind="auth_not_enforced")


def rows(req: Callable[..., Requirement], at: Callable[..., Any], lim: dict[str, int]) -> list[Requirement]:
    a2a = "/protocols/a2a"
    return [
        req("WEVER-A2A-CARD", "MUST", "The agent card names the adapter's endpoint and A2A version",
            at(f"{a2a}/agent_card"), check_a2a_card, ("agent_card_missing",)),
        req("WEVER-A2A-DATA-SCHEMA", "MUST", "A SendMessage breaking data_schema, the role, part count or media type is rejected before delivery",
            at(f"{a2a}/send_message/data_schema"), check_a2a_data_schema, ("a2a_data_unchecked", "a2a_role_unchecked")),
        req("WEVER-A2A-OUTPUT-MODES", "MUST", "acceptedOutputModes absent, empty or containing application/json is served; other lists are rejected",
            at(f"{a2a}/output_negotiation"), check_a2a_output_modes, ("a2a_output_modes_unchecked",)),
        req("WEVER-A2A-LIMITS", "MUST", "The adapter's limits hold at their edge: messageId bytes, historyLength, JSON depth, request bytes",
            at(f"{a2a}/limits"), check_a2a_limits, ("a2a_message_id_unbounded", "a2a_depth_unbounded")),
        req("WEVER-A2A-NO-GRANT-CREATED", "MUST", "The A2A bridge never creates sender grants",
            at(f"{a2a}/send_message/permission"), check_a2a_no_grant, ("a2a_creates_grant",)),
        req("WEVER-A2A-BEARER", "MUST", "The adapter refuses a request without a valid mailbox token and delivers nothing",
            at(f"{a2a}/required_headers/Authorization"), check_a2a_bearer, ("a2a_open",)),
        req("WEVER-A2A-NEEDS-CAPABILITY", "MUST", "SendMessage for a capability the recipient does not advertise delivers nothing",
            at(f"{a2a}/send_message/permission"), check_a2a_capability, ("capability_unchecked",)),
        req("WEVER-A2A-TASK-ID", "MUST", "A supplied taskId is refused as task continuation, for participants and strangers alike",
            at(f"{a2a}/strict_profile"), check_a2a_task_id, ("a2a_continuation_served",)),
        req("WEVER-A2A-RETRY-GONE", "MUST", "A deleted or expired task's messageId creates no new work while its tombstone lives",
            at(f"{a2a}/retry"), check_a2a_retry_gone, ("tombstone_forgotten", "expired_key_forgotten")),
        req("WEVER-MCP-VERSIONS", "MUST", "Every listed MCP protocol version is served with its handshake",
            at("/protocols/mcp/versions"), check_mcp_versions, ("mcp_one_version",)),
        req("WEVER-MCP-BEARER", "MUST", "MCP needs the configured bearer token",
            at("/protocols/mcp/auth"), check_mcp_bearer, ("mcp_open",)),
        req("WEVER-SURFACES-AGREE", "MUST", "One task reads the same over HTTP, MCP and A2A (state_mapping), before and after acceptance",
            at(f"{a2a}/access_setup/instructions"), check_surfaces_agree, ("mcp_stale_task", "a2a_state_unmapped")),
        req("WEVER-UPDATE-MAILBOX", "MUST", "update_mailbox keeps accepts_connection_requests when omitted; opting out revokes no grant",
            at("/actions/update_mailbox/description"), check_update_mailbox, ("omitted_flag_reset", "opt_out_revokes")),
        req("WEVER-DISCOVERY-OPT-IN", "MUST", "find_peers lists discoverable mailboxes only, filters by capability, pages with limit and after",
            at("/actions/find_peers/description"), check_discovery, ("private_profile_listed", "capability_filter_ignored")),
        req("WEVER-INBOX", "MUST", "The inbox shows the offered and accepted tasks addressed to the caller, nothing else",
            at("/actions/inbox/description"), check_inbox, ("inbox_shows_others", "inbox_shows_terminal")),
    ]



