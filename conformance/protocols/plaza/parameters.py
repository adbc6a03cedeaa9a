"""SendMessage and GetTask parameters and their errors (`parameterValidation`): generated
schema-valid params are served, params breaking the schema are -32602, which carries a
google.rpc.ErrorInfo with the document's reason and string metadata, quotes nothing
that was sent, says messageSent and sendHandleConsumedByThisRequest false before a send,
and changes nothing. Each requirement is declared on its check, with the faults that
prove it can fail."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable, Mapping
from typing import Any

from conformance.checks.expect import expect_error, expect_mapping, expect_refused
from conformance.checks.inputs import invalid_inputs_rejected, valid_inputs_accepted
from conformance.documents.schemas import validator_for
from conformance.generation.invalid import InvalidInstance, invalid_strategy
from conformance.kit import locate
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, chosen, requirement
from conformance.kit.faults import limit, replaces, returns
from conformance.model import Operation
from conformance.protocols.plaza.answers import INVALID, detail_type, error_info, walk_values
from conformance.protocols.plaza.client import ALICE, BOB, CAROL, PlazaClient, dig, fresh_id
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.sending import get_task_as_a_client, message_as_a_client
from conformance.protocols.plaza.site import INVALID_PARAMETERS, Issue, Principal, SiteError
from conformance.transport.binding import Reply

MARKER = "conformance-marker-7f3a"  # a string no error message may quote back
VALIDATION = "/parameterValidation"


# ----------------------------------------------------------------------------------
# generated parameters
# ----------------------------------------------------------------------------------
def text_operation(op: Operation) -> Operation:
    """SendMessage with text parts only: data parts are generated per command (PLAZA-CMD-*),
    since the whole union is far too slow to generate at once."""
    schema = copy.deepcopy(op.params_schema)
    items = schema["properties"]["message"]["properties"]["parts"]["items"]
    schema["properties"]["message"]["properties"]["parts"]["items"] = items["anyOf"][0]
    return Operation(op.name, schema, None, op.source)


def in_connection(spec: dict[str, Any], connection: Callable[[], str], params: Any,
                  broken_at: str | None = None, own_task: Callable[[], str] | None = None) -> Any:
    """A generated text sent where it can be served and as a client may send it
    (sending.py): in a real connection of alice's (contextId), a fresh messageId, without a
    taskId of no task or a push config (refused for what they are), its referenceTaskIds
    alice's own task (``own_task``; else none), returning at once; what the break
    (``broken_at``, a pointer) is about stays."""
    if not isinstance(params, dict) or not isinstance(params.get("message"), dict):
        return params

    def free(pointer: str) -> bool:
        return broken_at is None or not (broken_at == pointer or broken_at.startswith(pointer + "/")
                                         or pointer.startswith(broken_at + "/"))

    params = message_as_a_client(spec, params, free)
    message = params["message"]
    references = message.get("referenceTaskIds")
    if isinstance(references, list) and free("/message/referenceTaskIds"):
        if references and own_task is not None:
            message["referenceTaskIds"] = [own_task()]
        else:
            message.pop("referenceTaskIds")

    if free("/message/contextId"):
        message["contextId"] = connection()
    if free("/message/taskId"):
        message.pop("taskId", None)
    if free("/message/metadata"):
        message.pop("metadata", None)
    config = params.get("configuration")
    if config is None and free("/configuration"):
        config = params["configuration"] = {}
    if isinstance(config, dict):
        if free("/configuration/taskPushNotificationConfig"):
            config.pop("taskPushNotificationConfig", None)
        if free("/configuration/returnImmediately"):
            config["returnImmediately"] = True
    return params


def short_waits(ctx: CheckContext) -> None:
    """With control, a served text whose break is its returnImmediately waits a short
    deadline, not the document's 20 seconds."""
    if ctx.run.control_path:
        ctx.control("set_deadline", seconds=0.2)


def has_reference_task_ids(params: Any) -> bool:
    message = params.get("message") if isinstance(params, dict) else None
    return isinstance(message, dict) and "referenceTaskIds" in message


