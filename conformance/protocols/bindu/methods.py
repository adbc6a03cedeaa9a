"""Each JSON-RPC method's params and results (specs/bindu/openapi.yaml, the methods and
schemas profiles/bindu.yaml's jsonrpc: block names): generated valid params are served,
params breaking one schema rule get -32602, results match the result schema (one
requirement per method each), the casing tolerance and the params the lists ignore.
Each requirement is declared on its check, with the faults that prove it can fail."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from conformance.checks.expect import expect_result
from conformance.checks.inputs import invalid_inputs_rejected, result_matches, valid_inputs_accepted
from conformance.checks.jsonrpc import answer_check
from conformance.kit.check import CheckContext
from conformance.kit.declare import Each, at, fault, requirement, slug
from conformance.kit.faults import answer, noop, recodes, replaces, returns_arg
from conformance.model import Profile
from conformance.protocols.bindu.answers import contexts_listed, state_of, tasks_listed
from conformance.protocols.bindu.client import BinduClient, fresh_id
from conformance.protocols.bindu.reference import BinduReference, Caller, RpcError
from conformance.protocols.bindu.states import terminal_states
from conformance.protocols.bindu.stream_events import check_stream_events, streaming, streaming_declared

POST = "/paths/~1/post"


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part.title() for part in rest)


@requirement(id="BINDU-PARAMS-CASING", level="MUST",
             title="camelCase and snake_case params are both accepted; responses are snake_case",
             source=at(f"{POST}/description", "**Casing tolerance:**"),
             faults=[returns_arg("snake_case_params_rejected", "normalise_params", 1,
                                 "No casing normalisation: only the schema's own spelling of a param is "
                                 "understood."),
                     answer("camel_case_responses", "task_view",
                            "Task views say contextId instead of context_id.",
                            edit=lambda view, *_: {_camel(k): v for k, v in view.items()})])
def check_casing(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    task = c.new_task()
    snake = expect_result(ctx, c.call("tasks/get", {"task_id": task["id"], "history_length": 1}),
                          "tasks/get with snake_case task_id", ["id"])
    ctx.expect(snake["id"] == task["id"], "tasks/get with task_id returned another task")
    hist = snake.get("history")
    ctx.expect(not isinstance(hist, list) or len(hist) <= 1, "history_length (snake_case) was ignored")
    params = c.send_params()
    msg = params["message"]
    msg["task_id"], msg["context_id"] = msg.pop("taskId"), msg.pop("contextId")
    sent = expect_result(ctx, c.call("message/send", params),
                         "message/send with snake_case task_id/context_id", ["id"])
    ctx.expect(sent["id"] == msg["task_id"], "message/send ignored snake_case task_id")
    for t in (snake, sent):
        ctx.expect("context_id" in t and "contextId" not in t,
                   f"responses must be snake_case: task keys {sorted(t)}")


@requirement(id="BINDU-LIST-IGNORED-PARAMS", level="MUST",
             title="tasks/list ignores limit/offset and contexts/list ignores length",
             source=at("/components/schemas/TasksListParams/description", "collection) use `limit`/`offset`"))
def check_list_ignored_params(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    for _ in range(3):
        c.new_task()
    with ctx.subcheck("tasks/list ignores limit and offset"):
        every = {json.dumps(t["id"]) for t in tasks_listed(ctx, c.list_tasks(), "tasks/list")}
        paged = {json.dumps(t["id"]) for t in tasks_listed(
            ctx, c.call("tasks/list", {"limit": 1, "offset": 1}), "tasks/list limit=1 offset=1")}
        ctx.expect(paged == every,
                   f"tasks/list with limit=1 offset=1 returned {len(paged)} of the caller's {len(every)} "
                   "tasks")
    with ctx.subcheck("contexts/list ignores length"):
        every = {json.dumps(x["context_id"])
                 for x in contexts_listed(ctx, c.list_contexts(), "contexts/list")}
        capped = {json.dumps(x["context_id"]) for x in contexts_listed(
            ctx, c.call("contexts/list", {"length": 1}), "contexts/list length=1")}
        ctx.expect(capped == every,
                   f"contexts/list with length=1 returned {len(capped)} of the caller's {len(every)} "
                   "contexts")


@check_list_ignored_params.fault
def list_honours_limit(ref: BinduReference) -> None:
    """tasks/list pages by the limit/offset of older specs, which the spec says are ignored."""
    @replaces(ref.tasks_list)
    def tasks_list(original: Any, params: dict[str, Any], caller: Caller) -> list[dict[str, Any]]:
        out = original(params, caller)
        offset, limit = params.get("offset"), params.get("limit")
        start = offset if isinstance(offset, int) else 0
        return out[start:start + limit] if isinstance(limit, int) else out[start:]


@check_list_ignored_params.fault
def contexts_honour_length(ref: BinduReference) -> None:
    """contexts/list caps the number of contexts by `length`, which the spec says is ignored."""
    @replaces(ref.contexts_list)
    def contexts_list(original: Any, params: dict[str, Any], caller: Caller) -> list[dict[str, Any]]:
        out = original(params, caller)
        return out[:params["length"]] if isinstance(params.get("length"), int) else out


# -- one requirement per method: params and results --------------------------------------------
def each_method(profile: Profile) -> list[Each]:
    """One member per JSON-RPC method of the spec: ``method`` as the spec names it,
    ``id_part`` as a requirement id spells it; cited at the method's params schema."""
    return [Each({"method": method}, source=op.source, labels={"id_part": slug(method)})
            for method, op in profile.operations.items()]


