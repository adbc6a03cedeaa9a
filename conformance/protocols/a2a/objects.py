"""The JSON form of the objects the task operations answer (sections 5.5, 5.6.1, 5.7, and
the proto's Part and Artifact): member names in camelCase, enums as their names, timestamps
in UTC with Z (milliseconds as a SHOULD), and artifacts whose parts hold content.

Every answer the check gets is walked along the proto's messages (SendMessageResponse,
Task, ListTasksResponse): a member is known by the field it stands for, so ``status`` is a
TaskStatus in a Task and free-form members (Struct, Value) are never judged."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from conformance.documents.proto import Field
from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import chosen, requirement
from conformance.kit.faults import answer, replaces
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.client import A2AClient, blocked_looks
from conformance.protocols.a2a.documents import proto_at, spec
from conformance.protocols.a2a.driving import OUTCOME, drivable, driven, is_message_answer
from conformance.protocols.a2a.reference import A2AReference
from conformance.transport.http import json_excerpt

# section 5.6.1's pattern, YYYY-MM-DDTHH:mm:ss.sssZ, the fraction optional ("MAY be omitted")
UTC_Z = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z")
MILLIS = re.compile(r".*\.\d{3,}Z")  # at least milliseconds (ProtoJSON writes 3, 6 or 9 digits)
FREE_FORM = (".google.protobuf.Struct", ".google.protobuf.Value", ".google.protobuf.Any")
TIMESTAMP = ".google.protobuf.Timestamp"


@dataclass(frozen=True)
class Member:
    """One member of an answer: where it is, the message it belongs to, and its field."""

    where: str
    message: str
    key: str
    field: Field | None
    value: Any


def members(message: str, value: Any, where: str) -> Iterator[Member]:
    """Every member of ``value`` read as proto message ``message``, and of the messages it
    holds (repeated ones element by element); free-form and map members are not entered."""
    if not isinstance(value, dict) or message not in docs.proto().messages:
        return
    fields = docs.proto().message(message)
    for key, item in value.items():
        field = next((f for f in fields.fields if key in (f.json_name, f.name)), None)
        yield Member(where, message, key, field, item)
        if field is None or field.kind != "message" or field.map or field.type_name in FREE_FORM:
            continue
        for n, element in enumerate(item if field.repeated and isinstance(item, list) else [item]):
            inner = f"{where}.{key}" + (f"[{n}]" if field.repeated else "")
            yield from members(field.short_type, element, inner)


def answers(c: A2AClient) -> list[tuple[str, str, Any]]:
    """(what, proto message, answer) of each task operation the check can drive: a
    completed task sent, read and listed (with artifacts), each other outcome the agent
    can be driven to, a canceled task, and a direct Message answer. The check only looks
    at them: an operation the agent refuses leaves its answer out, and the row is blocked in
    that operation's name once the others were judged (``blocked_looks``)."""
    ctx = c.ctx
    out: list[tuple[str, str, Any]] = []
    sent = c.look("SendMessage", {"message": driven(c, "completed")}, "SendMessage")
    if is_message_answer(sent):
        raise Untested("SendMessage: the agent answered with a Message, not a Task", OUTCOME)
    task: dict[str, Any] = sent["task"] if isinstance(sent.get("task"), dict) else {}
    out.append(("SendMessage", "SendMessageResponse", sent))
    if task.get("id"):  # read once the agent stopped working on it: its artifacts, its timestamps
        c.settled(task)
    looks = [("GetTask", "Task", "GetTask", {"id": task.get("id")})]
    if task.get("contextId"):
        looks.append(("ListTasks", "ListTasksResponse", "ListTasks",
                      {"contextId": task["contextId"], "includeArtifacts": True}))
    for outcome in ("input_required", "failed", "message"):
        if drivable(ctx, outcome):
            looks.append((f"SendMessage ({outcome})", "SendMessageResponse", "SendMessage",
                          {"message": driven(c, outcome)}))
    for what, message, method, params in looks:
        got = c.look_or_later(method, params, what)
        if got is not None:
            out.append((what, message, got))
    if drivable(ctx, "long_running"):
        what = "SendMessage (long_running, returnImmediately)"
        result = c.look_or_later("SendMessage", {"message": driven(c, "long_running"),
                                                 "configuration": {"returnImmediately": True}}, what)
        if result is not None:
            out.append(("SendMessage (returnImmediately)", "SendMessageResponse", result))
            if not is_message_answer(result) and isinstance(result.get("task"), dict):
                canceled = c.call("CancelTask", {"id": result["task"].get("id")})
                if canceled.ok:  # a refusal is allowed ("success is not guaranteed")
                    out.append(("CancelTask", "Task", canceled.result))
    return out


