"""The 52 data commands of ``schemas.command``, each generated on its own (the whole
union is far too slow to generate at once): schema-valid commands are never refused as
invalid parameters, and each input breaking one keyword of its branch is -32602. A
command the target answers UNSUPPORTED_OPERATION (the profile's documented "not
served") leaves its VALID requirement untested, never passed. Two families declare one
requirement per command the document lists (PLAZA-CMD-VALID-*, PLAZA-CMD-INVALID-*), each
with its fault; beside them, what a command is and how it is answered."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable
from functools import partial
from typing import Any

from conformance.checks.expect import expect_error
from conformance.checks.inputs import invalid_inputs_rejected, valid_inputs_accepted
from conformance.documents.schemas import validator_for
from conformance.generation.invalid import InvalidInstance
from conformance.kit.check import Blocked, CheckContext, CheckFailed, Untested
from conformance.kit.declare import Each, Patch, at, fault, requirement, slug
from conformance.kit.faults import answer, replaces
from conformance.model import Profile
from conformance.protocols.plaza.answers import INVALID, UNSUPPORTED, unsupported
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, COMPLETED, PlazaClient
from conformance.protocols.plaza.keeper import PLANS, STOPS
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.sending import PAIRED, RETURNED, fresh_keys, paired
from conformance.protocols.plaza.site import Issue
from conformance.transport.binding import Reply
from conformance.transport.http import TransportFailure

# Commands whose generated inputs would bind the run's agents for the rest of a live run:
# no command resumes a stopped agent, and a generated plan may cap the agent's turns. Their
# rows (valid and invalid: a broken input's control is the command itself) run where control
# resets the site afterwards, or on a disposable alice (keeper.py).
IRREVERSIBLE = {"stop": STOPS, "plan": PLANS}
SEQ_FIELDS = ("after_seq", "before_seq")
TRIPLE = ("batch_id", "view_id", "receipt")  # what receive_ack names (its schema)
COMMANDS = "/schemas/command"


def data_schema(profile: Profile) -> dict[str, Any]:
    """The data part's schema: the union of every command."""
    message = profile.spec["schemas"]["sendMessageParams"]["properties"]["message"]
    part = message["properties"]["parts"]["items"]["anyOf"][1]
    return dict(part["properties"]["data"])


def branch_validators(profile: Profile) -> dict[str, Any]:
    """A validator per command, by its ``operation`` const: the union's 52 branches
    checked one by one cost about 4 ms an instance, the one named branch 0.1 ms."""
    branches = data_schema(profile)["anyOf"]
    assert all("operation" in b["required"] for b in branches), "every command names its operation"
    return {b["properties"]["operation"]["const"]: validator_for(b) for b in branches}


def is_some_command(branches: dict[str, Any], data: Any) -> bool:
    """Valid against the union of commands: only the branch its ``operation`` names can
    accept it (each branch requires its const)."""
    name = data.get("operation") if isinstance(data, dict) else None
    branch = branches.get(name) if isinstance(name, str) else None
    return bool(branch and branch.is_valid(data))


def within_prose(profile: Profile, data: Any) -> Any:
    """A schema-valid command kept within what the document's prose adds (after_seq and
    before_seq never together, seq strings at most the int64 maximum it names) and
    quick to answer (no long poll)."""
    if not isinstance(data, dict):
        return data
    data = copy.deepcopy(data)
    if all(f in data for f in SEQ_FIELDS):
        del data["before_seq"]
    if data.get("wait_seconds"):
        data["wait_seconds"] = 0  # a generated pull does not wait: the wait is PLAZA-RECV-WAIT's subject
    cap = int(profile.limits["seq_maximum_count"].value)
    for field in SEQ_FIELDS:
        if isinstance(data.get(field), str) and int(data[field]) > cap:
            data[field] = str(cap)
    return data


