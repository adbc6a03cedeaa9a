"""How checks talk A2A over whichever binding the run speaks: the agent card (read once a
requirement; where each binding lives, once a run), messages, the Task of an answer, the A2A error an answer
carries (by the JSON-RPC code of section 5.4, or by an HTTP+JSON or gRPC ErrorInfo reason, or by a
status only one error has), and driving the agent to an outcome: the reference's control,
else the config's ``scenarios:``, else an ordinary message whose outcome is classified
(``Untested`` when the agent went elsewhere). Credentials go as the card asks for them
(``card_ways``: section 7.3, "discovers the server's required authentication schemes via the
`securitySchemes` field")."""

from __future__ import annotations

import functools
import re
import time
import urllib.parse
import uuid
from typing import Any

from conformance.kit.check import Blocked, CheckContext, ProtocolMismatch, Untested
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.names import EXTENSIONS_HEADER, named
from conformance.protocols.a2a.wire import state
from conformance.transport.binding import Reply, dig
from conformance.transport.http import CredentialUnfit

CARD_PATH = "/.well-known/agent-card.json"
CARD_KEY = "a2a card"
LOOKS_KEY = "a2a looks refused"
# the row about each operation's answer: where another row only uses the operation to look (or
# to set up what it judges) and the agent refuses it, that row is blocked in this one's name
ABOUT = {"SendMessage": "A2A-SEND-RESPONSE", "GetTask": "A2A-GET-TASK", "ListTasks": "A2A-LIST-RESPONSE",
         "CancelTask": "A2A-CANCEL-TASK"}
# HTTP authentication schemes (the IANA registry the proto's HTTPAuthSecurityScheme.scheme names)
# the kit sends: RFC 7617's and RFC 6750's
HTTP_SCHEMES = ("basic", "bearer")


def read_card(ctx: CheckContext) -> dict[str, Any]:
    """The public agent card (section 8.2: the well-known URI), fetched once a requirement (a
    run-wide copy would hide from the selftest's trace that a requirement reads the card)."""
    if CARD_KEY not in ctx.scratch:
        reply = ctx.http.request("GET", CARD_PATH, headers={"Accept": "application/json"})
        card = reply.json()
        if reply.status != 200 or not isinstance(card, dict):
            raise ProtocolMismatch(f"{ctx.http.target} serves no agent card at {CARD_PATH} "
                                   f"(HTTP {reply.status} {reply.text[:80]!r}): is this an A2A server?")
        ctx.scratch[CARD_KEY] = card
    card = ctx.scratch[CARD_KEY]
    assert isinstance(card, dict)
    return card


def interfaces(card: dict[str, Any]) -> list[dict[str, Any]]:
    found = card.get("supportedInterfaces")
    return [i for i in found if isinstance(i, dict)] if isinstance(found, list) else []


def relative(ctx: CheckContext, url: str) -> str:
    """An interface URL as a path under the run's target (the card may name another host:
    the run talks only to the target it was given)."""
    base = ctx.http.target.rstrip("/")
    if url.startswith(base):
        return url[len(base):] or "/"
    path = urllib.parse.urlsplit(url).path or "/"
    prefix = urllib.parse.urlsplit(base).path.rstrip("/")
    return path[len(prefix):] or "/" if prefix and path.startswith(prefix) else path


def required_extensions(card: dict[str, Any]) -> list[str]:
    """The URIs of the extensions the card marks ``required`` (section 4.6.1)."""
    found = dig(card, "capabilities", "extensions")
    return [str(e["uri"]) for e in found if isinstance(e, dict) and e.get("required") is True
            and isinstance(e.get("uri"), str)] if isinstance(found, list) else []


def declaring(entry: dict[str, Any], card: dict[str, Any]) -> dict[str, Any]:
    """The binding's headers with the card's required extensions declared (section 3.3.4:
    an agent refuses a client that does not declare them; the proto's AgentExtension.required:
    "the client must understand and comply"), so every call reaches the agent; the rows about
    the declaration itself (extensions.py) call without it."""
    required = required_extensions(card)
    if not required:
        return {}
    return {"headers": {**(entry.get("headers") or {}), EXTENSIONS_HEADER: ",".join(required)}}


@functools.lru_cache(maxsize=1)
def security_names() -> dict[str, str]:
    """The card's security members by the proto's JSON names (checked against the proto: names.named)."""
    names = {"schemes": "securitySchemes", "requirements": "securityRequirements", "of": "schemes",
             "api_key": "apiKeySecurityScheme", "http": "httpAuthSecurityScheme",
             "oauth2": "oauth2SecurityScheme", "open_id": "openIdConnectSecurityScheme",
             "mtls": "mtlsSecurityScheme", "location": "location", "name": "name", "scheme": "scheme"}
    named(*names.values())
    return names


