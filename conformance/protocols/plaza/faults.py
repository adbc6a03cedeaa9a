"""Named faults of the Agent Plaza reference site: each patches one behaviour of a
``PlazaReference`` instance, and the requirements that name it must catch it. Each
replaces the fewest methods that make the site break the one rule its name says.

The per-command faults (``<command>_refused_as_invalid``, ``<command>_unvalidated``)
and the per-example faults are made by one mechanism each, from the document's lists.
The faults of conversation reads, the inbox and durable receive are in mailbox_faults.py."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from conformance.documents.schemas import load_document
from conformance.faults import replaces
from conformance.protocols.plaza.reference import (
    ACTIVE,
    CLOSED,
    COMPLETED,
    INVALID_PARAMETERS,
    INVALID_REQUEST,
    INVALID_STATE,
    INVITATION,
    METHOD_NOT_FOUND,
    NOT_FOUND,
    NOT_PERMITTED,
    TASK_NOT_FOUND,
    UNSUPPORTED_OPERATION,
    WORKING,
    Issue,
    PlazaReference,
    Principal,
    SiteError,
)
from conformance.table import FaultRegistry

FAULTS = FaultRegistry()
fault = FAULTS


def _noop(ref: PlazaReference, method: str) -> None:
    """``ref.<method>`` lets everything through (a check that raises nothing)."""
    setattr(ref, method, lambda *args, **kwargs: None)


def _raising(ref: PlazaReference, method: str, name: str) -> None:
    """``ref.<method>`` refuses with ``name`` whenever the original would refuse."""
    @replaces(ref, method)
    def patched(original: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(*args, **kwargs)
        except SiteError as err:
            raise SiteError(name, err.message) from err


def _validating_copy(ref: PlazaReference, change: Callable[[str, Any], Any]) -> None:
    """Params are validated as ``change(method, copy)`` makes them; the handler gets the original."""
    @replaces(ref, "validate_params")
    def validate(original: Any, method: str, params: Any) -> dict[str, Any]:
        original(method, change(method, copy.deepcopy(params)))
        assert isinstance(params, dict)
        return params


def _message_change(edit: Callable[[dict[str, Any]], None]) -> Callable[[str, Any], Any]:
    def change(method: str, params: Any) -> Any:
        message = params.get("message") if isinstance(params, dict) else None
        if method == "SendMessage" and isinstance(message, dict):
            edit(message)
        return params
    return change


def _part_change(edit: Callable[[dict[str, Any]], None]) -> Callable[[str, Any], Any]:
    def each(message: dict[str, Any]) -> None:
        for part in message.get("parts") or []:
            if isinstance(part, dict):
                edit(part)
    return _message_change(each)


# ------------------------------------------------------------------ headers and credentials


@fault
def version_header_ignored(ref: PlazaReference) -> None:
    """Any A2A-Version, or none, is served."""
    _noop(ref, "check_version")


@fault
def version_wrong_code(ref: PlazaReference) -> None:
    """A wrong A2A-Version is refused INVALID_REQUEST, not VERSION_NOT_SUPPORTED."""
    _raising(ref, "check_version", INVALID_REQUEST)


@fault
def extension_header_ignored(ref: PlazaReference) -> None:
    """Requests without the friendship extension in A2A-Extensions are served."""
    _noop(ref, "check_extensions")


@fault
def extension_wrong_code(ref: PlazaReference) -> None:
    _raising(ref, "check_extensions", INVALID_REQUEST)


@fault
def content_type_ignored(ref: PlazaReference) -> None:
    """A body sent as text/plain is served as JSON."""
    _noop(ref, "check_content_type")


@fault
def bearer_not_enforced(ref: PlazaReference) -> None:
    """No token, or an unknown one, is served as the first visitor."""
    @replaces(ref, "authenticate")
    def authenticate(original: Any, headers: Mapping[str, str]) -> Principal:
        try:
            return original(headers)
        except SiteError:
            visitor = next(iter(ref.s["visitors"]))
            return Principal(visitor, frozenset(ref.supported_scopes), "visitor")


@fault
def unauthenticated_as_200(ref: PlazaReference) -> None:
    """The refusal of a missing token comes with HTTP 200 instead of 401."""
    @replaces(ref, "rpc_error")
    def rpc_error(original: Any, err: SiteError) -> Any:
        out = original(err)
        out.status = 200
        return out


@fault
def owner_credential_accepted(ref: PlazaReference) -> None:
    """An owner account's credential is served as its agent."""
    @replaces(ref, "authenticate")
    def authenticate(original: Any, headers: Mapping[str, str]) -> Principal:
        record = ref.s["tokens"].get(ref.bearer_token(headers) or "")
        if record is not None and record["kind"] != "visitor" and record["visitor_id"] in ref.s["visitors"]:
            return Principal(record["visitor_id"], frozenset(ref.supported_scopes), "visitor")
        return original(headers)


@fault
def account_agent_refused(ref: PlazaReference) -> None:
    """Only visitor credentials are accepted; an account Agent's is refused."""
    @replaces(ref, "authenticate")
    def authenticate(original: Any, headers: Mapping[str, str]) -> Principal:
        who: Principal = original(headers)
        if who.kind != "visitor":
            raise SiteError("UNAUTHENTICATED", "visitor credentials only")
        return who


@fault
def resource_metadata_wrong(ref: PlazaReference) -> None:
    """The protected-resource metadata names the site's root as its resource."""
    @replaces(ref, "resource_metadata")
    def resource_metadata(original: Any, base_url: str) -> dict[str, Any]:
        out: dict[str, Any] = original(base_url)
        out["resource"] = base_url
        return out