def judged(ctx: CheckContext, picked: Any) -> list[tuple[str, Member]]:
    """(what, member) of every member of the answers that ``picked(member)`` holds for."""
    c = A2AClient(ctx)
    return [(what, m) for what, message, got in answers(c) for m in members(message, got, what) if picked(m)]


def expect_each(ctx: CheckContext, found: list[tuple[str, Member]], wrong: Any, say: Any, kind: str) -> None:
    """One sub-check per answer: no member of it is ``wrong``; then an answer the agent
    refused to give blocks the row in its operation's name."""
    for what in dict.fromkeys(w for w, _ in found):
        with ctx.subcheck(what):
            bad = [m for w, m in found if w == what and wrong(m)]
            ctx.expect(not bad, f"{what}: " + "; ".join(say(m) for m in bad[:4]), kind=kind)
    blocked_looks(ctx)


# -- names -----------------------------------------------------------------------------------
@requirement(id="A2A-JSON-CAMEL-CASE", level="MUST",
             title="Every member of the task operations' answers has its camelCase (JSON) name, never the "
                   "proto's snake_case one",
             source=spec("MUST** use **camelCase** naming for field names"),
             faults=[answer("task_snake_case_context", "op_GetTask",
                            "GetTask names the task's context context_id.",
                            edit=lambda out, *a: {("context_id" if k == "contextId" else k): v
                                                  for k, v in out.items()})])
def check_camel_case(ctx: CheckContext) -> None:
    found = judged(ctx, lambda m: m.field is not None)
    expect_each(ctx, found, lambda m: m.field is not None and m.key == m.field.name != m.field.json_name,
                lambda m: f"{m.where}.{m.key} is the proto's name; JSON's is "
                          f"{m.field.json_name if m.field else ''}",
                "schema_mismatch")


@requirement(id="A2A-JSON-ENUM-NAMES", level="MUST",
             title="Enums in the task operations' answers (TaskState, Role) are their string names, never "
                   "numbers",
             source=spec("which serializes enums as their string names"),
             faults=["state_as_number", "role_as_number"])
def check_enum_names(ctx: CheckContext) -> None:
    found = judged(ctx, lambda m: m.field is not None and m.field.kind == "enum")
    ctx.expect(found, "no answer showed a task state or a role (TaskStatus.state is REQUIRED)",
               kind="malformed_answer")

    def names(m: Member) -> tuple[str, ...]:
        return docs.proto().enums.get(m.field.short_type if m.field else "", ())

    expect_each(ctx, found, lambda m: not (isinstance(m.value, str) and m.value in names(m)),
                lambda m: f"{m.where}.{m.key} is {json_excerpt(m.value)}, not one of the names of "
                          f"{m.field.short_type if m.field else ''}", "schema_mismatch")


