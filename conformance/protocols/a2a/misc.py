"""What remains of the core operations (sections 3.3.1, 3.4.3, 3.7, 7.6.1, 13.4, 14.1.1 and the
proto): HTTP+JSON bodies in UTF-8, bytes as base64, reads that change nothing, a repeated
messageId answered or refused as documented, a new task in a known context, results as
artifacts, output within the accepted modes, unexpected file media types refused, and a task
asking for authorization that says so and takes messages.

The agent is not the kit's to choose: a check that needs an outcome the agent did not reach
is untested (send.py's helpers)."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator
from typing import Any

from conformance.check import CheckContext, NotApplicable, Untested
from conformance.checks.expect import expect_refused
from conformance.declare import requirement
from conformance.documents.schemas import schema_errors
from conformance.faults import replaces
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.cards import extended_card
from conformance.protocols.a2a.client import A2AClient, a2a_error, blocked_looks, state
from conformance.protocols.a2a.documents import proto_at, schema, spec
from conformance.protocols.a2a.driving import (
    OUTCOME,
    driven,
    fetched,
    follow_up,
    new_task,
    reaching,
    result_of,
    task_answer,
)
from conformance.reference import Refusal
from conformance.transport.binding import Reply
from conformance.transport.http import json_excerpt

REST = "http-routes"
NON_ASCII = "conformance: héllo, naïve café — 日本語 ✓ 🙂"
RAW_BYTES = "conformance raw bytes: ✓ ünïcode".encode()
UNEXPECTED_MEDIA = "application/x-conformance-unexpected"


def parts_in(value: Any, where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every Part of an answer (a member of a ``parts`` list, anywhere), with where it is."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "parts" and isinstance(item, list):
                yield from ((f"{where}/parts/{i}", p) for i, p in enumerate(item) if isinstance(p, dict))
            else:
                yield from parts_in(item, f"{where}/{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from parts_in(item, f"{where}/{i}")


def own_message(task: dict[str, Any], message_id: str) -> dict[str, Any] | None:
    """The message of the kit's (by its messageId) in a task's history, where the agent keeps it."""
    history = task.get("history")
    return next((m for m in history if isinstance(m, dict) and m.get("messageId") == message_id), None) \
        if isinstance(history, list) else None


def with_part(c: A2AClient, part: dict[str, Any], outcome: str = "completed") -> dict[str, Any]:
    """The message driving the agent to ``outcome``, with ``part`` added after its own."""
    message = driven(c, outcome)
    return {**message, "parts": [*message.get("parts", []), part]}


def plain_with(c: A2AClient, part: dict[str, Any]) -> dict[str, Any]:
    """An ordinary message with ``part`` added (for a request the agent may refuse)."""
    message = c.message()
    return {**message, "parts": [*message["parts"], part]}


# -- UTF-8 ---------------------------------------------------------------------------------------
def utf8_body(ctx: CheckContext, reply: Reply, what: str) -> None:
    """An application/a2a+json body is UTF-8: its bytes decode, and a charset, where named, says so."""
    try:
        reply.http.content.decode("utf-8")
    except UnicodeDecodeError as exc:
        ctx.fail(f"{what}: the body is not UTF-8 ({exc}): {reply.http.content[:120]!r}",
                 kind="malformed_answer")
    media = reply.http.headers.get("content-type", "")
    charset = re.search(r"charset=\"?([\w-]+)", media, re.IGNORECASE)
    ctx.expect(charset is None or charset.group(1).lower().replace("_", "-") in ("utf-8", "utf8"),
               f"{what}: Content-Type {media!r} names another charset than UTF-8", kind="malformed_answer")


@requirement(id="A2A-JSON-UTF8", level="MUST",
             title="Over HTTP+JSON, application/a2a+json bodies are UTF-8: answers decode as UTF-8, and "
                   "non-ASCII text sent in UTF-8 is read as such",
             source=spec("UTF-8 encoding MUST be used for JSON text"),
             faults=["rest_body_latin1", "request_read_as_latin1"])
def check_json_utf8(ctx: CheckContext) -> None:
    """The kit sends its message as raw UTF-8 (not \\u escapes); where the task's history keeps
    that message (its messageId), its text is what was sent: a body read in another encoding
    would have changed it."""
    c = A2AClient(ctx)  # first: it finds the binding's interface on the card
    if c.binding.kind != REST:
        raise NotApplicable("application/a2a+json is the HTTP+JSON binding's media type (section 14.1)")
    message = with_part(c, {"text": NON_ASCII})
    params = {"message": message}
    sent = c.call("SendMessage", params, raw=json.dumps(params, ensure_ascii=False))
    with ctx.subcheck("SendMessage answer"):
        utf8_body(ctx, sent, "SendMessage's answer")
    task = task_answer(ctx, sent, "SendMessage with non-ASCII text")
    got = c.get(task["id"])
    with ctx.subcheck("GetTask answer"):
        utf8_body(ctx, got, "GetTask's answer")
    kept = own_message(got.result if got.ok and isinstance(got.result, dict) else {}, message["messageId"])
    if kept is None:
        return
    with ctx.subcheck("the message as the task keeps it"):
        texts = [p.get("text") for _, p in parts_in(kept)]
        ctx.expect(NON_ASCII in texts, f"the task's history keeps the kit's message {message['messageId']} "
                                       f"with texts {texts!r}; it was sent as {NON_ASCII!r} in UTF-8",
                   kind="expectation")


@check_json_utf8.fault
def rest_body_latin1(ref: Any) -> None:
    """HTTP+JSON answers are encoded in ISO-8859-1, not UTF-8."""
    from starlette.responses import Response

    @replaces(ref, "rest_response")
    def rest_response(original: Any, body: Any, status: int = 200) -> Any:
        text = json.dumps(body, ensure_ascii=False).encode("latin-1", errors="replace")
        return Response(text, status_code=status, media_type="application/a2a+json")


def mangled(message: Any) -> Any:
    """``message`` with the text of its parts as bytes read in ISO-8859-1."""
    if not isinstance(message, dict):
        return message
    parts = [{**p, "text": p["text"].encode().decode("latin-1")} if isinstance(p, dict)
             and isinstance(p.get("text"), str) else p for p in message.get("parts", [])]
    return {**message, "parts": parts}


@check_json_utf8.fault
def request_read_as_latin1(ref: Any) -> None:
    """Request bodies are read as ISO-8859-1: a message's non-ASCII text is stored garbled."""
    @replaces(ref, "op_SendMessage")
    def send(original: Any, params: dict[str, Any], caller: str) -> Any:
        return original({**params, "message": mangled(params.get("message"))}, caller)


