"""ListTasks (sections 3.1.4, 3.2.4, 6.5): a ListTasksResponse whose nextPageToken is always
there ("" on the last page); cursor pagination that walks every task once; the contextId
and status filters; the newest status first; artifacts only when asked for; pageSize
within its bounds (refused or clamped); historyLength as everywhere.

A live target holds tasks the check did not make: every listing here is filtered by a
context the check's own tasks are in (a context the agent gave the check's first task), and
only the check's own tasks are judged, but for a filter's promise, which every task listed
must keep."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

from conformance.documents.schemas import schema_errors
from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import requirement
from conformance.kit.faults import answer, arguments, limit, refuses, replaces
from conformance.kit.reference import Refusal
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.client import A2AClient, a2a_error, state
from conformance.protocols.a2a.documents import proto_at, schema, spec
from conformance.protocols.a2a.driving import (
    OUTCOME,
    artifact_ids,
    fetched,
    history_of,
    new_task,
    result_of,
    task_with_history,
)
from conformance.protocols.a2a.pages import listed, walk
from conformance.protocols.a2a.reference import A2AReference
from conformance.transport.binding import Reply, dig
from conformance.transport.http import json_excerpt

WALK_MOST = 12  # pages a listing of a context of the check's (three tasks at most) may take
GAP_S = 0.02  # between two tasks whose order is judged: their status timestamps differ in milliseconds


def context_tasks(c: A2AClient, count: int, gap: float = 0.0) -> tuple[str, list[dict[str, Any]]]:
    """``count`` tasks of the check's in one context: the first one's, which the agent gave
    it; the others sent with that contextId (section 3.4.3: "to start a new task within an
    existing conversation context"); each as it stands once the agent stopped working on it
    (``A2AClient.settled``: its final status, timestamp and artifacts)."""
    first = c.settled(new_task(c, what="SendMessage starting the check's context"))
    context = first.get("contextId")
    if not isinstance(context, str) or not context:
        raise Untested(f"the agent gave its task no contextId ({json_excerpt(first)}): the listing is judged "
                       "within a context of the check's own", OUTCOME)
    tasks = [first]
    for n in range(count - 1):
        time.sleep(gap)
        tasks.append(c.settled(new_task(c, what=f"SendMessage {n + 2} in the check's context",
                                        contextId=context)))
    strays = [t["id"] for t in tasks if t.get("contextId") != context]
    if strays:
        raise Untested(f"the agent put tasks {strays} sent with contextId {context} in another context "
                       "(A2A-MULTI-CONTEXT-KEPT is about it)", OUTCOME)
    return context, tasks


def list_tasks(c: A2AClient, what: str, **params: Any) -> list[dict[str, Any]]:
    """Every task a listing shows, over all its pages ("The service may return fewer than
    this value": a page may hold less than asked, and the next one the rest)."""
    return [t for page in walk(c, params, WALK_MOST, what) for t in page["tasks"]]


def page_max(ctx: CheckContext) -> int:
    return ctx.limit("list_page_size_max")


def ids(tasks: list[dict[str, Any]]) -> list[Any]:
    return [t.get("id") for t in tasks]


def last_token(out: dict[str, Any], drop: bool) -> None:
    """A fault's edit: the last page's empty nextPageToken dropped, or made null."""
    if out.get("nextPageToken") == "":
        if drop:
            del out["nextPageToken"]
        else:
            out["nextPageToken"] = None


# -- the answer ------------------------------------------------------------------------------
@requirement(id="A2A-LIST-RESPONSE", level="MUST",
             title="ListTasks answers a ListTasksResponse: tasks, nextPageToken, pageSize and totalSize, the "
                   "proto's REQUIRED fields",
             source=proto_at("repeated Task tasks = 1", after="message ListTasksResponse"),
             faults=[answer("list_without_total_size", "op_ListTasks", "ListTasks leaves out totalSize.",
                            drop=["totalSize"]),
                     answer("list_without_page_size", "op_ListTasks", "ListTasks leaves out pageSize.",
                            drop=["pageSize"]),
                     refuses("list_tasks_unsupported", "op_ListTasks",
                             lambda *a: Refusal("UnsupportedOperationError", "ListTasks is not supported"),
                             "ListTasks, a core operation (section 3.1), is refused as UnsupportedOperation "
                             "(-32004): the rows that only look through it are blocked in this row's name "
                             "(tests/e2e/test_a2a_looks.py).")])
def check_list_response(ctx: CheckContext) -> None:
    c = A2AClient(ctx)
    context, _ = context_tasks(c, 2)
    for what, params in (("one page", {"contextId": context}),
                         ("pageSize 1", {"contextId": context, "pageSize": 1})):
        with ctx.subcheck(what):
            reply = c.call("ListTasks", params)
            result = result_of(ctx, reply, f"ListTasks ({what})")
            problems = schema_errors(schema(ctx.profile, "ListTasksResponse"), result, limit=5)
            ctx.expect(not problems, f"the ListTasks answer ({what}) is not a ListTasksResponse: " +
                       "; ".join(problems), kind="schema_mismatch")


@requirement(id="A2A-LIST-NEXT-TOKEN", level="MUST",
             title="ListTasks' last page carries nextPageToken, and it is the empty string",
             source=spec("The `nextPageToken` field MUST always be present in the response"),
             faults=[answer("next_token_omitted_on_last_page", "op_ListTasks",
                            "ListTasks leaves nextPageToken out on the last page.",
                            edit=lambda out, *a: last_token(out, drop=True)),
                     answer("next_token_null_on_last_page", "op_ListTasks",
                            "ListTasks answers nextPageToken null on the last page.",
                            edit=lambda out, *a: last_token(out, drop=False))])
def check_list_next_token(ctx: CheckContext) -> None:
    """The last page of the check's context, at the maximum page size (one page, unless the
    agent serves fewer) and at one task a page."""
    c = A2AClient(ctx)
    context, tasks = context_tasks(c, 2)
    for size in (page_max(ctx), 1):
        with ctx.subcheck(f"pageSize {size}"):
            last = walk(c, {"contextId": context, "pageSize": size}, WALK_MOST)[-1]
            ctx.expect(last.get("nextPageToken") == "", f"the last page of a listing at pageSize {size} has "
                       f"nextPageToken {last.get('nextPageToken', '(absent)')!r}, expected \"\": "
                       f"{json_excerpt(last)}", kind="schema_mismatch")


@requirement(id="A2A-LIST-PAGINATION", level="MUST",
             title="ListTasks pages by cursor: at pageSize 1, following nextPageToken shows each of the "
                   "check's tasks exactly once, one a page",
             source=spec("MUST use cursor-based pagination"),
             faults=[arguments("page_token_ignored", "op_ListTasks", "ListTasks ignores pageToken.",
                               index=0, drop=["pageToken"]),
                     arguments("page_size_ignored", "op_ListTasks", "ListTasks ignores pageSize.",
                               index=0, drop=["pageSize"]),
                     "pages_skip_a_task"])
def check_list_pagination(ctx: CheckContext) -> None:
    c = A2AClient(ctx)
    context, tasks = context_tasks(c, 3)
    pages = walk(c, {"contextId": context, "pageSize": 1}, WALK_MOST)
    seen = [t.get("id") for page in pages for t in page["tasks"]]
    with ctx.subcheck("page size"):
        crowded = [ids(page["tasks"]) for page in pages if len(page["tasks"]) > 1]
        ctx.expect(not crowded, f"pages of pageSize 1 held {crowded}: pageSize is the most a page holds",
                   kind="expectation")
    with ctx.subcheck("each task once"):
        mine = ids(tasks)
        twice = sorted({i for i in seen if i in mine and seen.count(i) > 1})
        missing = [i for i in mine if i not in seen]
        ctx.expect(not twice and not missing,
                   f"walking the pages of the check's context ({len(pages)} pages: {seen}) showed "
                   f"{twice or 'none'} twice and missed {missing or 'none'} of the check's tasks {mine}",
                   kind="expectation")


@check_list_pagination.fault
def pages_skip_a_task(ref: A2AReference) -> None:
    """A page token points one task past where the page ended: a task is never listed."""
    @replaces(ref.page_start)
    def page_start(original: Any, token: str, total: int) -> int:
        start = int(original(token, total))
        return min(start + 1, total) if token else start


# -- filters ------------------------------------------------------------------------------------
@requirement(id="A2A-LIST-CONTEXT-FILTER", level="MUST",
             title="ListTasks filtered by contextId lists only tasks of that context, the check's own among "
                   "them",
             source=proto_at("Filter tasks by context ID", after="message ListTasksRequest"),
             faults=[arguments("context_filter_ignored", "op_ListTasks", "ListTasks ignores contextId.",
                               index=0, drop=["contextId"])])
def check_list_context_filter(ctx: CheckContext) -> None:
    """Two contexts of the check's; each listing holds its own context's tasks and no other."""
    c = A2AClient(ctx)
    contexts = [context_tasks(c, 2), context_tasks(c, 1)]
    for n, (context, tasks) in enumerate(contexts):
        with ctx.subcheck(f"context {n + 1}"):
            shown = list_tasks(c, f"ListTasks contextId {context}", contextId=context, pageSize=page_max(ctx))
            others = [(t.get("id"), t.get("contextId")) for t in shown if t.get("contextId") != context]
            ctx.expect(not others, f"ListTasks with contextId {context} listed tasks of other contexts: "
                                   f"{others}", kind="expectation")
            missing = [i for i in ids(tasks) if i not in ids(shown)]
            ctx.expect(not missing, f"ListTasks with contextId {context} left out the check's tasks "
                                    f"{missing} of that context", kind="expectation")


@requirement(id="A2A-LIST-STATUS-FILTER", level="MUST",
             title="ListTasks filtered by status lists only tasks in that state: the check's completed tasks "
                   "under their state, none under another",
             source=proto_at("Filter tasks by their current status state", after="message ListTasksRequest"),
             faults=[arguments("status_filter_ignored", "op_ListTasks", "ListTasks ignores status.",
                               index=0, drop=["status"])])
def check_list_status_filter(ctx: CheckContext) -> None:
    c = A2AClient(ctx)
    context, tasks = context_tasks(c, 2)
    ended = {state(t) for t in tasks}
    if len(ended) != 1:
        raise Untested(f"the agent left the check's tasks in several states {sorted(map(str, ended))}",
                       OUTCOME)
    own = ended.pop()
    other = next(s for s in docs.task_states() if s != own)
    for asked in (own, other):
        with ctx.subcheck(f"status {asked}"):
            shown = list_tasks(c, f"ListTasks status {asked}", contextId=context, status=asked,
                               pageSize=page_max(ctx))
            wrong = [(t.get("id"), state(t)) for t in shown if state(t) != asked]
            ctx.expect(not wrong, f"ListTasks with status {asked} listed tasks in other states: {wrong}",
                       kind="expectation")
            if asked == own:
                missing = [i for i in ids(tasks) if i not in ids(shown)]
                ctx.expect(not missing, f"ListTasks with status {asked} left out the check's tasks {missing} "
                                        "in that state", kind="expectation")


# -- order -------------------------------------------------------------------------------------------
def when(task: dict[str, Any]) -> dt.datetime | None:
    """A task's status timestamp, or None where it has none the check can read."""
    value = dig(task, "status", "timestamp")
    if not isinstance(value, str):
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


@requirement(id="A2A-LIST-ORDER", level="MUST",
             title="ListTasks lists tasks by status timestamp, newest first (judged among the check's own "
                   "tasks)",
             source=spec("MUST return tasks sorted by their status timestamp time in descending order"),
             faults=[answer("list_order_ascending", "op_ListTasks", "ListTasks lists the oldest task first.",
                            edit=lambda out, *a: out["tasks"].reverse())])
def check_list_order(ctx: CheckContext) -> None:
    """Three tasks made one after the other; each two of them whose listed timestamps
    differ come newest first (equal timestamps may come in either order)."""
    c = A2AClient(ctx)
    context, tasks = context_tasks(c, 3, gap=GAP_S)
    shown = list_tasks(c, "ListTasks of the check's context", contextId=context, pageSize=page_max(ctx))
    mine = [t for t in shown if t.get("id") in ids(tasks)]
    stamped = [(t.get("id"), when(t)) for t in mine]
    pairs = [(a, b) for i, a in enumerate(stamped) for b in stamped[i + 1:]
             if a[1] is not None and b[1] is not None and a[1] != b[1]]
    if not pairs:
        raise Untested(f"the listing shows no two of the check's tasks with status timestamps that differ "
                       f"({[dig(t, 'status', 'timestamp') for t in mine]}): nothing to order by", OUTCOME)
    wrong = [(a[0], b[0]) for a, b in pairs if a[1] is not None and b[1] is not None and a[1] < b[1]]
    listed_order = [(t.get("id"), dig(t, "status", "timestamp")) for t in mine]
    ctx.expect(not wrong, f"ListTasks listed older tasks before newer ones: {listed_order}",
               kind="expectation")


@requirement(id="A2A-LIST-TIMESTAMP-FILTER", level="MUST",
             title="ListTasks filtered by statusTimestampAfter lists only tasks whose status timestamp is at "
                   "or after it: the check's later task, not its earlier one",
             source=proto_at("Only tasks with a status timestamp time greater than or equal to this value"),
             faults=[arguments("timestamp_filter_ignored", "op_ListTasks",
                               "ListTasks ignores statusTimestampAfter.", index=0,
                               drop=["statusTimestampAfter"])])
def check_list_timestamp_filter(ctx: CheckContext) -> None:
    """Two tasks made one after the other; filtered at the later one's status timestamp."""
    c = A2AClient(ctx)
    context, (earlier, later) = context_tasks(c, 2, gap=GAP_S)
    start, stop = when(fetched(c, earlier["id"])), dig(fetched(c, later["id"]), "status", "timestamp")
    after = when({"status": {"timestamp": stop}})
    if start is None or after is None or not start < after:
        raise Untested(f"the check's two tasks show no status timestamps one after the other ({start}, "
                       f"{stop}): nothing to filter by", OUTCOME)
    shown = list_tasks(c, f"ListTasks statusTimestampAfter {stop}", contextId=context,
                       statusTimestampAfter=stop)
    early = [(t.get("id"), dig(t, "status", "timestamp")) for t in shown if (when(t) or after) < after]
    ctx.expect(not early, f"ListTasks with statusTimestampAfter {stop} listed tasks updated before it: "
                          f"{early}", kind="expectation")
    ctx.expect(later["id"] in ids(shown), f"ListTasks with statusTimestampAfter {stop} left out the task "
                                          f"{later['id']} updated then", kind="expectation")


# -- artifacts --------------------------------------------------------------------------------------
@requirement(id="A2A-LIST-ARTIFACTS-OMITTED", level="MUST",
             title="ListTasks without includeArtifacts (or with false) leaves the artifacts member out of "
                   "every task entirely",
             source=spec("the artifacts field MUST be omitted entirely from each Task object"),
             faults=[arguments("list_artifacts_always", "op_ListTasks",
                               "ListTasks always includes artifacts.", index=0,
                               set={"includeArtifacts": True}),
                     "list_artifacts_empty"])
def check_list_artifacts_omitted(ctx: CheckContext) -> None:
    c = A2AClient(ctx)
    context, _ = context_tasks(c, 2)
    asked: tuple[tuple[str, dict[str, Any]], ...] = (("includeArtifacts unset", {}),
                                                     ("includeArtifacts false", {"includeArtifacts": False}))
    for what, extra in asked:
        with ctx.subcheck(what):
            shown = list_tasks(c, f"ListTasks ({what})", contextId=context, **extra)
            carrying = [(t.get("id"), json_excerpt(t["artifacts"])) for t in shown if "artifacts" in t]
            ctx.expect(not carrying, f"ListTasks ({what}) shows an artifacts member in tasks {carrying}: it "
                                     "must be left out entirely (not even [] or null)", kind="expectation")


@check_list_artifacts_omitted.fault
def list_artifacts_empty(ref: A2AReference) -> None:
    """ListTasks without includeArtifacts shows each task's artifacts as []."""
    @replaces(ref.op_ListTasks)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        out: dict[str, Any] = original(params, caller)
        if params.get("includeArtifacts") is not True:
            for task in out.get("tasks", []):
                task["artifacts"] = []
        return out


@requirement(id="A2A-LIST-ARTIFACTS-INCLUDED", level="SHOULD",
             title="ListTasks with includeArtifacts true shows each task's artifacts, as GetTask does",
             source=spec("When `includeArtifacts` is true, the artifacts field should be included"),
             faults=[arguments("list_artifacts_never", "op_ListTasks", "ListTasks never includes artifacts.",
                               index=0, set={"includeArtifacts": False})])
def check_list_artifacts_included(ctx: CheckContext) -> None:
    c = A2AClient(ctx)
    context, tasks = context_tasks(c, 1)
    expected = artifact_ids(fetched(c, tasks[0]["id"]))
    if not expected:
        raise Untested("the agent's completed task has no artifact to show", OUTCOME)
    shown = list_tasks(c, "ListTasks includeArtifacts true", contextId=context, includeArtifacts=True)
    mine = next((t for t in shown if t.get("id") == tasks[0]["id"]), None)
    ctx.expect(mine is not None, f"ListTasks of the check's context left out its task {tasks[0]['id']}",
               kind="expectation")
    assert mine is not None
    ctx.expect(artifact_ids(mine) == expected, f"ListTasks with includeArtifacts true shows artifacts "
                                               f"{artifact_ids(mine)}, GetTask shows {expected}",
               kind="expectation")


# -- bounds and history ---------------------------------------------------------------------------
def validation_refusal(ctx: CheckContext, reply: Reply) -> bool:
    """A refusal as a validation error (section 3.3.2: JSON-RPC -32602, HTTP 400), and not
    one of the A2A errors, which are about other causes."""
    if reply.ok:
        return False
    error = a2a_error(ctx, reply)
    if ctx.binding.kind == "jsonrpc-http":
        return error == "InvalidParamsError"
    # any 4xx but authentication, authorization and no such route: the 400 itself is
    # section 3.3.2's example (A2A-PARAMS-INVALID-STATUS asks for it)
    return 400 <= reply.status < 500 and reply.status not in (401, 403, 404, 405) and error is None


@requirement(id="A2A-LIST-PAGE-SIZE-BOUNDS", level="MUST",
             title="ListTasks with a pageSize above the maximum or below 1 is refused as invalid, or served "
                   "with a page size within the bounds",
             source=proto_at("The maximum value is", after="message ListTasksRequest"),
             faults=[limit("page_size_max_unchecked", "list_page_size_max", 1000,
                           "ListTasks serves a pageSize above the maximum as asked."),
                     "page_size_zero_served"])
def check_list_page_size_bounds(ctx: CheckContext) -> None:
    """The proto bounds pageSize ("The minimum value is 1", "The maximum value is ..."),
    and section 6.5 shows a refusal; a server may as well clamp it: both pass."""
    c = A2AClient(ctx)
    context, _ = context_tasks(c, 1)
    top = page_max(ctx)
    for size in (top + 1, 0, -1):
        with ctx.subcheck(f"pageSize {size}"):
            reply = c.call("ListTasks", {"contextId": context, "pageSize": size})
            if not reply.ok:
                ctx.expect(validation_refusal(ctx, reply), f"ListTasks with pageSize {size} was refused, but "
                           f"not as invalid parameters: {reply.describe()}", kind="wrong_error_code")
                continue
            result = result_of(ctx, reply, f"ListTasks pageSize {size}")
            used, shown = result.get("pageSize"), listed(ctx, reply, f"ListTasks pageSize {size}")
            ctx.expect(isinstance(used, int) and 1 <= used <= top and len(shown) <= top,
                       f"ListTasks with pageSize {size} was served with pageSize {used!r} and {len(shown)} "
                       f"tasks: the page size must be 1..{top}", kind="accepted_invalid")


@check_list_page_size_bounds.fault
def page_size_zero_served(ref: A2AReference) -> None:
    """ListTasks with pageSize 0 answers an empty page of size 0."""
    @replaces(ref.op_ListTasks)
    def op(original: Any, params: dict[str, Any], caller: str) -> dict[str, Any]:
        if params.get("pageSize") in (0, "0"):
            out: dict[str, Any] = original({**params, "pageSize": 1}, caller)
            return {**out, "tasks": [], "pageSize": 0, "nextPageToken": ""}
        return dict(original(params, caller))


@requirement(id="A2A-LIST-HISTORY-LENGTH", level="MUST",
             title="ListTasks' historyLength caps each task's history: 0 shows no message, 1 at most one",
             source=spec("This parameter follows consistent semantics across all operations"),
             faults=[arguments("list_history_ignored", "op_ListTasks", "ListTasks ignores historyLength.",
                               index=0, drop=["historyLength"])])
def check_list_history_length(ctx: CheckContext) -> None:
    """A task of the check's with at least two messages, listed in its context."""
    c = A2AClient(ctx)
    task = task_with_history(c)
    context = task.get("contextId")
    if not isinstance(context, str) or not context:
        raise Untested("the agent gave its task no contextId: the listing is judged within a context of the "
                       "check's own", OUTCOME)
    for cap in (0, 1):
        with ctx.subcheck(f"historyLength {cap}"):
            shown = list_tasks(c, f"ListTasks historyLength {cap}", contextId=context, historyLength=cap)
            mine = [t for t in shown if t.get("id") == task["id"]]
            ctx.expect(mine, f"ListTasks of the check's context left out its task {task['id']}",
                       kind="expectation")
            long = [(t.get("id"), len(history_of(ctx, t, "ListTasks"))) for t in shown
                    if len(history_of(ctx, t, "ListTasks")) > cap]
            ctx.expect(not long, f"ListTasks with historyLength {cap} shows tasks with longer histories (id, "
                                 f"messages): {long}", kind="expectation")