def way_of(scheme: Any) -> dict[str, Any] | None:
    """The credential kind one of the card's security schemes asks for (the proto's
    SecurityScheme, section 4.5): an API key where its location and name say, HTTP Basic or
    Bearer, an OAuth2 or OpenID Connect access token (sent as a bearer token, RFC 6750), a
    client certificate (mutual TLS); None for what the kit cannot send (another HTTP scheme)."""
    n = security_names()
    if not isinstance(scheme, dict):
        return None
    if isinstance(scheme.get(n["api_key"]), dict):
        key = scheme[n["api_key"]]
        return {"kind": "api_key", "in": str(key.get(n["location"]) or "").lower(),
                "name": str(key.get(n["name"]) or "")}
    if isinstance(scheme.get(n["http"]), dict):
        name = str(scheme[n["http"]].get(n["scheme"]) or "").lower()
        return {"kind": name} if name in HTTP_SCHEMES else None
    if isinstance(scheme.get(n["oauth2"]), dict) or isinstance(scheme.get(n["open_id"]), dict):
        return {"kind": "bearer"}
    if isinstance(scheme.get(n["mtls"]), dict):
        return {"kind": "cert"}
    return None


def card_ways(card: dict[str, Any]) -> list[list[dict[str, Any]]] | None:
    """How the card asks for credentials, as a binding's ``auth:`` (transport/credentials.py):
    each of its ``securityRequirements`` an alternative, all of whose schemes are sent together
    (the proto: a SecurityRequirement maps schemes to their scopes; the list holds those that
    grant access, after OpenAPI's Security Requirement Object). None where the card declares
    none the kit can send: the credentials go as configured."""
    n = security_names()
    schemes, required = card.get(n["schemes"]), card.get(n["requirements"])
    if not isinstance(schemes, dict) or not isinstance(required, list):
        return None
    ways = []
    for requirement in required:
        names = dig(requirement, n["of"])
        parts = [way_of(schemes.get(n)) for n in names] if isinstance(names, dict) and names else []
        if parts and all(parts):
            ways.append([p for p in parts if p is not None])
    return ways or None


def discover(ctx: CheckContext) -> None:
    """Where each of the profile's bindings lives, by the card (``run.endpoints``), the
    extensions every call declares, and how calls present their credentials."""
    card = read_card(ctx)
    declared = {str(i.get("protocolBinding")): i for i in reversed(interfaces(card))}  # the first wins
    ways = card_ways(card)
    for name, entry in ctx.profile.settings["bindings"].items():
        found = declared.get(str(entry.get("interface")))
        if found is not None and isinstance(found.get("url"), str):
            ctx.run.endpoints[name] = {"path": relative(ctx, found["url"]), "url": found["url"],
                                       "tenant": found.get("tenant") if isinstance(found.get("tenant"), str)
                                       else "", **declaring(entry, card), **({"auth": ways} if ways else {})}
    run_binding = ctx.run.binding
    if run_binding is not None and run_binding not in ctx.run.endpoints:
        named = ", ".join(sorted(declared)) or "none"
        wanted = ctx.profile.settings["bindings"][run_binding]["interface"]
        raise ProtocolMismatch(f"the agent card declares no {wanted} interface (it declares: {named}); "
                               "choose another with --binding")


def found(ctx: CheckContext, read: Any) -> Any:
    """``read(ctx)`` inside a check: a card that is missing, malformed or names no interface of
    the run is a finding about the card there (the preflight's probe says it as exit 3)."""
    try:
        return read(ctx)
    except ProtocolMismatch as exc:
        ctx.fail(str(exc), kind="malformed_answer")


