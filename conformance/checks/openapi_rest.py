"""REST operations of an OpenAPI document, tested with schemathesis.

Protocol-agnostic: give it an OpenAPI dict (3.0 or 3.1) and, optionally, which
operations to test. For every selected operation schemathesis generates positive
requests from the operation's schema; each goes to the target through
``ctx.http.request`` (so it is recorded and redacted like any other exchange; the
schemathesis transports never send anything) and the answer is judged with
schemathesis's own response checks.

schemathesis is imported lazily: loading it costs about half a second and patches
some hypothesis globals (see ``schemathesis.generation.hypothesis.setup``), which
only checks that use it should pay for.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import requests
    from schemathesis import APIOperation, Case

    from conformance.kit.check import CheckContext
    from conformance.transport.http import HttpReply

# The response checks run, in this order; the first that fails is reported.
CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
)

# schemathesis builds request URLs on a base URL; only their path and query are used.
_PLACEHOLDER_BASE = "http://conformance.invalid"
# Headers schemathesis (or requests) adds on its own: not sent unless the case or the caller sets them.
_TRANSPORT_HEADERS = frozenset(
    {"user-agent", "accept", "accept-encoding", "connection", "content-length", "x-schemathesis-testcaseid"}
)
_REQUEST_KWARGS = ("method", "url", "headers", "files", "data", "params", "auth", "cookies", "json")
_MESSAGE_LIMIT = 500

IncludeFn = Callable[[str, str], bool]


def load_schema(spec: dict[str, Any]) -> Any:
    """The spec as a schemathesis OpenApiSchema, without looking for a schemathesis.toml
    (a default ``schemathesis.Config()``) and without touching the caller's dict."""
    import schemathesis

    return schemathesis.openapi.from_dict(copy.deepcopy(spec), config=schemathesis.Config())


def rest_operations(spec: dict[str, Any], include: IncludeFn | None = None) -> list[APIOperation]:
    """The operations of ``spec``, in document order, that ``include(METHOD, path)`` keeps
    (method upper case, path as written in ``paths``). An operation schemathesis cannot
    use raises ValueError if it is selected (or cannot be told apart)."""
    from schemathesis.core.result import Ok

    selected: list[APIOperation] = []
    for result in load_schema(spec).get_all_operations():
        if isinstance(result, Ok):
            operation = result.ok()
            if include is None or include(operation.method.upper(), operation.path):
                selected.append(operation)
            continue
        error = result.err()
        method, path = getattr(error, "method", None), getattr(error, "path", None)
        if include is None or not (method and path) or include(method.upper(), path):
            label = f"{method.upper()} {path}" if method and path else "an operation"
            raise ValueError(f"{label}: schemathesis cannot use it: {getattr(error, 'message', error)}")
    return selected


def check_rest_operations(
    ctx: CheckContext,
    spec: dict[str, Any],
    include: IncludeFn | None = None,
    headers: dict[str, str] | None = None,
    examples: int | None = None,
) -> None:
    """For each selected operation: generate positive cases from its schema, send each
    through ``ctx.http.request`` with ``headers`` on top (the caller's values win over
    generated ones, e.g. ``Authorization``), and judge the reply with schemathesis's
    checks (``CHECKS``). Each operation is a sub-check of its own, so every failing
    operation is reported (as schemathesis reports them), each with its first
    failing check: ``"<METHOD> <path>: <check name>: <schemathesis's message>"``."""
    from schemathesis import GenerationMode

    operations = rest_operations(spec, include)
    if not operations:
        raise ValueError("check_rest_operations: no operation of the spec is selected")
    checks = _check_functions()
    for operation in operations:
        strategy = operation.as_strategy(generation_mode=GenerationMode.POSITIVE)

        def body(case: Case, operation: APIOperation = operation) -> None:
            exercise(ctx, operation, case, headers, checks)

        with ctx.subcheck(f"{operation.method.upper()} {operation.path}"):
            ctx.for_all(strategy, body, examples)