@requirement(id="PLAZA-SEND-PARAMS-VALID", level="MUST",
             title="Schema-valid SendMessage params (text parts) are not refused as invalid",
             source=at("/schemas/sendMessageParams"),
             faults=[returns("reference_task_ids_refused", "send_issues",
                             [Issue("params.message.referenceTaskIds", "type")],
                             "A valid message with referenceTaskIds is refused as invalid.",
                             when=has_reference_task_ids)])
def check_send_valid(ctx: CheckContext) -> None:
    c = PlazaClient(ctx)  # a reset site: alice's connection with bob is made afresh
    connection = functools.cache(lambda: c.befriend(ALICE, BOB))
    task = functools.cache(lambda: str(c.say(ALICE, connection(), "a task to refer to")["id"]))
    valid_inputs_accepted(ctx, op=text_operation(ctx.profile.operations["SendMessage"]), call=c.send,
                          rejections=(INVALID,),
                          prepare=lambda p: in_connection(c.spec, connection, p, own_task=task))


@requirement(id="PLAZA-SEND-PARAMS-INVALID", level="MUST",
             title="SendMessage params breaking the schema are invalid parameters (-32602)",
             source=at(f"{VALIDATION}/code"))
def check_send_invalid(ctx: CheckContext) -> None:
    c = PlazaClient(ctx)
    short_waits(ctx)
    connection = functools.cache(lambda: c.befriend(ALICE, BOB))
    def prepare(bad: InvalidInstance) -> Any:
        broken_at = None if bad.instance is bad.base else bad.violation.pointer
        return in_connection(c.spec, connection, bad.instance, broken_at)

    invalid_inputs_rejected(ctx, op=text_operation(ctx.profile.operations["SendMessage"]), call=c.send,
                            error=INVALID, prepare=prepare)


@check_send_invalid.fault
def send_params_unvalidated(ref: PlazaReference) -> None:
    """SendMessage params are not checked against the schema (only the part is)."""
    @replaces(ref.send_issues)
    def send_issues(original: Any, params: Any) -> list[Issue]:
        message = params.get("message") if isinstance(params, dict) else None
        parts = message.get("parts") if isinstance(message, dict) else None
        if not isinstance(parts, list) or len(parts) != 1 or not isinstance(parts[0], dict):
            result: list[Issue] = original(params)
            return result
        return ref.part_issues(parts[0], "params.message.parts[0]")


@requirement(id="PLAZA-GETTASK-PARAMS-VALID", level="MUST",
             title="Schema-valid GetTask params are not refused as invalid",
             source=at("/schemas/getTaskParams"),
             faults=[returns("get_task_history_length_refused", "params_issues",
                             [Issue("params.historyLength", "type")],
                             "GetTask with historyLength is refused as invalid.",
                             when=lambda method, params: method == "GetTask" and isinstance(params, dict)
                             and "historyLength" in params)])
def check_get_task_valid(ctx: CheckContext) -> None:
    """Generated GetTask params naming alice's own task (a random id names none: not found)."""
    c = PlazaClient(ctx)
    task = functools.cache(lambda: str(c.say(ALICE, c.befriend(ALICE, BOB), "a task to read")["id"]))

    def own(params: Any) -> Any:
        return {**get_task_as_a_client(params), "id": task()} if isinstance(params, dict) else params
    valid_inputs_accepted(ctx, op=ctx.profile.operations["GetTask"], call=lambda p: c.rpc("GetTask", p),
                          rejections=(INVALID,), prepare=own)


@requirement(id="PLAZA-GETTASK-PARAMS-INVALID", level="MUST",
             title="GetTask params breaking the schema are invalid parameters (-32602)",
             source=at("/schemas/getTaskParams"),
             faults=[returns("get_task_unvalidated", "params_issues", [],
                             "GetTask params are not checked: an invalid id is looked up like any other.",
                             when=lambda method, params: method == "GetTask" and isinstance(params, dict))])
def check_get_task_invalid(ctx: CheckContext) -> None:
    c = PlazaClient(ctx, reset=False)
    invalid_inputs_rejected(ctx, op=ctx.profile.operations["GetTask"], call=lambda p: c.rpc("GetTask", p),
                            error=INVALID)


