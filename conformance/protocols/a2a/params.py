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
answered otherwise. The helpers judging answers by their A2A meaning are shared with
agree.py and auth.py."""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import InitVar, dataclass, field
from typing import Any

from hypothesis import reject
from hypothesis import strategies as st

from conformance.check import Blocked, CheckContext, CheckFailed, NotApplicable
from conformance.checks.causes import BreakControl, cause_of
from conformance.declare import Each, fault, requirement
from conformance.documents.schemas import SpecError, validator_for
from conformance.faults import recodes, refuses, replaces
from conformance.generation.compiler import index_of
from conformance.generation.invalid import _MISSING, Breaks, InvalidInstance, Violation, _example, mutations
from conformance.generation.strategies import strategy_for
from conformance.model import Profile
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.client import A2AClient, a2a_error
from conformance.reference import Refusal
from conformance.transport.binding import Reply, _query_value, dig

SAFE_WEBHOOK = "http://127.0.0.1:9/conformance-webhook"  # the loopback's discard port: nothing listens
PUBLIC_WEBHOOK = "https://conformance.invalid/a2a-webhook"  # no address 13.2 asks to refuse; never resolves
UNSUPPORTED_MEDIA = "application/x-conformance-unknown"  # a well-formed media type no agent claims


# -- what the documents name ----------------------------------------------------------------
def proto_field_names() -> frozenset[str]:
    return frozenset(f.json_name for m in docs.proto().messages.values() for f in m.fields)


def named(*names: str) -> tuple[str, ...]:
    """Field names the kit handles itself, checked against the proto when loaded."""
    missing = [n for n in names if n not in proto_field_names()]
    if missing:
        raise SpecError(f"{docs.PROTO} names no field {missing}: the kit's handling of them is stale")
    return names


(TENANT, PAGE_TOKEN, EXTENSIONS, CONTEXT_ID, MESSAGE_ID, TASK_ID, ID, REFERENCE_TASK_IDS, URL, MEDIA_TYPE,
 ACCEPTED_OUTPUT_MODES, HISTORY_LENGTH, PAGE_SIZE, MESSAGE, STATUS, STATUS_AFTER, METADATA, ROLE) = named(
    "tenant", "pageToken", "extensions", "contextId", "messageId", "taskId", "id", "referenceTaskIds", "url",
    "mediaType", "acceptedOutputModes", "historyLength", "pageSize", "message", "status",
    "statusTimestampAfter", "metadata", "role")
CAPABILITIES = named("streaming", "pushNotifications", "extendedAgentCard")
SCHEME, CREDENTIALS = named("scheme", "credentials")


def standard(name: str) -> str:
    """A standard JSON-RPC error of section 9.5, by the name its table gives."""
    if name not in docs.jsonrpc_errors():
        raise SpecError(f"section 9.5 names no standard JSON-RPC error {name!r}")
    return name


INVALID_PARAMS, INTERNAL, METHOD_NOT_FOUND = (standard("InvalidParamsError"), standard("InternalError"),
                                              standard("MethodNotFoundError"))


def a2a_names(profile: Profile) -> frozenset[str]:
    """The A2A errors of the table of section 3.3.2 (with their codes in section 5.4)."""
    return frozenset(e.name for e in profile.errors.values())


def error_named(profile: Profile, name: str) -> str:
    if name not in a2a_names(profile):
        raise SpecError(f"the error table of section 5.4 names no {name!r}")
    return name


def methods(profile: Profile) -> dict[str, Any]:
    return {m.name: m for m in docs.proto().service(profile.settings["proto"]["service"])}


def capability_of(profile: Profile, method: str) -> tuple[str, str] | None:
    """The capability a method needs and the error it gets where the card declares it off
    (section 3.3.4): streaming for a server-streaming rpc, push notifications for the push
    notification config rpcs, the extended card for the rpc answering an AgentCard."""
    rpc = methods(profile)[method]
    streaming, push, card = CAPABILITIES
    if rpc.server_streaming:
        return streaming, error_named(profile, "UnsupportedOperationError")
    if "PushNotificationConfig" in rpc.name:
        return push, error_named(profile, "PushNotificationNotSupportedError")
    if rpc.response.rsplit(".", 1)[-1] == "AgentCard":
        return card, error_named(profile, "UnsupportedOperationError")
    return None


def off_error(client: A2AClient, method: str) -> str | None:
    """The error ``method`` must get because the card declares its capability off, or None."""
    need = capability_of(client.ctx.profile, method)
    return need[1] if need and not client.capability(need[0]) else None


def slug(method: str) -> str:
    """``SendMessage`` -> ``SEND-MESSAGE`` (a requirement id's spelling of a method)."""
    return docs.reason_of(method).replace("_", "-")


# -- answers by their A2A meaning -------------------------------------------------------------
def speaks_jsonrpc(ctx: CheckContext, reply: Reply) -> bool:
    return bool(ctx.profile.settings["bindings"].get(reply.binding, {}).get("kind") == "jsonrpc-http")


def error_name(ctx: CheckContext, reply: Reply) -> str | None:
    """What an error answer says, by name: an A2A error of the table (the JSON-RPC code, the
    HTTP+JSON ErrorInfo reason, or the HTTP status only one of them has), a standard JSON-RPC
    error, ``InternalError`` for an HTTP 5xx naming no A2A error, else None (an HTTP+JSON
    refusal naming none: a 400, say)."""
    if reply.ok:
        return None
    if not speaks_jsonrpc(ctx, reply) and reply.status >= 500 and not reason_given(ctx, reply):
        return INTERNAL
    return a2a_error(ctx, reply)


def reason_given(ctx: CheckContext, reply: Reply) -> bool:
    """Whether an HTTP+JSON error names an A2A error by its ErrorInfo reason (section 11.6)."""
    info = docs.error_info()
    reasons = {docs.reason_of(e.name) for e in ctx.profile.errors.values()}
    return any(isinstance(d, dict) and d.get("@type") == info["@type"] and d.get("reason") in reasons
               for d in (reply.error_data if isinstance(reply.error_data, list) else []))


def outcome(ctx: CheckContext, reply: Reply) -> str:
    """An answer in words two bindings can be compared by: ``result``, an A2A error's name,
    ``invalid`` (JSON-RPC -32602, or an HTTP+JSON 4xx naming no A2A error), ``credential``
    (a refusal about the caller: HTTP 401, 403), or what else it says."""
    if reply.ok:
        return "result"
    if reply.status in (401, 403) or cause_of(ctx, reply) == "credential":
        return "credential"
    name = error_name(ctx, reply)
    rest_refusal = (not speaks_jsonrpc(ctx, reply) and 400 <= reply.status < 500
                    and reply.status not in (404, 405))
    if name == INVALID_PARAMS or (name is None and rest_refusal):
        return "invalid"
    if name is None and not speaks_jsonrpc(ctx, reply) and reply.status in (404, 405, 501):
        return "no such route"
    return name or f"HTTP {reply.status}"


def refused_as_invalid(ctx: CheckContext, reply: Reply, what: str, allowed: tuple[str, ...] = ()) -> None:
    """Section 3.3.2: an invalid input is refused, as invalid: an error of the binding (an
    HTTP 4xx over HTTP+JSON), not a success, not a failure of the server, not an A2A error
    about something else (a task not found), not an authorization refusal; the errors
    ``allowed`` (a capability the card declares off) are answers the spec gives too."""
    ctx.expect(not reply.ok, f"{what}: accepted ({reply.describe()}); the spec wants it refused",
               kind="accepted_invalid")
    name = error_name(ctx, reply)
    if speaks_jsonrpc(ctx, reply):
        ctx.expect(reply.flagged, f"{what}: the answer is no JSON-RPC error: {reply.describe()}",
                   kind="malformed_answer")
    ctx.expect(reply.status < 500 and name != INTERNAL,
               f"{what}: the server failed instead of refusing the input: {reply.describe()}",
               kind="wrong_status")
    ctx.expect(speaks_jsonrpc(ctx, reply) or 400 <= reply.status < 500,
               f"{what}: refused with HTTP {reply.status}, not a 4xx: {reply.describe()}",
               kind="wrong_status")
    ctx.expect(reply.status != 403, f"{what}: refused as forbidden (HTTP 403), an authorization error, not a "
                                    f"validation error: {reply.describe()}", kind="wrong_status")
    ctx.expect(name in allowed or (name not in a2a_names(ctx.profile) and name != METHOD_NOT_FOUND),
               f"{what}: refused as {name}, which is about something else than the invalid input: "
               f"{reply.describe()}", kind="wrong_error_code")


# -- generated requests, made safe ---------------------------------------------------------
def fresh(kind: str) -> str:
    return f"conformance-{kind}-{uuid.uuid4().hex[:16]}"


def tidy(value: Any) -> Any:
    """A drawn JSON value every parser takes: no lone surrogates (not UTF-8), no NaN."""
    if isinstance(value, str):
        return re.sub("[\ud800-\udfff]", "", value)
    if isinstance(value, float) and not math.isfinite(value):
        return 0.0
    if isinstance(value, list):
        return [tidy(v) for v in value]
    if isinstance(value, dict):
        return {tidy(k): tidy(v) for k, v in value.items()}
    return value


def clamp(value: Any, low: int, high: int) -> Any:
    """An int32 given as a number or as ProtoJSON's decimal string, kept in ``low..high``."""
    if isinstance(value, str):
        return str(min(max(int(value), low), high)) if re.fullmatch(r"-?[0-9]+", value) else value
    return min(max(value, low), high) if isinstance(value, int) and not isinstance(value, bool) else value


def utc(value: Any) -> Any:
    """A timestamp as section 5.6.1 writes it (UTC, ``Z``, milliseconds), or a fixed one."""
    try:
        text = str(value).replace("z", "Z").replace("Z", "+00:00").replace("t", "T")
        when = dt.datetime.fromisoformat(text)
        when = when if when.tzinfo else when.replace(tzinfo=dt.UTC)
        text = when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    except (ValueError, OverflowError):
        return "2024-01-01T00:00:00.000Z"
    return text if 1 <= when.year <= 9999 else "2024-01-01T00:00:00.000Z"


def short(type_name: str) -> str:
    return type_name.rsplit(".", 1)[-1] if type_name else ""


@dataclass
class Safe:
    """Makes a drawn request of ``method`` safe and meaningful to send (module doc)."""

    client: A2AClient
    method: str
    world: list[str] = field(default_factory=list)  # tasks the check created, for ids that name a task
    used: int = 0
    config: str | None = None  # a push config of the world's task the check created (push declared on)

    @property
    def request(self) -> str:
        return str(methods(self.client.ctx.profile)[self.method].request).rsplit(".", 1)[-1]

    def names_task(self) -> bool:
        """Whether the request names a task (its id, or a push config's taskId)."""
        fields = {f.json_name for f in docs.proto().message(self.request).fields}
        return TASK_ID in fields or (ID in fields and "PushNotification" not in self.request)

    def __call__(self, drawn: Any, in_world: bool = False, tenant: bool = False) -> Any:
        """``drawn`` made safe; ``in_world``: naming a task the check created; ``tenant``: with
        the card's tenant (or the empty, unset one) in the request itself."""
        if not isinstance(drawn, dict):
            return drawn
        task = None
        if in_world and self.world:
            task = self.world[min(self.used, len(self.world) - 1)]
            self.used += 1
        out = self.message(self.request, tidy(drawn), task)
        for member in self.path_members():  # what the route's path holds: HTTP+JSON cannot go without it
            if member not in out:
                out[member] = self.task_ref(self.request, member, task)
        if tenant:
            out[TENANT] = self.client.tenant
        return out

    def path_members(self) -> list[str]:
        """The members the method's HTTP+JSON route names in its path (the tenant aside)."""
        route = docs.rest_routes(self.client.ctx.profile)[self.method][0]["path"]
        return [m for m in re.findall(r"\{(\w+)\}", route) if m != TENANT]

    def message(self, name: str, value: dict[str, Any], task: str | None) -> dict[str, Any]:
        if name not in docs.proto().messages:
            return value  # a Struct or a Value: any JSON
        fields = {f.json_name: f for f in docs.proto().message(name).fields}
        out: dict[str, Any] = {}
        for key, item in value.items():
            f = fields.get(key)
            settled = item if f is None else self.member(name, f, item, task)
            if settled is not DROP:
                out[key] = settled
        return one_each(name, out)

    def member(self, owner: str, f: Any, item: Any, task: str | None) -> Any:
        key = f.json_name
        if key in (TENANT, PAGE_TOKEN, EXTENSIONS) or (key == CONTEXT_ID and owner == "Message"):
            return DROP
        if key == MESSAGE_ID:
            return fresh("message")
        if key in (TASK_ID, ID) and isinstance(item, str):
            return self.task_ref(owner, key, task)
        if key == ROLE and owner == "Message":  # every message a request carries is the client's
            return docs.client_role()
        if key == REFERENCE_TASK_IDS and isinstance(item, list):  # tasks the client knows: its own
            return [task] if task and item else DROP
        if owner == "AuthenticationInfo" and key == SCHEME and isinstance(item, str):
            schemes = docs.example_schemes()  # a scheme of the registry the proto names
            return schemes[sum(map(ord, item)) % len(schemes)]
        if owner == "AuthenticationInfo" and key == CREDENTIALS and isinstance(item, str):
            return base64.b64encode(item.encode()).decode()  # in the scheme's form: a token68
        if key == URL and isinstance(item, str):
            return SAFE_WEBHOOK
        if key == MEDIA_TYPE and isinstance(item, str):
            return self.media(item)
        if key == ACCEPTED_OUTPUT_MODES and isinstance(item, list):
            return list(self.client.card.get("defaultOutputModes") or [])[:len(item)]
        if key == HISTORY_LENGTH:
            return clamp(item, 0, 1000)
        if key == PAGE_SIZE:
            return clamp(item, 1, self.client.ctx.limit("list_page_size_max"))
        if f.kind == "enum":
            return self.enum(f, item)
        if f.kind == "bytes" and isinstance(item, str):  # the bundle's pattern takes "0": no base64
            return base64.b64encode(item.encode()).decode()
        if f.kind == "string" and f.required and item == "":  # proto3: the empty string is unset
            return "conformance"
        if short(f.type_name) == "Timestamp":
            return utc(item)
        if f.kind == "message" and short(f.type_name) in docs.proto().messages:
            return self.nested(short(f.type_name), item, f.repeated, task)
        return item

    def nested(self, name: str, item: Any, repeated: bool, task: str | None) -> Any:
        if repeated and isinstance(item, list):
            return [self.message(name, v, task) if isinstance(v, dict) else v for v in item]
        return self.message(name, item, task) if isinstance(item, dict) else item

    def task_ref(self, owner: str, key: str, task: str | None) -> Any:
        """A task id: the check's own task (``task``) where the request names one, else one no
        agent issued; a push config's own id, one no agent issued; a webhook config inside a
        SendMessage names no task (the agent makes it)."""
        if owner == "TaskPushNotificationConfig" and self.request == "SendMessageRequest":
            return DROP  # the proto: "Task id should be empty when sending this configuration in a
            # SendMessage"; nor does the config name an id the check made for another task
        if key == ID and "PushNotification" in owner:
            return self.config if task and self.config else fresh("unknown-config")
        return task or fresh("unknown-task")

    def media(self, drawn: str) -> str:
        """One of the card's input modes: a media type outside them may be refused as invalid
        (section 3.3.2 lists "unsupported content type" among validation errors) or as
        ContentTypeNotSupportedError (3.1.1); the A2A-ERR-CONTENT-TYPE rows judge that."""
        modes = [m for m in self.client.card.get("defaultInputModes") or [] if isinstance(m, str)]
        return modes[sum(map(ord, drawn)) % len(modes)] if modes else "text/plain"

    def enum(self, f: Any, item: Any) -> Any:
        """An enum by its name (section 5.5); a REQUIRED one set (not *_UNSPECIFIED)."""
        values = docs.proto().enums[short(f.type_name)]
        if isinstance(item, int) and not isinstance(item, bool):
            item = values[item] if 0 <= item < len(values) else values[0]
        if f.required and (item not in values or item == values[0]):
            return values[1]
        return item


DROP: Any = object()


def one_each(name: str, value: dict[str, Any]) -> dict[str, Any]:
    """``value`` holding exactly one member of each oneof of message ``name`` (drawn from a
    schema without its oneof rules, ``loose``): the first it holds, else an example one."""
    for members in docs.proto().message(name).oneofs.values():
        present = [m.json_name for m in members if m.json_name in value]
        for extra in present[1:]:
            del value[extra]
        if not present and members:
            value[members[0].json_name] = example_of(members[0])
    return value


def loose(schema: Any) -> Any:
    """``schema`` without its ``allOf`` rules (the proto's oneofs): what the generator draws
    from quickly; ``Safe`` puts one member of each oneof back and the request schema judges."""
    if isinstance(schema, dict):
        return {k: loose(v) for k, v in schema.items() if k != "allOf"}
    if isinstance(schema, list):
        return [loose(v) for v in schema]
    return schema


# -- what a check sends, and how it is carried ------------------------------------------------
@dataclass
class Inputs:
    """One check's generated requests of ``method`` over the run's binding (or ``binding``)."""

    ctx: CheckContext
    method: str
    binding: InitVar[str | None] = None  # another of the card's bindings than the run's
    client: A2AClient = field(init=False)
    safe: Safe = field(init=False)

    def __post_init__(self, binding: str | None) -> None:
        self.client = A2AClient(self.ctx, binding=binding)
        self.safe = Safe(self.client, self.method)

    @property
    def schema(self) -> dict[str, Any]:
        return self.ctx.profile.operations[self.method].params_schema

    @property
    def message_schema(self) -> dict[str, Any]:
        """What the request message is by the documents: open to unknown members (section 5.7)."""
        return docs.schema(self.ctx.profile, self.safe.request, "answer")

    def send(self, params: Any) -> Reply:
        return self.client.call(self.method, params)

    def make_world(self) -> None:
        """A task the check created, for requests that name one (and for a listing to hold
        one). Where the agent makes none (it answers with a Message, or refuses), requests
        name tasks no agent issued only."""
        if not self.safe.names_task() and self.method != "ListTasks":
            return
        reply = self.client.send(self.client.drive("completed"))
        task_id = dig(reply.result, "task", "id") if reply.ok else None
        self.safe.world = [task_id] if isinstance(task_id, str) else []
        self.make_config()

    def make_config(self) -> None:
        """Where the request names a push config (Get, Delete) and the card declares push
        notifications: a config of the world's task, so an answer about it shows the request
        was read (a config no agent issued gets TaskNotFoundError unread); deleted at the end."""
        fields = {f.json_name for f in docs.proto().message(self.safe.request).fields}
        need = capability_of(self.ctx.profile, self.method)
        if not self.safe.world or ID not in fields or need is None or not self.client.capability(need[0]) \
                or "PushNotification" not in self.safe.request:
            return
        task_id = self.safe.world[0]
        reply = self.client.call("CreateTaskPushNotificationConfig", {TASK_ID: task_id, URL: SAFE_WEBHOOK})
        config = dig(reply.result, ID) if reply.ok else None
        if isinstance(config, str) and config:
            self.safe.config = config
            self.ctx.put_back(f"the push config {config} of task {task_id}", lambda: self.client.call(
                "DeleteTaskPushNotificationConfig", {TASK_ID: task_id, ID: config}).status < 500)

    def examples(self) -> list[Any]:
        """The schema's smallest request and its fullest (every optional member the schema
        lets it hold at once): the same requests on every run, whatever the budget."""
        smallest = _example(self.schema)
        if not isinstance(smallest, dict):
            return []
        return [smallest, fullest(self.schema, smallest)]

    # -- HTTP+JSON carries some breaks only ---------------------------------------------
    def carried(self, instance: Any) -> bool:
        """Whether the run's binding carries ``instance`` as this method's request with its
        break intact: a JSON-RPC params object does; over HTTP+JSON a path segment is text
        (a path member broken is another request) and so is a query parameter (a number given
        as a string reads back as valid): judged by what the server reads back."""
        binding = self.client.binding
        if binding.kind == "grpc":  # what protobuf keeps of it still breaks the message
            try:
                kept = binding.read_back(self.method, instance)
            except ValueError:
                return False
            return not validator_for(self.message_schema).is_valid(kept)
        if binding.kind != "http-routes":
            return True
        _, _, body, rest = binding.route(self.method, instance)
        taken = set(re.findall(r"\{(\w+)\}", self.chosen_path(instance)))
        given = instance if isinstance(instance, dict) else {}
        if any(not isinstance(given.get(n), str) or given.get(n) == "" for n in taken):
            return False
        if body:
            return True
        if not isinstance(rest, dict):
            return False
        read = {k: self.read_back(k, v) for k, v in rest.items() if v is not None}
        return not validator_for(self.message_schema).is_valid({**read, **{n: given[n] for n in taken}})

    def chosen_path(self, instance: Any) -> str:
        """The route template the HTTP+JSON binding takes for ``instance``."""
        given = instance if isinstance(instance, dict) else {}
        routes = self.client.binding.entry["routes"][self.method]
        usable = [r for r in routes if all(isinstance(given.get(n), str | int) and given.get(n) != ""
                                           for n in re.findall(r"\{(\w+)\}", r["path"]))]
        return str(max(usable, key=lambda r: r["path"].count("{"), default=routes[0])["path"])

    def read_back(self, key: str, value: Any) -> Any:
        """A query parameter as a server reads it by the field's proto type (section 11.5):
        numbers and booleans from their text, a repeated field from each value, the last
        value of a repeated parameter otherwise."""
        texts = _query_value(value)
        try:
            f = docs.proto().message(self.safe.request).field(key)
        except Exception:  # noqa: BLE001 - an unknown member reads back as text
            return texts[-1] if texts else ""

        def one(text: str) -> Any:
            if f.kind in ("int32", "int64", "uint32", "uint64") and re.fullmatch(r"-?[0-9]+", text):
                return int(text)
            if f.kind == "bool":
                return {"true": True, "false": False}.get(text, text)
            return text
        return [one(t) for t in texts] if f.repeated else one(texts[-1]) if texts else ""

    # -- breaks ---------------------------------------------------------------------------
    def classify(self, bad: InvalidInstance) -> str | None:
        """``must`` (a break section 3.3.2 wants refused), ``required`` (a REQUIRED member
        missing: section 5.7's SHOULD), or None (valid by the request message itself)."""
        judge = validator_for(self.message_schema)
        if judge.is_valid(bad.instance):
            return None
        if bad.violation.keyword in ("required", "minItems"):
            return "required"
        path = bad.violation.pointer.split("/")[1:]
        if bad.instance is None:  # ProtoJSON: a null message is the empty one
            return None if judge.is_valid({}) else "required"
        if at(bad.instance, path) is None and path_exists(bad.instance, path):
            unset = without(bad.instance, path)
            if unset is not DROP:  # ProtoJSON: null is the member unset
                return None if judge.is_valid(unset) else "required"
        return "must"

    def breaks(self, base: Any, kind: str) -> list[InvalidInstance]:
        """The breaks of ``base`` (a safe request) of ``kind``, with the oneof breaks the
        generator does not make (two members of one oneof, section 4.1.6's Part)."""
        if not validator_for(self.schema).is_valid(base):
            return []
        found = [*mutations(self.schema, base), *oneof_breaks(self.safe.request, base)]
        return [b for b in found if self.classify(b) == kind]

    def sweep(self, kind: str, in_world: bool = True) -> list[InvalidInstance]:
        out: list[InvalidInstance] = []
        for example in self.examples():
            out += self.breaks(self.safe(example, in_world, tenant=True), kind)
        return out

    def strategy(self, kind: str, in_world: bool = True) -> st.SearchStrategy[InvalidInstance]:
        """Breaks of ``kind`` of generated safe requests."""
        drawn = strategy_for(loose(self.schema))

        @st.composite
        def pick(draw: Any) -> InvalidInstance:
            """The break of ``kind`` at a drawn index or the first after it (each candidate
            verified and classified only when reached, not all of them first)."""
            base = self.safe(draw(drawn), in_world, tenant=True)
            if not validator_for(self.schema).is_valid(base):
                reject()
            lazy, oneofs = Breaks(self.schema, base), oneof_breaks(self.safe.request, base)
            count = len(lazy) + len(oneofs)
            start = draw(index_of(count)) if count else 0
            for step in range(count):
                i = (start + step) % count
                bad = lazy.at(i) if i < len(lazy) else oneofs[i - len(lazy)]
                if bad is not None and self.classify(bad) == kind:
                    return bad
            reject()
        return pick()


def at(value: Any, path: list[str]) -> Any:
    for key in path:
        if isinstance(value, dict):
            value = value.get(key)
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return None
    return value


def path_exists(value: Any, path: list[str]) -> bool:
    parent = at(value, path[:-1]) if path else None
    return bool(path) and isinstance(parent, dict) and path[-1] in parent


def without(value: Any, path: list[str]) -> Any:
    """``value`` with the member at ``path`` removed (DROP where it is no object member)."""
    if not path:
        return {}
    if not path_exists(value, path):
        return DROP
    out = json.loads(json.dumps(value))
    parent = at(out, path[:-1])
    del parent[path[-1]]
    return out


def fullest(schema: dict[str, Any], smallest: dict[str, Any]) -> dict[str, Any]:
    """``smallest`` with each optional member the schema names added (an example value, its
    own members grown the same way), where the request stays valid: every member sent once."""
    check = validator_for(schema)
    out = json.loads(json.dumps(smallest))
    for name, sub in (schema.get("properties") or {}).items():
        if name not in out:
            example = _example(sub)
            if example is _MISSING or not check.is_valid({**out, name: example}):
                continue
            out[name] = example
        if isinstance(out[name], dict) and isinstance(sub, dict) and sub.get("properties"):
            grown = fullest(sub, out[name])
            if check.is_valid({**out, name: grown}):
                out[name] = grown
    return out


def oneof_breaks(message: str, value: Any) -> list[InvalidInstance]:
    """Each object of ``value`` holding one member of a oneof, given a second member too
    (an example value of its proto type): the proto's oneof holds one (section 4.1.6, Part)."""
    out: list[InvalidInstance] = []
    for path, name in messages_in(message, value, ()):
        held = at(value, [str(p) for p in path])
        for members in docs.proto().message(name).oneofs.values():
            present = [m for m in members if m.json_name in held]
            absent = [m for m in members if m.json_name not in held]
            if len(present) == 1 and absent:
                extra = absent[0]
                broken = json.loads(json.dumps(value))
                target = at(broken, [str(p) for p in path])
                target[extra.json_name] = example_of(extra)
                pointer = "".join(f"/{p}" for p in (*path, extra.json_name))
                out.append(InvalidInstance(broken, Violation(pointer, "oneof", f"{present[0].json_name} and "
                                                             f"{extra.json_name}: two members of one oneof"),
                                           value))
    return out


def messages_in(name: str, value: Any, path: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], str]]:
    """Each proto message object in ``value`` (a message ``name``), with its path."""
    if not isinstance(value, dict) or name not in docs.proto().messages:
        return
    yield path, name
    for f in docs.proto().message(name).fields:
        item = value.get(f.json_name)
        if f.kind != "message" or item is None:
            continue
        items = enumerate(item) if f.repeated and isinstance(item, list) else [(None, item)]
        for index, one in items:
            where = (*path, f.json_name) if index is None else (*path, f.json_name, index)
            yield from messages_in(short(f.type_name), one, where)


