"""Bindu's REST surface beside the JSON-RPC endpoint (specs/bindu/openapi.yaml /paths):
every documented answer (schemathesis), the root redirect, the agent card and the
extended card, skills, negotiation, /health, /metrics and the payment endpoints of an
unpaid agent. Each requirement is declared on its check, with the faults that prove it
can fail."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from conformance.checks.expect import (
    error_named,
    expect_error,
    expect_list,
    expect_mapping,
    expect_result,
    not_found,
)
from conformance.checks.inputs import expect_matches
from conformance.checks.jsonrpc import expect_envelope
from conformance.documents.openapi import schema_at
from conformance.documents.schemas import resolve_pointer
from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import at, chosen, requirement
from conformance.kit.faults import answer, refuses, replaces
from conformance.protocols.bindu.client import BinduClient
from conformance.protocols.bindu.reference import MAIN_CLIENT, BinduReference, Caller, RpcError
from conformance.transport.binding import Reply, dig, rest_reply
from conformance.transport.http import HttpReply, json_excerpt

CATALOG = "/info/description"
CARD = "/paths/~1.well-known~1agent.json"
REST_EXCLUDED = ("/api/", "/payment-capture")  # paid endpoints: their own requirement
SKILL_ERROR_AT = {"code": "/code", "message": "/error"}  # the 404 body of /agent/skills/{skillId}
ENVELOPE_ERROR_AT = {"code": "/error/code", "message": "/error/message"}  # the error catalog's envelope
NEGOTIATION_EXAMPLE = "/paths/~1agent~1negotiation/post/requestBody/content/application~1json/example"
EXTENDED_CARD_METHOD = "agent/getAuthenticatedExtendedCard"  # A2A's method; the spec's method list lacks it
CHECK_VALUE = re.compile(r"^(ok|error: .+)$")


@requirement(id="BINDU-REST-OPENAPI", level="MUST",
             title="REST paths answer documented status codes, content types and schemas (schemathesis)",
             source=at("/paths"),
             faults=[answer("card_missing_did", "agent_card", "The agent card lacks the required did.",
                            drop=["did"]),
                     "health_wrong_content_type"])
def check_rest_schemathesis(ctx: CheckContext) -> None:
    from conformance.checks.openapi_rest import check_rest_operations

    def include(method: str, path: str) -> bool:
        """Every REST operation but the JSON-RPC endpoint and the paid ones."""
        return not (method == "POST" and path == "/") and not path.startswith(REST_EXCLUDED)

    check_rest_operations(ctx, ctx.profile.spec, include=include, headers=BinduClient(ctx).auth())


@check_rest_schemathesis.fault
def card_did_in_extension(ref: BinduReference) -> None:
    """The card lacks the required did: it names it as a capabilities extension's uri (Bindu 2026.36.7)."""
    @replaces(ref.agent_card)
    def card(original: Any, base_url: str) -> dict[str, Any]:
        out = original(base_url)
        did = out.pop("did")
        out["capabilities"] = {**out["capabilities"],
                               "extensions": [{"uri": did, "description": "DID-based identity",
                                               "required": False}]}
        return out


@check_rest_schemathesis.fault
def skill_not_found_enveloped(ref: BinduReference) -> None:
    """An unknown skill's 404 body is a JSON-RPC envelope, not the path's {error, code} (Bindu 2026.36.7)."""
    @replaces(ref.skill_not_found)
    def skill_not_found(_original: Any, skill_id: str) -> Response:
        err = ref.catalog["SkillNotFound"]
        return JSONResponse({"jsonrpc": "2.0", "id": None,
                             "error": {"code": err.code, "message": f"Skill not found: {skill_id}"}},
                            status_code=err.http_status)


@check_rest_schemathesis.fault
def health_wrong_content_type(ref: BinduReference) -> None:
    """/health is served as text/plain."""
    @replaces(ref.health)
    def health(original: Any, request: Request, body: bytes) -> Response:
        reply = original(request, body)
        return PlainTextResponse(bytes(reply.body).decode(), status_code=reply.status_code)


@requirement(id="BINDU-ROOT-REDIRECT", level="MUST", title="GET / redirects (302) to the agent card",
             source=at("/paths/~1/get"))