# ----------------------------------------------------------------------------------
# the -32602 error
# ----------------------------------------------------------------------------------
def marked(bad: InvalidInstance, schema: dict[str, Any]) -> Any:
    """An invalid SendMessage whose text carries a marker no error may quote; unmarked
    where the marker would mend the break (an empty text broke minLength)."""
    params = copy.deepcopy(bad.instance)
    parts = dig(params, "message", "parts")
    first = parts[0] if isinstance(parts, list) and parts else None
    if isinstance(first, dict) and isinstance(first.get("text"), str):
        first["text"] = (MARKER + first["text"])[: max(len(first["text"]), len(MARKER))]
    return bad.instance if validator_for(schema).is_valid(params) else params


def issues_of(ctx: CheckContext, info: dict[str, Any]) -> list[Any]:
    raw_issues = dig(info, "metadata", "validationIssues")
    try:
        issues = json.loads(raw_issues) if isinstance(raw_issues, str) else None
    except ValueError:
        issues = None
    ctx.expect(isinstance(issues, list), f"metadata.validationIssues is {json.dumps(raw_issues)[:200]}, "
               "the document says a JSON-encoded list", kind="schema_mismatch")
    return issues if isinstance(issues, list) else []


def invalid_answers(ctx: CheckContext, judge: Callable[[Reply, Any, InvalidInstance], None]) -> None:
    """Generated invalid SendMessage params (text parts), each refused as -32602 and
    handed with what was sent to ``judge``."""
    c = PlazaClient(ctx, reset=False)
    op = text_operation(ctx.profile.operations["SendMessage"])

    def body(bad: InvalidInstance) -> None:
        sent = marked(bad, op.params_schema)
        reply = c.send(sent)
        expect_error(ctx, reply, INVALID,
                     f"SendMessage breaking '{bad.violation.keyword}' at {bad.violation.pointer}")
        judge(reply, sent, bad)

    ctx.for_all(invalid_strategy(op.params_schema), body)


def invalid_params_error(ref: PlazaReference, edit: Callable[[Any], None]) -> None:
    """The error of an invalid-parameters refusal (its JSON-RPC error) as ``edit`` changes it."""
    @replaces(ref.rpc_error)
    def rpc_error(original: Any, err: SiteError) -> Any:
        out = original(err)
        if err.name == INVALID_PARAMETERS:
            edit(out)
        return out


def invalid_params_metadata(ref: PlazaReference, edit: Callable[[dict[str, Any]], None]) -> None:
    """The ErrorInfo metadata of an invalid-parameters refusal as ``edit`` changes it."""
    @replaces(ref.invalid_params)
    def invalid_params(original: Any, method: str, issues: list[Issue]) -> SiteError:
        err: SiteError = original(method, issues)
        edit(err.metadata)
        return err


@requirement(id="PLAZA-PARAM-ERROR-SHAPE", level="MUST",
             title="-32602 carries a google.rpc.ErrorInfo with reason A2A_INVALID_PARAMETERS",
             source=at(f"{VALIDATION}/detailType"))
def check_error_shape(ctx: CheckContext) -> None:
    """-32602 carries a google.rpc.ErrorInfo with reason A2A_INVALID_PARAMETERS."""
    reason = ctx.profile.spec["parameterValidation"]["reason"]

    def judge(reply: Reply, sent: Any, bad: InvalidInstance) -> None:
        info = error_info(reply, detail_type(ctx))
        ctx.expect(info is not None,
                   f"looked for an object carrying {detail_type(ctx)} anywhere in error.data and found "
                   f"none: {reply.describe()}", kind="schema_mismatch")
        ctx.expect(locate.holds(info, reason),
                   f"the ErrorInfo detail {json.dumps(info)[:200]} does not carry the "
                   f"document's reason {reason}", kind="schema_mismatch")
    invalid_answers(ctx, judge)


@check_error_shape.fault
def error_info_missing(ref: PlazaReference) -> None:
    """-32602 comes without its ErrorInfo detail."""
    def edit(out: Any) -> None:
        out.data = []
    invalid_params_error(ref, edit)