def example_of(f: Any) -> Any:
    if f.kind == "bytes":
        return base64.b64encode(b"x").decode()
    if f.kind == "message":
        return "x" if short(f.type_name) == "Value" else {}
    if f.kind == "bool":
        return True
    return "x" if f.kind in ("string", "enum") else 1


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


@dataclass
class Served:
    """A valid-request row passes only on answers that show the request was read: a result,
    the capability error the card's declaration calls for, or an A2A error about the state
    of a task the check created (not a task no agent issued: that answer could come unread)."""

    ctx: CheckContext
    method: str
    judged: int = 0
    set_aside: list[str] = field(default_factory=list)

    def count(self, reply: Reply, expected: str | None, in_world: bool) -> None:
        name = error_name(self.ctx, reply)
        about_state = in_world and name != error_named(self.ctx.profile, "TaskNotFoundError")
        if reply.ok or (name is not None and (name == expected or about_state)):
            self.judged += 1

    def done(self) -> None:
        if self.judged:
            return
        why = self.set_aside[0] if self.set_aside else "each answer was an error no request needs reading for"
        raise Blocked(f"{self.method} with generated valid requests: none was shown read ({why})",
                      kind="refusal_cause")


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
    served = Served(ctx, method)
    webhook_refusable = expected is None  # where the capability is on, a loopback webhook may be refused

    def body(drawn: Any) -> None:
        for in_world in (False, True) if inputs.safe.world else (False,):
            params = inputs.safe(drawn, in_world)
            if not validator_for(inputs.schema).is_valid(params):
                continue
            reply = inputs.send(params)
            what = f"{method} with a valid request"
            if not reply.ok and cause_of(ctx, reply):
                served.set_aside.append(f"{reply.describe()} (a refusal about the caller)")
                continue
            name = error_name(ctx, reply)
            if webhook_refusable and outcome(ctx, reply) == "invalid" and SAFE_WEBHOOK in json.dumps(params) \
                    and about_the_webhook(inputs, params):
                served.set_aside.append(f"{reply.describe()} (a loopback webhook: section 13.2 lets an agent "
                                        "refuse it)")
                continue
            ctx.expect(reply.ok or name in a2a_names(ctx.profile),
                       f"{what} was refused as {outcome(ctx, reply)}, not with an A2A error about the state: "
                       f"{reply.describe()}", kind="rejected_valid")
            served.count(reply, expected, in_world)
            undo_created(inputs, params, reply)

    for example in inputs.examples():
        body(example)
    ctx.for_all(strategy_for(loose(inputs.schema)), body)
    served.done()


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