@fault
def token_in_metadata_accepted(ref: PlazaReference) -> None:
    """A token found in message.metadata stands in for the Authorization header."""
    @replaces(ref, "serve_a2a")
    def serve_a2a(original: Any, raw: bytes, headers: Mapping[str, str]) -> Any:
        try:
            token = json.loads(raw)["params"]["message"]["metadata"]["token"]
        except (ValueError, KeyError, TypeError):
            return original(raw, headers)
        if not ref.bearer_token(headers):
            headers = {**{k.lower(): v for k, v in headers.items()}, "authorization": f"Bearer {token}"}
        return original(raw, headers)


@fault
def identity_per_task(ref: PlazaReference) -> None:
    """Each text is sent under a fresh identity (a new visitor per task)."""
    @replaces(ref, "store_message")
    def store_message(original: Any, conn: dict[str, Any], sender: str, text: str, client_message_id: str) -> dict[str, Any]:
        msg: dict[str, Any] = original(conn, sender, text, client_message_id)
        msg["sender"] = ref.new_uuid()
        return msg


@fault
def scopes_ignored(ref: PlazaReference) -> None:
    """A read-only credential writes."""
    _noop(ref, "require_scope")


@fault
def replay_skips_auth(ref: PlazaReference) -> None:
    """A request repeating a used messageId is served without a valid token, as the
    messageId's first sender."""
    @replaces(ref, "serve_a2a")
    def serve_a2a(original: Any, raw: bytes, headers: Mapping[str, str]) -> Any:
        try:
            message_id = json.loads(raw)["params"]["message"]["messageId"]
        except (ValueError, KeyError, TypeError):
            return original(raw, headers)
        owner = next((key.split("|", 1)[0] for key in ref.s["message_ids"] if key.endswith(f"|{message_id}")), None)
        token = next((t for t, r in ref.s["tokens"].items() if r["visitor_id"] == owner and r["kind"] == "visitor"), None)
        if token and ref.s["tokens"].get(ref.bearer_token(headers) or "") is None:
            headers = {**{k.lower(): v for k, v in headers.items()}, "authorization": f"Bearer {token}"}
        return original(raw, headers)


# ------------------------------------------------------------------ the envelope and the message format


@fault
def notification_served(ref: PlazaReference) -> None:
    """A request without an id is carried out (answered with id null)."""
    @replaces(ref, "envelope")
    def envelope(original: Any, body: Any) -> Any:
        if isinstance(body, dict) and "id" not in body:
            body = {**body, "id": None}
            return None, body.get("method"), body.get("params")
        return original(body)


@fault
def missing_id_wrong_code(ref: PlazaReference) -> None:
    @replaces(ref, "envelope")
    def envelope(original: Any, body: Any) -> Any:
        if isinstance(body, dict) and "id" not in body:
            raise SiteError(INVALID_PARAMETERS, "an id is required")
        return original(body)


@fault
def id_not_echoed(ref: PlazaReference) -> None:
    """Answers carry id null instead of the request's id."""
    @replaces(ref, "result_response")
    def result_response(original: Any, request_id: Any, result: Any) -> Any:
        return original(None, result)

    @replaces(ref, "error_response")
    def error_response(original: Any, request_id: Any, err: SiteError) -> Any:
        return original(None, err)


@fault
def legacy_role_accepted(ref: PlazaReference) -> None:
    """v0.3's lowercase role: user passes as ROLE_USER."""
    def edit(message: dict[str, Any]) -> None:
        if message.get("role") == "user":
            message["role"] = "ROLE_USER"
    _validating_copy(ref, _message_change(edit))


@fault
def legacy_kind_accepted(ref: PlazaReference) -> None:
    """v0.3's part.kind is ignored."""
    _validating_copy(ref, _part_change(lambda part: part.pop("kind", None)))


@fault
def agent_role_accepted(ref: PlazaReference) -> None:
    """A request message with role ROLE_AGENT is served."""
    def edit(message: dict[str, Any]) -> None:
        if message.get("role") == "ROLE_AGENT":
            message["role"] = "ROLE_USER"
    _validating_copy(ref, _message_change(edit))


@fault
def two_parts_accepted(ref: PlazaReference) -> None:
    """Parts after the first are ignored instead of refused."""
    def edit(message: dict[str, Any]) -> None:
        if isinstance(message.get("parts"), list) and len(message["parts"]) > 1:
            message["parts"] = message["parts"][:1]
    _validating_copy(ref, _message_change(edit))


@fault
def file_part_accepted(ref: PlazaReference) -> None:
    """A file (url) part is taken as a text naming the file."""
    def edit(message: dict[str, Any]) -> None:
        parts = message.get("parts")
        if isinstance(parts, list) and parts and isinstance(parts[0], dict) and "url" in parts[0]:
            message["parts"] = [{"text": str(parts[0]["url"])}]
    _validating_copy(ref, _message_change(edit))

    @replaces(ref, "rpc_send_message")
    def send(original: Any, call: Any) -> Any:
        part = call.params["message"]["parts"][0]
        if "url" in part:
            call.params["message"]["parts"] = [{"text": str(part["url"])}]
        return original(call)


@fault
def content_alias_accepted(ref: PlazaReference) -> None:
    """The native transports' content field is converted to text (automaticAliasConversion)."""
    def alias(part: dict[str, Any]) -> None:
        if "content" in part and "text" not in part:
            part["text"] = part.pop("content")
    _validating_copy(ref, _part_change(alias))

    @replaces(ref, "rpc_send_message")
    def send(original: Any, call: Any) -> Any:
        alias(call.params["message"]["parts"][0])
        return original(call)


def _text_length(ref: PlazaReference, keep: Callable[[str, int], str]) -> None:
    limit = ref.limit("text_characters_count")

    def edit(part: dict[str, Any]) -> None:
        if isinstance(part.get("text"), str):
            part["text"] = keep(part["text"], limit)
    _validating_copy(ref, _part_change(edit))


@fault
def text_over_maximum_accepted(ref: PlazaReference) -> None:
    """Texts over the maximum are stored (only the first characters are validated)."""
    _text_length(ref, lambda text, limit: text[:limit])