@check_error_shape.fault
def error_reason_wrong(ref: PlazaReference) -> None:
    """The ErrorInfo reason of -32602 is INVALID_ARGUMENT, not the document's."""
    def edit(out: Any) -> None:
        out.data[0]["reason"] = "INVALID_ARGUMENT"
    invalid_params_error(ref, edit)


@requirement(id="PLAZA-PARAM-ERROR-METADATA", level="MUST",
             title="ErrorInfo metadata values are strings; validationIssues a JSON list",
             source=at(f"{VALIDATION}/metadataFormat"))
def check_error_metadata(ctx: CheckContext) -> None:
    """Every metadata value is a string; validationIssues a JSON list of field paths and codes."""
    def judge(reply: Reply, sent: Any, bad: InvalidInstance) -> None:
        info = expect_mapping(ctx, error_info(reply, detail_type(ctx)),
                              "the ErrorInfo detail (the object carrying the detailType)")
        metadata = expect_mapping(ctx, info.get("metadata"), "ErrorInfo.metadata")
        odd = {k: v for k, v in metadata.items() if not isinstance(v, str)}
        ctx.expect(not odd, f"ErrorInfo.metadata values must all be strings: {json.dumps(odd)[:200]}",
                   kind="schema_mismatch")
        for issue in issues_of(ctx, info):
            named = isinstance(issue, dict) and any(isinstance(v, str) for v in issue.values())
            ctx.expect(isinstance(issue, str) or named,
                       f"a validation issue is {json.dumps(issue)[:120]}, not a field path or code",
                       kind="schema_mismatch")
    invalid_answers(ctx, judge)


@check_error_metadata.fault
def metadata_not_strings(ref: PlazaReference) -> None:
    """ErrorInfo metadata carries validationIssues as a JSON list and flags as booleans."""
    def edit(metadata: dict[str, Any]) -> None:
        metadata["validationIssues"] = json.loads(metadata["validationIssues"])
        metadata["issueCount"] = len(metadata["validationIssues"])
    invalid_params_metadata(ref, edit)

    @replaces(ref.rpc_error)
    def rpc_error(original: Any, err: SiteError) -> Any:
        out = original(err)
        if err.name == INVALID_PARAMETERS:
            out.data[0]["metadata"] = dict(err.metadata)
        return out


@check_error_metadata.fault
def issues_not_json(ref: PlazaReference) -> None:
    """validationIssues is prose, not a JSON-encoded list."""
    def edit(metadata: dict[str, Any]) -> None:
        issues = json.loads(metadata["validationIssues"])
        metadata["validationIssues"] = "; ".join(f"{i['path']} {i['code']}" for i in issues)
    invalid_params_metadata(ref, edit)


@requirement(id="PLAZA-PARAM-ERROR-BOUND", level="SHOULD",
             title="validationIssues lists at most the profile's bound",
             source=chosen("profiles/agent-plaza.yaml#/limits/validation_issues_count"),
             faults=[limit("issues_unbounded", "validation_issues_count", 10_000,
                           "Every issue is listed, however many.")])
def check_error_bound(ctx: CheckContext) -> None:
    """The profile's bound on validationIssues, with a message breaking many fields at once."""
    c = PlazaClient(ctx, reset=False)
    bound = ctx.limit("validation_issues_count")
    params = c.params({"text": ""}, context="", message_id="", role="user", referenceTaskIds=[""] * 30,
                      extensions=[""] * 30)
    info = expect_mapping(ctx, error_info(c.send(params), detail_type(ctx)),
                          "the ErrorInfo detail of a message with many broken fields")
    issues = issues_of(ctx, info)
    ctx.expect(0 < len(issues) <= bound,
               f"validationIssues lists {len(issues)} issues, the profile bounds it to {bound}",
               kind="schema_mismatch")


def leaks(text: str, sent: Any, bad: InvalidInstance, token: str) -> list[str]:
    """What an error quotes back: the marker, a credential, or an unknown key's name."""
    found = [w for w in (MARKER, token) if w and w in text]
    if bad.violation.keyword == "additionalProperties":
        key = bad.violation.pointer.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")
        found += [key] if len(key) > 3 and json.dumps(key)[1:-1] in text else []
    return found