NUMBER_TEXT = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")


def lossless(valid: Any, broken: Any) -> bool:
    """Whether ``broken`` (a value of another JSON type than ``valid``) turns into a value of
    ``valid``'s type without loss: a number or a boolean where a string is wanted (12345 read
    as "12345"), a numeric string where a number is, "true" where a boolean is. A lenient parser
    reads such a value as meant: a break, but the weakest evidence of one."""
    if isinstance(valid, str):
        return isinstance(broken, int | float) and (not isinstance(broken, float) or math.isfinite(broken))
    if isinstance(valid, bool):
        return broken in ("true", "false")
    if isinstance(valid, int | float):
        return isinstance(broken, str) and NUMBER_TEXT.fullmatch(broken) is not None
    return False


def strength(bad: InvalidInstance) -> int:
    """How plainly ``bad`` breaks its request: 0 for a type break a lossless coercion undoes
    (``lossless``), 1 for every other (a REQUIRED member missing, an enum value the proto does
    not define, two members of a oneof, a bound, a value no reading turns into the type)."""
    v = bad.violation
    if v.keyword != "type" or bad.base is None:
        return 1
    path = v.pointer.split("/")[1:]
    if not (path_exists(bad.base, path) and path_exists(bad.instance, path)):
        return 1
    return 0 if lossless(at(bad.base, path), at(bad.instance, path)) else 1