class World:
    """Real objects for the ids a generated command names, made on first use: a valid input
    is judged only when served (conformance/checks/causes.py), and a refusal of a broken
    input counts only when the same request without its break is answered otherwise; a
    random connection_id, batch or group would be refused alike, valid or broken. Each
    command gets the world its caller (alice) can act in: her connection with bob, her
    receive batch, her public group (bob a member, carol applying, as the command needs) or
    bob's, her channel with bob, both sides' open offers. What a command only copies from an
    answer (sending.RETURNED: a cursor, a message replied to, a pending request, the inbox's
    paired cursor) is taken from a real answer, or left out. Where an object cannot be made
    (a part the target does not serve, say), a required id stays as drawn."""

    GROUP_FIELDS = ("group_id",)
    CHANNEL_FIELDS = ("channel_id", "key_id", "peer_key_id")
    OFFER_FIELDS = ("offer_id", "peer_offer_id")
    VISITOR = {"group_admit": CAROL, "group_invite": CAROL}  # whom a command's visitor_id names (default bob)
    SIGNED = ("private_key_publish", "private_channel_offer", "private_channel_accept", "private_send",
              "private_ack")
    REFUSED = (CheckFailed, Blocked, Untested, TransportFailure)

    def __init__(self, c: PlazaClient, command: str) -> None:
        self.c = c
        self.command = command
        self.values: dict[str, Any] = {}
        self.failed: set[str] = set()
        self.granted = False
        self.relay: Any = None
        self.ch: Any = None

    def value(self, name: str) -> Any:
        if name not in self.values and name not in self.failed:
            try:
                self.values.update(self.make(name))
            except self.REFUSED:
                self.failed.add(name)
        return self.values.get(name, MISSING)

    def agent(self, who: str) -> Any:
        try:
            return self.c.agent_id(who)
        except Untested:
            return MISSING

    def ready(self) -> None:
        """What the command needs before any id: a group command, alice's live group
        authorization (every write needs one)."""
        if self.granted:
            return
        self.granted = True
        if self.command.startswith("group_"):
            from conformance.protocols.plaza.groups_client import authorize

            with contextlib.suppress(*self.REFUSED):
                authorize(self.c, ALICE, allow_create=True, allow_invite=True, allow_join=True,
                          allow_send=True)

    def make(self, name: str) -> dict[str, Any]:
        c = self.c
        if name == "connection_id":
            return {"connection_id": c.befriend(ALICE, BOB)}
        if name == "visitor_id":
            return {"visitor_id": c.agent_id(self.VISITOR.get(self.command, BOB))}
        if name == "message_id":
            from conformance.protocols.plaza.answers import own_id, text_of

            connection, text = self.value("connection_id"), text_of("own")
            if connection is MISSING:
                return {}
            c.say(ALICE, connection, text)
            return {"message_id": own_id(c, ALICE, connection, text)}
        if name in ("client_key", *TRIPLE):
            return self.batch()
        if name in self.GROUP_FIELDS:
            return {"group_id": self.group()}
        if name in self.CHANNEL_FIELDS:
            return self.channel()
        if name in self.OFFER_FIELDS:
            return self.offers()
        if name == "after":  # a listing's cursor: an item it listed (discover: bob; friends: her connection)
            after = c.agent_id(BOB) if self.command == "discover" else self.value("connection_id")
            return {} if after is MISSING else {"after": after}
        if name == "before_seq":
            return self.seq_cursor()
        if name in PAIRED[0]:
            return self.inbox_cursor()
        if name in ("reply_to", "request_id"):
            return self.group_reference(name)
        if name == "mentions":  # bob, a member of the world's group
            return {} if self.value("group_id") is MISSING else {"mentions": [c.agent_id(BOB)]}
        return {}

    def seq_cursor(self) -> dict[str, Any]:
        """before_seq: the exact seq string of a message the site returned in the world's connection."""
        from conformance.protocols.plaza.answers import page, records, text_of

        connection = self.value("connection_id")
        if connection is MISSING:
            return {}
        self.c.say(ALICE, connection, text_of("cursor"))
        answer = page(self.c, ALICE, connection, "read_conversation")
        seqs = [r.get("seq") for r in records(self.c.ctx, answer, "read_conversation")]
        return {"before_seq": seqs[-1]} if seqs and isinstance(seqs[-1], str | int) else {}

    def inbox_cursor(self) -> dict[str, Any]:
        """before_updated_at and before_id together, copied from a next_page_request the site
        returned (alice has two conversations: bob's and carol's invitation; a page of one)."""
        from conformance.protocols.plaza.answers import field

        if self.value("connection_id") is MISSING:
            return {}
        self.c.invite(CAROL, ALICE)
        data = self.c.data_of(self.c.command("inbox", {"limit": 1}, ALICE), "inbox limit 1")
        request = field(data, "next_page_request")
        pair = {name: field(request, name) for name in PAIRED[0]}
        return pair if all(isinstance(v, str) for v in pair.values()) else {}

    def group_reference(self, name: str) -> dict[str, Any]:
        """reply_to: a message alice sent in the world's group; request_id: alice's pending
        group authorization request (after a revoke: a live grant covering the scopes makes
        none). Each the id the site minted in its answer."""
        from conformance.protocols.plaza.answers import text_of
        from conformance.protocols.plaza.groups_client import ok
        from conformance.protocols.plaza.parts import minted

        c = self.c
        if name == "reply_to":
            gid = self.value("group_id")
            if gid is MISSING:
                return {}
            made = ok(c, ALICE, "group_send", group_id=gid, content=text_of("replied to"))
        else:
            ok(c, ALICE, "group_authorization_revoke")
            made = ok(c, ALICE, "group_authorization_request", scopes=["allow_join"])
        fresh = minted(c.ctx, made, made.sent)
        return {name: fresh[0]} if fresh else {}

    def group(self) -> str:
        """The group the command acts on: bob's public one for an application or alice's
        answer to bob's invitation; else alice's public one, with bob a member for
        group_member and carol's application pending for group_admit."""
        from conformance.protocols.plaza.groups_client import add_member, authorize, create, ok
        from conformance.protocols.plaza.parts import branch_index

        c = self.c
        if self.command in ("group_join_request", "group_respond"):
            gid = create(c, BOB, visibility="public")
            if self.command == "group_respond":
                ok(c, BOB, "group_invite", group_id=gid, visitor_id=c.agent_id(ALICE))
            return gid
        gid = create(c, ALICE, visibility="public")
        branch = c.spec["schemas"]["command"]["anyOf"][branch_index(c.ctx.profile, self.command)]
        if self.command == "group_member" or "mentions" in branch["properties"]:
            add_member(c, ALICE, BOB, gid)
        if self.command == "group_admit":
            authorize(c, CAROL, allow_join=True)
            ok(c, CAROL, "group_join_request", group_id=gid)
        return gid

    def channel(self) -> dict[str, Any]:
        """An active private channel of alice's (offerer) with bob, in the world's connection."""
        from conformance.protocols.plaza.private_client import Relay

        connection = self.value("connection_id")
        if connection is MISSING:
            return {}
        self.relay = Relay(self.c.ctx, reset=False)
        self.ch = self.relay.open_channel(ALICE, BOB, connection)
        return {"channel_id": self.ch.channel_id, "key_id": self.ch.keys[ALICE].key_id,
                "peer_key_id": self.ch.keys[BOB].key_id}

    def offers(self) -> dict[str, Any]:
        """Alice's and bob's open direct offers in the world's connection."""
        from conformance.protocols.plaza.continuation_client import make_offer

        connection = self.value("connection_id")
        if connection is MISSING:
            return {}
        return {"offer_id": make_offer(self.c, ALICE, connection, "alice offers"),
                "peer_offer_id": make_offer(self.c, BOB, connection, "bob offers")}

    def batch(self) -> dict[str, Any]:
        """alice's receiver with a batch delivered (work from a fresh invitation by carol)."""
        from conformance.protocols.plaza.answers import delivered, pull

        c = self.c
        key = c.client_key(ALICE)
        c.invite(CAROL, ALICE)
        with c.ctx.setup("alice pulls her pending work", by="PLAZA-RECV-PULL"):
            return {"client_key": key,
                    **delivered(c, pull(c, ALICE, key, "receive_pull", limit=1), "receive_pull", key)}

    def signed(self) -> dict[str, Any] | None:
        """A signed command (its drawn signature could never verify) made afresh with the
        world's keys and channel, as the profile signs (sealed.py); None where it cannot be."""
        from conformance.protocols.plaza.private_client import new_pair

        if self.value("channel_id") is MISSING or self.relay is None:
            return None
        relay, ch, connection = self.relay, self.ch, ch_connection(self.ch)
        try:
            if self.command == "private_key_publish":
                return {"operation": self.command, "bundle": relay.bundle(ALICE, new_pair())}
            if self.command == "private_channel_offer":
                return dict(relay.offer(connection, ch.keys[ALICE], ch.keys[BOB]))
            if self.command == "private_channel_accept":
                offer = relay.offer(connection, ch.keys[BOB], ch.keys[ALICE])
                self.c.data_of(relay.run(offer, BOB), "bob's private_channel_offer")
                return dict(relay.accept(offer, ch.keys[ALICE]))
            if self.command == "private_send":
                return {"operation": self.command, "connection_id": connection, "channel_id": ch.channel_id,
                        "envelope": relay.envelope(ch, ALICE)}
            if self.command == "private_ack":
                envelope = relay.envelope(ch, BOB)
                relay.sent(ch, envelope, BOB)
                return dict(relay.ack(ch, ALICE, envelope["message_id"]))
        except self.REFUSED:
            return None
        return None

    def valid(self, data: Any) -> Any:
        """A drawn valid command the world can serve: its ids real (a signed one made afresh)."""
        if not isinstance(data, dict):
            return data
        if self.command in self.SIGNED:
            made = self.signed()
            if made is not None:
                return made
        self.ready()
        out = paired(fresh_keys(copy.deepcopy(data)))
        for member in sorted(out, key=lambda m: m != "connection_id"):
            real = self.value(member) if member in WORLD_FIELDS else MISSING
            if real is not MISSING:
                out[member] = real
            elif member in RETURNED:  # only a value the site returned: none, so it is left out
                del out[member]
        return paired(out)  # a pair's half the world could not make goes with its other half