class A2AClient:
    """One check's A2A calls over the run's binding (or ``binding``)."""

    def __init__(self, ctx: CheckContext, binding: str | None = None) -> None:
        self.ctx = ctx
        if ctx.run.binding not in ctx.run.endpoints and ctx.run.binding is not None:
            found(ctx, discover)
        self.binding = ctx.binding if binding is None else ctx.binding_named(binding)
        self.tenant = str(ctx.run.endpoints.get(self.binding.name, {}).get("tenant") or "")

    @property
    def card(self) -> dict[str, Any]:
        return found(self.ctx, read_card)

    def capability(self, name: str) -> bool:
        """Section 3.3.4: a capability is on only when the card says true."""
        return dig(self.card, "capabilities", name) is True

    def call(self, method: str, params: Any, **options: Any) -> Reply:
        """``method`` with ``params``, the interface's tenant added (section 8.3.2, rule 4). A
        caller whose credential holds nothing the card asks for over this binding (an API key
        in the query, over gRPC) leaves the requirement untested."""
        if self.tenant and isinstance(params, dict) and "tenant" not in params:
            params = {**params, "tenant": self.tenant}
        try:
            return self.binding.call(method, params, **options)
        except CredentialUnfit as exc:
            raise Untested(str(exc), "credential") from None

    # -- messages and tasks ----------------------------------------------------------
    @staticmethod
    def message(text: str = "hello from the conformance kit", **fields: Any) -> dict[str, Any]:
        out = {"messageId": f"conformance-{uuid.uuid4()}", "role": docs.role_named("user"),
               "parts": [{"text": text}]}
        out.update({k: v for k, v in fields.items() if v is not None})
        return out

    def send(self, message: dict[str, Any] | None = None, configuration: dict[str, Any] | None = None,
             **options: Any) -> Reply:
        params: dict[str, Any] = {"message": message or self.message()}
        if configuration is not None:
            params["configuration"] = configuration
        return self.call("SendMessage", params, **options)

    def result(self, reply: Reply, what: str) -> dict[str, Any]:
        """The result object of an answer that must be one (a finding otherwise)."""
        if not reply.ok or not isinstance(reply.result, dict):
            self.ctx.fail(f"{what}: expected a result, got {reply.describe()}", kind="rejected_valid")
        assert isinstance(reply.result, dict)
        return reply.result

    def task_of(self, reply: Reply, what: str) -> dict[str, Any]:
        """The Task of a SendMessage answer (``task``; a Message answer is untested here)."""
        result = self.result(reply, what)
        if "message" in result and "task" not in result:
            raise Untested(f"{what}: the agent answered with a Message, not a Task", "outcome")
        task = result.get("task")
        if not isinstance(task, dict) or not isinstance(task.get("id"), str):
            self.ctx.fail(f"{what}: the answer holds no Task with an id: {reply.describe()}",
                          kind="malformed_answer")
        assert isinstance(task, dict)
        return task

    def get(self, task_id: str, **params: Any) -> Reply:
        return self.call("GetTask", {"id": task_id, **params})

    def look(self, method: str, params: Any, what: str, **options: Any) -> dict[str, Any]:
        """The result of a request the check only looks at (a listing it reads a task in, say):
        a refusal is a set-up step that blocks the check in the name of the operation's own
        row (``ABOUT``), which judges it: one bug, one finding."""
        with self.ctx.setup(what, by=ABOUT.get(method, "")):
            reply = self.call(method, params, **options)
            self.ctx.expect(reply.ok and isinstance(reply.result, dict),
                            f"{what}: expected a result, got {reply.describe()}", kind="rejected_valid")
        assert isinstance(reply.result, dict)
        return reply.result

    def look_or_later(self, method: str, params: Any, what: str, **options: Any) -> dict[str, Any] | None:
        """``look``, where the check has other answers to judge: a refusal is kept, and None
        returned; ``blocked_looks`` raises it once the others were judged (a row that found
        nothing wrong elsewhere is blocked by it, never passed without it)."""
        try:
            return self.look(method, params, what, **options)
        except Blocked as exc:
            self.ctx.scratch.setdefault(LOOKS_KEY, []).append(exc)
            return None

    def drive(self, outcome: str, **fields: Any) -> dict[str, Any]:
        """A message that should bring the agent to ``outcome`` (a name of the profile's
        ``scenarios:``): control scripts the reference; else the config's scenario; else,
        for ``completed`` only, an ordinary message."""
        if outcome == "completed" and not self.ctx.run.scenarios.get(outcome):
            return self.message(**fields)  # the agent's own way (the reference's default): no script
        if self.ctx.run.control_path:
            self.ctx.control("script", outcome=outcome)
            return self.message(**fields)
        scenario = self.ctx.run.scenarios.get(outcome)
        if isinstance(scenario, str):
            return self.message(scenario, **fields)
        if isinstance(scenario, dict):
            return scenario_message(self.message(**fields), scenario, fields)
        if outcome == "completed":
            return self.message(**fields)
        raise Untested(f"nothing drives this agent to {outcome}: name a message under scenarios.{outcome} "
                       "in --config", "outcome")

    def settled(self, task: dict[str, Any], what: str = "") -> dict[str, Any]:
        """``task`` once the agent stopped working on it by itself: while it is in a state the
        proto calls neither terminal nor interrupted (submitted, working), GetTask polls it
        within the run's timeout (an agent may answer SUBMITTED and complete later: section
        3.1.1, "Task processing MAY continue asynchronously"). The last task read (or
        ``task`` itself) is returned, in whatever state it is: the caller judges it. A
        GetTask the agent refuses is a set-up step A2A-GET-TASK is about."""
        waited, pause = 0.0, POLL_FIRST
        limit = float(getattr(self.ctx.http, "timeout", 5.0) or 5.0)
        label = what or f"GetTask {task.get('id')} while the agent works on it"
        while state(task) in moving() and waited < limit:
            time.sleep(pause)
            waited += pause
            pause = min(pause * 2, POLL_MOST)
            with self.ctx.setup(label, by="A2A-GET-TASK"):
                reply = self.get(str(task["id"]))
                got = reply.result if reply.ok else None
                self.ctx.expect(isinstance(got, dict) and got.get("id") == task["id"],
                                f"{label}: {reply.describe()}", kind="rejected_valid")
            assert isinstance(got, dict)
            task = got
        return task