@requirement(id="PLAZA-PARAM-ERROR-NO-ECHO", level="MUST",
             title="Parameter errors never quote submitted text, credentials or unknown key names",
             source=at(f"{VALIDATION}/metadataFormat"))
def check_no_echo(ctx: CheckContext) -> None:
    """validationIssues (and the whole error) never quotes submitted text, credentials or
    unknown key names."""
    token = ctx.token(ALICE) or ""

    def error_text(reply: Reply) -> str:
        return json.dumps(reply.envelope.get("error") if isinstance(reply.envelope, dict) else reply.envelope)

    def judge(reply: Reply, sent: Any, bad: InvalidInstance) -> None:
        text = error_text(reply)
        found = leaks(text, sent, bad, token)
        ctx.expect(not found, f"the invalid-parameters error quotes what was sent: {found} in {text[:300]}",
                   kind="schema_mismatch")
    with ctx.subcheck("an unknown key named by the caller"):
        c = PlazaClient(ctx, reset=False)
        key = f"x_{MARKER.replace('-', '_')}"
        reply = c.send(c.params({"text": "hello", key: "value"}, context=fresh_id()))
        expect_error(ctx, reply, INVALID, "a text part with an unknown key")
        ctx.expect(key not in error_text(reply),
                   f"the invalid-parameters error names the unknown key {key}: {error_text(reply)[:300]}",
                   kind="schema_mismatch")
    invalid_answers(ctx, judge)


@check_no_echo.fault
def issues_echo_input(ref: PlazaReference) -> None:
    """The refused params are quoted back in the error's metadata."""
    @replaces(ref.validate_params)
    def validate(original: Any, method: str, params: Any) -> dict[str, Any]:
        try:
            result: dict[str, Any] = original(method, params)
            return result
        except SiteError as err:
            err.metadata["submitted"] = json.dumps(params)
            raise


@check_no_echo.fault
def issues_echo_key(ref: PlazaReference) -> None:
    """An unknown key is reported under its own name."""
    @replaces(ref.error_issues)
    def error_issues(original: Any, error: Any, base: str) -> list[Issue]:
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            declared = set(error.schema.get("properties") or {})
            extra = [k for k in error.instance if k not in declared]
            return [Issue(f"{base}.{k}", "additional_property") for k in extra]
        result: list[Issue] = original(error, base)
        return result


# ----------------------------------------------------------------------------------
# before a send
# ----------------------------------------------------------------------------------
@requirement(id="PLAZA-PARAM-ERROR-PRESEND", level="MUST",
             title="A pre-send failure says messageSent and sendHandleConsumedByThisRequest false and "
                   "consumes nothing",
             source=at(f"{VALIDATION}/preSendFailure"))
def check_presend(ctx: CheckContext) -> None:
    """A SendMessage refused before it runs says messageSent and sendHandleConsumedByThisRequest
    false, consumes nothing (the messageId serves a valid message afterwards) and stores nothing."""
    c = PlazaClient(ctx)
    connection = c.befriend(ALICE, BOB)
    message_id = fresh_id()
    bad = c.params({"text": "x" * (ctx.limit("text_characters_count") + 1)}, context=connection,
                   message_id=message_id)
    reply = c.send(bad)
    expect_error(ctx, reply, INVALID, "a text over the maximum")
    metadata = dig(error_info(reply, detail_type(ctx)), "metadata") or {}
    for flag in ("messageSent", "sendHandleConsumedByThisRequest"):
        ctx.expect(metadata.get(flag) == "false",
                   f"a pre-send parameter failure carries {flag} = {metadata.get(flag)!r}, "
                   "the document says false", kind="schema_mismatch")
    with ctx.subcheck("the messageId afterwards"):
        c.task_of(c.text(ALICE, "the valid message", context=connection, message_id=message_id),
                  "a valid text under the messageId of a refused one")
    # "Only a SendMessage parameter failure ... carries"
    with ctx.subcheck("a refusal that is no parameter failure"):
        other = c.text(CAROL, "not a participant", context=connection)
        expect_refused(ctx, other, "carol's text in alice and bob's connection")
        flags = {f: any(isinstance(v, dict) and v.get(f) == "false" for v in walk_values(other.error_data))
                 for f in ("messageSent", "sendHandleConsumedByThisRequest")}
        ctx.expect(not any(flags.values()),
                   f"a refusal for the caller's participation, no parameter failure, carries "
                   f"{[f for f, hit in flags.items() if hit]} false: {other.describe()}; only a pre-send "
                   "parameter failure does", kind="schema_mismatch")