def ch_connection(ch: Any) -> str:
    return str(ch.connection)


MISSING: Any = object()


def filled(world: World, bad: InvalidInstance) -> Any:
    """The drawn command with the world's real values for the ids it names, except the
    member its break is about (that one stays as drawn, so the break stays a break); its
    unbroken control gets real values throughout."""
    data = bad.instance
    if not isinstance(data, dict):
        return data
    unbroken = data is bad.base  # the control (causes.py): the same request without the break, every id real
    pointer = bad.violation.pointer
    broken_member = pointer.split("/")[1] if pointer.count("/") and not unbroken else None
    world.ready()
    out = copy.deepcopy(data)
    out.update({k: v for k, v in fresh_keys(out).items() if k != broken_member})
    # the connection first: a channel lives in it
    for member in sorted(data, key=lambda m: m != "connection_id"):
        if member != broken_member and member != "operation":
            real = world.value(member) if member in WORLD_FIELDS else MISSING
            if real is not MISSING:
                out[member] = real
    envelope = out.get("envelope")
    if isinstance(envelope, dict):
        pointer = bad.violation.pointer
        inner = pointer.split("/")[2] if broken_member == "envelope" and pointer.count("/") > 1 else None
        for member, source in ENVELOPE_BINDING.items():
            real = world.value(source) if source in WORLD_FIELDS else world.agent(source)
            if member in envelope and member != inner and real is not MISSING:
                envelope[member] = real
    return out