def fresh_caller_ids(params: Any) -> Any:
    """Generated params are made safe to send repeatedly: fresh caller-chosen ids. The
    message_id is the client's own too ("have your client generate a stable `messageId`"
    to find a message again): a generator that draws the same uuid for two messages would
    send one id for two messages, which no client following the spec does."""
    msg = params.get("message") if isinstance(params, dict) else None
    if isinstance(msg, dict):
        for key in ("taskId", "contextId", "message_id"):
            if key in msg:
                msg[key] = fresh_id()
    return params


# Errors that mean "your request is malformed": a schema-valid request must never get them.
REJECTIONS = ("Parse error", "Invalid Request", "Invalid params")


# Listings answer every stored task or context: where control allows, their checks start
# from an empty store, so an answer's size is what the check itself made (not everything
# the run made before it; these rows are `alone:` in the profile).
LISTINGS = ("tasks/list", "contexts/list")


# The member of each method's params that names an object the target holds, and what the
# object is: a task or a context (the spec's params schemas: taskId, contextId).
NAMES = {"tasks/get": ("taskId", "task"), "tasks/feedback": ("taskId", "task"),
         "tasks/cancel": ("taskId", "running task"), "contexts/clear": ("contextId", "context")}
# objects made for a method that uses up what it names (a cancel, a clear): one per draw, then a repeat
CONSUMED = 3


class InWorld:
    """Drawn params naming an object the check made: a completed task (tasks/get and
    tasks/feedback leave it as it was), a running task per draw for tasks/cancel (a
    canceled one is not cancelable again), and a context per draw for contexts/clear (a
    cleared context is gone). Past the objects made, the last is named again: its refusal
    (not cancelable, not found) is one the spec gives, and only none served blocks."""

    def __init__(self, member: str, ids: list[str]) -> None:
        self.member, self.ids, self.used = member, ids, 0

    @classmethod
    def made(cls, c: BinduClient, method: str) -> InWorld | None:
        if method not in NAMES:
            return None
        member, what = NAMES[method]
        count = CONSUMED if method in ("tasks/cancel", "contexts/clear") else 1
        with c.ctx.setup(f"create {count} {what}{'s' if count > 1 else ''} for {method} to name"):
            if method == "tasks/cancel":
                ids = [str(_running(c)["id"]) for _ in range(count)]
            elif method == "contexts/clear":
                ids = [c.context_of(c.new_task()) for _ in range(count)]
            else:
                ids = [str(c.new_task()["id"])]
        return cls(member, ids)

    def __call__(self, params: Any) -> Any:
        if not isinstance(params, dict):
            return params
        name = self.ids[min(self.used, len(self.ids) - 1)]
        self.used += 1
        return {**params, self.member: name}


def _running(c: BinduClient) -> dict[str, Any]:
    """A task tasks/cancel can cancel: with control, one the agent holds in ``working``;
    without, the task as the agent leaves it, while that is open (an agent working
    asynchronously). An agent that finishes each task at once leaves none to cancel: then
    the requirement needs control (untested), having asked for nothing it cannot judge."""
    if c.ctx.run.control_path:
        return c.new_task("working")
    task = c.new_task(wait=False)  # polling would let an asynchronous agent finish it
    if state_of(task) in terminal_states(c.ctx.profile.spec):
        c.ctx.needs_control(f"a task tasks/cancel applies to: the agent finished the task it was sent at "
                            f"once ({state_of(task)!r}), and only control next_outcome working keeps one "
                            f"open")
    return task


def _cancel_while_open(c: BinduClient, task_id: str) -> Any:
    """tasks/cancel of a task the agent left open. Without control, an agent working on its
    own (one that answered ``submitted``) may finish the task before the cancel reaches it:
    a refusal of a task that tasks/get then shows terminal is the spec's answer to a
    finished task, not a finding here, and the row needs control (next_outcome working)."""
    reply = c.cancel(task_id)
    if reply.ok or c.ctx.run.control_path:
        return reply
    got = c.get(task_id)
    state = state_of(got.result) if got.ok else None
    if state in terminal_states(c.ctx.profile.spec):
        c.ctx.needs_control(f"a task tasks/cancel applies to: the agent finished the task ({state!r}) before "
                            f"tasks/cancel reached it, which answered {reply.describe()}; only control "
                            f"next_outcome working keeps one open")
    return reply