# -- bytes as base64 -----------------------------------------------------------------------------
def base64_bytes(value: Any) -> bytes | None:
    """The bytes of a base64 string (standard or URL-safe alphabet, padded or not: ProtoJSON
    readers take each), or None when it is not one."""
    if not isinstance(value, str):
        return None
    text = value.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def input_mode(c: A2AClient, prefer: str = "text/plain") -> str:
    modes = c.card.get("defaultInputModes")
    modes = [m for m in modes if isinstance(m, str)] if isinstance(modes, list) else []
    return prefer if prefer in modes or not modes else modes[0]


@requirement(id="A2A-JSON-BYTES-BASE64", level="MUST",
             title="Bytes travel as base64 in JSON: a raw part the kit sends in base64 is accepted, and "
                   "every raw part in an answer is base64 (the kit's own, where kept, decodes to what was "
                   "sent)",
             source=proto_at("In JSON serialization, this is encoded as a base64 string",
                             after="message Part"),
             faults=["raw_part_refused", "raw_part_stored_decoded"])
def check_bytes_base64(ctx: CheckContext) -> None:
    """A refusal for its media type (ContentTypeNotSupportedError) leaves it untested: the
    agent may not take files of that type."""
    c = A2AClient(ctx)
    part = {"raw": base64.b64encode(RAW_BYTES).decode(), "mediaType": input_mode(c),
            "filename": "conformance.txt"}
    message = plain_with(c, part)  # not driven: a refused message would leave the agent's script
    reply = c.send(message)
    if not reply.ok and a2a_error(ctx, reply) == "ContentTypeNotSupportedError":
        raise Untested(f"the agent refused a raw part of media type {part['mediaType']} for its type "
                       f"({reply.describe()})", "other")
    ctx.expect(reply.ok, f"SendMessage with a raw part in base64 was refused: {reply.describe()}",
               kind="rejected_valid")  # accepted: judged even where no answer shows the part again
    result = result_of(ctx, reply, "SendMessage with a raw part in base64")
    answers: list[tuple[str, Any]] = [("SendMessage", result)]
    task = result.get("task")
    if isinstance(task, dict) and isinstance(task.get("id"), str):
        answers.append(("GetTask", fetched(c, task["id"])))
    for name, value in answers:
        for where, p in parts_in(value):
            if "raw" in p:
                with ctx.subcheck(f"{name} {where}"):
                    ctx.expect(base64_bytes(p["raw"]) is not None,
                               f"{name}: the raw part at {where} is not base64: {json_excerpt(p['raw'])}",
                               kind="schema_mismatch")
        kept = own_message(value.get("task", value) if isinstance(value, dict) else {}, message["messageId"])
        raws = [p.get("raw") for _, p in parts_in(kept or {}) if "raw" in p]
        if raws:
            with ctx.subcheck(f"{name}: the kit's message as kept"):
                ctx.expect(RAW_BYTES in [base64_bytes(r) for r in raws],
                           f"{name}: the kit's raw part is kept as {json_excerpt(raws)}, which does not "
                           f"decode to the bytes sent ({base64.b64encode(RAW_BYTES).decode()!r})",
                           kind="expectation")


