"""ListTasks followed page by page (nextPageToken), each page read as a ListTasksResponse."""

from __future__ import annotations

from typing import Any

from conformance.kit.check import CheckContext
from conformance.protocols.a2a.client import A2AClient
from conformance.protocols.a2a.driving import result_of
from conformance.transport.binding import Reply
from conformance.transport.http import json_excerpt


def listed(ctx: CheckContext, reply: Reply, what: str) -> list[dict[str, Any]]:
    """The tasks of a ListTasks answer (a finding where it holds no array of objects)."""
    result = result_of(ctx, reply, what)
    tasks = result.get("tasks")
    if not isinstance(tasks, list) or not all(isinstance(t, dict) for t in tasks):
        ctx.fail(f"{what}: tasks is not an array of Task objects: {reply.describe()}",
                 kind="malformed_answer")
    assert isinstance(tasks, list)
    return tasks


def walk(c: A2AClient, params: dict[str, Any], most: int, what: str = "ListTasks") -> list[dict[str, Any]]:
    """The pages of a listing, following nextPageToken until it is empty or absent (a
    finding when it does not end within ``most`` pages)."""
    pages: list[dict[str, Any]] = []
    token = ""
    for n in range(most):
        reply = c.call("ListTasks", {**params, **({"pageToken": token} if token else {})})
        label = f"{what} (page {n + 1})"
        page = result_of(c.ctx, reply, label)
        listed(c.ctx, reply, label)
        pages.append(page)
        given = page.get("nextPageToken")
        token = given if isinstance(given, str) else ""
        if not token:
            return pages
    c.ctx.fail(f"{what}: following nextPageToken through {most} pages of a context holding fewer tasks did "
               f"not end (last page: {json_excerpt(pages[-1])})", kind="expectation")
    return pages
