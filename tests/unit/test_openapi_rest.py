"""check_rest_operations against a tiny in-process Starlette app and its OpenAPI 3.1 document."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from hypothesis import Phase, settings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from conformance.budgets import BUDGETS
from conformance.checks.openapi_rest import CHECKS, check_rest_operations, rest_operations
from conformance.kit.check import CheckContext, RunContext
from conformance.model import Requirement, Source
from conformance.run.examples import example_database
from conformance.run.runner import execute
from conformance.transport.http import HttpTransport

BINDU_SPEC = Path(__file__).resolve().parents[2] / "specs" / "bindu" / "openapi.yaml"

ITEM = {
    "type": "object",
    "required": ["id", "name"],
    "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
}
SPEC = {
    "openapi": "3.1.0",
    "info": {"title": "items", "version": "1"},
    "components": {"securitySchemes": {"bearerAuth": {"type": "http", "scheme": "bearer"}}},
    "paths": {
        "/items/{itemId}": {
            "get": {
                "parameters": [
                    {
                        "name": "itemId",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "integer", "minimum": 0},
                    },
                    {"name": "verbose", "in": "query", "schema": {"type": "boolean"}},
                ],
                "responses": {
                    "200": {"description": "the item", "content": {"application/json": {"schema": ITEM}}},
                    "404": {"description": "no such item"},
                },
            }
        },
        "/items": {
            "post": {
                "security": [{"bearerAuth": []}],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {"name": {"type": "string", "minLength": 1}},
                            }
                        }
                    },
                },
                "responses": {
                    "201": {
                        "description": "created",
                        "headers": {"Location": {"required": True, "schema": {"type": "string"}}},
                        "content": {"application/json": {"schema": ITEM}},
                    },
                    "401": {"description": "no or bad token"},
                },
            }
        },
        "/ping": {"get": {"responses": {"200": {"description": "pong", "content": {"text/plain": {}}}}}},
    },
}
TOKEN = "Bearer s3cret-token"


@pytest.fixture(autouse=True)
def _no_explain_phase():
    """Hypothesis's explain phase re-runs a failing example ~100 times (each one a
    request); the runner's settings keep it, so these tests switch it off to stay fast."""
    previous = settings.get_current_profile_name()
    settings.register_profile(
        "openapi-rest-tests",
        parent=settings.get_profile(previous),
        phases=[phase for phase in Phase if phase is not Phase.explain],
    )
    settings.load_profile("openapi-rest-tests")
    yield
    settings.load_profile(previous)


def make_app(fault: str | None = None, seen: list[dict] | None = None) -> Starlette:
    """A conforming implementation of SPEC, or one with ``fault`` on GET /items/{itemId}
    (``missing-header`` is on POST /items)."""
    seen = seen if seen is not None else []

    async def get_item(request: Request) -> Response:
        seen.append({"path": request.url.path, "query": dict(request.query_params)})
        item_id = int(request.path_params["itemId"])
        if fault == "schema":
            return JSONResponse({"id": str(item_id), "name": "x"})
        if fault == "status":
            return JSONResponse({"error": "teapot"}, status_code=418)
        if fault == "ctype":
            return PlainTextResponse(json.dumps({"id": item_id, "name": "x"}))
        if fault == "crash":
            raise RuntimeError("boom")
        if item_id % 2:
            return Response(status_code=404)
        return JSONResponse({"id": item_id, "name": f"item {item_id}"})

    async def post_item(request: Request) -> Response:
        seen.append({"auth": request.headers.get("authorization"), "body": await request.body()})
        if request.headers.get("authorization") != TOKEN:
            return Response(status_code=401)
        body = json.loads(await request.body())
        headers = {} if fault == "missing-header" else {"Location": "/items/2"}
        return JSONResponse({"id": 2, "name": body["name"]}, status_code=201, headers=headers)

    async def ping(request: Request) -> Response:
        seen.append({"ping": True})
        return PlainTextResponse("pong")

    return Starlette(
        routes=[
            Route("/items/{itemId}", get_item, methods=["GET"]),
            Route("/items", post_item, methods=["POST"]),
            Route("/ping", ping, methods=["GET"]),
        ]
    )


def requirement(check=lambda c: None) -> Requirement:
    return Requirement("T-1", "MUST", "t", Source("x", "/"), check, ("f",))


def context(app: Starlette) -> tuple[CheckContext, HttpTransport]:
    http = HttpTransport(app=app)
    run = RunContext(
        profile=SimpleNamespace(settings={"endpoint": "/"}, name="t"),
        http=http,
        budget=BUDGETS["quick"],
        seed=1,
        database=example_database(None),
    )
    return CheckContext(run, requirement()), http


def test_operations_are_loaded_and_filtered_without_touching_the_spec():
    before = copy.deepcopy(SPEC)
    labels = [(op.method.upper(), op.path) for op in rest_operations(SPEC)]
    assert labels == [("GET", "/items/{itemId}"), ("POST", "/items"), ("GET", "/ping")]
    only = rest_operations(SPEC, include=lambda method, path: method == "POST")
    assert [(op.method, op.path) for op in only] == [("post", "/items")]
    assert SPEC == before
    assert "response_headers_conformance" in CHECKS