@dataclass
class Weakest:
    """The findings a row holds back while it looks for a stronger one: a break only a lossless
    coercion shows (a finding quotes the strongest break the run sent), with the exchanges that
    showed it, raised only when the run shows no stronger one."""

    ctx: CheckContext
    held: list[tuple[CheckFailed, list[Any]]] = field(default_factory=list)

    def judge(self, bad: InvalidInstance, judge: Callable[[], None]) -> None:
        try:
            judge()
        except CheckFailed as exc:
            if strength(bad):
                raise
            self.held.append((exc, list(self.ctx.http.log)))

    def done(self) -> None:
        if not self.held:
            return
        exc, log = self.held[0]
        self.ctx.http.log[:] = log
        raise CheckFailed(f"{exc} (the only breaks this run saw taken are type breaks a lossless coercion "
                          f"undoes: {len(self.held)} of them)", exc.kind, exc.statement, **exc.typed)


def judge_breaks(ctx: CheckContext, inputs: Inputs, kind: str, everything: bool,
                 judge: Callable[[Reply, str], None] | None = None) -> None:
    """Send each break of ``kind`` the binding carries (the sweep, and with ``everything``
    generated ones too) and judge each answer about its break: refused as invalid, or by
    ``judge`` (a row asking for the code of a refusal). The finding quotes the strongest break
    the run shows: one a lossless coercion undoes (``strength`` 0) is held back while any
    other might still show (``Weakest``)."""
    allowed = tuple(e for e in [off_error(inputs.client, inputs.method)] if e)
    control = BreakControl(ctx)
    weakest = Weakest(ctx)
    carried = 0

    def body(bad: InvalidInstance) -> None:
        nonlocal carried
        if not inputs.carried(bad.instance):
            return
        carried += 1
        v = bad.violation
        what = (f"{inputs.method} with a request breaking '{v.keyword}' at {v.pointer or '(root)'} "
                f"({v.description})")
        reply = inputs.send(bad.instance)
        if not reply.ok and not control.about_the_break(reply, lambda: inputs.send(bad.base)):
            return
        if judge is None:
            weakest.judge(bad, lambda: refused_as_invalid(ctx, reply, what, allowed))
        elif not reply.ok:  # an accepted break is the method's own row's finding
            weakest.judge(bad, lambda: judge(reply, what))

    for bad in inputs.sweep(kind):
        body(bad)
    if everything:
        ctx.for_all(inputs.strategy(kind), body)
    weakest.done()
    if not carried:
        raise NotApplicable(f"no break of a {inputs.method} request travels over "
                            f"{inputs.client.binding.name} (its members are path segments or query text)")
    control.done(f"{inputs.method} with broken requests")


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
def tenant_demanded(ref: Any) -> None:
    """Every request without a tenant is refused as invalid params (the proto makes tenant
    optional, and the card names none)."""
    @replaces(ref, "validate")
    def validate(original: Any, method: str, params: Any) -> None:
        if isinstance(params, dict) and not params.get(TENANT):
            raise Refusal(INVALID_PARAMS, "tenant is required")
        original(method, params)