@check_bytes_base64.fault
def raw_part_refused(ref: Any) -> None:
    """A raw part is refused as invalid parameters (its base64 taken for something else)."""
    @replaces(ref, "check_media_types")
    def check(original: Any, message: dict[str, Any]) -> None:
        if any(isinstance(p, dict) and "raw" in p for p in message.get("parts", [])):
            raise Refusal("InvalidParamsError", "raw must be hexadecimal", data={"field": "message.parts"})
        original(message)


@check_bytes_base64.fault
def raw_part_stored_decoded(ref: Any) -> None:
    """A raw part's bytes are decoded and kept (and answered) as text in ``raw``, not base64."""
    def decoded(message: Any) -> Any:
        parts = [{**p, "raw": base64.b64decode(p["raw"]).decode(errors="replace")} if isinstance(p, dict)
                 and isinstance(p.get("raw"), str) else p for p in message.get("parts", [])]
        return {**message, "parts": parts}

    @replaces(ref, "op_SendMessage")
    def send(original: Any, params: dict[str, Any], caller: str) -> Any:
        return original({**params, "message": decoded(params["message"])}, caller)


# -- idempotency -----------------------------------------------------------------------------
def settled(task: dict[str, Any]) -> bool:
    return state(task) in (*docs.terminal_states(), *docs.interrupted_states())


def same_twice(ctx: CheckContext, c: A2AClient, method: str, params: dict[str, Any], what: str,
               ignore: tuple[str, ...] = ()) -> None:
    """``method`` twice with nothing changed between: the same answer (``ignore``'s members
    aside). The first is a look: refused, the row is blocked in the operation's own name."""
    first = c.look_or_later(method, params, what)
    if first is None:
        return
    second = c.call(method, params)
    ctx.expect(second.ok, f"{what}: served once, then refused: {second.describe()}", kind="rejected_valid")
    views = [{k: v for k, v in r.items() if k not in ignore} if isinstance(r, dict) else r
             for r in (first, second.result)]
    ctx.expect(views[0] == views[1], f"{what} twice with nothing changed between answered differently: "
                                     f"{json_excerpt(views[0])} then {json_excerpt(views[1])}",
               kind="state_changed")