@fault
def text_maximum_refused(ref: PlazaReference) -> None:
    """A text of exactly the maximum is refused (an off-by-one limit)."""
    _text_length(ref, lambda text, limit: text + "x" if len(text) == limit else text)


@fault
def configuration_in_message_accepted(ref: PlazaReference) -> None:
    """configuration inside message is taken as if beside it."""
    @replaces(ref, "validate_params")
    def validate(original: Any, method: str, params: Any) -> dict[str, Any]:
        message = params.get("message") if isinstance(params, dict) else None
        if method == "SendMessage" and isinstance(message, dict) and "configuration" in message:
            params = {**params, "configuration": message["configuration"],
                      "message": {k: v for k, v in message.items() if k != "configuration"}}
        result: dict[str, Any] = original(method, params)
        return result


@fault
def send_params_unvalidated(ref: PlazaReference) -> None:
    """SendMessage params are not checked against the schema (only the part is)."""
    @replaces(ref, "send_issues")
    def send_issues(original: Any, params: Any) -> list[Issue]:
        message = params.get("message") if isinstance(params, dict) else None
        parts = message.get("parts") if isinstance(message, dict) else None
        if not isinstance(parts, list) or len(parts) != 1 or not isinstance(parts[0], dict):
            result: list[Issue] = original(params)
            return result
        return ref.part_issues(parts[0], "params.message.parts[0]")


@fault
def reference_task_ids_refused(ref: PlazaReference) -> None:
    """A valid message with referenceTaskIds is refused as invalid."""
    @replaces(ref, "send_issues")
    def send_issues(original: Any, params: Any) -> list[Issue]:
        if isinstance(params, dict) and isinstance(params.get("message"), dict) and "referenceTaskIds" in params["message"]:
            return [Issue("params.message.referenceTaskIds", "type")]
        result: list[Issue] = original(params)
        return result


@fault
def get_task_history_length_refused(ref: PlazaReference) -> None:
    """GetTask with historyLength is refused as invalid."""
    @replaces(ref, "params_issues")
    def params_issues(original: Any, method: str, params: Any) -> list[Issue]:
        if method == "GetTask" and isinstance(params, dict) and "historyLength" in params:
            return [Issue("params.historyLength", "type")]
        result: list[Issue] = original(method, params)
        return result


@fault
def get_task_unvalidated(ref: PlazaReference) -> None:
    """GetTask params are not checked: an invalid id is looked up like any other."""
    @replaces(ref, "params_issues")
    def params_issues(original: Any, method: str, params: Any) -> list[Issue]:
        if method == "GetTask" and isinstance(params, dict):
            return []
        result: list[Issue] = original(method, params)
        return result


@fault
def answer_role_user(ref: PlazaReference) -> None:
    """Command answers are written as ROLE_USER."""
    @replaces(ref, "command_message")
    def command_message(original: Any, *args: Any) -> dict[str, Any]:
        out: dict[str, Any] = original(*args)
        out["role"] = "ROLE_USER"
        return out


@fault
def answer_unwrapped(ref: PlazaReference) -> None:
    """Results are the bare Message or Task, not {message} / {task} (an A2A reading the profile does not choose)."""
    @replaces(ref, "result_response")
    def result_response(original: Any, request_id: Any, result: Any) -> Any:
        if isinstance(result, dict) and len(result) == 1 and ("message" in result or "task" in result):
            result = next(iter(result.values()))
        return original(request_id, result)


# ------------------------------------------------------------------ methods, card, capabilities


def _extra_methods(ref: PlazaReference, handlers: dict[str, str], validate_as: dict[str, str | None]) -> None:
    """Serve more methods (name -> handler attribute), validated as another method or not at all."""
    @replaces(ref, "rpc_handlers")
    def rpc_handlers(original: Any) -> dict[str, Callable[..., Any]]:
        return {**original(), **{name: getattr(ref, attr) for name, attr in handlers.items()}}

    @replaces(ref, "params_issues")
    def params_issues(original: Any, method: str, params: Any) -> list[Issue]:
        if method in validate_as:
            other = validate_as[method]
            return [] if other is None else list(original(other, params))
        result: list[Issue] = original(method, params)
        return result


@fault
def list_tasks_missing(ref: PlazaReference) -> None:
    """ListTasks is method not found."""
    @replaces(ref, "rpc_handlers")
    def rpc_handlers(original: Any) -> dict[str, Callable[..., Any]]:
        return {k: v for k, v in original().items() if k != "ListTasks"}


@fault
def unknown_method_wrong_code(ref: PlazaReference) -> None:
    """An unknown method is INVALID_REQUEST instead of method not found."""
    @replaces(ref, "check_method")
    def check_method(original: Any, method: str) -> None:
        try:
            original(method)
        except SiteError as err:
            raise SiteError(INVALID_REQUEST if err.name == METHOD_NOT_FOUND else err.name, err.message) from err


@fault
def card_streaming_true(ref: PlazaReference) -> None:
    """The card declares streaming: true."""
    @replaces(ref, "agent_card")
    def agent_card(original: Any, base_url: str) -> dict[str, Any]:
        card: dict[str, Any] = original(base_url)
        card["capabilities"]["streaming"] = True
        return card


@fault
def card_without_extension(ref: PlazaReference) -> None:
    """The card does not name the friendship extension."""
    @replaces(ref, "agent_card")
    def agent_card(original: Any, base_url: str) -> dict[str, Any]:
        card: dict[str, Any] = original(base_url)
        card["capabilities"]["extensions"] = []
        return card


@fault
def streaming_served(ref: PlazaReference) -> None:
    """SendStreamingMessage and SubscribeToTask are served as SendMessage and GetTask."""
    _extra_methods(ref, {"SendStreamingMessage": "rpc_send_message", "SubscribeToTask": "rpc_get_task"},
                   {"SendStreamingMessage": "SendMessage", "SubscribeToTask": "GetTask"})