def refuses_member(name: str, method: str, path: tuple[str, ...], doc: str) -> Any:
    """A fault: requests of ``method`` holding the member at ``path`` are refused as invalid params."""
    def patch(ref: Any) -> None:
        @replaces(ref, "validate")
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
def history_length_zero_refused(ref: Any) -> None:
    """historyLength 0 is refused as invalid params (section 3.2.4: 0 asks for no history)."""
    @replaces(ref, "check_history_length")
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
    def patch(ref: Any) -> None:
        @replaces(ref, "validate")
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
def message_id_coerced(ref: Any) -> None:
    """SendMessage takes a messageId given as a JSON number or boolean, read as its text (a lenient
    parser's coercion: ProtoJSON wants a string for a string field)."""
    @replaces(ref, "validate")
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
def unknown_status_ignored(ref: Any) -> None:
    """ListTasks ignores a status filter that is no TaskState and lists unfiltered (what a
    ProtoJSON parser ignoring unknown enum values does) instead of refusing it."""
    def known(params: Any) -> Any:
        if isinstance(params, dict) and params.get(STATUS) not in (None, *docs.task_states()):
            return {k: v for k, v in params.items() if k != STATUS}
        return params

    @replaces(ref, "validate")
    def validate(original: Any, method: str, params: Any) -> None:
        original(method, known(params) if method == "ListTasks" else params)

    @replaces(ref, "op_ListTasks")
    def op(original: Any, params: Any, caller: str) -> Any:
        return original(known(params), caller)


