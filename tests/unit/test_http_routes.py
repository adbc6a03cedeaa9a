"""The ``http-routes`` binding kind (conformance/transport/binding.py) against a tiny
in-process app that echoes what it got: the route whose braces the params fill, path
values escaped, the rest as the JSON body or as query parameters, the content type
declared, errors read where the entry says; and the config's ``scenarios:``."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from conformance.run.config import ConfigError, load_config
from conformance.transport.binding import make_binding
from conformance.transport.http import HttpTransport

ROUTES = {
    "GetThing": [{"verb": "get", "path": "/things/{id}", "body": ""},
                 {"verb": "get", "path": "/{tenant}/things/{id}", "body": ""}],
    "MakeThing": [{"verb": "post", "path": "/things", "body": "*"}],
    "DropThing": [{"verb": "delete", "path": "/things/{id}", "body": ""}],
}


async def echo(request: Request) -> Response:
    if request.path_params["rest"].endswith("missing"):
        return JSONResponse({"error": {"code": 404, "message": "no such thing", "details": [{"@type": "t"}]}},
                            status_code=404)
    if request.method == "DELETE":
        return Response(status_code=204)
    body = await request.body()
    return JSONResponse({"method": request.method, "path": request.scope["raw_path"].decode(),
                         "query": sorted(request.query_params.multi_items()),
                         "body": body.decode() or None, "type": request.headers.get("content-type")})


def binding() -> Any:
    app = Starlette(routes=[Route("/base/{rest:path}", echo, methods=["GET", "POST", "DELETE"])])
    entry = {"kind": "http-routes", "path": "/base", "routes": ROUTES, "content_type": "application/x+json",
             "error": {"code": "/error/code", "message": "/error/message", "data": "/error/details"}}
    return make_binding("rest", entry, HttpTransport(app=app), lambda label, required: None)


def test_the_route_the_params_fill_and_the_rest_as_query():
    got = binding().call("GetThing", {"id": "a/b c", "verbose": True, "tags": ["x", "y"], "size": 3}).result
    assert got["method"] == "GET" and got["path"] == "/base/things/a%2Fb%20c"
    assert got["query"] == [["size", "3"], ["tags", "x"], ["tags", "y"], ["verbose", "true"]]
    assert got["body"] is None and got["type"] is None  # no body, so no content type


def test_a_tenant_takes_the_route_that_names_it():
    got = binding().call("GetThing", {"id": "t1", "tenant": "acme"}).result
    assert got["path"] == "/base/acme/things/t1" and got["query"] == []
    assert binding().call("GetThing", {"id": "t1", "tenant": ""}).result["path"] == "/base/things/t1"


def test_the_rest_as_the_body_with_the_declared_content_type():
    got = binding().call("MakeThing", {"name": "n", "size": 2}).result
    assert got["method"] == "POST" and got["path"] == "/base/things"
    assert got["body"] == '{"name": "n", "size": 2}' and got["type"] == "application/x+json"


def test_errors_where_the_entry_says_and_an_empty_answer_as_an_empty_result():
    reply = binding().call("GetThing", {"id": "missing"})
    assert not reply.ok and reply.status == 404 and reply.error_code == 404 and reply.spoke
    assert reply.error_message == "no such thing" and reply.error_data == [{"@type": "t"}]
    dropped = binding().call("DropThing", {"id": "x"})
    assert dropped.ok and dropped.result == {} and dropped.status == 204


def test_read_back_is_what_the_server_reads_of_the_params():
    """A path member travels as text (one no route can take is not carried), the body as it is,
    a query parameter as the protocol's reader reads its texts (by default its last value)."""
    rest = binding()
    assert rest.read_back("GetThing", {"id": "t1", "size": 3, "tags": ["x", "y"]}) == \
        {"id": "t1", "size": "3", "tags": "y"}
    typed = rest.read_back("GetThing", {"id": "t1", "size": 3}, query=lambda name, texts: int(texts[-1]))
    assert typed == {"id": "t1", "size": 3}
    assert rest.read_back("MakeThing", {"name": 5}) == {"name": 5}
    for not_carried in ({"id": 7}, {"id": ""}, ["id"]):
        with pytest.raises(ValueError):
            rest.read_back("GetThing", not_carried)


def test_an_operation_without_a_route_is_the_callers_mistake():
    with pytest.raises(ValueError, match="no route for operation 'Nope'"):
        binding().call("Nope", {})


def test_scenarios_in_a_config_are_checked(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text("scenarios: {input_required: 'please ask me', failed: {parts: [{text: fail}]}}\n")
    assert load_config(good)["scenarios"]["input_required"] == "please ask me"
    bad = tmp_path / "bad.yaml"
    bad.write_text("scenarios: [input_required]\n")
    with pytest.raises(ConfigError, match="scenarios must map an outcome"):
        load_config(bad)


def test_a_scenario_the_profile_does_not_name_is_refused():
    from conformance.run.launch import scenarios_of
    from conformance.run.profiles import load_profile

    profile = load_profile("a2a")
    assert scenarios_of(profile, {"input_required": "x"}) == {"input_required": "x"}
    with pytest.raises(ConfigError, match=r"unknown scenarios \['teleport'\]"):
        scenarios_of(profile, {"teleport": "x"})