@fault
def streaming_wrong_code(ref: PlazaReference) -> None:
    @replaces(ref, "check_method")
    def check_method(original: Any, method: str) -> None:
        if method in ("SendStreamingMessage", "SubscribeToTask"):
            raise SiteError(METHOD_NOT_FOUND, "Method not found")
        original(method)


@fault
def push_config_ignored(ref: PlazaReference) -> None:
    """A push notification config in SendMessage is ignored instead of refused."""
    @replaces(ref, "rpc_send_message")
    def send(original: Any, call: Any) -> Any:
        (call.params.get("configuration") or {}).pop("taskPushNotificationConfig", None)
        return original(call)


@fault
def push_wrong_code(ref: PlazaReference) -> None:
    _raising(ref, "rpc_send_message", UNSUPPORTED_OPERATION)

    @replaces(ref, "check_method")
    def check_method(original: Any, method: str) -> None:
        if "PushNotificationConfig" in method:
            raise SiteError(UNSUPPORTED_OPERATION, f"{method} is not supported")
        original(method)


@fault
def extended_card_served(ref: PlazaReference) -> None:
    """GetExtendedAgentCard answers the public card."""
    ref.rpc_get_extended_card = lambda call: ref.agent_card("http://reference")  # type: ignore[attr-defined]
    _extra_methods(ref, {"GetExtendedAgentCard": "rpc_get_extended_card"}, {"GetExtendedAgentCard": None})


@fault
def extended_card_wrong_code(ref: PlazaReference) -> None:
    @replaces(ref, "check_method")
    def check_method(original: Any, method: str) -> None:
        if method == "GetExtendedAgentCard":
            raise SiteError(METHOD_NOT_FOUND, "Method not found")
        original(method)


# ------------------------------------------------------------------ parameter errors


def _invalid_params_metadata(ref: PlazaReference, edit: Callable[[dict[str, Any]], None]) -> None:
    @replaces(ref, "invalid_params")
    def invalid_params(original: Any, method: str, issues: list[Issue]) -> SiteError:
        err: SiteError = original(method, issues)
        edit(err.metadata)
        return err


@fault
def error_info_missing(ref: PlazaReference) -> None:
    """-32602 comes without its ErrorInfo detail."""
    @replaces(ref, "rpc_error")
    def rpc_error(original: Any, err: SiteError) -> Any:
        out = original(err)
        if err.name == INVALID_PARAMETERS:
            out.data = []
        return out


@fault
def error_reason_wrong(ref: PlazaReference) -> None:
    """The ErrorInfo reason of -32602 is INVALID_ARGUMENT, not the document's."""
    @replaces(ref, "rpc_error")
    def rpc_error(original: Any, err: SiteError) -> Any:
        out = original(err)
        if err.name == INVALID_PARAMETERS:
            out.data[0]["reason"] = "INVALID_ARGUMENT"
        return out


@fault
def metadata_not_strings(ref: PlazaReference) -> None:
    """ErrorInfo metadata carries validationIssues as a JSON list and flags as booleans."""
    def edit(metadata: dict[str, Any]) -> None:
        metadata["validationIssues"] = json.loads(metadata["validationIssues"])
        metadata["issueCount"] = len(metadata["validationIssues"])
    _invalid_params_metadata(ref, edit)

    @replaces(ref, "rpc_error")
    def rpc_error(original: Any, err: SiteError) -> Any:
        out = original(err)
        if err.name == INVALID_PARAMETERS:
            out.data[0]["metadata"] = dict(err.metadata)
        return out


@fault
def issues_not_json(ref: PlazaReference) -> None:
    """validationIssues is prose, not a JSON-encoded list."""
    def edit(metadata: dict[str, Any]) -> None:
        issues = json.loads(metadata["validationIssues"])
        metadata["validationIssues"] = "; ".join(f"{i['path']} {i['code']}" for i in issues)
    _invalid_params_metadata(ref, edit)


@fault
def issues_unbounded(ref: PlazaReference) -> None:
    """Every issue is listed, however many."""
    @replaces(ref, "limit")
    def limit(original: Any, name: str) -> int:
        return 10_000 if name == "validation_issues_count" else int(original(name))


@fault
def issues_echo_input(ref: PlazaReference) -> None:
    """The refused params are quoted back in the error's metadata."""
    @replaces(ref, "validate_params")
    def validate(original: Any, method: str, params: Any) -> dict[str, Any]:
        try:
            result: dict[str, Any] = original(method, params)
            return result
        except SiteError as err:
            err.metadata["submitted"] = json.dumps(params)
            raise


@fault
def issues_echo_key(ref: PlazaReference) -> None:
    """An unknown key is reported under its own name."""
    @replaces(ref, "error_issues")
    def error_issues(original: Any, error: Any, base: str) -> list[Issue]:
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            declared = set(error.schema.get("properties") or {})
            extra = [k for k in error.instance if k not in declared]
            return [Issue(f"{base}.{k}", "additional_property") for k in extra]
        result: list[Issue] = original(error, base)
        return result


@fault
def presend_flags_missing(ref: PlazaReference) -> None:
    """A SendMessage parameter failure does not say messageSent/sendHandleConsumedByThisRequest false."""
    def edit(metadata: dict[str, Any]) -> None:
        metadata.pop("messageSent", None)
        metadata.pop("sendHandleConsumedByThisRequest", None)
    _invalid_params_metadata(ref, edit)