def blocked_looks(ctx: CheckContext) -> None:
    """The first look ``look_or_later`` kept a refusal of, raised (a check's last step)."""
    kept = ctx.scratch.get(LOOKS_KEY) or []
    if kept:
        raise kept[0]


def scenario_message(default: dict[str, Any], scenario: dict[str, Any],
                     fields: dict[str, Any]) -> dict[str, Any]:
    """The Message a config's scenario names, as the user wrote it: the kit fills in only what
    it leaves out (a messageId, the client's role, parts) and sets the ids a check continues a
    task with (``fields``). A messageId is the message creator's and unique per message (the
    proto; section 3.3.1 lets an agent take a repeated one for a duplicate), and a scenario is
    sent many times a run: a configured messageId is kept as the start of each one sent, a
    unique suffix after it (``<configured>-<12 hex digits>``), so an agent that routes on its
    message ids (by prefix, as the official TCK's agents do) is driven, and never sees one twice."""
    out = {**default, **scenario, **{k: v for k, v in fields.items() if v is not None}}
    configured = scenario.get("messageId")
    if isinstance(configured, str) and configured:
        out["messageId"] = f"{configured}-{uuid.uuid4().hex[:12]}"
    return out


POLL_FIRST, POLL_MOST = 0.05, 0.5  # seconds between GetTasks of a task the agent works on


@functools.lru_cache(maxsize=1)
def moving() -> frozenset[str]:
    """The states in which the agent works on a task by itself (the proto's comments call them
    neither terminal nor interrupted): the task will move on without the client."""
    return frozenset(s for s, kind in docs.state_kinds().items() if kind == "active")


def reached(task: dict[str, Any], outcome: str) -> None:
    """Untested unless ``task`` is in the state ``outcome`` names."""
    wanted = docs.state_named(outcome.replace("long_running", "working"))
    if state(task) != wanted:
        raise Untested(f"the agent took the task to {state(task)!r}, not {wanted}: the requirement needs "
                       f"{outcome} (scenarios.{outcome} in --config names a message that gets there)",
                       "outcome")


@functools.lru_cache(maxsize=1)
def grpc_validation_status() -> str:
    """The gRPC status section 10.6's example gives a validation error (its BadRequest)."""
    from conformance.documents.prose import document_text
    from conformance.documents.schemas import SpecError

    text = document_text(docs.SPEC)
    section = text[text.index("### 10.6. Error Handling"):]
    found = re.search(r"status \{\s*code: ([A-Z_]+)[^}]*?google\.rpc\.BadRequest", section)
    if found is None:
        raise SpecError(f"{docs.SPEC} section 10.6 no longer shows the status of a validation error")
    return found.group(1)


def a2a_error(ctx: CheckContext, reply: Reply) -> str | None:
    """The A2A error (or standard JSON-RPC error) an answer carries, by name: the code of
    a JSON-RPC error, the ErrorInfo reason of an HTTP+JSON one, or its status where only
    one error of the table has it; None when it carries none of them."""
    if reply.ok:
        return None
    by_code = {e.code: e.name for e in ctx.profile.errors.values()}
    by_code.update({code: name for name, code in docs.jsonrpc_errors().items()})
    if reply.binding == "jsonrpc" or ctx.profile.settings["bindings"].get(reply.binding, {}).get("kind") \
            == "jsonrpc-http":
        return by_code.get(reply.error_code)
    for detail in reply.error_data if isinstance(reply.error_data, list) else []:
        if isinstance(detail, dict) and detail.get("@type") == docs.error_info()["@type"]:
            for e in ctx.profile.errors.values():
                if docs.reason_of(e.name) == detail.get("reason"):
                    return e.name
    status = getattr(reply, "grpc_status", "")
    if status:  # gRPC: the status only one error of the table has (not a validation error's,
        # which section 10.6's example gives every invalid request)
        only = [name for name, grpc in docs.grpc_statuses().items() if grpc == status]
        return only[0] if len(only) == 1 and status != grpc_validation_status() else None
    only = [e.name for e in ctx.profile.errors.values() if e.http_status == reply.status]
    return only[0] if len(only) == 1 else None