# a private_send envelope is bound to its channel: its members and the world's values they take
ENVELOPE_BINDING = {"connection_id": "connection_id", "channel_id": "channel_id", "sender_key_id": "key_id",
                    "recipient_key_id": "peer_key_id", "sender_id": ALICE, "recipient_id": BOB}


WORLD_FIELDS = ("connection_id", "visitor_id", "message_id", "client_key", *TRIPLE, *World.GROUP_FIELDS,
                *World.CHANNEL_FIELDS, *World.OFFER_FIELDS, *RETURNED)


def command_names(profile: Profile) -> list[str]:
    """The commands, in the document's order (operations read from ``commands:``)."""
    branches = profile.spec["schemas"]["command"]["anyOf"]
    return [b["properties"]["operation"]["const"] for b in branches]


# ----------------------------------------------------------------------------------
# what a command is and how it is answered
# ----------------------------------------------------------------------------------
@requirement(id="PLAZA-CMD-UNKNOWN-OPERATION", level="MUST",
             title="A data command outside the 52 operations is an invalid parameter",
             source=at("/controlMessages/allowedOperations"))
def check_unknown_operation(ctx: CheckContext) -> None:
    """Only the listed operations are commands: a native-only one (open, send), the
    unavailable receive cancels and a made-up one are invalid parameters."""
    c = PlazaClient(ctx, reset=False)
    names = set(command_names(ctx.profile))
    native_only = [u["name"] for u in ctx.profile.spec["durableReceive"]["unavailable_operations"]]
    for name in ["open", "send", "return_visit", *native_only]:
        if name in names:
            continue
        with ctx.subcheck(name):
            expect_error(ctx, c.command(name, {}), INVALID, f"a data command with operation {name!r}")
    with ctx.subcheck("a data part without operation"):
        expect_error(ctx, c.send(c.params({"data": {"q": "reading"}})), INVALID,
                     "a data part without operation")