@fault
def invalid_send_consumes_id(ref: PlazaReference) -> None:
    """A messageId refused for its parameters is consumed: a valid message under it is CONTEXT_CONSUMED."""
    burnt: set[str] = set()

    @replaces(ref, "validate_params")
    def validate(original: Any, method: str, params: Any) -> dict[str, Any]:
        try:
            result: dict[str, Any] = original(method, params)
            return result
        except SiteError:
            message_id = (params.get("message") or {}).get("messageId") if isinstance(params, dict) else None
            if isinstance(message_id, str):
                burnt.add(message_id)
            raise

    @replaces(ref, "used_message_id")
    def used(original: Any, visitor_id: str, message: dict[str, Any]) -> Any:
        if message["messageId"] in burnt:
            raise SiteError("CONTEXT_CONSUMED", "this messageId was already used")
        return original(visitor_id, message)


@fault
def invalid_text_stored(ref: PlazaReference) -> None:
    """A first text refused for its parameters still opens the invitation."""
    last: dict[str, Principal] = {}

    @replaces(ref, "authenticate")
    def authenticate(original: Any, headers: Mapping[str, str]) -> Principal:
        last["who"] = original(headers)
        return last["who"]

    @replaces(ref, "validate_params")
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


# ------------------------------------------------------------------ consent and controls


@fault
def invitation_completes_task(ref: PlazaReference) -> None:
    """An invitation's task is completed at once, as if the invitation were a chat reply."""
    @replaces(ref, "task_state")
    def task_state(original: Any, task: dict[str, Any]) -> str:
        state: str = original(task)
        conn = ref.s["connections"][task["connection_id"]]
        return COMPLETED if state == WORKING and conn["state"] == INVITATION else state


@fault
def invitation_not_stored(ref: PlazaReference) -> None:
    """The invitation's text is lost: the invitee reads an empty text."""
    @replaces(ref, "store_message")
    def store_message(original: Any, conn: dict[str, Any], sender: str, text: str, client_message_id: str) -> dict[str, Any]:
        if conn["state"] == INVITATION and not conn["messages"]:
            text = ""
        result: dict[str, Any] = original(conn, sender, text, client_message_id)
        return result


@fault
def unknown_recipient_accepted(ref: PlazaReference) -> None:
    """A first text to a UUID that is no visitor makes one up."""
    @replaces(ref, "first_contact")
    def first_contact(original: Any, sender: str, recipient: str) -> dict[str, Any]:
        if recipient not in ref.s["visitors"]:
            ref.add_visitor("made up", [], visitor_id=recipient)
        result: dict[str, Any] = original(sender, recipient)
        return result


@fault
def pending_treated_as_accepted(ref: PlazaReference) -> None:
    """A pending invitation takes texts from both sides, as if accepted."""
    @replaces(ref, "check_can_text")
    def check_can_text(original: Any, conn: dict[str, Any], visitor_id: str) -> None:
        if conn["state"] != INVITATION:
            original(conn, visitor_id)


@fault
def reading_accepts_invitation(ref: PlazaReference) -> None:
    """The invitee reading a pending invitation accepts it."""
    @replaces(ref, "readable_connection")
    def readable(original: Any, caller: str, connection_id: str) -> dict[str, Any]:
        conn: dict[str, Any] = original(caller, connection_id)
        if conn["state"] == INVITATION and conn["invitee"] == caller:
            conn["state"] = ACTIVE
        return conn


@fault
def pending_wrong_code(ref: PlazaReference) -> None:
    @replaces(ref, "check_can_text")
    def check_can_text(original: Any, conn: dict[str, Any], visitor_id: str) -> None:
        if conn["state"] == INVITATION:
            raise SiteError(INVALID_STATE, "pending")
        original(conn, visitor_id)


@fault
def inviter_can_accept(ref: PlazaReference) -> None:
    """The inviter may accept its own invitation."""
    @replaces(ref, "decide_invitation")
    def decide(original: Any, conn: dict[str, Any], caller: str, outcome: str, change: str) -> None:
        original(conn, conn["invitee"], outcome, change)


@fault
def accept_ignored(ref: PlazaReference) -> None:
    """respond accept answers but leaves the invitation pending."""
    ref.respond_accept = lambda conn, caller, data: None  # type: ignore[method-assign]


@fault
def decline_ignored(ref: PlazaReference) -> None:
    """respond decline activates the connection instead of ending it."""
    ref.respond_decline = ref.respond_accept  # type: ignore[method-assign]


@fault
def strict_alternation(ref: PlazaReference) -> None:
    """A friend may not write twice in a row."""
    @replaces(ref, "check_can_text")
    def check_can_text(original: Any, conn: dict[str, Any], visitor_id: str) -> None:
        original(conn, visitor_id)
        if conn["messages"] and conn["messages"][-1]["sender"] == visitor_id:
            raise SiteError(NOT_PERMITTED, "wait for the peer's reply")


@fault
def texts_out_of_order(ref: PlazaReference) -> None:
    """A new text is stored before the ones already there (reads come out of order)."""
    @replaces(ref, "store_message")
    def store_message(original: Any, conn: dict[str, Any], sender: str, text: str, client_message_id: str) -> dict[str, Any]:
        msg: dict[str, Any] = original(conn, sender, text, client_message_id)
        if len(conn["messages"]) > 2:
            conn["messages"][-1]["text"], conn["messages"][-2]["text"] = conn["messages"][-2]["text"], conn["messages"][-1]["text"]
        return msg


@fault
def block_ignored(ref: PlazaReference) -> None:
    """friend_control block answers but the peer still writes."""
    ref.friend_block = lambda conn, caller: None  # type: ignore[method-assign]


@fault
def remove_ignored(ref: PlazaReference) -> None:
    ref.friend_remove = lambda conn, caller: None  # type: ignore[method-assign]


@fault
def control_refusal_wrong_code(ref: PlazaReference) -> None:
    @replaces(ref, "check_can_text")
    def check_can_text(original: Any, conn: dict[str, Any], visitor_id: str) -> None:
        if conn["state"] not in (ACTIVE, INVITATION):
            raise SiteError(INVALID_STATE, f"the connection is {conn['state']}")
        original(conn, visitor_id)