def numbered(out: dict[str, Any], path: tuple[str, ...], enum: str) -> None:
    """A fault's edit: the enum at ``path`` of ``out`` as its number."""
    node: Any = out
    for key in path[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    if isinstance(node, dict) and node.get(path[-1]) in docs.proto().enums[enum]:
        node[path[-1]] = docs.proto().enums[enum].index(node[path[-1]])


@check_enum_names.fault
def state_as_number(ref: A2AReference) -> None:
    """GetTask shows the task's state as its enum number."""
    @replaces(ref.op_GetTask)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        out: dict[str, Any] = original(params, caller)
        numbered(out, ("status", "state"), "TaskState")
        return out


@check_enum_names.fault
def role_as_number(ref: A2AReference) -> None:
    """The messages of a task's history show their role as its enum number."""
    @replaces(ref.view)
    def view(original: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        out: dict[str, Any] = original(*args, **kwargs)
        for message in out.get("history") or []:
            numbered(message, ("role",), "Role")
        return out


# -- timestamps -------------------------------------------------------------------------------
def timestamps(ctx: CheckContext) -> list[tuple[str, Member]]:
    found = judged(ctx, lambda m: m.field is not None and m.field.type_name == TIMESTAMP)
    if not found:
        blocked_looks(ctx)
        raise Untested("no answer of the agent carried a timestamp (status.timestamp is optional)", OUTCOME)
    return found


@requirement(id="A2A-JSON-TIMESTAMP-UTC", level="MUST",
             title="Timestamps in the task operations' answers are ISO 8601 strings in UTC, with Z and no "
                   "other offset",
             source=spec("these timestamps **MUST** be represented as ISO 8601 formatted strings in UTC"),
             faults=["timestamp_with_offset"])
def check_timestamp_utc(ctx: CheckContext) -> None:
    expect_each(ctx, timestamps(ctx), lambda m: not (isinstance(m.value, str) and UTC_Z.fullmatch(m.value)),
                lambda m: f"{m.where}.{m.key} is {json_excerpt(m.value)}: expected "
                          "YYYY-MM-DDTHH:mm:ss[.sss]Z (UTC, 'Z', no other offset)", "schema_mismatch")


@check_timestamp_utc.fault
def timestamp_with_offset(ref: A2AReference) -> None:
    """Status timestamps carry the offset +00:00 instead of Z."""
    @replaces(ref.set_status)
    def set_status(original: Any, task: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        original(task, *args, **kwargs)
        task["status"]["timestamp"] = task["status"]["timestamp"].replace("Z", "+00:00")


@requirement(id="A2A-JSON-TIMESTAMP-MS", level="SHOULD",
             title="Timestamps in the task operations' answers have (at least) millisecond precision",
             source=spec("Millisecond precision **SHOULD** be used where available"),
             faults=["timestamp_seconds_only"])
def check_timestamp_ms(ctx: CheckContext) -> None:
    found = timestamps(ctx)

    def precise(m: Member) -> bool:
        return isinstance(m.value, str) and bool(MILLIS.fullmatch(m.value))

    # ProtoJSON writes no fraction for an instant that falls on a whole second (a gRPC
    # Timestamp with 0 nanos, one in a thousand): a field whose other values carry
    # milliseconds shows the precision is used, so only a field never precise breaks it
    precise_fields = {(m.message, m.key) for _, m in found if precise(m)}
    expect_each(ctx, found, lambda m: (m.message, m.key) not in precise_fields and not precise(m),
                lambda m: f"{m.where}.{m.key} is {json_excerpt(m.value)}: no milliseconds", "expectation")


@check_timestamp_ms.fault
def timestamp_seconds_only(ref: A2AReference) -> None:
    """Status timestamps are whole seconds."""
    @replaces(ref.set_status)
    def set_status(original: Any, task: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        original(task, *args, **kwargs)
        task["status"]["timestamp"] = re.sub(r"\.\d+Z$", "Z", task["status"]["timestamp"])


# -- parts -------------------------------------------------------------------------------------
def contents(part: Any) -> list[str]:
    """The members of the Part's content oneof that ``part`` holds."""
    oneof = docs.proto().message("Part").oneofs["content"]
    return [f.json_name for f in oneof if isinstance(part, dict) and f.json_name in part] if part else []


def artifacts_changed(out: dict[str, Any], change: Any) -> None:
    """A fault's edit: each artifact of a Task answer gets ``change(parts)`` as its parts."""
    for artifact in out.get("artifacts") or []:
        artifact["parts"] = change(artifact.get("parts") or [])


def artifacts(ctx: CheckContext) -> list[tuple[str, Member]]:
    found = judged(ctx, lambda m: m.message == "Artifact" and m.key == "parts")
    if not found:
        blocked_looks(ctx)
        raise Untested("no answer of the agent carried an artifact", OUTCOME)
    return found


@requirement(id="A2A-JSON-ARTIFACT-PARTS", level="MUST",
             title="Each artifact holds at least one part, and each part at most one content member (text, "
                   "raw, url, data)",
             source=proto_at("The content of the artifact. Must contain at least one part."),
             faults=[answer("artifact_without_parts", "op_GetTask", "GetTask shows an artifact with no part.",
                            edit=lambda out, *a: artifacts_changed(out, lambda parts: [])),
                     answer("part_text_and_url", "op_GetTask",
                            "GetTask shows an artifact part with text and url.",
                            edit=lambda out, *a: artifacts_changed(out, lambda parts: [
                                {**p, "url": "https://example.invalid/echo"} for p in parts]))])
def check_artifact_parts(ctx: CheckContext) -> None:
    """Section 5.7: a REQUIRED array "MUST contain at least one element"; a oneof holds one
    member at most."""
    expect_each(ctx, artifacts(ctx),
                lambda m: not isinstance(m.value, list) or not m.value
                or any(len(contents(p)) > 1 for p in m.value),
                lambda m: f"{m.where}.parts is {json_excerpt(m.value)}: at least one part, each with at most "
                          "one of text, raw, url, data", "schema_mismatch")


@requirement(id="A2A-JSON-PART-CONTENT", level="SHOULD",
             title="Each part of an artifact holds content: one of text, raw, url, data",
             source=chosen("a Part is \"a container for a section of communication content\" (the proto), "
                           "its content a oneof: a part holding none of it carries nothing"),
             faults=[answer("part_without_content", "op_GetTask",
                            "GetTask shows an artifact part with no content.",
                            edit=lambda out, *a: artifacts_changed(out, lambda parts: [
                                {"mediaType": "text/plain"}]))])
def check_part_content(ctx: CheckContext) -> None:
    expect_each(ctx, artifacts(ctx),
                lambda m: isinstance(m.value, list) and any(len(contents(p)) != 1 for p in m.value),
                lambda m: f"{m.where}.parts is {json_excerpt(m.value)}: a part without content",
                "expectation")