@requirement(id="A2A-IDEM-GET", level="MUST",
             title="GetTask, ListTasks and GetExtendedAgentCard repeated with nothing changed between give "
                   "the same answer",
             source=spec("**Get operations** (Get Task, List Tasks, Get Extended Agent Card) are naturally "
                         "idempotent"),
             faults=["get_task_counts_reads", "list_tasks_counts_reads"])
def check_idem_get(ctx: CheckContext) -> None:
    """About a task the check made, in a state that does not move by itself (terminal or
    interrupted); ListTasks filtered to its context. A page token is opaque: a new one for
    the same page is not judged."""
    c = A2AClient(ctx)
    task = c.settled(new_task(c))
    if not settled(task):
        raise Untested(f"the agent left the task in {state(task)!r}, which may still change", OUTCOME)
    with ctx.subcheck("GetTask"):
        same_twice(ctx, c, "GetTask", {"id": task["id"]}, f"GetTask {task['id']}")
    if isinstance(task.get("contextId"), str):
        with ctx.subcheck("ListTasks"):
            same_twice(ctx, c, "ListTasks", {"contextId": task["contextId"]},
                       f"ListTasks of context {task['contextId']}", ignore=("nextPageToken",))
    if extended_card(c) is not None:
        with ctx.subcheck("GetExtendedAgentCard"):
            same_twice(ctx, c, "GetExtendedAgentCard", {}, "GetExtendedAgentCard")
    blocked_looks(ctx)


def count_read(task: dict[str, Any]) -> None:
    task["metadata"] = {**task.get("metadata", {}), "reads": task.get("metadata", {}).get("reads", 0) + 1}


@check_idem_get.fault
def get_task_counts_reads(ref: Any) -> None:
    """Each GetTask counts itself in the task's metadata (a read changes the task)."""
    @replaces(ref, "op_GetTask")
    def get(original: Any, params: dict[str, Any], caller: str) -> Any:
        task = ref.tasks.get(params.get("id"))
        if isinstance(task, dict):
            count_read(task)
        return original(params, caller)


@check_idem_get.fault
def list_tasks_counts_reads(ref: Any) -> None:
    """Each ListTasks counts itself in the metadata of every task it lists."""
    @replaces(ref, "op_ListTasks")
    def listing(original: Any, params: dict[str, Any], caller: str) -> Any:
        out = original(params, caller)
        for shown in out.get("tasks", []):
            count_read(ref.tasks[shown["id"]])
        return out


def documented(ctx: CheckContext, reply: Reply) -> bool:
    """A refusal the documents name for a request: an A2A error of the table, or a JSON-RPC
    error of section 9.5 other than an internal one; over HTTP+JSON, a 4xx."""
    name = a2a_error(ctx, reply)
    if name == "InternalError" or reply.status >= 500:
        return False
    if ctx.binding.kind == REST:
        return 400 <= reply.status < 500
    return name is not None


@requirement(id="A2A-IDEM-SEND", level="MUST",
             title="A SendMessage repeating a messageId is answered (the same task or a new one) or refused "
                   "with a documented error, never failed",
             source=spec("**Send Message** operations MAY be idempotent"),
             faults=["repeated_message_internal_error"])
def check_idem_send(ctx: CheckContext) -> None:
    """Section 3.3.1 lets the agent detect the duplicate (the same task again) or not (a new
    task): both pass; section 3.3.2 wants any error an appropriate one."""
    c = A2AClient(ctx)
    message = driven(c, "completed")
    first = c.send(message)
    task_answer(ctx, first, "SendMessage")
    again = c.send(driven(c, "completed", messageId=message["messageId"]))
    if again.ok:  # served: the same task or a new one, as a SendMessageResponse holding one
        answer = again.result if isinstance(again.result, dict) else {}
        ctx.expect("task" in answer or "message" in answer,
                   f"SendMessage repeating messageId {message['messageId']} was served with no task or "
                   f"message: {again.describe()}", kind="malformed_answer")
        return
    ctx.expect(documented(ctx, again), f"SendMessage repeating messageId {message['messageId']} failed with "
                                       "an "
                                       f"error the documents do not name for it: {again.describe()}",
               kind="wrong_error_code")


