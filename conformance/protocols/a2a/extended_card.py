"""The authenticated extended agent card (sections 3.1.11, 3.3.4, 6.9, 13.3): where the public
card declares ``capabilities.extendedAgentCard``, GetExtendedAgentCard answers an AgentCard
to a caller authenticated with a scheme the public card declares, refuses anyone else, and
over HTTP+JSON carries caching headers. Not applicable where the card does not declare the
capability, by that declaration (offers.py; A2A-CAP-XCARD-OFF is about that agent); untested
where the agent declares it but
has no extended card configured (section 3.3.4 lets it answer
ExtendedAgentCardNotConfiguredError: A2A-CAP-XCARD-NOT-CONFIGURED is about that answer)."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from conformance.documents.schemas import schema_errors
from conformance.kit.check import CheckContext, NotApplicable, Untested
from conformance.kit.declare import requirement
from conformance.kit.faults import replaces
from conformance.kit.reference import Refusal
from conformance.protocols.a2a import offers
from conformance.protocols.a2a.cards import XCARD
from conformance.protocols.a2a.client import A2AClient, a2a_error
from conformance.protocols.a2a.documents import schema, spec
from conformance.protocols.a2a.reference import A2AReference
from conformance.transport.binding import RawToken, Reply

NOT_CONFIGURED = "ExtendedAgentCardNotConfiguredError"
REST = "http-routes"
ANONYMOUS = "conformance-anonymous"  # the caller label a fault lets through


def serves_xcard(ref: A2AReference) -> None:
    """The reference declares and serves its extended card (config ``extended_agent_card``,
    off by default): each fault here first does, then breaks one thing about it."""
    ref.config = dataclasses.replace(ref.config, extended_agent_card=True)


def security_schemes(card: dict[str, Any]) -> dict[str, Any]:
    schemes = card.get("securitySchemes")
    return schemes if isinstance(schemes, dict) else {}


def served(client: A2AClient, **options: Any) -> Reply:
    """The authenticated GetExtendedAgentCard (the run's credential); untested where the agent
    answers that it has none configured."""
    reply = client.call(XCARD, {}, **options)
    if a2a_error(client.ctx, reply) == NOT_CONFIGURED:
        raise Untested(f"the agent declares an extended card but has none configured ({reply.describe()}): "
                       "section 3.3.4 allows that answer", "other")
    return reply


# -- the answer ------------------------------------------------------------------------------
@requirement(id="A2A-XCARD-RESULT", level="MUST", optional=offers.XCARD,
             title="Where the public card declares capabilities.extendedAgentCard, an authenticated "
                   "GetExtendedAgentCard answers an AgentCard (every REQUIRED field of the proto present)",
             source=spec("A complete Agent Card object, which may contain additional details",
                         after="#### 3.1.11"),
             faults=["xcard_without_name", "xcard_wrapped"],
             applies=offers.extended_card)
def check_xcard_result(ctx: CheckContext) -> None:
    """What the card holds may differ by caller (sections 3.1.11, 13.3: more skills, details,
    configuration): only its being an AgentCard is judged."""
    client = A2AClient(ctx)
    reply = served(client)
    ctx.expect(reply.ok, f"GetExtendedAgentCard with the run's credential was refused: {reply.describe()}; "
                         "the card declares capabilities.extendedAgentCard", kind="rejected_valid")
    problems = schema_errors(schema(ctx.profile, "AgentCard"), reply.result, limit=5)
    ctx.expect(not problems, "GetExtendedAgentCard answered no AgentCard: " + "; ".join(problems),
               kind="schema_mismatch")


@check_xcard_result.fault
def xcard_without_name(ref: A2AReference) -> None:
    """The extended card leaves out its REQUIRED name."""
    serves_xcard(ref)

    @replaces(ref.extended_card)
    def card(original: Any, public: dict[str, Any], caller: str) -> dict[str, Any]:
        return {k: v for k, v in original(public, caller).items() if k != "name"}


@check_xcard_result.fault
def xcard_wrapped(ref: A2AReference) -> None:
    """The extended card is answered wrapped in an object, not as the AgentCard itself."""
    serves_xcard(ref)

    @replaces(ref.extended_card)
    def card(original: Any, public: dict[str, Any], caller: str) -> dict[str, Any]:
        return {"agentCard": original(public, caller)}


# -- who may read it --------------------------------------------------------------------------
def refused(ctx: CheckContext, reply: Reply, what: str) -> None:
    """Refused for its credentials: not served, not a server failure, and not an A2A error
    of the table (which would say the request was read and let through)."""
    ctx.expect(not reply.ok, f"{what}: the extended card was served ({reply.describe()}); section 13.3 wants "
                             "the operation to require authentication", kind="auth_not_enforced")
    name = a2a_error(ctx, reply)
    ctx.expect(reply.status < 500 and name != "InternalError",
               f"{what}: the server failed instead of refusing the credentials: {reply.describe()}",
               kind="wrong_status")
    ctx.expect(name not in {e.name for e in ctx.profile.errors.values()},
               f"{what}: answered {name}, as if the request had been let through: {reply.describe()}",
               kind="auth_not_enforced")


@requirement(id="A2A-XCARD-AUTH-REQUIRED", level="MUST", optional=offers.XCARD,
             title="GetExtendedAgentCard without credentials, or with a token the agent never issued, is "
                   "refused and never answers the card",
             source=spec("operation **MUST** require authentication", after="### 13.3"),
             faults=["xcard_served_without_token", "xcard_served_unknown_token"],
             applies=offers.extended_card)
def check_xcard_auth_required(ctx: CheckContext) -> None:
    """Untested where the public card declares no security scheme: there is then nothing to
    authenticate with (one reading: the agent is open; the other: it breaks section 13.3;
    the kit cannot tell a credential it does not know of)."""
    client = A2AClient(ctx)
    if not security_schemes(client.card):  # not "not applicable": section 13.3 wants it authenticated
        raise Untested("the public card declares no security scheme: nothing to authenticate with",
                       "optional")
    control = served(client)
    if not control.ok:
        raise Untested("GetExtendedAgentCard with the run's credential was refused too "
                       f"({control.describe()}): "
                       "a refusal without one would prove nothing", "credential")
    for label, who in (("without credentials", None),
                       ("with a token the agent never issued",
                        RawToken(f"conformance-not-a-token-{uuid.uuid4().hex}"))):
        with ctx.subcheck(label):
            refused(ctx, client.call(XCARD, {}, caller=who), f"GetExtendedAgentCard {label}")


def let_through(ref: A2AReference, admit: Any) -> None:
    """Callers ``admit(request)`` picks are let through to GetExtendedAgentCard only."""
    serves_xcard(ref)

    @replaces(ref.caller)
    def caller(original: Any, request: Any) -> str:
        try:
            return str(original(request))
        except Refusal:
            if admit(request):
                return ANONYMOUS
            raise

    @replaces(ref.dispatch)
    def dispatch(original: Any, method: str, params: Any, caller: str) -> Any:
        if caller == ANONYMOUS and method != XCARD:
            raise Refusal("Unauthenticated", "a bearer token the agent issued is required", status=401)
        return original(method, params, caller)


@check_xcard_auth_required.fault
def xcard_served_without_token(ref: A2AReference) -> None:
    """GetExtendedAgentCard is served to a request without an Authorization header."""
    let_through(ref, lambda request: not request.headers.get("authorization"))


@check_xcard_auth_required.fault
def xcard_served_unknown_token(ref: A2AReference) -> None:
    """GetExtendedAgentCard is served to any bearer token, one the agent never issued included."""
    let_through(ref, lambda request: request.headers.get("authorization", "").lower().startswith("bearer "))


BEARER_KINDS = ("oauth2SecurityScheme", "openIdConnectSecurityScheme")  # their tokens travel as bearers


def takes_bearer(scheme: Any) -> bool:
    """A scheme whose credential is an Authorization bearer token (the one credential the kit
    holds): HTTP auth with scheme Bearer (RFC 7235 names are case-insensitive), OAuth 2.0,
    OpenID Connect."""
    if not isinstance(scheme, dict):
        return False
    http = scheme.get("httpAuthSecurityScheme") or scheme.get("http_auth_security_scheme")
    if isinstance(http, dict) and str(http.get("scheme", "")).lower() == "bearer":
        return True
    return any(isinstance(scheme.get(kind), dict) for kind in BEARER_KINDS)


@requirement(id="A2A-XCARD-SCHEMES", level="MUST", optional=offers.XCARD,
             title="GetExtendedAgentCard accepts the credential of a scheme the public card declares",
             source=spec("Agents **MUST** authenticate requests using one of the schemes declared in the "
                         "public",
                         after="### 13.3"),
             faults=["xcard_wants_undeclared_key"],
             applies=offers.extended_card)
def check_xcard_schemes(ctx: CheckContext) -> None:
    """The run's bearer token, where the card declares a scheme that takes one and the same
    token is accepted by the task operations (ListTasks): the extended card must accept it too.
    Untested where no declared scheme takes a bearer token (the kit holds no other kind)."""
    client = A2AClient(ctx)
    schemes = security_schemes(client.card)
    bearers = sorted(name for name, scheme in schemes.items() if takes_bearer(scheme))
    if not bearers:
        raise Untested("the public card declares no scheme taking a bearer token (it declares "
                       f"{sorted(schemes) or 'none'}): the kit holds a bearer token only", "credential")
    control = client.call("ListTasks", {})
    if not control.ok:
        raise Untested(f"ListTasks with the run's credential was refused ({control.describe()}): give a "
                       f"credential of scheme {bearers[0]} the agent accepts", "credential")
    reply = served(client)
    ctx.expect(reply.ok, f"GetExtendedAgentCard refused the bearer token of the declared scheme(s) {bearers} "
                         f"that ListTasks accepts: {reply.describe()}", kind="rejected_valid")


@check_xcard_schemes.fault
def xcard_wants_undeclared_key(ref: A2AReference) -> None:
    """GetExtendedAgentCard refuses the declared bearer token and wants an API key header the
    public card does not declare."""
    serves_xcard(ref)

    @replaces(ref.dispatch)
    def dispatch(original: Any, method: str, params: Any, caller: str) -> Any:
        if method == XCARD:
            raise Refusal("Unauthenticated", "the extended card needs an X-Extended-Card-Key header",
                          status=401)
        return original(method, params, caller)


# -- caching --------------------------------------------------------------------------------
@requirement(id="A2A-XCARD-CACHE-HEADERS", level="SHOULD", optional=offers.XCARD,
             title="Over HTTP+JSON, the extended card's answer carries caching headers (Cache-Control)",
             source=spec("Agents **SHOULD** implement appropriate caching headers", after="### 13.3"),
             faults=["xcard_not_cacheable"])
def check_xcard_cache_headers(ctx: CheckContext) -> None:
    """Cache-Control (RFC 9111), or Expires, on the answer; over JSON-RPC, a POST, not applicable."""
    client = A2AClient(ctx)  # first: it finds the binding's interface on the card
    if client.binding.kind != REST:
        raise NotApplicable("the extended card is fetched by a GET only over HTTP+JSON (JSON-RPC posts)")
    offers.extended_card(ctx)  # after the binding's answer, as it was: not a guard, which would come first
    reply = served(client)
    if not reply.ok:
        raise Untested(f"GetExtendedAgentCard was refused ({reply.describe()}): no answer to judge", "other")
    headers = reply.http.headers
    control = str(headers.get("cache-control") or "").strip()
    ctx.expect(control or headers.get("expires"),
               f"the extended card's answer (HTTP {reply.status}) carries neither Cache-Control nor Expires "
               f"(headers: {sorted(headers)})", kind="expectation")


@check_xcard_cache_headers.fault
def xcard_not_cacheable(ref: A2AReference) -> None:
    """The extended card's HTTP+JSON answer comes without caching headers."""
    serves_xcard(ref)

    @replaces(ref.rest_result)
    def rest_result(original: Any, method: str, result: Any) -> Any:
        response = original(method, result)
        if "cache-control" in response.headers:
            del response.headers["cache-control"]
        return response