@check_presend.fault
def presend_flags_missing(ref: PlazaReference) -> None:
    """A SendMessage parameter failure does not say messageSent/sendHandleConsumedByThisRequest false."""
    def edit(metadata: dict[str, Any]) -> None:
        metadata.pop("messageSent", None)
        metadata.pop("sendHandleConsumedByThisRequest", None)
    invalid_params_metadata(ref, edit)


@check_presend.fault
def invalid_send_consumes_id(ref: PlazaReference) -> None:
    """A messageId refused for its parameters is consumed: a valid message under it is CONTEXT_CONSUMED."""
    burnt: set[str] = set()

    @replaces(ref.validate_params)
    def validate(original: Any, method: str, params: Any) -> dict[str, Any]:
        try:
            result: dict[str, Any] = original(method, params)
            return result
        except SiteError:
            message_id = (params.get("message") or {}).get("messageId") if isinstance(params, dict) else None
            if isinstance(message_id, str):
                burnt.add(message_id)
            raise

    @replaces(ref.used_message_id)
    def used(original: Any, visitor_id: str, message: dict[str, Any]) -> Any:
        if message["messageId"] in burnt:
            raise SiteError("CONTEXT_CONSUMED", "this messageId was already used")
        return original(visitor_id, message)


@check_presend.fault
def presend_flags_on_every_refusal(ref: PlazaReference) -> None:
    """Every refusal carries messageSent and sendHandleConsumedByThisRequest false, not only pre-send
    parameter failures."""
    @replaces(ref.rpc_error)
    def rpc_error(original: Any, err: SiteError) -> Any:
        err.metadata = {**err.metadata, "messageSent": "false", "sendHandleConsumedByThisRequest": "false"}
        return original(err)


@requirement(id="PLAZA-PARAM-ERROR-NO-EFFECT", level="MUST",
             title="A parameter error stores nothing and makes no invitation",
             source=at(f"{VALIDATION}/recovery"))
def check_no_effect(ctx: CheckContext) -> None:
    """Invalid parameters change nothing: no message, no invitation."""
    c = PlazaClient(ctx)
    before = c.snapshot()
    for what, params in (("a 601-character invitation", c.params({"text": "x" * 601}, to=c.agent_id(BOB))),
                         ("an invitation with role user",
                          c.params({"text": "hi"}, to=c.agent_id(BOB), role="user"))):
        with ctx.subcheck(what):
            expect_error(ctx, c.send(params), INVALID, what)
    ctx.expect(c.snapshot() == before, "a SendMessage refused for its parameters changed the site's state",
               kind="state_changed")


@check_no_effect.fault
def invalid_text_stored(ref: PlazaReference) -> None:
    """A first text refused for its parameters still opens the invitation."""
    last: dict[str, Principal] = {}

    @replaces(ref.authenticate)
    def authenticate(original: Any, headers: Mapping[str, str]) -> Principal:
        last["who"] = original(headers)
        return last["who"]

    @replaces(ref.validate_params)
    def validate(original: Any, method: str, params: Any) -> dict[str, Any]:
        try:
            result: dict[str, Any] = original(method, params)
            return result
        except SiteError:
            message = params.get("message") if isinstance(params, dict) else None
            recipient = ref.recipient_of(message) if isinstance(message, dict) else None
            if recipient is not None and recipient in ref.s["visitors"] and "who" in last \
                    and not ref.pair_connection(last["who"].visitor_id, recipient):
                ref.open_connection(last["who"].visitor_id, str(recipient))
            raise


__all__ = ["MARKER", "marked", "text_operation"]