@check_idem_send.fault
def repeated_message_internal_error(ref: Any) -> None:
    """A repeated messageId makes the agent fail with an internal error."""
    seen: set[str] = set()

    @replaces(ref, "op_SendMessage")
    def send(original: Any, params: dict[str, Any], caller: str) -> Any:
        message_id = str(params["message"].get("messageId"))
        if message_id in seen:
            raise Refusal("InternalError", "duplicate key", status=500)
        seen.add(message_id)
        return original(params, caller)


# -- contexts and results -------------------------------------------------------------------------
@requirement(id="A2A-MULTI-NEW-TASK-IN-CONTEXT", level="MUST",
             title="A message naming a known contextId and no taskId is answered with a new task in that "
                   "context (or a Message, or refused)",
             source=spec("use `contextId` without `taskId` to start a new task within an existing "
                         "conversation"),
             faults=["known_context_replaced", "known_context_continues_task"])
def check_new_task_in_context(ctx: CheckContext) -> None:
    """The context is one the agent made (for a completed task of the check's); a refusal
    (section 3.4.1: agents may expire contexts) or a Message answer leaves it untested."""
    c = A2AClient(ctx)
    first = reaching(c)
    context = first.get("contextId")
    if not isinstance(context, str) or not context:
        raise Untested("the agent gave the task no contextId", OUTCOME)
    reply = c.send(driven(c, "completed", contextId=context))
    if not reply.ok:
        raise Untested(f"the agent refused a new message in its context {context} ({reply.describe()})",
                       OUTCOME)
    task = task_answer(ctx, reply, f"SendMessage with contextId {context} and no taskId")
    ctx.expect(task["id"] != first["id"], f"a message naming context {context} and no taskId was answered "
                                          "with the "
                                          f"earlier task {first['id']}, not a new one", kind="expectation")
    ctx.expect(task.get("contextId") == context, f"the new task is in context {task.get('contextId')!r}, "
                                                 "not the "
                                                 f"one named, {context}", kind="expectation")


def known_context(ref: Any, params: dict[str, Any]) -> Any:
    """The task of the context a message without taskId names, where one exists."""
    message = params.get("message") or {}
    if message.get("taskId") or not message.get("contextId"):
        return None
    in_context = [t for t in ref.tasks.values() if t["contextId"] == message["contextId"]]
    return in_context[-1] if in_context else None


@check_new_task_in_context.fault
def known_context_replaced(ref: Any) -> None:
    """A message naming a context the agent made (and no taskId) gets a new task in a new context."""
    @replaces(ref, "op_SendMessage")
    def send(original: Any, params: dict[str, Any], caller: str) -> Any:
        if known_context(ref, params) is not None:
            params = {**params, "message": {k: v for k, v in params["message"].items() if k != "contextId"}}
        return original(params, caller)


@check_new_task_in_context.fault
def known_context_continues_task(ref: Any) -> None:
    """A message naming a context the agent made (and no taskId) is added to the context's latest
    task, which is answered again."""
    @replaces(ref, "op_SendMessage")
    def send(original: Any, params: dict[str, Any], caller: str) -> Any:
        task = known_context(ref, params)
        if task is None:
            return original(params, caller)
        task.setdefault("history", []).append({**params["message"], "taskId": task["id"]})
        return {"task": ref.view(task)}


@requirement(id="A2A-TASK-RESULTS-AS-ARTIFACTS", level="SHOULD",
             title="A completed task returns its results as artifacts, not in messages",
             source=spec("Results SHOULD BE returned using Artifacts associated with a Task"),
             faults=["results_in_status_message"])