@check_unknown_operation.fault
def unknown_operation_accepted(ref: PlazaReference) -> None:
    """A data command naming no listed operation is answered as a status."""
    @replaces(ref.command_issues)
    def command_issues(original: Any, data: Any, base: str) -> list[Issue]:
        if isinstance(data, dict) and data.get("operation") not in ref.validators.commands:
            data["operation"] = "status"
            data.clear()
            data["operation"] = "status"
        result: list[Issue] = original(data, base)
        return result


@requirement(id="PLAZA-CMD-ANSWER-MESSAGE", level="MUST",
             title="A control command is answered by a ROLE_AGENT Message with structured data",
             source=at("/controlMessages/response"))
def check_answer_message(ctx: CheckContext) -> None:
    """A control command is answered at once by a Message (ROLE_AGENT) with structured data."""
    c = PlazaClient(ctx)
    for name in ("status", "friends", "inbox_summary"):
        with ctx.subcheck(name):
            message = c.message_of(c.command(name, {}), name)
            ctx.expect(message.get("role") == "ROLE_AGENT",
                       f"{name} answered a message with role {message.get('role')!r}")
            c.data_of(c.command(name, {}), name)


@check_answer_message.fault
def command_answers_task(ref: PlazaReference) -> None:
    """A control command is answered by a Task instead of a Message."""
    @replaces(ref.command_done)
    def command_done(original: Any, *args: Any) -> dict[str, Any]:
        out: dict[str, Any] = original(*args)
        message = out["message"]
        return {"task": {"id": message["messageId"], "status": {"state": COMPLETED},
                         "artifacts": [{"parts": message["parts"]}]}}


# ----------------------------------------------------------------------------------
# the two families: one requirement per command and kind
# ----------------------------------------------------------------------------------
def commands(profile: Profile, lasting: str, make: Callable[[str], Patch]) -> list[Each]:
    """One member per command of ``schemas.command`` whose rows do ``lasting`` (IRREVERSIBLE;
    "" for the rest), its source the command's branch, with the fault ``make(name)``,
    registered with it (the list is the document's, read when the profile loads)."""
    return [Each({"name": name, "slug": slug(name)}, source=at(f"{COMMANDS}/anyOf/{index}"),
                 faults=[fault(make(name))])
            for index, name in enumerate(command_names(profile)) if IRREVERSIBLE.get(name, "") == lasting]


def refused_as_invalid(name: str) -> Patch:
    """The fault of a valid-command requirement: ``name`` is refused as an invalid parameter."""
    return answer(f"{name}_refused_as_invalid", "command_issues",
                  f"Every {name} command with a field beyond operation is refused as invalid.",
                  edit=lambda issues, data, base: [Issue(f"{base}.operation", "enum")],
                  when=lambda data, base: isinstance(data, dict) and data.get("operation") == name)


def unvalidated(name: str) -> Patch:
    """The fault of an invalid-command requirement: ``name`` is not checked against its
    schema, and its handler serves whatever it can."""
    def patch(ref: PlazaReference) -> None:
        @replaces(ref.command_issues)
        def command_issues(original: Any, data: Any, base: str) -> list[Issue]:
            if isinstance(data, dict) and data.get("operation") == name:
                return []
            result: list[Issue] = original(data, base)
            return result

        @replaces(ref.run_command)
        def run_command(original: Any, call: Any, message: dict[str, Any], data: dict[str, Any]) -> Any:
            try:
                return original(call, message, data)
            except (KeyError, TypeError, ValueError, AttributeError):
                return {"message": ref.command_message(str(data.get("operation")), {"served": True}, None)}

    patch.__name__ = patch.__qualname__ = f"{name}_unvalidated"
    patch.__doc__ = f"{name} commands are not checked against their schema (the handler gets what it gets)."
    return patch