@fault
def stop_ignored(ref: PlazaReference) -> None:
    """stop answers stopped: true but the agent goes on sending."""
    _noop(ref, "require_not_stopped")


@fault
def stop_refusal_wrong_code(ref: PlazaReference) -> None:
    _raising(ref, "require_not_stopped", "FORBIDDEN")


@fault
def foreign_context_send(ref: PlazaReference) -> None:
    """Any agent writes in any connection whose id it knows."""
    @replaces(ref, "send_text")
    def send_text(original: Any, call: Any, message: dict[str, Any], text: str) -> Any:
        conn = ref.s["connections"].get(message.get("contextId"))
        caller = call.principal.visitor_id
        if conn is not None and caller not in (conn["inviter"], conn["invitee"]) and conn["state"] == ACTIVE:
            msg = ref.store_message(conn, caller, text, message["messageId"])
            return {"task": ref.task_view(ref.create_task(caller, conn, msg), submitted=True)}
        return original(call, message, text)


@fault
def context_mismatch_accepted(ref: PlazaReference) -> None:
    """A command's connection_id wins over a different contextId without complaint."""
    @replaces(ref, "send_semantic_issues")
    def issues(original: Any, message: dict[str, Any]) -> list[Issue]:
        return [i for i in original(message) if i.path != "params.message.contextId" or i.code != "const"]


@fault
def context_mismatch_wrong_code(ref: PlazaReference) -> None:
    @replaces(ref, "send_semantic_issues")
    def issues(original: Any, message: dict[str, Any]) -> list[Issue]:
        found: list[Issue] = original(message)
        if any(i.path == "params.message.contextId" and i.code == "const" for i in found):
            raise SiteError(NOT_FOUND, "no such connection")
        return found


# ------------------------------------------------------------------ idempotency


@fault
def replay_stores_again(ref: PlazaReference) -> None:
    """Nothing is deduplicated: the same send stores the message again (and another message under a used id too)."""
    ref.used_message_id = lambda visitor_id, message: None  # type: ignore[method-assign]


@fault
def replay_new_receipt(ref: PlazaReference) -> None:
    """A replay's receipt looks like a new send (message_sent true, no original flag)."""
    @replaces(ref, "receipt")
    def receipt(original: Any, msg: dict[str, Any], replay: bool = False) -> dict[str, Any]:
        result: dict[str, Any] = original(msg, False)
        return result


@fault
def changed_body_stored(ref: PlazaReference) -> None:
    """Another message under a used messageId is stored as new."""
    @replaces(ref, "used_message_id")
    def used(original: Any, visitor_id: str, message: dict[str, Any]) -> Any:
        try:
            return original(visitor_id, message)
        except SiteError:
            return None


@fault
def consumed_wrong_code(ref: PlazaReference) -> None:
    _raising(ref, "used_message_id", NOT_PERMITTED)


@fault
def dedupe_by_text(ref: PlazaReference) -> None:
    """A text equal to one the caller already sent in the connection is taken as its replay."""
    @replaces(ref, "send_text")
    def send_text(original: Any, call: Any, message: dict[str, Any], text: str) -> Any:
        conn = ref.s["connections"].get(message.get("contextId"))
        caller = call.principal.visitor_id
        if conn is not None:
            for task in ref.s["tasks"].values():
                if task["owner"] == caller and task["connection_id"] == conn["id"] and ref.task_message(task)["text"] == text:
                    return {"task": ref.task_view(task, submitted=True, replay=True)}
        return original(call, message, text)


@fault
def replay_skips_controls(ref: PlazaReference) -> None:
    """A replay answers the stored receipt even after the peer blocked the sender."""
    _noop(ref, "check_can_replay")


@fault
def message_ids_global(ref: PlazaReference) -> None:
    """messageIds are one namespace for every agent: another agent's replay gets the first sender's task."""
    ref.message_id_key = lambda visitor_id, message_id: message_id  # type: ignore[method-assign]


