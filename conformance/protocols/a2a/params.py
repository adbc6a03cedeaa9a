"""Generated requests of every method (section 3.3.2, "Validation Errors"; section 5.7):
requests the proto calls valid are never refused as invalid, and requests breaking one
rule of the proto are refused as invalid, over whichever binding the run speaks.

- A valid request is drawn from the method's request schema (the bundle's, with the proto's
  REQUIRED fields), then made what a client may send (``Safe``): a message is the client's
  (the Role the proto says is "from the client to the server"), the ids are the kit's (a
  fresh messageId, fresh ids no agent issued, or a task the check created; references to
  the check's own task only), no tenant but the card's, no page token the agent never
  issued, no client-made contextId (section 3.4.1: a client SHOULD NOT send one), media
  types the card names, a webhook on the loopback, a push authentication scheme of the
  registry the proto names (its examples) with credentials in a header's form (token68),
  the ranges the field descriptions give (pageSize, historyLength >= 0), enum values by
  their names, timestamps in UTC. tests/unit/test_a2a_client_rules.py holds every method's
  generated requests to these rules.
- An invalid request is one single-keyword break of such a request
  (conformance/generation/invalid.py), kept only where the request message's own schema
  (open to unknown members, section 5.7) refuses it. ProtoJSON reads a null member as unset:
  null is a break only of a REQUIRED member. A REQUIRED member missing (or a REQUIRED list
  empty) is what section 5.7 asks a server to reject with a SHOULD; every other break (a
  wrong type, an enum value the proto does not define, two members of one oneof, a bound)
  is section 3.3.2's MUST. Over HTTP+JSON a break is sent only where the route carries it
  (a path segment or a query parameter is text).

A refusal counts only for the cause it is about (conformance/checks/causes.py): a valid
request may get an A2A error about the state (a task no agent issued, a capability the card
declares off); an invalid one is judged only where the same request without the break is
answered otherwise.

The rows call the engine's generated-inputs family (checks/inputs.py) with A2A's hooks: the
generated requests, their kinds of break and what a binding carries are inputs.py's; what
counts as read and the loopback webhook are here; the readers judging answers by their A2A
meaning (answers.py) are shared with agree.py and auth.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from conformance.checks.inputs import invalid_inputs_rejected, valid_inputs_accepted
from conformance.documents.schemas import SpecError, validator_for
from conformance.kit.check import Blocked, CheckContext, NotApplicable
from conformance.kit.declare import Each, fault, requirement
from conformance.kit.faults import recodes, refuses, replaces
from conformance.kit.reference import Refusal
from conformance.model import Profile
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.answers import error_name, outcome
from conformance.protocols.a2a.client import A2AClient
from conformance.protocols.a2a.expectations import refused_as_invalid
from conformance.protocols.a2a.inputs import PUBLIC_WEBHOOK, SAFE_WEBHOOK, Inputs, at, loose
from conformance.protocols.a2a.names import (
    HISTORY_LENGTH,
    ID,
    INTERNAL,
    INVALID_PARAMS,
    MESSAGE,
    MESSAGE_ID,
    METADATA,
    ROLE,
    STATUS,
    STATUS_AFTER,
    TASK_ID,
    TENANT,
    a2a_names,
    capability_of,
    error_named,
    slug,
    standard,
)
from conformance.protocols.a2a.reference import A2AReference
from conformance.transport.binding import Reply, dig


def off_error(client: A2AClient, method: str) -> str | None:
    """The error ``method`` must get because the card declares its capability off, or None."""
    need = capability_of(client.ctx.profile, method)
    return need[1] if need and not client.capability(need[0]) else None


# -- the families ------------------------------------------------------------------------------
def known(profile: Profile, *tables: dict[str, Any]) -> None:
    unknown = sorted({m for table in tables for m in table} - set(profile.operations))
    if unknown:
        raise SpecError(f"the proto's service has no method {unknown}")


def each_method(profile: Profile) -> list[Each]:
    return [Each({"method": name}, labels={"slug": slug(name)}) for name in profile.operations]


VALID_FAULTS = {"SendMessage": ("message_metadata_refused",),
                "SendStreamingMessage": ("message_metadata_refused",),
                "GetTask": ("history_length_zero_refused",), "ListTasks": ("timestamp_z_refused",),
                "CancelTask": ("cancel_metadata_refused",)}
INVALID_FAULTS = {"SendMessage": ("role_not_validated", "message_id_coerced"),
                  "GetTask": ("history_length_not_validated",), "ListTasks": ("unknown_status_ignored",)}


def each_valid(profile: Profile) -> list[Each]:
    known(profile, VALID_FAULTS, INVALID_FAULTS)
    return [Each(e.args, labels=e.labels, faults=("tenant_demanded", *VALID_FAULTS.get(e.args["method"], ())))
            for e in each_method(profile)]


def each_invalid(profile: Profile) -> list[Each]:
    return [Each(e.args, labels=e.labels,
                 faults=("invalid_params_as_internal_error", *INVALID_FAULTS.get(e.args["method"], ())))
            for e in each_method(profile)]


def undo_created(inputs: Inputs, params: Any, reply: Reply) -> None:
    """A push config a generated Create made is deleted again (a run leaves no webhook behind)."""
    made = dig(reply.result, ID) if reply.ok and inputs.method == "CreateTaskPushNotificationConfig" else None
    task = dig(reply.result, TASK_ID) or (params.get(TASK_ID) if isinstance(params, dict) else None)
    if isinstance(made, str) and isinstance(task, str):
        inputs.client.call("DeleteTaskPushNotificationConfig", {TASK_ID: task, ID: made})


def about_the_webhook(inputs: Inputs, params: Any) -> bool:
    """Whether a refusal of ``params`` is about its loopback webhook (section 13.2 lets an agent
    refuse one): the same request with a public webhook is not refused as invalid. A config
    that request made is deleted again."""
    control = json.loads(json.dumps(params).replace(SAFE_WEBHOOK, PUBLIC_WEBHOOK))
    reply = inputs.send(control)
    undo_created(inputs, control, reply)
    return outcome(inputs.ctx, reply) != "invalid"


@requirement(id="A2A-PARAMS-VALID-{slug}", level="MUST",
             title="Generated {method} requests the proto calls valid are not refused as invalid",
             source=docs.spec("Servers **MUST** return appropriate errors", after="#### 3.3.2"),
             each=each_valid)
def check_valid(ctx: CheckContext, method: str) -> None:
    """A valid request gets a result or an A2A error of the table (each about the state: a
    task no agent issued, a capability the card declares off, a task's state), never a
    standard JSON-RPC error or an HTTP+JSON refusal naming no A2A error. Sent as drawn with
    ids no agent issued, and naming a task the check created where the method names one."""
    inputs = Inputs(ctx, method)
    inputs.make_world()
    expected = off_error(inputs.client, method)
    webhook_refusable = expected is None  # where the capability is on, a loopback webhook may be refused

    def refused(reply: Reply) -> str | None:
        if reply.ok or error_name(ctx, reply) in a2a_names(ctx.profile):
            return None
        return (f"was refused as {outcome(ctx, reply)}, not with an A2A error about the state: "
                f"{reply.describe()}")

    def tolerated(params: Any, reply: Reply) -> str | None:
        if webhook_refusable and outcome(ctx, reply) == "invalid" and SAFE_WEBHOOK in json.dumps(params) \
                and about_the_webhook(inputs, params):
            return f"{reply.describe()} (a loopback webhook: section 13.2 lets an agent refuse it)"
        return None

    # a request naming no task, sent while the check holds one (a listing holds it), is in its world as drawn
    listing = bool(inputs.safe.world) and not inputs.safe.names_task()

    def read(reply: Reply, in_world: bool) -> bool:
        """A result, the capability error the card's declaration calls for, or an A2A error about
        the state of a task the check created (not a task no agent issued: that answer could
        come unread)."""
        name = error_name(ctx, reply)
        about_state = (in_world or listing) and name != error_named(ctx.profile, "TaskNotFoundError")
        return reply.ok or (name is not None and (name == expected or about_state))

    def send(params: Any) -> Reply:
        reply = inputs.send(params)
        undo_created(inputs, params, reply)
        return reply

    valid_inputs_accepted(ctx, ctx.profile.operations[method], send,
                          prepare=inputs.safe,
                          in_world=lambda drawn: inputs.safe(drawn, True) if inputs.safe.world else None,
                          refused=refused, tolerated=tolerated, read=read, examples=inputs.examples(),
                          drawn=loose(inputs.schema), batches=False)


@requirement(id="A2A-PARAMS-INVALID-{slug}", level="MUST",
             title="{method} requests breaking one rule of the proto (a type, an enum value, a oneof, a "
                   "bound) are refused as invalid",
             source=docs.spec("Servers **MUST** validate all input parameters before processing",
                              after="#### 3.3.2"),
             each=each_invalid)
def check_invalid(ctx: CheckContext, method: str) -> None:
    """Each break the request message itself refuses (not a REQUIRED member missing:
    A2A-PARAMS-REQUIRED) is refused as invalid (``refused_as_invalid``), or with the
    capability error where the card declares the method's capability off (section 3.3.4)."""
    inputs = Inputs(ctx, method)
    inputs.make_world()
    judge_breaks(ctx, inputs, "must", everything=True)


def judge_breaks(ctx: CheckContext, inputs: Inputs, kind: str, everything: bool,
                 judge: Callable[[Reply, str], None] | None = None) -> None:
    """Send each break of ``kind`` the binding carries (the sweep, and with ``everything``
    generated ones too) and judge each answer about its break: refused as invalid, or by
    ``judge`` (a row asking for the code of a refusal; an accepted break is the method's own
    row's finding)."""
    allowed = tuple(e for e in [off_error(inputs.client, inputs.method)] if e)

    def judged(reply: Reply, what: str) -> None:
        if judge is None:
            refused_as_invalid(ctx, reply, what, allowed)
        elif not reply.ok:
            judge(reply, what)

    invalid_inputs_rejected(ctx, ctx.profile.operations[inputs.method], inputs.send, None,
                            breaks=inputs.breaks(kind, generated=everything), carried=inputs.carried,
                            judge=judged)


def capability_refusal(ctx: CheckContext, inputs: Inputs, reply: Reply) -> bool:
    """Whether ``reply`` is the error the card's capability declaration calls for (section 3.3.4)."""
    expected = off_error(inputs.client, inputs.method)
    return expected is not None and error_name(ctx, reply) == expected


def each_rows(ctx: CheckContext, judge: Callable[[Inputs], None]) -> None:
    """``judge`` each method of the profile in a sub-check of its own; a method with nothing
    to judge (no break its binding carries, every refusal about something else) is left out,
    and a row with no method judged is not passed on nothing."""
    judged, left = 0, []
    for method in ctx.profile.operations:
        with ctx.subcheck(method):
            try:
                judge(Inputs(ctx, method))
            except (NotApplicable, Blocked) as exc:
                left.append(f"{method}: {exc}")
                continue
            judged += 1
    if not judged:
        raise Blocked(f"no method judged: {left[0] if left else 'nothing sent'}", kind="refusal_cause")


@requirement(id="A2A-PARAMS-REQUIRED", level="SHOULD",
             title="A request missing a REQUIRED member (or with a REQUIRED list empty) is refused as "
                   "invalid",
             source=docs.spec("Implementations **SHOULD** validate these requirements and reject messages",
                              after="### 5.7"),
             faults=["required_members_unchecked"])
def check_required(ctx: CheckContext) -> None:
    """Section 5.7 asks for it with a SHOULD; section 3.3.2's MUST to validate all input
    could be read to cover it too: the rows that must pass on either reading leave it here."""
    def judge(inputs: Inputs) -> None:
        inputs.make_world()
        if not inputs.sweep("required"):
            return
        judge_breaks(ctx, inputs, "required", everything=False)
    each_rows(ctx, judge)


@requirement(id="A2A-PARAMS-INVALID-CODE", level="MUST",
             title="Over JSON-RPC, invalid params are refused with -32602 (InvalidParamsError)",
             source=docs.spec("`InvalidParamsError`", after="### 9.5"),
             faults=["invalid_params_as_invalid_request"])
def check_invalid_code(ctx: CheckContext) -> None:
    """Section 9.5's table gives the binding one code for "The method parameters are
    invalid": each break of every method (the sweep) refused as invalid carries it."""
    if A2AClient(ctx).binding.kind != "jsonrpc-http":  # the client first: it reads where the binding lives
        raise NotApplicable("a JSON-RPC code (HTTP+JSON's status: A2A-PARAMS-INVALID-STATUS)")
    code = docs.jsonrpc_errors()[INVALID_PARAMS]

    def judge(inputs: Inputs) -> None:
        inputs.make_world()

        def coded(reply: Reply, what: str) -> None:
            ctx.expect(reply.error_code == code or capability_refusal(ctx, inputs, reply),
                       f"{what}: refused with code {reply.error_code}, not {code} ({INVALID_PARAMS}): "
                       f"{reply.describe()}", kind="wrong_error_code", expected_code=code,
                       actual_code=reply.error_code)
        judge_breaks(ctx, inputs, "must", everything=False, judge=coded)
    each_rows(ctx, judge)


@requirement(id="A2A-PARAMS-INVALID-STATUS", level="SHOULD",
             title="Over HTTP+JSON, invalid params are refused with HTTP 400",
             source=docs.spec("Example error codes: HTTP `400 Bad Request`", after="#### 3.3.2"),
             faults=["invalid_params_as_422"])
def check_invalid_status(ctx: CheckContext) -> None:
    """Section 3.3.2 gives 400 as its example (the MUST takes any 4xx refusal that names no
    other error): each break of every method refused as invalid comes with it."""
    if A2AClient(ctx).binding.kind != "http-routes":  # the client first: it reads where the binding lives
        raise NotApplicable("an HTTP+JSON status (JSON-RPC's code: A2A-PARAMS-INVALID-CODE)")

    def judge(inputs: Inputs) -> None:
        inputs.make_world()

        def status(reply: Reply, what: str) -> None:
            ctx.expect(reply.status == 400 or capability_refusal(ctx, inputs, reply),
                       f"{what}: refused with HTTP {reply.status}, not 400: {reply.describe()}",
                       kind="wrong_status", expected_status=400, actual_status=reply.status)
        judge_breaks(ctx, inputs, "must", everything=False, judge=status)
    each_rows(ctx, judge)


# -- the faults --------------------------------------------------------------------------------
@fault
def tenant_demanded(ref: A2AReference) -> None:
    """Every request without a tenant is refused as invalid params (the proto makes tenant
    optional, and the card names none)."""
    @replaces(ref.validate)
    def validate(original: Any, method: str, params: Any) -> None:
        if isinstance(params, dict) and not params.get(TENANT):
            raise Refusal(INVALID_PARAMS, "tenant is required")
        original(method, params)


def refuses_member(name: str, method: str, path: tuple[str, ...], doc: str) -> Any:
    """A fault: requests of ``method`` holding the member at ``path`` are refused as invalid params."""
    def patch(ref: A2AReference) -> None:
        @replaces(ref.validate)
        def validate(original: Any, called: str, params: Any) -> None:
            if called in method.split(",") and at(params, list(path)) is not None:
                raise Refusal(INVALID_PARAMS, f"{'.'.join(path)} is not accepted")
            original(called, params)
    patch.__name__ = patch.__qualname__ = name
    patch.__doc__ = doc
    return fault(patch)


refuses_member("message_metadata_refused", "SendMessage,SendStreamingMessage", (MESSAGE, METADATA),
               "A message carrying metadata (an optional Struct) is refused as invalid params.")
refuses_member("cancel_metadata_refused", "CancelTask", (METADATA,),
               "A CancelTask carrying metadata (an optional Struct) is refused as invalid params.")


@fault
def history_length_zero_refused(ref: A2AReference) -> None:
    """historyLength 0 is refused as invalid params (section 3.2.4: 0 asks for no history)."""
    @replaces(ref.check_history_length)
    def check(original: Any, value: Any) -> None:
        if value is not None and str(value) == "0":
            raise Refusal(INVALID_PARAMS, "historyLength must be positive")
        original(value)


fault(refuses("timestamp_z_refused", "op_ListTasks",
              lambda params, caller: Refusal(INVALID_PARAMS, "statusTimestampAfter is not a timestamp"),
              "ListTasks refuses a statusTimestampAfter written with the Z suffix (section 5.6.1's form).",
              when=lambda params, caller: str(params.get(STATUS_AFTER, "")).endswith("Z")))


fault(recodes("invalid_params_as_internal_error", "validate",
              lambda err: Refusal(INTERNAL, f"internal error: {err}", status=500),
              "Invalid params are answered as a failure of the server (JSON-RPC -32603, HTTP 500).",
              catch=Refusal))


def skips_validation_at(name: str, method: str, member: str, doc: str) -> Any:
    """A fault: the request schema's errors at ``member`` of ``method`` are not checked."""
    def patch(ref: A2AReference) -> None:
        @replaces(ref.validate)
        def validate(original: Any, called: str, params: Any) -> None:
            if called == method and isinstance(params, dict) and member in params:
                checked = {k: v for k, v in params.items() if k != member}
                if member == MESSAGE and isinstance(params[member], dict):
                    checked[member] = {**params[member], ROLE: docs.role_named("user")}
                original(called, checked)
                return
            original(called, params)
    patch.__name__ = patch.__qualname__ = name
    patch.__doc__ = doc
    return fault(patch)


@fault
def message_id_coerced(ref: A2AReference) -> None:
    """SendMessage takes a messageId given as a JSON number or boolean, read as its text (a lenient
    parser's coercion: ProtoJSON wants a string for a string field)."""
    @replaces(ref.validate)
    def validate(original: Any, method: str, params: Any) -> None:
        message = params.get(MESSAGE) if isinstance(params, dict) else None
        given = message.get(MESSAGE_ID) if isinstance(message, dict) else None
        if method == "SendMessage" and isinstance(message, dict) and isinstance(given, int | float):
            params = {**params, MESSAGE: {**message, MESSAGE_ID: json.dumps(message[MESSAGE_ID])}}
        original(method, params)


skips_validation_at("role_not_validated", "SendMessage", MESSAGE,
                    "SendMessage does not validate message.role: a role the proto does not define is taken.")
skips_validation_at("history_length_not_validated", "GetTask", HISTORY_LENGTH,
                    "GetTask does not validate historyLength (the handler then fails on a non-number).")


@fault
def unknown_status_ignored(ref: A2AReference) -> None:
    """ListTasks ignores a status filter that is no TaskState and lists unfiltered (what a
    ProtoJSON parser ignoring unknown enum values does) instead of refusing it."""
    def known(params: Any) -> Any:
        if isinstance(params, dict) and params.get(STATUS) not in (None, *docs.task_states()):
            return {k: v for k, v in params.items() if k != STATUS}
        return params

    @replaces(ref.validate)
    def validate(original: Any, method: str, params: Any) -> None:
        original(method, known(params) if method == "ListTasks" else params)

    @replaces(ref.op_ListTasks)
    def op(original: Any, params: Any, caller: str) -> Any:
        return original(known(params), caller)


@fault
def required_members_unchecked(ref: A2AReference) -> None:
    """The REQUIRED members are not checked (a request missing one goes to the handler)."""
    @replaces(ref.validate)
    def validate(original: Any, method: str, params: Any) -> None:
        schema = ref.schemas.schema(ref.methods[method].request, "answer")
        errors = [e for e in validator_for(schema).iter_errors(params)
                  if e.validator not in ("required", "minItems")] if isinstance(params, dict) else [None]
        if errors:
            original(method, params)


@fault
def invalid_params_as_invalid_request(ref: A2AReference) -> None:
    """Over JSON-RPC, invalid params come with -32600 (Invalid Request), not -32602."""
    @replaces(ref.jsonrpc_code)
    def code(original: Any, refusal: Refusal) -> int:
        if refusal.name == INVALID_PARAMS:
            return int(docs.jsonrpc_errors()[standard("InvalidRequestError")])
        return int(original(refusal))


@fault
def invalid_params_as_422(ref: A2AReference) -> None:
    """Over HTTP+JSON, invalid params come with HTTP 422, not 400."""
    @replaces(ref.http_status)
    def status(original: Any, refusal: Refusal) -> int:
        return 422 if refusal.name == INVALID_PARAMS else int(original(refusal))


@requirement(id="A2A-PARAMS-UNKNOWN-FIELDS", level="SHOULD",
             title="A request holding members the proto does not name is served as if they were absent",
             source=docs.spec("Implementations **SHOULD** ignore unrecognized fields", after="### 5.7"),
             faults=["unknown_request_members_refused"])
def check_unknown_fields(ctx: CheckContext) -> None:
    """A SendMessage and a GetTask with an unknown member at the top and inside the message:
    what the same request without them gets (a result), they get too."""
    client = A2AClient(ctx)
    if client.binding.kind == "grpc":
        raise NotApplicable("protobuf carries no member its message does not define: over gRPC the server "
                            "never reads one")
    extra = "conformanceUnknownMember"
    plain = client.send(client.drive("completed"))
    task = dig(plain.result, "task", "id") if plain.ok else None
    if not isinstance(task, str):
        raise Blocked(f"set-up failed: SendMessage made no task: {plain.describe()}", kind="rejected_valid")
    message = {**client.drive("completed"), extra: 1}
    cases = {"SendMessage": ("SendMessage", {"message": message, extra: True}),
             "GetTask": ("GetTask", {"id": task, extra: "x"})}
    for name, (method, params) in cases.items():
        with ctx.subcheck(name):
            reply = client.call(method, params)
            ctx.expect(reply.ok, f"{name} with an unknown member {extra!r}: {reply.describe()}; section 5.7 "
                                 "asks that it be ignored", kind="rejected_valid")


@check_unknown_fields.fault
def unknown_request_members_refused(ref: A2AReference) -> None:
    """A request holding a member the proto does not name is refused as invalid params."""
    from conformance.documents.schemas import validator_for

    @replaces(ref.validate)
    def validate(original: Any, method: str, params: Any) -> None:
        original(method, params)
        closed = ref.schemas.schema(ref.methods[method].request, "closed")
        errors = list(validator_for(closed).iter_errors(params))
        if errors:
            raise Refusal(INVALID_PARAMS, f"unknown member: {errors[0].message[:160]}")