VALID_TITLE = "Schema-valid {name} commands are not refused as invalid parameters"
INVALID_TITLE = "{name} commands breaking their schema are invalid parameters (-32602)"


# The stop and plan rows last to the agent (keeper.py): a family member carries no lasting of
# its own, so each is declared on its own (its id spelled out: one id template on one check is
# one declaration), on the same check.
@requirement(id="PLAZA-CMD-VALID-{slug}", level="MUST", title=VALID_TITLE, source=at(COMMANDS),
             each=partial(commands, lasting="", make=refused_as_invalid))
@requirement(id="PLAZA-CMD-VALID-STOP", level="MUST", title=VALID_TITLE, source=at(COMMANDS), lasting=STOPS,
             each=partial(commands, lasting=STOPS, make=refused_as_invalid))
@requirement(id="PLAZA-CMD-VALID-PLAN", level="MUST", title=VALID_TITLE, source=at(COMMANDS), lasting=PLANS,
             each=partial(commands, lasting=PLANS, make=refused_as_invalid))
def check_valid_command(ctx: CheckContext, name: str, slug: str) -> None:
    """Generated schema-valid ``name`` commands, their ids the world's real ones, are never
    refused as invalid parameters; a target answering every one UNSUPPORTED_OPERATION
    leaves the row untested."""
    if name in IRREVERSIBLE:
        ctx.lasting(ALICE, IRREVERSIBLE[name])  # without control: a disposable alice only
    c = PlazaClient(ctx)  # a reset site: the world's connection, batch and group are made afresh
    world = World(c, name)
    answered: list[Reply] = []

    def call(data: dict[str, Any]) -> Reply:
        fields = {k: v for k, v in data.items() if k != "operation"}
        reply = c.command(name, fields)
        answered.append(reply)
        return reply

    try:
        valid_inputs_accepted(ctx, op=ctx.profile.operations[name], call=call, rejections=(INVALID,),
                              prepare=lambda d: world.valid(within_prose(ctx.profile, d)))
    except Blocked:
        if not (answered and all(unsupported(ctx, r) for r in answered)):
            raise
    if answered and all(unsupported(ctx, r) for r in answered):
        raise Untested(f"the target answers {name} {UNSUPPORTED} (not served): its valid inputs are untested",
                       "optional")


@requirement(id="PLAZA-CMD-INVALID-{slug}", level="MUST", title=INVALID_TITLE, source=at(COMMANDS),
             each=partial(commands, lasting="", make=unvalidated))
@requirement(id="PLAZA-CMD-INVALID-STOP", level="MUST", title=INVALID_TITLE, source=at(COMMANDS),
             lasting=STOPS, each=partial(commands, lasting=STOPS, make=unvalidated))
@requirement(id="PLAZA-CMD-INVALID-PLAN", level="MUST", title=INVALID_TITLE, source=at(COMMANDS),
             lasting=PLANS, each=partial(commands, lasting=PLANS, make=unvalidated))
def check_invalid_command(ctx: CheckContext, name: str, slug: str) -> None:
    """Each ``name`` command breaking one keyword of its branch is -32602 (a break that is
    another command's valid input is tolerated), its other ids the world's real ones."""
    if name in IRREVERSIBLE:  # the same request without its break is the command itself
        ctx.lasting(ALICE, IRREVERSIBLE[name])
    c = PlazaClient(ctx)  # a reset site: the world's connection, batch and group are made afresh
    branches = branch_validators(ctx.profile)
    world = World(c, name)

    def another_command(bad: InvalidInstance, reply: Reply) -> bool:
        """Broken for this branch but a valid instance of another command."""
        return is_some_command(branches, bad.instance)

    invalid_inputs_rejected(ctx, op=ctx.profile.operations[name],
                            call=lambda d: c.send(c.params({"data": d})), error=INVALID,
                            tolerated=another_command, sweep=True, prepare=lambda bad: filled(world, bad))


__all__ = ["branch_validators", "command_names", "data_schema", "is_some_command", "within_prose"]
