"""Generated requests of every method, made what a client may send (params.py's module doc
says the rules), and which of their single-keyword breaks a row judges: the hooks the
engine's generated-inputs family (checks/inputs.py, generation/invalid.py) takes for A2A,
what a check sends and how the run's binding carries it."""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import re
import uuid
from collections.abc import Iterator
from dataclasses import InitVar, dataclass, field
from typing import Any

from conformance.documents.schemas import validator_for
from conformance.generation.invalid import (
    BreakSource,
    InvalidInstance,
    Violation,
    at,
    made_breaks,
    path_exists,
    schema_examples,
)
from conformance.kit.check import CheckContext
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.client import A2AClient
from conformance.protocols.a2a.names import (
    ACCEPTED_OUTPUT_MODES,
    CONTEXT_ID,
    CREDENTIALS,
    EXTENSIONS,
    HISTORY_LENGTH,
    ID,
    MEDIA_TYPE,
    MESSAGE_ID,
    PAGE_SIZE,
    PAGE_TOKEN,
    REFERENCE_TASK_IDS,
    ROLE,
    SCHEME,
    TASK_ID,
    TENANT,
    URL,
    capability_of,
    methods,
)
from conformance.transport.binding import Reply, dig

SAFE_WEBHOOK = "http://127.0.0.1:9/conformance-webhook"  # the loopback's discard port: nothing listens
PUBLIC_WEBHOOK = "https://conformance.invalid/a2a-webhook"  # no address 13.2 asks to refuse; never resolves
UNSUPPORTED_MEDIA = "application/x-conformance-unknown"  # a well-formed media type no agent claims


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
        """The schema's smallest request and its fullest (``schema_examples``)."""
        return schema_examples(self.schema)

    # -- HTTP+JSON carries some breaks only ---------------------------------------------
    def carried(self, instance: Any) -> bool:
        """Whether the run's binding carries ``instance`` as this method's request with its
        break intact, judged by what the server reads back (``Binding.read_back``): a JSON-RPC
        params object as it is; over HTTP+JSON a path segment is text (a path member broken is
        another request) and so is a query parameter (a number given as a string reads back
        as valid); over gRPC what protobuf keeps of it."""
        try:
            kept = self.client.binding.read_back(self.method, instance, query=self.read_query)
        except ValueError:
            return False
        return not validator_for(self.message_schema).is_valid(kept)

    def read_query(self, key: str, texts: list[str]) -> Any:
        """A query parameter as a server reads it by the field's proto type (section 11.5):
        numbers and booleans from their text, a repeated field from each value, the last
        value of a repeated parameter otherwise."""
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

    def breaks(self, kind: str, generated: bool = True, in_world: bool = True) -> BreakSource:
        """The breaks of ``kind`` (``classify``) of safe requests (``Safe``: naming the check's
        task where ``in_world``, with the card's tenant), with the oneof breaks the generator
        does not make (two members of one oneof, section 4.1.6's Part): the sweep's, and
        with ``generated`` drawn ones (from the schema without its oneof rules, ``loose``)."""
        return made_breaks(self.schema, make=lambda drawn: self.safe(drawn, in_world, tenant=True),
                           keep=lambda bad: self.classify(bad) == kind,
                           more=lambda base: oneof_breaks(self.safe.request, base),
                           drawn_from=loose(self.schema), generated=generated)

    def sweep(self, kind: str, in_world: bool = True) -> list[InvalidInstance]:
        """Each break of ``kind`` of the schema's smallest and fullest safe requests."""
        return self.breaks(kind, generated=False, in_world=in_world).swept()


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