def check_results_as_artifacts(ctx: CheckContext) -> None:
    c = A2AClient(ctx)
    task = fetched(c, reaching(c)["id"])
    artifacts = task.get("artifacts")
    ctx.expect(isinstance(artifacts, list) and artifacts,
               f"the completed task {task['id']} has no artifacts (status message: "
               f"{json_excerpt(task.get('status', {}).get('message'))}): section 3.7 wants results as "
               "artifacts",
               kind="expectation")


@check_results_as_artifacts.fault
def results_in_status_message(ref: Any) -> None:
    """A completed task carries its result in its status message, not as an artifact."""
    def complete(task: dict[str, Any], text: str) -> None:
        ref.set_status(task, "completed", text)
    ref.complete = complete


# -- media types ---------------------------------------------------------------------------------
def covers(mode: str, media: str) -> bool:
    """Whether accepted mode ``mode`` (``type/subtype``, ``type/*`` or ``*/*``) takes ``media``."""
    want, got = mode.split(";")[0].strip().lower(), media.split(";")[0].strip().lower()
    return want in ("*/*", got) or (want.endswith("/*") and got.startswith(want[:-1]))


@requirement(id="A2A-SEND-OUTPUT-MODES", level="SHOULD",
             title="Given acceptedOutputModes, the parts of the task's output are of those media types",
             source=proto_at("Agents SHOULD use this to tailor their output",
                             after="message SendMessageConfiguration"),
             faults=["output_modes_ignored"])
def check_output_modes(ctx: CheckContext) -> None:
    """Each artifact part's mediaType (a text part without one is text/plain)."""
    c = A2AClient(ctx)
    modes = c.card.get("defaultOutputModes")
    modes = [m for m in modes if isinstance(m, str)] if isinstance(modes, list) else []
    accepted = ["text/plain"] if "text/plain" in modes or not modes else modes[:1]
    task = reaching(c, configuration={"acceptedOutputModes": accepted})
    shown = [(where, p.get("mediaType") or ("text/plain" if "text" in p else None))
             for where, p in parts_in(task.get("artifacts", []), "artifacts")]
    judged = [(where, media) for where, media in shown if isinstance(media, str)]
    if not judged:
        raise Untested("the task's artifacts hold no part of a known media type", OUTCOME)
    for where, media in judged:
        with ctx.subcheck(where):
            ctx.expect(any(covers(mode, media) for mode in accepted),
                       f"the output part at {where} is {media}; acceptedOutputModes was {accepted}",
                       kind="expectation")


@check_output_modes.fault
def output_modes_ignored(ref: Any) -> None:
    """The agent adds a JSON part to its output whatever acceptedOutputModes says."""
    @replaces(ref, "complete")
    def complete(original: Any, task: dict[str, Any], text: str) -> None:
        original(task, text)
        task["artifacts"][-1]["parts"].append({"data": {"echo": text}, "mediaType": "application/json"})


def input_modes(card: dict[str, Any]) -> list[str]:
    """The media types the card says the agent takes (its defaults and every skill's)."""
    modes = list(card.get("defaultInputModes") or [])
    for skill in card.get("skills") or []:
        if isinstance(skill, dict):
            modes += list(skill.get("inputModes") or [])
    return [str(m) for m in modes]


@requirement(id="A2A-SEND-MEDIA-TYPE-REFUSED", level="SHOULD",
             title="A file part of a media type the card does not name is refused",
             source=spec("reject unexpected media types", after="### 13.4"),
             faults=["file_media_type_unchecked"])