@fault
def required_members_unchecked(ref: Any) -> None:
    """The REQUIRED members are not checked (a request missing one goes to the handler)."""
    @replaces(ref, "validate")
    def validate(original: Any, method: str, params: Any) -> None:
        schema = ref.schemas.schema(ref.methods[method].request, "answer")
        errors = [e for e in validator_for(schema).iter_errors(params)
                  if e.validator not in ("required", "minItems")] if isinstance(params, dict) else [None]
        if errors:
            original(method, params)


@fault
def invalid_params_as_invalid_request(ref: Any) -> None:
    """Over JSON-RPC, invalid params come with -32600 (Invalid Request), not -32602."""
    @replaces(ref, "jsonrpc_code")
    def code(original: Any, refusal: Refusal) -> int:
        if refusal.name == INVALID_PARAMS:
            return int(docs.jsonrpc_errors()[standard("InvalidRequestError")])
        return int(original(refusal))


@fault
def invalid_params_as_422(ref: Any) -> None:
    """Over HTTP+JSON, invalid params come with HTTP 422, not 400."""
    @replaces(ref, "http_status")
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
def unknown_request_members_refused(ref: Any) -> None:
    """A request holding a member the proto does not name is refused as invalid params."""
    from conformance.documents.schemas import validator_for

    @replaces(ref, "validate")
    def validate(original: Any, method: str, params: Any) -> None:
        original(method, params)
        closed = ref.schemas.schema(ref.methods[method].request, "closed")
        errors = list(validator_for(closed).iter_errors(params))
        if errors:
            raise Refusal(INVALID_PARAMS, f"unknown member: {errors[0].message[:160]}")
