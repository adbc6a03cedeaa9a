"""The A2A reference served as an agent that requires one kind of credential, for the kit's tests
(as tests/proxy.py serves a target behind a proxy): its card declares the security scheme of
that kind, and every call must present a credential of that kind that the front issued to one
of the reference's callers (full, other, limited), or be refused with HTTP 401.

    python tests/auth_front.py --port N --setup FILE

FILE (JSON) says ``kind`` (one of KINDS) and ``secrets`` (label -> what that caller presents:
an API key, ``[user, password]``, an OAuth2 ``[client_id, client_secret]``, a client
certificate's common name; ``gateway`` for the extra header); with ``tls`` (``cert``, ``key``
and, for mutual TLS, ``ca``) it serves HTTPS. ``oauth2`` and ``oidc`` also serve a token
endpoint (client credentials, HTTP Basic client authentication) on ``token_port``. With
``faulted_port`` and ``faults``, a second reference with those faults is served there alike
(a run that fails writes case files: what they hold of each credential is redacted). It
prints ``listening on <url>`` once it listens. Nothing here changes ``conformance serve``."""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import secrets
import ssl
import sys
import urllib.parse
from pathlib import Path
from typing import Any

KINDS = ("api_key_header", "api_key_query", "api_key_cookie", "basic", "header", "mtls", "oauth2", "oidc",
         "tls")
KEY_NAME = {"api_key_header": "X-API-Key", "api_key_query": "api_key", "api_key_cookie": "a2a_session"}
GATEWAY_HEADER = "X-Gateway-Key"
PEER_CERTS: dict[tuple[str, int], Any] = {}  # the client certificate of each connection (mutual TLS)
TOKENS: dict[str, str] = {}  # access tokens the token endpoint issued -> label


def scheme_of(kind: str, token_url: str) -> dict[str, Any] | None:
    """The card's security scheme for ``kind`` (the proto's SecurityScheme), None: the reference's own."""
    if kind.startswith("api_key_"):
        return {"apiKeySecurityScheme": {"location": kind.removeprefix("api_key_"), "name": KEY_NAME[kind]}}
    if kind == "basic":
        return {"httpAuthSecurityScheme": {"scheme": "Basic"}}
    if kind == "mtls":
        return {"mtlsSecurityScheme": {"description": "a client certificate the front's CA issued"}}
    if kind == "oauth2":
        flow = {"tokenUrl": token_url, "scopes": {}}
        return {"oauth2SecurityScheme": {"flows": {"clientCredentials": flow}}}
    if kind == "oidc":
        return {"openIdConnectSecurityScheme": {"openIdConnectUrl": token_url.rsplit("/", 1)[0]
                                                + "/.well-known/openid-configuration"}}
    return None  # header (a gateway's extra header beside the reference's bearer), tls: the reference's