def check_media_type_refused(ctx: CheckContext) -> None:
    c = A2AClient(ctx)
    modes = input_modes(c.card)
    if any(covers(mode, UNEXPECTED_MEDIA) for mode in modes):
        raise Untested(f"the card's input modes {modes} take any media type", "other")
    part = {"raw": base64.b64encode(b"conformance").decode(), "mediaType": UNEXPECTED_MEDIA,
            "filename": "conformance.bin"}
    reply = c.send(plain_with(c, part))  # not driven: a refused message would leave the agent's script
    expect_refused(ctx, reply, f"SendMessage with a file part of media type {UNEXPECTED_MEDIA} (input "
                               f"modes: {modes})")


@check_media_type_refused.fault
def file_media_type_unchecked(ref: Any) -> None:
    """File parts (raw or url) are taken whatever their media type."""
    @replaces(ref, "check_media_types")
    def check(original: Any, message: dict[str, Any]) -> None:
        original({**message, "parts": [p for p in message.get("parts", [])
                                       if not (isinstance(p, dict) and ("raw" in p or "url" in p))]})


# -- in-task authorization ----------------------------------------------------------------------
@requirement(id="A2A-TASK-AUTH-REQUIRED-MESSAGE", level="MUST",
             title="A task in TASK_STATE_AUTH_REQUIRED carries a status message explaining the authorization",
             source=spec("MUST include a TaskStatus message explaining the required authorization"),
             faults=["auth_required_without_message"])
def check_auth_required_message(ctx: CheckContext) -> None:
    """The exception ("negotiated out-of-band or via an extension") cannot hold for the kit's
    request: it activates no extension, and negotiated nothing out of band."""
    c = A2AClient(ctx)
    task = reaching(c, "auth_required")
    for what, shown in (("SendMessage", task), ("GetTask", fetched(c, task["id"]))):
        with ctx.subcheck(what):
            message = (shown.get("status") or {}).get("message")
            if not isinstance(message, dict):
                ctx.fail(f"{what}: the task in {state(shown)} has no status message: "
                         f"{json_excerpt(shown.get('status'))}", kind="expectation")
            assert isinstance(message, dict)
            problems = schema_errors(schema(ctx.profile, "Message"), message, limit=3)
            ctx.expect(not problems and message.get("parts"),
                       f"{what}: the status message is not a Message with parts: {'; '.join(problems)} "
                       f"{json_excerpt(message)}", kind="schema_mismatch")


@check_auth_required_message.fault
def auth_required_without_message(ref: Any) -> None:
    """A task asking for authorization carries no status message."""
    @replaces(ref, "set_status")
    def set_status(original: Any, task: dict[str, Any], state_word: str, text: str | None = None) -> None:
        original(task, state_word, None if state_word == "auth_required" else text)


@requirement(id="A2A-MULTI-AUTH-REQUIRED-MESSAGE", level="SHOULD",
             title="A task in TASK_STATE_AUTH_REQUIRED accepts a message directed to it",
             source=spec("Agents SHOULD support receiving messages directed to the Task while the Task "
                         "remains"),
             faults=["auth_required_refuses_messages"])
def check_auth_required_accepts(ctx: CheckContext) -> None:
    c = A2AClient(ctx)
    task = reaching(c, "auth_required")
    reply = follow_up(c, task)
    ctx.expect(reply.ok, f"a message to task {task['id']} in {state(task)} was refused: {reply.describe()}",
               kind="rejected_valid")
    answered = task_answer(ctx, reply, f"SendMessage to task {task['id']}")
    ctx.expect(answered["id"] == task["id"], f"a message to task {task['id']} was answered with another "
                                             "task, "
                                             f"{answered['id']}", kind="expectation")


@check_auth_required_accepts.fault
def auth_required_refuses_messages(ref: Any) -> None:
    """A message to a task in TASK_STATE_AUTH_REQUIRED is refused."""
    @replaces(ref, "op_SendMessage")
    def send(original: Any, params: dict[str, Any], caller: str) -> Any:
        task = ref.tasks.get(params["message"].get("taskId") or "")
        if task is not None and task["status"]["state"] == docs.state_named("auth_required"):
            raise Refusal("UnsupportedOperationError", "the task waits for authorization")
        return original(params, caller)