@requirement(id="BINDU-PARAMS-VALID-{id_part}", level="MUST",
             title="Generated valid {method} params are accepted",
             each=each_method)
def check_valid_params(ctx: CheckContext, method: str) -> None:
    """Generated params are accepted, sent as drawn (an unknown id is refused as not found,
    never as invalid) and, where they name a task or a context, naming one the check made
    (``InWorld``): the row passes only on inputs that were served."""
    c = BinduClient(ctx)
    if method == "message/stream":
        streaming_declared(ctx, c)
    if method in LISTINGS and ctx.run.control_path:
        ctx.control("reset")
    world = InWorld.made(c, method)
    valid_inputs_accepted(ctx, ctx.profile.operations[method], lambda p: c.call(method, p), REJECTIONS,
                          lambda p: c.generating(fresh_caller_ids(p)), extra_property="x_conformance_extra",
                          answer_check=answer_check,
                          in_world=world)


@check_valid_params.fault
def rejects_unknown_params(ref: BinduReference) -> None:
    """A params object with a property the schema does not name is rejected with InvalidParams."""
    @replaces(ref.validate_params)
    def validate(original: Any, method: str, params: Any) -> None:
        known = ref.profile.operations[method].params_schema.get("properties", {})
        extra = sorted(set(params) - set(known)) if isinstance(params, dict) else []
        if extra:
            raise RpcError("Invalid params", f"Invalid params: unknown property '{extra[0]}'")
        original(method, params)


@requirement(id="BINDU-PARAMS-INVALID-{id_part}", level="MUST",
             title="{method} params breaking one schema rule get -32602",
             each=each_method,
             faults=[noop("skip_params_validation", "validate_params",
                          "Params are never validated against the method's schema."),
                     recodes("invalid_params_as_parse_error", "validate_params",
                             lambda err: RpcError("Parse error"),
                             "What should be InvalidParams is answered with the Parse error code (HTTP 400).",
                             catch=RpcError)])
def check_invalid_params(ctx: CheckContext, method: str) -> None:
    c = BinduClient(ctx)
    also = ("UnsupportedOperation",) if method == "message/stream" and not streaming(c) else ()
    invalid_inputs_rejected(ctx, ctx.profile.operations[method], lambda p: c.call(method, p),
                            "Invalid params", also, answer_check=answer_check)


fault(answer("context_missing_created_at", "context_view",
             "contexts/list entries lack the required created_at.", drop=["created_at"]))
# The faults each method's result row is proven against (camel_case_responses: BINDU-PARAMS-CASING's,
# success_as_string: tasks.py's, the stream's: stream.py's).
RESULT_FAULTS = {
    "message/send": ("camel_case_responses",),
    "message/stream": ("stream_events_without_id", "stream_events_of_another_task"),
    "tasks/get": ("camel_case_responses",), "tasks/list": ("camel_case_responses",),
    "tasks/cancel": ("camel_case_responses",), "tasks/feedback": ("success_as_string", "success_as_message"),
    "contexts/list": ("context_missing_created_at",),
    "contexts/clear": ("success_as_string", "success_as_message"),
}


def each_result(profile: Profile) -> list[Each]:
    """One member per method, cited at its result schema (profiles/bindu.yaml, jsonrpc.results)."""
    results = profile.settings["jsonrpc"]["results"]
    return [Each({"method": method}, source=at(results[method]), faults=RESULT_FAULTS[method],
                 labels={"id_part": slug(method)}) for method in profile.operations]


@requirement(id="BINDU-RESULT-{id_part}", level="MUST",
             title="{method} results match the spec's result schema",
             each=each_result)
def check_result_schema(ctx: CheckContext, method: str) -> None:
    """Drive the method to a success with realistic params and validate the result."""
    c = BinduClient(ctx)
    if method == "message/stream":
        streaming_declared(ctx, c)
    op = ctx.profile.operations[method]
    task = c.new_task()
    c.new_task()
    calls: dict[str, Callable[[], Any]] = {
        "message/send": lambda: c.send(),
        "tasks/get": lambda: c.get(task["id"]),
        "tasks/list": lambda: c.list_tasks(),
        "tasks/feedback": lambda: c.feedback(task["id"]),
        "contexts/list": lambda: c.list_contexts(),
        "contexts/clear": lambda: c.clear(c.context_of(task)),
    }
    if method == "tasks/cancel":
        with ctx.setup("create a task tasks/cancel applies to", by="BINDU-SEND-CREATES-TASK"):
            working_id = _running(c)["id"]
        calls[method] = lambda: _cancel_while_open(c, working_id)
    if method == "message/stream":
        check_stream_events(ctx, c)
        return
    result_matches(ctx, op, calls[method]())

