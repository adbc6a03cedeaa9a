"""The document's examples (`examples`), each sent as written with its placeholders filled
(a real recipient, connection, task, client_key, group and own message) and served as its
section says: a text answers a task awaiting its peer, a data command a ROLE_AGENT
message, GetTask the task. One requirement per example the document lists, each with the
fault that refuses requests of its kind."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import Each, Patch, at, fault, requirement
from conformance.kit.faults import replaces
from conformance.model import Profile
from conformance.protocols.plaza.answers import (
    OPEN_STATES,
    UNSUPPORTED,
    expect_state,
    own_id,
    sent_message_id,
    unsupported,
)
from conformance.protocols.plaza.client import ALICE, BOB, SHORT_DEADLINE_S, PlazaClient, dig, fresh_id
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.site import Issue


class ExampleWorld:
    """Real values for the examples' placeholders, found where the examples put them."""

    def __init__(self, c: PlazaClient) -> None:
        self.c = c
        ex = c.spec["examples"]
        self.placeholders = {
            "recipient": ex["firstInvitation"]["params"]["message"]["metadata"][c.ext]["recipientId"],
            "connection": ex["readConversation"]["params"]["message"]["contextId"],
            "task": ex["getTask"]["params"]["id"],
            "client_key": ex["receivePending"]["params"]["message"]["parts"][0]["data"]["client_key"],
            "group": ex["groupMessages"]["params"]["message"]["parts"][0]["data"]["group_id"],
            "own_message": ex["messageStatus"]["params"]["message"]["parts"][0]["data"]["message_id"],
        }
        self.values: dict[str, str] = {}

    def fill(self, name: str) -> dict[str, Any]:
        """The example with a fresh messageId and every placeholder replaced by its real value."""
        body = self.c.example(name)
        mapping = {self.placeholders[k]: v for k, v in self.values.items()}

        def walk(value: Any) -> Any:
            if isinstance(value, dict):
                return {k: walk(v) for k, v in value.items()}
            if isinstance(value, list):
                return [walk(v) for v in value]
            return mapping.get(value, value) if isinstance(value, str) else value

        body = walk(body)
        if isinstance(dig(body, "params", "message"), dict):
            body["params"]["message"]["messageId"] = fresh_id()
        return body


def example_world(c: PlazaClient, name: str) -> ExampleWorld:
    """What an example needs before it is sent: a friend, a pending invitation, a task."""
    world = ExampleWorld(c)
    world.values.update(recipient=c.agent_id(BOB), client_key=fresh_id(), group=fresh_id())
    if name == "firstInvitation":
        c.clear_pair(ALICE, BOB)  # a live site: no open connection left between the two
    elif name == "acceptInvitation":
        _, world.values["connection"] = c.invite(ALICE, BOB)
    elif name == "groupMessages":
        from conformance.protocols.plaza.groups_client import example_group

        world.values["group"] = example_group(c)
    elif name in ("existingConversationText", "continuationNegotiate", "directStatus"):
        world.values["connection"] = c.befriend()
    elif name in ("readConversation", "messageStatus", "completeRound", "getTask"):
        connection = c.befriend()
        text = f"an example's own message {fresh_id()[:8]}"
        task = c.say(ALICE, connection, text)
        own = sent_message_id(c, task)
        if not isinstance(own, str):  # no receipt id: read it by its text
            own = own_id(c, ALICE, connection, text)
        world.values.update(connection=connection, task=str(task["id"]), own_message=own)
    return world


EXAMPLE_CALLER = {"acceptInvitation": BOB}
TEXT_EXAMPLES = ("firstInvitation", "existingConversationText")


def request_kind(body: Any, ext: str) -> tuple[Any, ...]:
    """What kind of request a body is: method, and the command (with its decision) or the text's target."""
    params = body.get("params") if isinstance(body, dict) else None
    method = body.get("method") if isinstance(body, dict) else None
    message = params.get("message") if isinstance(params, dict) else None
    part = (message.get("parts") or [None])[0] if isinstance(message, dict) else None
    if isinstance(part, dict) and isinstance(part.get("data"), dict):
        return method, part["data"].get("operation"), part["data"].get("decision")
    if isinstance(part, dict) and "text" in part and isinstance(message, dict):
        return method, "text", "first contact" if ext in (message.get("metadata") or {}) else "connection"
    return (method,)


def refused(name: str) -> Patch:
    """The fault of one example: requests of its kind are refused as invalid parameters."""
    def patch(ref: PlazaReference) -> None:
        kind = request_kind(ref.spec["examples"][name], ref.ext)

        @replaces(ref.serve_a2a)
        def serve_a2a(original: Any, raw: bytes, headers: Mapping[str, str]) -> Any:
            try:
                body = json.loads(raw)
            except ValueError:
                return original(raw, headers)
            if request_kind(body, ref.ext) == kind:
                return ref.error_response(body.get("id"),
                                          ref.invalid_params(str(body.get("method")),
                                                             [Issue("params", "type")]))
            return original(raw, headers)

    patch.__name__ = patch.__qualname__ = f"example_{name}_refused"
    patch.__doc__ = f"Requests of the kind of the {name} example are refused."
    return patch


def label(name: str) -> str:
    """An example's name as part of a requirement ID: ``firstInvitation`` -> ``FIRST-INVITATION``."""
    return "".join("-" + ch if ch.isupper() else ch.upper() for ch in name)


def examples(profile: Profile) -> list[Each]:
    """One member per example the document lists, its fault registered with it (the list is
    the document's, read when the profile loads)."""
    return [Each({"name": name, "label": label(name)}, source=at(f"/examples/{name}"),
                 faults=[fault(refused(name))])
            for name in profile.spec["examples"]]


@requirement(id="PLAZA-EXAMPLE-{label}", level="MUST",
             title="The {name} example, placeholders filled, is served as its section says",
             source=at("/examples"),
             each=examples)
def check_example(ctx: CheckContext, name: str, label: str) -> None:
    """The example, placeholders filled, is served as its section says: a text answers a
    task awaiting its peer, a data command a ROLE_AGENT message, GetTask the task."""
    c = PlazaClient(ctx)
    body = example_world(c, name).fill(name)
    deadline = float(ctx.profile.limits["deadline_s"].value)
    if ctx.run.control_path:  # receivePending waits for work up to the server's deadline
        deadline = SHORT_DEADLINE_S
        ctx.control("set_deadline", seconds=deadline)
    reply = c.raw(json.dumps(body), EXAMPLE_CALLER.get(name, ALICE), timeout=deadline + 10)
    if unsupported(ctx, reply):
        raise Untested(f"the target answers the {name} example {UNSUPPORTED} (not served)", "optional")
    if name in TEXT_EXAMPLES:
        expect_state(ctx, c.task_of(reply, f"the {name} example"), OPEN_STATES, f"the {name} example")
    elif body["method"] == "GetTask":
        task = c.task_of(reply, f"the {name} example")
        ctx.expect(task.get("id") == body["params"]["id"],
                   f"GetTask answered task {task.get('id')!r} for {body['params']['id']!r}")
    else:
        message = c.message_of(reply, f"the {name} example")
        ctx.expect(message.get("role") == "ROLE_AGENT",
                   f"the {name} example answered role {message.get('role')!r}")
        c.data_of(reply, f"the {name} example")


__all__ = ["request_kind"]