def check_root_redirect(ctx: CheckContext) -> None:
    reply = ctx.http.request("GET", "/")
    ctx.expect(reply.status == 302, f"GET /: HTTP {reply.status}, expected 302")
    expected = resolve_pointer(ctx.profile.spec,
                               "/paths/~1/get/responses/302/headers/Location/schema/example")
    location = reply.headers.get("location", "")
    ctx.expect(location.endswith(expected), f"GET / redirects to {location!r}, expected {expected!r}")


@check_root_redirect.fault
def root_not_redirect(ref: BinduReference) -> None:
    """GET / answers 200 with the agent card instead of a 302 redirect."""
    @replaces(ref.root_get)
    def root_get(_original: Any, request: Request, body: bytes) -> Response:
        return ref.card_get(request, body)


# -- the agent card ---------------------------------------------------------------------------
@requirement(id="BINDU-CARD-HEAD-OPTIONS", level="MUST",
             title="The agent card answers HEAD (200) and OPTIONS (204 with CORS headers)", source=at(CARD))
def check_card_head_options(ctx: CheckContext) -> None:
    head = ctx.http.request("HEAD", "/.well-known/agent.json")
    ctx.expect(head.status == 200, f"HEAD agent card: HTTP {head.status}")
    opts = ctx.http.request("OPTIONS", "/.well-known/agent.json",
                            headers={"Origin": "http://127.0.0.1", "Access-Control-Request-Method": "GET"})
    ctx.expect(opts.status == 204, f"OPTIONS agent card: HTTP {opts.status}, expected 204")
    ctx.expect("access-control-allow-origin" in opts.headers,
               "OPTIONS agent card lacks Access-Control-Allow-Origin")
    allowed = opts.headers.get("access-control-allow-methods", "")
    ctx.expect("GET" in allowed, f"Access-Control-Allow-Methods {allowed!r} does not allow GET")


@check_card_head_options.fault
def card_options_405(ref: BinduReference) -> None:
    """OPTIONS on the agent card answers 405 (no CORS preflight)."""
    @replaces(ref.card_options)
    def card_options(_original: Any, request: Request, body: bytes) -> Response:
        return PlainTextResponse("Method Not Allowed", status_code=405)


@requirement(id="BINDU-EXTENDED-CARD", level="SHOULD",
             title="Asking an agent without an extended card for one gets -32007 (or -32601: the method is "
                   "not in the list)",
             source=chosen("the catalog's -32007 row says \"Extended card requested\" without naming how "
                           "it is requested: the profile asks with A2A's method "
                           "agent/getAuthenticatedExtendedCard, "
                           "which the spec's method list (JsonRpcRequest.method) lacks, so -32601 is the "
                           "other reading (/info/description '| `-32007` |')"),
             faults=[refuses("extended_card_internal_error", "check_method",
                             lambda method: RpcError("Internal error"),
                             "A request for the authenticated extended card crashes (Internal error, HTTP "
                             "500).",
                             when=lambda method: method == EXTENDED_CARD_METHOD)])
def check_extended_card(ctx: CheckContext) -> None:
    """Without a published extended card, asking for one is refused: -32007 (the catalog)
    or -32601 (the method is not among the spec's accepted methods)."""
    c = BinduClient(ctx)
    if c.card().get("supportsAuthenticatedExtendedCard"):
        raise Untested("the agent card says it publishes an authenticated extended card")
    reply = c.call(EXTENDED_CARD_METHOD, {})
    expect_envelope(ctx, reply, EXTENDED_CARD_METHOD)
    expect_error(ctx, reply, "AuthenticatedExtendedCardNotConfigured",
                 f"{EXTENDED_CARD_METHOD} on an agent without one", also=("Method not found",))


# -- skills -------------------------------------------------------------------------------------
def skill_reply(reply: HttpReply) -> Reply:
    """A skill endpoint's answer read as a Reply. Its error is read where either text of the
    spec puts it: the path's documented 404 body (``{error, code}``) or the error catalog's
    own envelope ("Errors come back in the JSON-RPC envelope as `{ jsonrpc, id, error: {
    code, message, data? } }`", as Bindu 2026.36.7 answers); whether the body matches the
    path's schema is BINDU-REST-OPENAPI's subject."""
    body = reply.json()
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return rest_reply(reply, ENVELOPE_ERROR_AT)
    return rest_reply(reply, SKILL_ERROR_AT)


def unknown_skill(ctx: CheckContext) -> dict[str, Callable[[], Any]]:
    path = "/agent/skills/conformance-no-such-skill"
    return {f"GET {path}": lambda: skill_reply(ctx.http.request("GET", path))}