@fault
def receipt_without_message_id(ref: PlazaReference) -> None:
    @replaces(ref, "receipt")
    def receipt(original: Any, msg: dict[str, Any], replay: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = original(msg, replay)
        out["message"] = {k: v for k, v in out["message"].items() if k != "id"}
        return out


# ------------------------------------------------------------------ tasks


@fault
def accept_completes_task(ref: PlazaReference) -> None:
    """Accepting an invitation completes its task (an accept taken for a chat reply)."""
    @replaces(ref, "task_state")
    def task_state(original: Any, task: dict[str, Any]) -> str:
        state: str = original(task)
        conn = ref.s["connections"][task["connection_id"]]
        return COMPLETED if state == WORKING and conn["state"] == ACTIVE and conn["inviter"] == task["owner"] else state


@fault
def peer_message_not_completing(ref: PlazaReference) -> None:
    """A task never completes, whatever the peer writes."""
    @replaces(ref, "task_state")
    def task_state(original: Any, task: dict[str, Any]) -> str:
        state: str = original(task)
        return WORKING if state == COMPLETED else state


@fault
def cancel_deletes_message(ref: PlazaReference) -> None:
    """CancelTask recalls the delivered message."""
    @replaces(ref, "rpc_cancel_task")
    def cancel(original: Any, call: Any) -> Any:
        out = original(call)
        ref.task_message(ref.owned_task(call.principal.visitor_id, call.params["id"]))["text"] = "[recalled]"
        return out


@fault
def cancel_ends_friendship(ref: PlazaReference) -> None:
    """CancelTask closes the connection."""
    @replaces(ref, "rpc_cancel_task")
    def cancel(original: Any, call: Any) -> Any:
        out = original(call)
        task = ref.owned_task(call.principal.visitor_id, call.params["id"])
        ref.s["connections"][task["connection_id"]]["state"] = CLOSED
        return out


@fault
def terminal_task_text_accepted(ref: PlazaReference) -> None:
    """A text naming a completed taskId is stored like any other (the taskId is ignored)."""
    _noop(ref, "check_task_open")


@fault
def consumed_drops_original(ref: PlazaReference) -> None:
    """A different message under a used messageId is refused, and the stored original is dropped with it."""
    @replaces(ref, "used_message_id")
    def used(original: Any, visitor_id: str, message: dict[str, Any]) -> Any:
        try:
            return original(visitor_id, message)
        except SiteError:
            for conn in ref.connections_of(visitor_id):
                for msg in conn["messages"]:
                    if msg["client_message_id"] == message["messageId"] and msg["sender"] == visitor_id:
                        msg["text"] = "[withdrawn]"
            raise


@fault
def ack_completes_task(ref: PlazaReference) -> None:
    """A receive ack by the peer completes the sender's task, as if it were a reply."""
    acked: set[str] = set()

    @replaces(ref, "cmd_receive_ack")
    def ack(original: Any, who: Principal, data: dict[str, Any]) -> Any:
        out = original(who, data)
        acked.add(who.visitor_id)
        return out

    @replaces(ref, "task_view")
    def view(original: Any, task: dict[str, Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
        out: dict[str, Any] = original(task, *args, **kwargs)
        peer = ref.peer_of(ref.s["connections"][task["connection_id"]], task["owner"])
        if out["status"]["state"] == WORKING and peer in acked:
            out["status"]["state"] = COMPLETED
        return out


@fault
def history_and_cancel_skip_auth(ref: PlazaReference) -> None:
    """A history read or a CancelTask without a valid bearer token is served as alice's."""
    from conformance.protocols.plaza.site import seeded_visitor

    @replaces(ref, "serve_a2a")
    def serve(original: Any, raw: bytes, headers: Mapping[str, str]) -> Any:
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        method = body.get("method") if isinstance(body, dict) else None
        data = (((body.get("params") or {}).get("message") or {}).get("parts") or [{}])[0].get("data") if method == "SendMessage" else None
        reading = isinstance(data, dict) and data.get("operation") == "read_conversation"
        token = ref.bearer_token(headers)
        if (method == "CancelTask" or reading) and (token is None or token not in ref.s["tokens"]):
            headers = {**dict(headers), "authorization": f"Bearer {seeded_visitor('alice')[1]}"}
        return original(raw, headers)


@fault
def respond_close_ignored(ref: PlazaReference) -> None:
    """respond close answers as done and closes nothing."""
    @replaces(ref, "respond_close")
    def close(original: Any, conn: dict[str, Any], caller: str, data: dict[str, Any]) -> None:
        return None


@fault
def presend_flags_on_every_refusal(ref: PlazaReference) -> None:
    """Every refusal carries messageSent and sendHandleConsumedByThisRequest false, not only pre-send parameter failures."""
    @replaces(ref, "rpc_error")
    def rpc_error(original: Any, err: SiteError) -> Any:
        err.metadata = {**err.metadata, "messageSent": "false", "sendHandleConsumedByThisRequest": "false"}
        return original(err)


@fault
def configuration_in_metadata_honoured(ref: PlazaReference) -> None:
    """message.metadata.configuration.returnImmediately is honoured like params.configuration's."""
    @replaces(ref, "return_immediately")
    def immediately(original: Any, call: Any) -> bool:
        meta = (call.params.get("message") or {}).get("metadata") or {}
        return bool(original(call) or (meta.get("configuration") or {}).get("returnImmediately") is True)


@fault
def configuration_at_root_honoured(ref: PlazaReference) -> None:
    """A configuration at the JSON-RPC root is taken as params.configuration."""
    @replaces(ref, "envelope")
    def envelope(original: Any, body: Any) -> Any:
        request_id, method, params = original(body)
        if isinstance(params, dict) and isinstance(body.get("configuration"), dict) and "configuration" not in params:
            params = {**params, "configuration": body["configuration"]}
        return request_id, method, params


@fault
def cancel_completed_allowed(ref: PlazaReference) -> None:
    """A completed task can be cancelled."""
    @replaces(ref, "rpc_cancel_task")
    def cancel(original: Any, call: Any) -> Any:
        task = ref.owned_task(call.principal.visitor_id, call.params["id"])
        if task["canceled_at"] is None:
            task["canceled_at"] = ref.now_ms()
        return ref.task_view(task)


@fault
def not_cancelable_wrong_code(ref: PlazaReference) -> None:
    _raising(ref, "rpc_cancel_task", INVALID_STATE)


@fault
def history_zero_ignored(ref: PlazaReference) -> None:
    """historyLength 0 is taken as "all of it"."""
    @replaces(ref, "task_view")
    def task_view(original: Any, task: dict[str, Any], history_length: int | None = None, **kw: Any) -> dict[str, Any]:
        result: dict[str, Any] = original(task, None if history_length == 0 else history_length, **kw)
        return result


@fault
def list_tasks_of_everyone(ref: PlazaReference) -> None:
    """ListTasks lists every agent's tasks."""
    @replaces(ref, "rpc_list_tasks")
    def list_tasks(original: Any, call: Any) -> Any:
        tasks = sorted(ref.s["tasks"].values(), key=lambda t: t["order"], reverse=True)
        return {"tasks": [ref.task_view(t) for t in tasks], "nextPageToken": "", "pageSize": len(tasks), "totalSize": len(tasks)}


@fault
def foreign_task_readable(ref: PlazaReference) -> None:
    """Any agent reads (and cancels) any task by its id."""
    @replaces(ref, "owned_task")
    def owned_task(original: Any, visitor_id: str, task_id: Any) -> dict[str, Any]:
        task: dict[str, Any] | None = ref.s["tasks"].get(task_id) if isinstance(task_id, str) else None
        if task is None:
            found: dict[str, Any] = original(visitor_id, task_id)
            return found
        return task


@fault
def foreign_task_cancelable(ref: PlazaReference) -> None:
    """CancelTask cancels any agent's task by its id (GetTask stays strict)."""
    @replaces(ref, "rpc_cancel_task")
    def cancel(original: Any, call: Any) -> Any:
        task = ref.s["tasks"].get(call.params["id"])
        if task is not None and task["owner"] != call.principal.visitor_id:
            task["canceled_at"] = ref.now_ms()
            return ref.task_view(task)
        return original(call)


@fault
def foreign_task_wrong_code(ref: PlazaReference) -> None:
    @replaces(ref, "owned_task")
    def owned_task(original: Any, visitor_id: str, task_id: Any) -> dict[str, Any]:
        try:
            found: dict[str, Any] = original(visitor_id, task_id)
            return found
        except SiteError as err:
            raise SiteError(NOT_FOUND if err.name == TASK_NOT_FOUND else err.name, err.message) from err


@fault
def deadline_fake_input_required(ref: PlazaReference) -> None:
    """A blocking send past the deadline answers a fake input-required task."""
    @replaces(ref, "finish_blocking")
    def finish(original: Any, task: dict[str, Any], history_length: int | None, replay: bool) -> Any:
        if ref.task_state(task) == WORKING:
            view = ref.task_view(task, history_length)
            view["status"]["state"] = "TASK_STATE_INPUT_REQUIRED"
            return {"task": view}
        return original(task, history_length, replay)


@fault
def deadline_not_retryable(ref: PlazaReference) -> None:
    """The deadline error does not say it is retryable."""
    @replaces(ref, "finish_blocking")
    def finish(original: Any, task: dict[str, Any], history_length: int | None, replay: bool) -> Any:
        try:
            return original(task, history_length, replay)
        except SiteError as err:
            err.metadata["retryable"] = "false"
            raise


# ------------------------------------------------------------------ commands (one mechanism for all 52)


def refuse_command(name: str, ref: PlazaReference) -> None:
    """Every ``name`` command with a field beyond operation is refused as invalid."""
    @replaces(ref, "command_issues")
    def command_issues(original: Any, data: Any, base: str) -> list[Issue]:
        if isinstance(data, dict) and data.get("operation") == name:
            return [Issue(f"{base}.operation", "enum")]
        result: list[Issue] = original(data, base)
        return result


def unvalidated_command(name: str, ref: PlazaReference) -> None:
    """``name`` commands are not checked against their schema (the handler gets what it gets)."""
    @replaces(ref, "command_issues")
    def command_issues(original: Any, data: Any, base: str) -> list[Issue]:
        if isinstance(data, dict) and data.get("operation") == name:
            return []
        result: list[Issue] = original(data, base)
        return result

    @replaces(ref, "run_command")
    def run_command(original: Any, call: Any, message: dict[str, Any], data: dict[str, Any]) -> Any:
        try:
            return original(call, message, data)
        except (KeyError, TypeError, ValueError, AttributeError):
            return {"message": ref.command_message(str(data.get("operation")), {"served": True}, None)}


@fault
def unknown_operation_accepted(ref: PlazaReference) -> None:
    """A data command naming no listed operation is answered as a status."""
    @replaces(ref, "command_issues")
    def command_issues(original: Any, data: Any, base: str) -> list[Issue]:
        if isinstance(data, dict) and data.get("operation") not in ref.validators.commands:
            data["operation"] = "status"
            data.clear()
            data["operation"] = "status"
        result: list[Issue] = original(data, base)
        return result


@fault
def command_answers_task(ref: PlazaReference) -> None:
    """A control command is answered by a Task instead of a Message."""
    @replaces(ref, "command_done")
    def command_done(original: Any, *args: Any) -> dict[str, Any]:
        out: dict[str, Any] = original(*args)
        message = out["message"]
        return {"task": {"id": message["messageId"], "status": {"state": "TASK_STATE_COMPLETED"}, "artifacts": [{"parts": message["parts"]}]}}


def _document() -> dict[str, Any]:
    from conformance.profiles import DATA_ROOT

    doc: dict[str, Any] = load_document(Path(DATA_ROOT) / "specs" / "agent-plaza" / "a2a-personal.json")
    return doc


def _register_commands(doc: dict[str, Any]) -> None:
    from conformance.protocols.plaza.commands import refused_fault, unvalidated_fault

    for branch in doc["schemas"]["command"]["anyOf"]:
        name = branch["properties"]["operation"]["const"]
        for fault_name, patch in ((refused_fault(name), refuse_command), (unvalidated_fault(name), unvalidated_command)):
            bound = partial(patch, name)
            bound.__name__ = fault_name  # type: ignore[attr-defined]
            bound.__doc__ = (patch.__doc__ or "").replace("``name``", name)
            FAULTS[fault_name] = bound


# ------------------------------------------------------------------ examples (one mechanism for all)


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


def refuse_example(name: str, ref: PlazaReference) -> None:
    """Requests of the kind of the example are refused as invalid parameters."""
    kind = request_kind(ref.spec["examples"][name], ref.ext)

    @replaces(ref, "serve_a2a")
    def serve_a2a(original: Any, raw: bytes, headers: Mapping[str, str]) -> Any:
        try:
            body = json.loads(raw)
        except ValueError:
            return original(raw, headers)
        if request_kind(body, ref.ext) == kind:
            return ref.error_response(body.get("id"), ref.invalid_params(str(body.get("method")), [Issue("params", "type")]))
        return original(raw, headers)


def _register_examples(doc: dict[str, Any]) -> None:
    for name in doc["examples"]:
        bound = partial(refuse_example, name)
        bound.__name__ = f"example_{name}_refused"  # type: ignore[attr-defined]
        bound.__doc__ = f"Requests of the kind of the {name} example are refused."
        FAULTS[bound.__name__] = bound  # type: ignore[attr-defined]


_DOC = _document()
_register_commands(_DOC)
_register_examples(_DOC)