def front_app(setup: dict[str, Any], token_url: str, faults: tuple[str, ...] = ()) -> tuple[Any, Any]:
    """The reference app, its caller and card patched for the kind; and the token endpoint's app."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from conformance.kit.faults import replaces
    from conformance.kit.reference import Refusal
    from conformance.run.launch import reference_app
    from conformance.run.profiles import load_profile

    kind, issued = setup["kind"], setup["secrets"]
    app = reference_app(load_profile("a2a"), faults, control=True)
    ref = app.state.reference
    tokens = TOKENS
    by_value = {json.dumps(value): label for label, value in issued.items() if label != "gateway"}

    def who(value: Any) -> str:
        label = by_value.get(json.dumps(value))
        if label is None:
            raise Refusal("Unauthenticated", f"a credential this agent issued is required ({kind})",
                          status=401)
        return label

    def cookies(request: Any) -> dict[str, str]:
        found: dict[str, str] = {}
        for part in request.headers.get("cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            found[name] = value
        return found

    @replaces(ref.caller)
    def caller(original: Any, request: Any) -> str:
        if kind == "api_key_header":
            return who(request.headers.get(KEY_NAME[kind]))
        if kind == "api_key_query":
            return who(request.query_params.get(KEY_NAME[kind]))
        if kind == "api_key_cookie":
            return who(cookies(request).get(KEY_NAME[kind]))
        if kind == "basic":
            header = request.headers.get("authorization", "")
            if not header.lower().startswith("basic "):
                return who(None)
            try:
                user, _, password = base64.b64decode(header[6:]).decode().partition(":")
            except ValueError:
                return who(None)
            return who([user, password])
        if kind == "header":
            if request.headers.get(GATEWAY_HEADER) != issued["gateway"]:
                raise Refusal("Unauthenticated", f"the gateway wants {GATEWAY_HEADER}", status=401)
            return str(original(request))
        if kind == "mtls":
            client = (request.scope.get("client") or ("", 0)) if hasattr(request, "scope") else ("", 0)
            peer = PEER_CERTS.get((client[0], client[1]))
            names = [v for rdn in (peer or {}).get("subject", ()) for k, v in rdn if k == "commonName"]
            return who(names[0] if names else None)
        if kind in ("oauth2", "oidc"):
            header = request.headers.get("authorization", "")
            label = tokens.get(header[7:]) if header[:7].lower() == "bearer " else None
            return label or who(None)
        return str(original(request))  # tls: the reference's own bearer tokens

    @replaces(ref.card)
    def card(original: Any, request: Any) -> dict[str, Any]:
        out = dict(original(request))
        scheme = scheme_of(kind, token_url)
        if scheme is not None:
            out["securitySchemes"] = {kind: scheme}
            out["securityRequirements"] = [{"schemes": {kind: {"list": []}}}]
        return out

    if kind == "basic":
        @replaces(ref.challenge)
        def challenge(original: Any, refusal: Refusal) -> dict[str, str]:
            found = original(refusal)
            return {"WWW-Authenticate": 'Basic realm="a2a"'} if refusal.status == 401 else found

    async def token(request: Request) -> JSONResponse:
        """RFC 6749 section 4.4: client credentials, the client authenticated by HTTP Basic."""
        form = urllib.parse.parse_qs((await request.body()).decode())
        header = request.headers.get("authorization", "")
        try:
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except ValueError:
            user = password = ""
        pair = [urllib.parse.unquote(user), urllib.parse.unquote(password)]
        label = by_value.get(json.dumps(pair)) if header.lower().startswith("basic ") else None
        if form.get("grant_type") != ["client_credentials"]:
            return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
        if label is None:
            return JSONResponse({"error": "invalid_client"}, status_code=401,
                                headers={"WWW-Authenticate": 'Basic realm="token"'})
        issued_token = "front-access-" + secrets.token_hex(16)
        tokens[issued_token] = label
        return JSONResponse({"access_token": issued_token, "token_type": "Bearer", "expires_in": 3600},
                            headers={"Cache-Control": "no-store"})

    return app, Starlette(routes=[Route("/token", token, methods=["POST"])])


def main() -> None:
    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class PeerCertH11(H11Protocol):
        """Notes each connection's client certificate, found by the scope's client address."""

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            ssl_object = transport.get_extra_info("ssl_object")
            peer = transport.get_extra_info("peername")
            if ssl_object is not None and peer:
                PEER_CERTS[(peer[0], peer[1])] = ssl_object.getpeercert()

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--setup", required=True)
    args = parser.parse_args()
    setup = json.loads(Path(args.setup).read_text(encoding="utf-8"))
    if setup["kind"] not in KINDS:
        sys.exit(f"kind must be one of {KINDS}")
    tls = setup.get("tls") or {}
    scheme = "https" if tls else "http"
    token_port = setup.get("token_port")
    token_url = f"http://127.0.0.1:{token_port}/token" if token_port else ""
    app, issuer = front_app(setup, token_url)
    apps = [(app, args.port)]
    if setup.get("faulted_port"):
        apps.append((front_app(setup, token_url, tuple(setup.get("faults") or ()))[0], setup["faulted_port"]))
    options: dict[str, Any] = {}
    if tls:
        options = {"ssl_certfile": tls["cert"], "ssl_keyfile": tls["key"]}
        if tls.get("ca"):  # mutual TLS: a certificate is asked for, and checked when given
            options.update(ssl_ca_certs=tls["ca"], ssl_cert_reqs=ssl.CERT_OPTIONAL)
    servers = [uvicorn.Server(uvicorn.Config(one, host="127.0.0.1", port=port, log_level="warning",
                                             http=PeerCertH11, **options)) for one, port in apps]
    if token_port:
        servers.append(uvicorn.Server(uvicorn.Config(issuer, host="127.0.0.1", port=token_port,
                                                     log_level="warning")))

    async def serve() -> None:
        tasks = [asyncio.ensure_future(server.serve()) for server in servers]
        while not all(server.started for server in servers) and not any(task.done() for task in tasks):
            await asyncio.sleep(0.05)
        if all(server.started for server in servers):
            print(f"listening on {scheme}://127.0.0.1:{args.port}", flush=True)
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for server in servers:
            server.should_exit = True
        await asyncio.gather(*tasks, return_exceptions=True)

    asyncio.run(serve())


if __name__ == "__main__":
    main()