@requirement(id="BINDU-SKILL-NOT-FOUND", level="MUST", title="An unknown skill gets 404 with code -32030",
             source=at(CATALOG, "| `-32030` |"))
def check_skill_not_found(ctx: CheckContext) -> None:
    not_found(ctx, calls=unknown_skill(ctx), error="SkillNotFound")  # 404 with the catalog's code in the body
    path = "/agent/skills/conformance-no-such-skill/documentation"  # documented 404, no body
    reply = ctx.http.request("GET", path)
    status = error_named(ctx.profile, "SkillNotFound").http_status
    ctx.expect(reply.status == status, f"GET {path}: HTTP {reply.status}, expected {status}",
               kind="not_found_expected")


@check_skill_not_found.fault
def skill_not_found_500(ref: BinduReference) -> None:
    """An unknown skill is answered with HTTP 500."""
    @replaces(ref.skill_not_found)
    def skill_not_found(_original: Any, skill_id: str) -> Response:
        return JSONResponse({"error": "Internal Server Error"}, status_code=500)


@requirement(id="BINDU-SKILLS-CONSISTENT", level="SHOULD",
             title="/agent/skills matches the card; each skill has details and Markdown documentation",
             source=chosen("the spec does not tie /agent/skills to the card's skills"))
def check_skills_consistent(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    skills = expect_list(ctx, ctx.http.request("GET", "/agent/skills").json() or [], "GET /agent/skills")
    listed = [s for s in skills if expect_mapping(ctx, s, "a skill of GET /agent/skills", ["id"])]
    card_ids = {s.get("id") for s in c.card().get("skills") or [] if isinstance(s, dict)}
    ctx.expect({s.get("id") for s in listed} == card_ids,
               "/agent/skills differs from the agent card's skills")
    detail = schema_at(ctx.profile.spec, "/components/schemas/SkillDetail")
    for skill in listed:
        one = ctx.http.request("GET", f"/agent/skills/{skill['id']}")
        ctx.expect(one.status == 200, f"GET /agent/skills/{skill['id']}: HTTP {one.status}")
        expect_matches(ctx, detail, one.json(), f"skill {skill['id']}")
        doc = ctx.http.request("GET", f"/agent/skills/{skill['id']}/documentation")
        ctx.expect(doc.status == 200 and doc.headers.get("content-type", "").startswith("text/markdown"),
                   f"skill {skill['id']} documentation: HTTP {doc.status} {doc.headers.get('content-type')}")


@check_skills_consistent.fault
def skill_docs_missing(ref: BinduReference) -> None:
    """/agent/skills/{id}/documentation is 404 even for existing skills."""
    @replaces(ref.skill_documentation)
    def documentation(_original: Any, request: Request, body: bytes) -> Response:
        return ref.skill_not_found(request.path_params["skill_id"])


# -- negotiation --------------------------------------------------------------------------------
@requirement(id="BINDU-NEGOTIATION-SCORE", level="MUST",
             title="Negotiation answers a NegotiationResponse with a score within 0..1",
             source=at("/components/schemas/NegotiationResponse/properties/score"),
             faults=[answer("negotiation_score_percent", "negotiation_score",
                            "The negotiation score is a percentage (multiplied by 100) instead of in [0, 1].",
                            edit=lambda score, *_: score * 100)])
def check_negotiation(ctx: CheckContext) -> None:
    from conformance.generation.strategies import strategy_for
    from conformance.generation.variants import valid_batches

    req_schema = schema_at(ctx.profile.spec, "/components/schemas/NegotiationRequest")
    resp_schema = schema_at(ctx.profile.spec, "/components/schemas/NegotiationResponse")
    example = resolve_pointer(ctx.profile.spec, NEGOTIATION_EXAMPLE)

    def body(request: Any) -> None:
        for payload in (example, request):
            reply = ctx.http.request("POST", "/agent/negotiation", json_body=payload)
            ctx.expect(reply.status == 200, f"POST /agent/negotiation: HTTP {reply.status}")
            answer = reply.json()
            expect_matches(ctx, resp_schema, answer, "negotiation response")
            ctx.expect(0 <= answer["score"] <= 1, f"negotiation score {answer['score']} outside 0..1")

    ctx.for_all(strategy_for(req_schema), body, batched=valid_batches(req_schema))


@requirement(id="BINDU-NEGOTIATION-ADVISORY", level="MUST", title="Negotiation never performs the task",
             source=at("/paths/~1agent~1negotiation/post/description",
                       "This endpoint never actually performs the task"))
def check_negotiation_advisory(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    before = len(expect_list(ctx, expect_result(ctx, c.list_tasks(history_length=0), "tasks/list"),
                             "tasks/list result"))
    reply = ctx.http.request("POST", "/agent/negotiation",
                             json_body=resolve_pointer(ctx.profile.spec, NEGOTIATION_EXAMPLE))
    ctx.expect(reply.status == 200, f"POST /agent/negotiation: HTTP {reply.status}")
    after = len(expect_list(ctx, expect_result(ctx, c.list_tasks(history_length=0), "tasks/list"),
                            "tasks/list result"))
    ctx.expect(after == before,
               f"negotiation performed work: the caller had {before} tasks before and {after} after",
               kind="state_changed")


@check_negotiation_advisory.fault
def negotiation_creates_task(ref: BinduReference) -> None:
    """POST /agent/negotiation starts the task it was asked about (as the main caller)."""
    @replaces(ref.negotiate)
    def negotiate(original: Any, request: Request, body: bytes) -> Response:
        reply = original(request, body)
        message = {"role": "user", "kind": "message", "message_id": ref.new_id(),
                   "parts": [{"kind": "text", "text": "negotiated"}]}
        ref.message_send({"message": message}, Caller(MAIN_CLIENT))
        return reply


# -- /health and /metrics --------------------------------------------------------------------------
@requirement(id="BINDU-HEALTH", level="MUST",
             title="/health answers 200 healthy or 503 degraded, as a HealthResponse",
             source=at("/paths/~1health/get"), faults=["health_wrong_content_type"])
def check_health(ctx: CheckContext) -> None:
    reply = ctx.http.request("GET", "/health")
    ctx.expect(reply.status in (200, 503), f"/health: HTTP {reply.status}")
    ctx.expect(reply.headers.get("content-type", "").startswith("application/json"),
               f"/health content type {reply.headers.get('content-type')!r}")
    body = reply.json()
    expect_matches(ctx, schema_at(ctx.profile.spec, "/components/schemas/HealthResponse"), body,
                   "/health body")
    expected = "healthy" if reply.status == 200 else "degraded"
    ctx.expect(body["status"] == expected, f"/health HTTP {reply.status} says status {body['status']!r}")


def _health(ctx: CheckContext, status: int, word: str) -> dict[str, Any]:
    reply = ctx.http.request("GET", "/health")
    body = reply.json()
    ctx.expect(reply.status == status, f"/health answered HTTP {reply.status}, expected {status} ({word})",
               kind="wrong_status")
    ctx.expect(isinstance(body, dict) and body.get("status") == word,
               f"/health body {body!r:.120}, expected status {word!r}")
    checks = body.get("checks")
    ctx.expect(isinstance(checks, dict), f"/health body has no checks object: {json_excerpt(body)}",
               kind="schema_mismatch")
    for name, value in checks.items():
        ctx.expect(isinstance(value, str) and CHECK_VALUE.match(value),
                   f"/health check {name} is {value!r}, not \"ok\" or \"error: <reason>\"",
                   kind="schema_mismatch")
    return body


@requirement(id="BINDU-HEALTH-DEGRADED", level="MUST",
             title="A failing component makes /health 503 degraded; each check is \"ok\" or "
                   "\"error: <reason>\"",
             source=at("/paths/~1health/get/description", "Returns 200 when healthy, 503 when"),
             needs=["control"])
def check_health_degraded(ctx: CheckContext) -> None:
    if not ctx.run.control_path:
        ctx.needs_control("a failing component (control set_health): no request of a client makes /health "
                          "degrade")
    ctx.control("set_health", component="storage", status="error: conformance check")
    try:
        body = _health(ctx, 503, "degraded")
        ctx.expect(str(dig(body, "checks", "storage") or "").startswith("error"),
                   f"/health does not name the failing component: {json_excerpt(body)}")
    finally:
        ctx.control("set_health", component="storage", status="ok")
    _health(ctx, 200, "healthy")


@check_health_degraded.fault
def health_always_200(ref: BinduReference) -> None:
    """/health answers HTTP 200 even when a component fails (the body still says degraded)."""
    @replaces(ref.health)
    def health(original: Any, request: Request, body: bytes) -> Response:
        reply = original(request, body)
        reply.status_code = 200
        return reply


@requirement(id="BINDU-METRICS", level="MUST", title="/metrics answers Prometheus text",
             source=at("/paths/~1metrics/get"))
def check_metrics(ctx: CheckContext) -> None:
    reply = ctx.http.request("GET", "/metrics")
    ctx.expect(reply.status == 200, f"/metrics: HTTP {reply.status}")
    ctx.expect(reply.headers.get("content-type", "").startswith("text/plain"),
               f"/metrics content type {reply.headers.get('content-type')!r}")
    label = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*"'
    sample = re.compile(rf"^[a-zA-Z_:][a-zA-Z0-9_:]*(\{{({label})?(,{label})*,?\}})? "
                        rf"[-+0-9.eEinfNa]+( -?\d+)?$")
    lines = [ln for ln in reply.text.split("\n") if ln.strip()]  # label values may hold other line breaks
    ctx.expect(lines, "/metrics is empty")
    for ln in lines:
        ctx.expect(ln.startswith("#") or sample.match(ln),
                   f"/metrics line is not Prometheus text: {ln[:100]!r}")


@check_metrics.fault
def metrics_json(ref: BinduReference) -> None:
    """/metrics is served as JSON instead of Prometheus text."""
    @replaces(ref.metrics)
    def metrics(_original: Any, request: Request, body: bytes) -> Response:
        counts = [{"method": m, "path": p, "status": s, "count": n}
                  for (m, p, s), n in ref.request_counts.items()]
        return JSONResponse({"http_requests_total": counts})


@requirement(id="BINDU-METRICS-SERIES", level="MUST", title="/metrics exposes the series the spec names",
             source=at("/paths/~1metrics/get/description", "Key series include"),
             faults=[answer("metrics_missing_series", "metrics_text",
                            "/metrics lacks agent_llm_tokens_total, one of the series the spec names.",
                            edit=lambda text: "".join(ln + "\n" for ln in text.splitlines()
                                                      if "agent_llm_tokens_total" not in ln))])
def check_metrics_series(ctx: CheckContext) -> None:
    text = resolve_pointer(ctx.profile.spec, "/paths/~1metrics/get/description")
    names = re.findall(r"^- `([a-zA-Z_:][a-zA-Z0-9_:]*)", text, flags=re.M)
    ctx.expect(names, "the spec's /metrics description names no series (the check reads them from it)")
    reply = ctx.http.request("GET", "/metrics")
    ctx.expect(reply.status == 200, f"/metrics: HTTP {reply.status}")
    exposed = set(re.findall(r"^#\s*TYPE\s+(\S+)", reply.text, flags=re.M))
    exposed |= {re.split(r"[{ ]", ln, maxsplit=1)[0] for ln in reply.text.splitlines()
                if ln and not ln.startswith("#")}
    for name in names:
        with ctx.subcheck(name):
            ctx.expect(any(e == name or e.startswith(name + "_") for e in exposed),
                       f"/metrics lacks the series {name}")


# -- payments -------------------------------------------------------------------------------------
def _paid(card: dict[str, Any]) -> bool:
    """The profile's reading: an agent is paid when its card lists an x402 extension."""
    return any("x402" in str(ext.get("name", "")).lower() for ext in card.get("extensions") or []
               if isinstance(ext, dict))


@requirement(id="BINDU-PAYMENT-UNPAID", level="MUST",
             title="An unpaid agent answers 404 on the payment endpoints",
             source=at("/paths/~1api~1start-payment-session/post/description"))
def check_payment_unpaid(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    if _paid(c.card()):
        raise Untested("the agent card lists an x402 extension: the agent is paid", "optional")
    for method, path in (("POST", "/api/start-payment-session"),
                         ("GET", "/api/payment-status/conformance-none")):
        reply = ctx.http.request(method, path, headers=c.auth(), json_body={} if method == "POST" else None)
        ctx.expect(reply.status == 404,
                   f"{method} {path} on an unpaid agent: HTTP {reply.status}, expected 404")


@check_payment_unpaid.fault
def payment_session_on_unpaid(ref: BinduReference) -> None:
    """An unpaid agent answers 200 (its refusal as the body) on /api/start-payment-session instead of 404."""
    @replaces(ref.start_payment)
    def start(original: Any, request: Request, body: bytes) -> Response:
        reply = original(request, body)
        if reply.status_code == 404:
            reply.status_code = 200
        return reply