def test_a_conforming_app_passes_and_every_request_goes_through_http():
    seen: list[dict] = []
    ctx, http = context(make_app(seen=seen))
    check_rest_operations(ctx, SPEC, headers={"Authorization": TOKEN}, examples=10)
    assert http.total == len(seen)
    gets = [s for s in seen if "path" in s]
    posts = [s for s in seen if "auth" in s]
    assert gets and posts and any("ping" in s for s in seen)
    assert all(s["path"].startswith("/items/") and "{" not in s["path"] for s in gets)
    # the caller's Authorization wins over the one schemathesis generates for bearerAuth
    assert {s["auth"] for s in posts} == {TOKEN}
    assert all(isinstance(json.loads(s["body"])["name"], str) for s in posts)


def test_without_the_token_the_documented_401_is_fine():
    ctx, http = context(make_app())
    check_rest_operations(ctx, SPEC, include=lambda m, p: p == "/items", examples=3)
    assert http.total >= 1
    assert {e.response["status"] for e in http.log} == {401}


@pytest.mark.parametrize(
    ("fault", "check", "words"),
    [
        ("schema", "response_schema_conformance", "is not of type"),
        ("status", "status_code_conformance", "418"),
        ("ctype", "content_type_conformance", "text/plain"),
        ("crash", "not_a_server_error", "500"),
    ],
)
def test_a_broken_get_fails_naming_operation_and_check(fault, check, words):
    ctx, http = context(make_app(fault))
    before = http.total
    check_rest_operations(ctx, SPEC, include=lambda m, p: p == "/items/{itemId}", examples=5)
    [failure] = ctx.subcheck_failures  # one sub-check per operation
    assert failure.subcheck == "GET /items/{itemId}"
    message = failure.message
    assert message.startswith(f"GET /items/{{itemId}}: {check}: ")
    assert words in message
    assert "\n" not in message
    assert http.total > before
    # the log holds the failing example's exchange, as sent through the transport
    assert http.log and http.log[-1].request["url"].startswith("/items/")
    assert http.log[-1].response["status"] == {"crash": 500, "status": 418}.get(fault, 200)


def test_a_missing_required_response_header_fails():
    ctx, http = context(make_app("missing-header"))
    check_rest_operations(ctx, SPEC, include=lambda m, p: m == "POST", headers={"Authorization": TOKEN},
                          examples=3)
    [failure] = ctx.subcheck_failures
    assert failure.message.startswith("POST /items: response_headers_conformance: ")
    assert "Location" in failure.message
    # the failing example's exchange carries the caller's token, not a generated one
    assert http.log[-1].request["headers"]["Authorization"] == TOKEN
    assert http.log[-1].response["status"] == 201


def test_through_the_runner_the_verdict_keeps_message_exchanges_and_replays():
    http = HttpTransport(app=make_app("schema"))

    def run() -> RunContext:
        return RunContext(
            profile=SimpleNamespace(settings={"endpoint": "/"}, name="t"),
            http=http,
            budget=BUDGETS["quick"],
            seed=1,
            database=example_database(None),
        )

    req = requirement(lambda ctx: check_rest_operations(ctx, SPEC))
    verdict = execute(req, run())
    assert verdict.status == "failed"
    assert "GET /items/{itemId}: response_schema_conformance: " in verdict.message
    assert any(e.request["url"].startswith("/items/") for e in verdict.exchanges)
    assert verdict.exchange_count >= len(verdict.exchanges)
    assert verdict.reproduce is not None and verdict.reproduce["call"] == 1
    again = execute(req, run(), reproduce=verdict.reproduce)
    assert (again.status, again.message) == ("failed", verdict.message)
    assert [e.request for e in again.exchanges] == [e.request for e in verdict.exchanges]


def test_bindu_health_against_a_stub():
    spec = yaml.safe_load(BINDU_SPEC.read_text())

    async def health(request: Request) -> Response:
        return JSONResponse(
            {
                "status": "healthy",
                "checks": {"storage": "ok", "bus": "ok"},
                "timestamp": "2026-04-19T18:00:00+00:00",
            }
        )

    ctx, http = context(Starlette(routes=[Route("/health", health, methods=["GET"])]))
    check_rest_operations(ctx, spec, include=lambda m, p: (m, p) == ("GET", "/health"))
    assert http.total >= 1
    assert all(e.request["url"] == "/health" and e.response["status"] == 200 for e in http.log)


def test_bindu_health_with_a_wrong_status_value_fails():
    spec = yaml.safe_load(BINDU_SPEC.read_text())

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "fine", "checks": {}, "timestamp": "2026-04-19T18:00:00+00:00"})

    ctx, _ = context(Starlette(routes=[Route("/health", health, methods=["GET"])]))
    check_rest_operations(ctx, spec, include=lambda m, p: (m, p) == ("GET", "/health"))
    [failure] = ctx.subcheck_failures
    assert re.match(r"^GET /health: response_schema_conformance: .*fine", failure.message)
