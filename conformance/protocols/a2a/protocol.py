"""What the A2A package gives the engine (conformance/kit/protocol.py): its ``PROTOCOL``, found by
the loader (conformance/run/profiles.py) here, in a module of its own, so that the package's
``__init__`` imports nothing and no module importing a sibling imports the reference."""

from __future__ import annotations

import os
from typing import Any

from conformance.kit.check import CheckContext, ProtocolMismatch
from conformance.kit.protocol import Protocol
from conformance.model import Profile
from conformance.transport.binding import DEFAULT


def create_reference(profile: Profile, control: bool = True, **options: Any) -> Any:
    """The reference ASGI app; ``app.state.reference`` is the instance faults patch."""
    from conformance.protocols.a2a.reference import A2AReferenceConfig, create_app

    return create_app(profile, A2AReferenceConfig(control=control, **options))


def probe(ctx: CheckContext, caller: Any = DEFAULT) -> None:
    """The target serves an agent card naming the run's binding, and that binding answers
    a GetTask in its protocol (a task id no agent issued: an error, in the binding's shape)."""
    from conformance.protocols.a2a.client import discover

    discover(ctx)
    reply = ctx.binding.call("GetTask", {"id": "conformance-probe-no-such-task"}, caller=caller)
    if not (reply.ok or reply.spoke or reply.status == 401):
        raise ProtocolMismatch(f"{ctx.http.target}: the {ctx.binding.name} interface the card names does not "
                               f"answer in its protocol: {reply.describe()}")


def credentials(profile: Profile) -> dict[str, Any]:
    from conformance.protocols.a2a.reference import DENIED, TOKENS

    return {label: {"token": token, "denied": DENIED[label]} if label in DENIED else token
            for label, token in TOKENS.items()}


def holdings(reference: Any, credentials: dict[str, Any]) -> dict[str, Any]:
    """What each caller holds at the in-process reference: its tasks as they are (a live
    run changes only tasks it made itself)."""
    return {label: {"same": {tid: task["status"]["state"] for tid, task in reference.tasks.items()
                             if reference.owners.get(tid) == label},
                    "kept": {}} for label in credentials}


def binding_entries(profile: Profile) -> dict[str, dict[str, Any]]:
    """The A2A-Version every call carries (the version the profile pins; over gRPC as
    metadata) and the HTTP+JSON routes the proto's annotations give."""
    from conformance.protocols.a2a.documents import rest_routes
    from conformance.protocols.a2a.names import VERSION_HEADER

    version = {"headers": {VERSION_HEADER: str(profile.settings["version"])}}
    return {"jsonrpc": version, "http-json": {**version, "routes": rest_routes(profile)}, "grpc": version}


# the modules declaring the profile's rows, faults and variants, by area, in the order rows run
# (CONFORMANCE_A2A_MODULES, comma-separated, replaces the list: to try a module being written)
PARTS = ("card", "rpc", "rest", "version", "errors", "capabilities", "send", "tasks", "listing", "multiturn",
         "objects", "machine", "params", "agree", "auth", "extended_card", "card_security",
         "card_conventions", "encoding", "idempotency", "task_contexts", "outputs", "input_media",
         "auth_required",
         "stream", "push", "extensions", "signing", "grpc",
         "variants_wire", "variants_tasks", "variants_access", "variants_card", "variants_messages")


def target_bindings(profile: Profile, http: Any) -> list[str]:
    """The profile's bindings whose interface the target's agent card declares, in the card's
    order (section 8.3.1: the first is the preferred)."""
    from conformance.protocols.a2a.client import CARD_PATH, interfaces

    card = http.request("GET", CARD_PATH).json()
    declared = [str(i.get("protocolBinding")) for i in interfaces(card if isinstance(card, dict) else {})]
    by_interface = {entry.get("interface"): name for name, entry in profile.settings["bindings"].items()}
    return list(dict.fromkeys(by_interface[i] for i in declared if i in by_interface))


TRYING = os.environ.get("CONFORMANCE_A2A_MODULES", "")
MODULES = tuple(f"conformance.protocols.a2a.{part}" for part in (TRYING.split(",") if TRYING else PARTS))

PROTOCOL = Protocol(create_reference=create_reference, probe=probe, holdings=holdings,
                    reference="conformance.protocols.a2a.reference:A2AReference",
                    credentials=credentials,
                    binding_entries=binding_entries, modules=MODULES, target_bindings=target_bindings)
