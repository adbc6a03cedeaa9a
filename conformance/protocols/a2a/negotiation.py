"""The A2A-Version a request carries (sections 3.6, 9.2, 11.2) and the versions the agent card
declares for the run's interface."""

from __future__ import annotations

from typing import Any

from conformance.kit.check import Untested
from conformance.protocols.a2a.client import A2AClient, interfaces
from conformance.protocols.a2a.names import VERSION_HEADER

HEADER = VERSION_HEADER
EMPTY_MEANS = "0.3"  # section 3.6.2: "Agents MUST interpret empty value as 0.3 version"


def major_minor(version: Any) -> str:
    return ".".join(str(version).strip().split(".")[:2])


def declared(client: A2AClient) -> tuple[str, list[str]]:
    """The Major.Minor the run's interface declares, and every one the card declares."""
    wanted = client.ctx.profile.settings["bindings"][client.binding.name]["interface"]
    found = [i for i in interfaces(client.card) if isinstance(i.get("protocolVersion"), str)]
    own = next((major_minor(i["protocolVersion"]) for i in found if i.get("protocolBinding") == wanted), "")
    return own, [major_minor(i["protocolVersion"]) for i in found]


def serves_profile_version(client: A2AClient) -> str:
    """The version the profile pins, when the run's interface declares it (else untested)."""
    pinned = str(client.ctx.profile.settings["version"])
    own, _ = declared(client)
    if own != pinned:
        raise Untested(f"the card's {client.binding.name} interface declares protocolVersion "
                       f"{own or '(none)'}, not {pinned}: the kit speaks A2A {pinned}", "other")
    return pinned