def exercise(
    ctx: CheckContext,
    operation: APIOperation,
    case: Case,
    headers: Mapping[str, str] | None = None,
    checks: list[Callable[..., Any]] | None = None,
) -> None:
    """Send one generated case and judge the reply (see ``check_rest_operations``)."""
    from schemathesis.core.failures import FailureGroup

    prepared = _prepare(case, headers)
    # prepare() always sets a str url; urlsplit(None) and urlsplit("") give the same target "/".
    parts = urlsplit(prepared.url or "")
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    sent_headers = _wire_headers(prepared, case, headers)
    # The kwargs schemathesis builds (json, data, files) always prepare to a str, bytes or no body.
    body = cast("bytes | str | None", prepared.body)
    content = body.encode() if isinstance(body, str) else body
    reply = ctx.http.request(prepared.method or case.method, target, headers=sent_headers, content=content)

    # What the checks see of the request: the one that went out, at the target's address.
    prepared.url = ctx.http.base_url + target
    prepared.headers.clear()
    prepared.headers.update(sent_headers)
    response = _response(reply, prepared)
    label = f"{operation.method.upper()} {operation.path}"
    for check in checks or _check_functions():
        broken = ""
        try:
            case.validate_response(response, checks=[check], headers=dict(sent_headers))
        except FailureGroup as group:
            broken = _one_line(group.exceptions[0], reply.status)
        ctx.expect(not broken, f"{label}: {check.__name__}: {ctx.http.redact(broken)}")


def _check_functions() -> list[Callable[..., Any]]:
    from schemathesis import checks as base
    from schemathesis.specs.openapi import checks as openapi

    found = []
    for name in CHECKS:
        function = getattr(openapi, name, None) or getattr(base, name, None)
        if function is not None:  # response_headers_conformance is missing in older releases
            found.append(function)
    return found


def _prepare(case: Case, headers: Mapping[str, str] | None) -> requests.PreparedRequest:
    """The request schemathesis would send for ``case`` (serialized body, encoded path
    and query, cookies), built but never sent."""
    import requests

    kwargs = case.as_transport_kwargs(base_url=_PLACEHOLDER_BASE, headers=dict(headers or {}))
    return requests.Request(**{key: kwargs[key] for key in _REQUEST_KWARGS if key in kwargs}).prepare()


def _wire_headers(
    prepared: requests.PreparedRequest, case: Case, headers: Mapping[str, str] | None
) -> dict[str, str]:
    chosen = {name.lower() for name in (case.headers or {})} | {name.lower() for name in (headers or {})}
    # requests types header values as str | bytes; the ones built from str headers are str.
    return {
        name: cast(str, value)
        for name, value in prepared.headers.items()
        if name.lower() != "content-length"
        and (name.lower() not in _TRANSPORT_HEADERS or name.lower() in chosen)
    }


def _response(reply: HttpReply, request: requests.PreparedRequest) -> Any:
    from http import HTTPStatus

    from schemathesis import Response

    grouped: dict[str, list[str]] = {}
    for name, value in reply.headers.multi_items():
        grouped.setdefault(name.lower(), []).append(value)
    try:
        reason = HTTPStatus(reply.status).phrase
    except ValueError:
        reason = ""
    return Response(
        status_code=reply.status,
        headers=grouped,
        content=reply.content,
        request=request,
        elapsed=reply.exchange.elapsed_ms / 1000,
        verify=True,
        message=reason,
        encoding=_charset(reply.headers.get("content-type")),
    )


_CHARSET = re.compile(r";\s*charset=\"?([\w.:-]+)", re.IGNORECASE)


def _charset(content_type: str | None) -> str | None:
    match = _CHARSET.search(content_type or "")
    return match.group(1) if match else None


def _one_line(failure: Any, status: int) -> str:
    title = str(getattr(failure, "title", "") or type(failure).__name__)
    message = str(getattr(failure, "message", "") or "")
    text = f"{title}: {message}" if message else f"{title} (HTTP {status})"
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 3] + "..."
