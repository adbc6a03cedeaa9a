"""Every Wever Connect action's inputs against its inputSchema: generated valid inputs are
never refused as invalid, inputs breaking one keyword are refused and change nothing
(one requirement of each per action the manifest lists), and the refusal carries the
profile's VALIDATION_ERROR. Inputs name real objects where an action takes ids
(``InputWorld``), so that an input is judged on its own merits."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

from conformance.checks.inputs import invalid_code_everywhere, invalid_inputs_rejected, valid_inputs_accepted
from conformance.documents.schemas import validator_for
from conformance.generation.invalid import InvalidInstance
from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import Each, at, code, fault, requirement, slug
from conformance.kit.faults import noop, replaces
from conformance.model import Profile
from conformance.protocols.wever import uncontrolled
from conformance.protocols.wever.client import RECIPIENT, SENDER, WeverClient, open_requests
from conformance.protocols.wever.reference import RelayError, WeverReference
from conformance.protocols.wever.shared_faults import CODES
from conformance.transport.binding import Reply

REJECTION = "VALIDATION_ERROR"

# The actions that change their caller for good: a row about one lasts to the mailbox it acts as.
LASTING = {"close_mailbox": uncontrolled.CLOSES, "renew_mailbox": uncontrolled.RENEWS}


class InputWorld:
    """Real objects for generated inputs to name, set up once per check, so that an
    input is judged on its own merits: an invalid one must be refused for being
    invalid, not because the task it names does not exist. Per action: who calls it
    and the ids its properties take."""

    def __init__(self, c: WeverClient, action: str) -> None:
        self.c, self.action = c, action
        self.ids: dict[str, Any] = {}
        self.who: Any = c.caller_for(action)
        if action in ("accept_task", "decline_task", "complete_task", "cancel_task", "get_task",
                      "delete_task_content"):
            state = {"complete_task": "accepted", "delete_task_content": "completed"}.get(action, "offered")
            self.ids["task_id"] = c.new_task(state).id
            self.who = RECIPIENT if action in ("accept_task", "decline_task", "complete_task") else SENDER
        elif action == "respond_connection_request":
            self.ids["request_id"] = open_requests(c, self.requester())
            self.who = RECIPIENT
        elif action == "request_connection":
            c.advertise(RECIPIENT, accepts_connection_requests=True)
            self.ids["recipient_id"] = c.mailbox(RECIPIENT)
        elif action == "send_task":
            c.allow(SENDER, RECIPIENT)
            self.ids.update(recipient_id=c.mailbox(RECIPIENT), capability=c.capability)
        elif action == "allow_sender":
            self.ids["sender_id"] = c.mailbox(SENDER)
            self.who = RECIPIENT

    def requester(self) -> Any:
        """Who asks for the connection a response answers: a response allows or denies (and a
        denial revokes that pair's grant), so a seeded mailbox of the check's own where
        control seeds one, else the check's sender (whose grant is put back: uncontrolled.py)."""
        if self.c.ctx.run.control_path:
            from conformance.protocols.wever.client import seed

            return seed(self.c, 1)[0][1]
        return SENDER

    def caller(self) -> Any:
        """close_mailbox closes its caller, never one of the configured mailboxes: a fresh
        seeded mailbox each time (with control), else one of the run's own (``caller_for``:
        once closed, its calls are refused for their credential and set aside)."""
        if self.action == "close_mailbox" and self.c.ctx.run.control_path:
            from conformance.protocols.wever.client import seed

            return seed(self.c, 1)[0][1]
        return self.who

    def name(self, value: Any, keep: str = "\0") -> Any:
        """``value`` naming the world's objects where it names any (not under ``keep``,
        the pointer an invalid input breaks)."""
        if not isinstance(value, dict):
            return value
        return {k: (self.ids[k] if k in self.ids and not keep.startswith(f"/{k}") else v)
                for k, v in value.items()}

    def call(self, params: Any) -> Reply:
        if self.who is None or (self.action not in self.c.mcp_tools() and self.c.binding.kind == "mcp-tools"):
            return self.c.input_call(self.action, params)
        return self.c.call(self.action, params, self.caller())


# Actions whose valid inputs are sent naming the check's objects too (InputWorld). Not
# allow_sender: named, it would grant or revoke one run mailbox at another; its generated
# sender ids are served as they are.
NAMING = ("accept_task", "decline_task", "complete_task", "cancel_task", "get_task", "delete_task_content",
          "request_connection", "respond_connection_request", "send_task")
# Actions that use up the object they name (a declined, cancelled, completed task, or one
# whose content is gone, is not in that state again): a fresh one for each draw, up to this many.
CONSUMING = ("decline_task", "cancel_task", "complete_task", "delete_task_content")
FRESH_OBJECTS = 3
# Without control, tasks are spent from the day's quotas of the run's mailboxes: one world
# per consuming action, and the draws of send_task that name the world's recipient (each
# one a task delivered) are this many; the other draws are sent as generated.
LIVE_OBJECTS, LIVE_NAMED_SENDS = 1, 2
ID_PROPERTIES = ("task_id", "request_id", "recipient_id", "sender_id")


def members(profile: Profile, lasting: str = "", faults: bool = False) -> list[Each]:
    """One member per action the manifest lists whose rows last as ``lasting`` says (its
    source the action's own; with ``faults``, what its VALID row catches)."""
    return [Each({"action": action, "slug": slug(action)}, source=op.source,
                 faults=valid_input_faults(op.params_schema) if faults else None)
            for action, op in profile.operations.items() if LASTING.get(action, "") == lasting]


def valid_input_faults(schema: dict[str, Any]) -> tuple[str, ...]:
    """What a VALID row catches: ids of missing objects refused as invalid, where the
    action takes one; an input of only its required properties refused, where not."""
    takes_ids = set(schema.get("properties") or {}) & set(ID_PROPERTIES)
    return ("unknown_ids_invalid",) if takes_ids else ("minimal_input_rejected",)


accepts_invalid_input = noop("accepts_invalid_input", "validate_input",
                             "Action inputs are never validated against their inputSchema.")
INVALID = "{action} inputs breaking one inputSchema rule are refused and change nothing"


@requirement(id="WEVER-INPUT-INVALID-{slug}", level="MUST", title=INVALID, source=at("/actions"),
             faults=[accepts_invalid_input], each=members)
@requirement(id="WEVER-INPUT-INVALID-RENEW-MAILBOX", level="MUST", title=INVALID, source=at("/actions"),
             faults=[accepts_invalid_input], lasting=uncontrolled.RENEWS,
             each=lambda p: members(p, uncontrolled.RENEWS))
@requirement(id="WEVER-INPUT-INVALID-CLOSE-MAILBOX", level="MUST", title=INVALID, source=at("/actions"),
             faults=[accepts_invalid_input], lasting=uncontrolled.CLOSES,
             each=lambda p: members(p, uncontrolled.CLOSES))
def check_invalid_inputs(ctx: CheckContext, action: str, slug: str, strict: bool = False) -> None:
    """Inputs breaking one keyword of the inputSchema are refused and change nothing
    (``strict``: with the profile's VALIDATION_ERROR)."""
    c = WeverClient(ctx)
    world = InputWorld(c, action)
    op = ctx.profile.operations[action]

    validator = validator_for(op.params_schema)

    def named(bad: InvalidInstance) -> Any:
        """The world's ids outside the break (the engine's unbroken control, a valid
        instance, gets them all); an input that naming would mend is sent as drawn."""
        if validator.is_valid(bad.instance):
            return world.name(bad.instance)
        instance = world.name(bad.instance, keep=bad.violation.pointer)
        return bad.instance if validator.is_valid(instance) else instance

    invalid_inputs_rejected(ctx, op, world.call, REJECTION if strict else None,
                            state=c.snapshot if ctx.run.control_path and action != "close_mailbox" else None,
                            prepare=named)


VALID = "Generated valid {action} inputs are not refused as invalid"


@requirement(id="WEVER-INPUT-VALID-{slug}", level="MUST", title=VALID, source=at("/actions"),
             each=lambda p: members(p, faults=True))
@requirement(id="WEVER-INPUT-VALID-RENEW-MAILBOX", level="MUST", title=VALID, source=at("/actions"),
             lasting=uncontrolled.RENEWS, each=lambda p: members(p, uncontrolled.RENEWS, faults=True))
@requirement(id="WEVER-INPUT-VALID-CLOSE-MAILBOX", level="MUST", title=VALID, source=at("/actions"),
             lasting=uncontrolled.CLOSES, each=lambda p: members(p, uncontrolled.CLOSES, faults=True))
def check_valid_inputs(ctx: CheckContext, action: str, slug: str) -> None:
    """Generated inputs valid under the action's inputSchema are never refused as
    invalid: sent as generated (ids of objects that need not exist: a missing object is
    a refusal of another kind, flagged by the binding) and naming the objects the check
    made (``InputWorld``), so that some input is served: the row passes only on inputs
    that were. An action that uses up what it names gets a fresh world per draw (then
    the last again: its refusal, say a task no longer offered, is the manifest's own)."""
    c = WeverClient(ctx)
    op = ctx.profile.operations[action]
    if action == "register_mailbox" and c.live:  # each served draw is a registration of the source's day
        left = ctx.run.quotas.room(uncontrolled.REGISTRATIONS_SOURCE, uncontrolled.SOURCE)
        if left < 1:
            day = (uncontrolled.REGISTRATIONS_SOURCE, uncontrolled.SOURCE)
            raise Untested(f"would exceed {day[0]} for {day[1]}: this run registered "
                           f"{ctx.run.quotas.spent[day]}", "quota")
        ctx.budget = replace(ctx.budget, examples=min(ctx.budget.examples, left))
    if action == "close_mailbox":  # it closes its caller: a mailbox of the check's own
        valid_inputs_accepted(ctx, op, InputWorld(c, action).call, (REJECTION,))
        return
    if action not in NAMING:
        valid_inputs_accepted(ctx, op, lambda v: c.input_call(action, v), (REJECTION,))
        return
    objects = (LIVE_OBJECTS if c.live else FRESH_OBJECTS) if action in CONSUMING else 1
    worlds = [InputWorld(c, action) for _ in range(objects)]
    drawn = itertools.count()

    def in_world(value: Any) -> Any:
        index = next(drawn)
        if c.live and action == "send_task" and index >= LIVE_NAMED_SENDS:
            return value
        return worlds[min(index, len(worlds) - 1)].name(value)

    valid_inputs_accepted(ctx, op, worlds[0].call, (REJECTION,), in_world=in_world)


@fault
def minimal_input_rejected(ref: WeverReference) -> None:
    """An input holding only its required properties (an empty object where nothing is
    required) is refused VALIDATION_ERROR."""
    @replaces(ref.validate_input)
    def validate(original: Any, action: str, args: Any) -> None:
        required = set(ref.actions[action]["inputSchema"].get("required", []))
        if isinstance(args, dict) and set(args) <= required:
            raise RelayError("VALIDATION_ERROR", "(root): more properties are needed")
        original(action, args)


@fault
def unknown_ids_invalid(ref: WeverReference) -> None:
    """A well-formed id of a task, request or mailbox that does not exist is refused
    VALIDATION_ERROR (the input is valid; the object is missing)."""
    where = {"task_id": "tasks", "request_id": "requests", "recipient_id": "mailboxes",
             "sender_id": "mailboxes"}

    @replaces(ref.validate_input)
    def validate(original: Any, action: str, args: Any) -> None:
        original(action, args)
        for prop, table in where.items():
            if isinstance(args, dict) and isinstance(args.get(prop), str) and args[prop] not in ref.s[table]:
                raise RelayError("VALIDATION_ERROR", f"/{prop}: no such object")


@requirement(id="WEVER-INPUT-INVALID-CODE", level="SHOULD",
             title=f"An input breaking its inputSchema gets {REJECTION} (400)",
             source=code(REJECTION), faults=CODES,
             lasting="a relay that served an invalid close_mailbox or renew_mailbox input would close or "
                     "renew its caller: a mailbox of the run's own")
def check_invalid_code(ctx: CheckContext) -> None:
    """Every action's inputs breaking one keyword: VALIDATION_ERROR."""
    invalid_code_everywhere(ctx, send=WeverClient(ctx).input_call, error=REJECTION)
