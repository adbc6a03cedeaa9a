"""Readers of an A2A answer, shared by the rows: the kind of binding it came over, the error of
the table it is (the JSON-RPC code, the HTTP+JSON ErrorInfo, gRPC's status), how the table says
an error comes, an answer quoted, and an answer in words two bindings can be compared by."""

from __future__ import annotations

import functools
import re
from typing import Any

from conformance.checks.causes import cause_of
from conformance.documents.prose import document_text
from conformance.documents.schemas import SpecError
from conformance.kit.check import CheckContext
from conformance.model import ErrorCode, Profile
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.client import a2a_error
from conformance.protocols.a2a.names import INTERNAL, INVALID_PARAMS
from conformance.transport.binding import Reply, first_event, is_event_stream
from conformance.transport.http import json_excerpt

JSONRPC, REST, GRPC = "jsonrpc-http", "http-routes", "grpc"  # the kinds of the profile's bindings


VERSION = "VersionNotSupportedError"


# -- what an answer carries ------------------------------------------------------------
def kind_of(ctx: CheckContext) -> str:
    """The kind of the run's binding, read off the profile (``ctx.binding`` is built once a
    check asks for it, and must wait for the card to say where the binding lives)."""
    return str(ctx.profile.settings["bindings"].get(ctx.run.binding or "", {}).get("kind", ""))


def table(ctx: CheckContext | Profile) -> dict[str, ErrorCode]:
    """The rows of section 5.4 by error name."""
    profile = ctx.profile if isinstance(ctx, CheckContext) else ctx
    return {e.name: e for e in profile.errors.values()}


def describe(reply: Reply) -> str:
    """The answer quoted, an event stream by its first event."""
    if is_event_stream(reply.http):
        first = json_excerpt(first_event(reply.http))
        return f"HTTP {reply.status}, an event stream whose first event is {first}"
    return reply.describe()


def info_in(reply: Reply) -> dict[str, Any] | None:
    """The google.rpc.ErrorInfo among an error's details (its ``@type`` as section 11.6 gives it)."""
    for detail in reply.error_data if isinstance(reply.error_data, list) else []:
        if isinstance(detail, dict) and detail.get("@type") == docs.error_info()["@type"]:
            return detail
    return None


@functools.lru_cache(maxsize=4)
def detail_type(name: str) -> str:
    """The ``@type`` of the google.rpc detail ``name`` as the specification's examples write it."""
    found = re.search(rf'"@type": "([^"]*\.{re.escape(name)})"', document_text(docs.SPEC))
    if found is None:
        raise SpecError(f"{docs.SPEC} shows no error detail of type {name}")
    return found.group(1)


@functools.lru_cache(maxsize=1)
def problem_type() -> str:
    """Section 6.4's example answers an unsupported version with a problem document of this
    ``type`` instead of google.rpc.Status: the second reading of a version refusal over HTTP."""
    text = document_text(docs.SPEC)
    section = text[text.index("### 6.4. Version Negotiation Error"):]
    found = re.search(r'"type": "([^"]+)"', section[:section.index("\n### ", 1)])
    if found is None:
        raise SpecError(f"{docs.SPEC} section 6.4 no longer shows the type of its version error")
    return found.group(1)


def version_problem(reply: Reply) -> bool:
    body = reply.http.json()
    return not reply.ok and isinstance(body, dict) and body.get("type") == problem_type()


def carries(ctx: CheckContext, reply: Reply, name: str) -> bool:
    """The answer is error ``name``: by its JSON-RPC code; over HTTP+JSON by its ErrorInfo
    reason (or the status only ``name`` has), or, for a version refusal, section 6.4's form."""
    if reply.ok:
        return False
    return a2a_error(ctx, reply) == name or (name == VERSION and version_problem(reply))


def form(ctx: CheckContext, name: str) -> str:
    """How the table says ``name`` comes over the run's binding."""
    err = table(ctx)[name]
    if kind_of(ctx) == JSONRPC:
        return f"JSON-RPC code {err.code}"
    if kind_of(ctx) == GRPC:
        return f"gRPC {docs.grpc_statuses()[name]} with an ErrorInfo whose reason is {docs.reason_of(name)}"
    return f"HTTP {err.http_status} with an ErrorInfo whose reason is {docs.reason_of(name)}"


def typed(ctx: CheckContext, reply: Reply, err: ErrorCode) -> dict[str, Any]:
    if kind_of(ctx) == JSONRPC:
        return {"expected_code": err.code, "actual_code": reply.error_code}
    if kind_of(ctx) == GRPC:
        return {"expected_code": docs.grpc_statuses()[err.name], "actual_code": grpc_status(reply)}
    return {"expected_status": err.http_status, "actual_status": reply.status}


def info_statement(kind: str = REST) -> Any:
    if kind == GRPC:
        return docs.spec("implementations **MUST** include a `google.rpc.ErrorInfo` message",
                         after="### 10.6")
    return docs.spec("implementations **MUST** include a `google.rpc.ErrorInfo` object", after="### 11.6")


def grpc_status(reply: Reply) -> str:
    """The name of a gRPC answer's status ("" for another binding's answer)."""
    return str(getattr(reply, "grpc_status", ""))


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
