"""The public agent card (sections 8.1-8.3, 8.6, 14.3): served at the well-known URI as an
AgentCard (the proto's REQUIRED fields), each interface it declares answering in the
protocol it names at the URL it names, and its caching headers."""

from __future__ import annotations

from typing import Any

from conformance.documents.schemas import schema_errors
from conformance.kit.check import CheckContext
from conformance.kit.declare import requirement
from conformance.kit.faults import answer, replaces
from conformance.protocols.a2a.cards import fetched_card
from conformance.protocols.a2a.client import A2AClient, interfaces, relative
from conformance.protocols.a2a.documents import schema, spec
from conformance.protocols.a2a.reference import A2AReference
from conformance.transport.binding import make_binding


@requirement(id="A2A-CARD-SERVED", level="MUST",
             title="The agent card is served at /.well-known/agent-card.json as an AgentCard: every REQUIRED "
                   "field of the proto present",
             source=spec("The resource at this URI MUST return an AgentCard object"),
             faults=[answer("card_without_version", "card", "The agent card leaves out its REQUIRED version.",
                            drop=["version"]),
                     answer("card_capabilities_missing", "card",
                            "The agent card leaves out its REQUIRED capabilities.", drop=["capabilities"])])
def check_card_served(ctx: CheckContext) -> None:
    card = fetched_card(ctx).json()
    ctx.expect(isinstance(card, dict), f"the agent card is not a JSON object: {str(card)[:120]}",
               kind="malformed_answer")
    problems = schema_errors(schema(ctx.profile, "AgentCard"), card, limit=5)
    ctx.expect(not problems, "the agent card is not an AgentCard: " + "; ".join(problems),
               kind="schema_mismatch")


@requirement(id="A2A-CARD-INTERFACES", level="MUST",
             title="Each interface the card declares in a core binding (JSONRPC, HTTP+JSON) answers in that "
                   "protocol at its URL",
             source=spec("Each interface **MUST** accurately declare its transport protocol and URL"),
             faults=[answer("card_rest_url_wrong", "card", "The card's HTTP+JSON interface names a URL where "
                                                          "nothing answers.",
                            edit=lambda out, *a: {**out, "supportedInterfaces": [
                                {**i, "url": i["url"].replace("/a2a/rest", "/a2a/elsewhere")}
                                if i.get("protocolBinding") == "HTTP+JSON" else i
                                for i in out["supportedInterfaces"]]})])
def check_card_interfaces(ctx: CheckContext) -> None:
    """A GetTask of an id no agent issued, at each declared URL, over each core binding the
    profile speaks: an answer in that binding's protocol (an error in its shape) is one."""
    card = A2AClient(ctx).card
    declared = [i for i in interfaces(card) if isinstance(i.get("url"), str)]
    ctx.expect(declared, f"the card declares no interface: {str(card.get('supportedInterfaces'))[:200]}",
               kind="malformed_answer")
    spoken = {entry.get("interface"): name for name, entry in ctx.profile.settings["bindings"].items()}
    checked = 0
    for interface in declared:
        name = spoken.get(interface.get("protocolBinding"))
        if name is None:
            continue  # gRPC (part 2) or a custom binding
        checked += 1
        with ctx.subcheck(f"{interface['protocolBinding']} at {interface['url']}"):
            entry = {**ctx.profile.settings["bindings"][name], "path": relative(ctx, interface["url"]),
                     "url": interface["url"]}
            binding = make_binding(name, entry, ctx.http, ctx.token)
            params: dict[str, Any] = {"id": "conformance-no-such-task"}
            if interface.get("tenant"):
                params["tenant"] = interface["tenant"]
            reply = binding.call("GetTask", params)
            ctx.expect(reply.ok or reply.spoke,
                       f"the {interface['protocolBinding']} interface at {interface['url']} does not answer "
                       "in "
                       f"its protocol: {reply.describe()}", kind="malformed_answer")
    if not checked:
        ctx.fail("the card declares none of JSONRPC, HTTP+JSON", kind="malformed_answer")


@requirement(id="A2A-CARD-CACHE", level="SHOULD",
             title="The agent card's answer carries Cache-Control with max-age",
             source=spec("include a `Cache-Control` response header with a `max-age` directive"),
             faults=["card_not_cacheable"])
def check_card_cache(ctx: CheckContext) -> None:
    reply = fetched_card(ctx)
    value = reply.headers.get("cache-control", "")
    ctx.expect("max-age" in value.lower(), f"the agent card's Cache-Control is {value!r}: no max-age",
               kind="expectation")


@check_card_cache.fault
def card_not_cacheable(ref: A2AReference) -> None:
    """The agent card comes without a Cache-Control header."""
    @replaces(ref.serve_card)
    def serve_card(original: Any, request: Any) -> Any:
        response = original(request)
        del response.headers["cache-control"]
        return response
