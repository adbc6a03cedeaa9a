"""What the agent card declares the agent offers, read through the engine's
``CheckContext.require_declared``: security (``securitySchemes`` with ``securityRequirements``,
section 7.3), and the capabilities of section 3.3.4 (push notifications, streaming, the
extended card), each one of the profile's ``optional:`` features. A row about a feature the
card declares off is not applicable, its verdict naming the declaration ("the agent card
declares no securitySchemes"), and so is every later row of that feature, whatever order they
run in; a row about the refusals a feature declared off calls for (A2A-CAP-PUSH-OFF, say) is
not applicable where the card declares it on. What the card declares on and the agent then
does not serve is a finding of the rows about it: nothing here sets it aside.

Other declarations a row may rest on (a signed card, required extensions, a tenant, a custom
binding) are read by their rows through ``CheckContext.require_declared``, as features of their
own."""

from __future__ import annotations

from typing import Any

from conformance.kit.check import CheckContext
from conformance.model import Declared
from conformance.protocols.a2a.names import named
from conformance.transport.binding import dig

SECURITY, PUSH, STREAMING, XCARD = "security", "push_notifications", "streaming", "extended_card"
SCHEMES, REQUIREMENTS = named("securitySchemes", "securityRequirements")
# a feature of the profile's optional: block -> its member of AgentCapabilities (section 3.3.4)
CAPABILITY = dict(zip((PUSH, STREAMING, XCARD), named("pushNotifications", "streaming", "extendedAgentCard"),
                      strict=True))


def security(card: dict[str, Any]) -> tuple[bool, str]:
    """Whether the card asks for credentials: a security scheme and a requirement to meet one
    (section 7.3: "The client discovers the server's required authentication schemes via the
    `securitySchemes` field"); and the declaration in words."""
    schemes = card.get(SCHEMES)
    names = sorted(map(str, schemes)) if isinstance(schemes, dict) else []
    if not names:
        return False, f"the agent card declares no {SCHEMES}"
    required = card.get(REQUIREMENTS)
    if not (isinstance(required, list) and required):
        return False, (f"the agent card declares {SCHEMES} ({', '.join(names)}) but no {REQUIREMENTS}: "
                       "it requires none of them")
    return True, f"the agent card declares {SCHEMES} ({', '.join(names)}) and {REQUIREMENTS}"


def capability(card: dict[str, Any], feature: str) -> tuple[bool, str]:
    """Section 3.3.4: a capability is on only where the card says true (false or absent: off)."""
    name = CAPABILITY[feature]
    value = dig(card, "capabilities", name)
    if value is None:
        return False, f"the agent card does not declare capabilities.{name} (absent: off, section 3.3.4)"
    return value is True, f"the agent card declares capabilities.{name}: {str(value).lower()}"


def require(client: Any, feature: str, *, offered: bool = True, why: str = "") -> Declared:
    """The card's declaration of ``feature`` (security, or a key of ``CAPABILITY``), once a
    run: not applicable where the card declares it off (``offered=False``: on)."""
    card = client.card  # read once a requirement, as every row reads it (client.py): the verdict is the run's

    def read() -> tuple[bool, str]:
        return security(card) if feature == SECURITY else capability(card, feature)

    ctx: CheckContext = client.ctx
    return ctx.require_declared(feature, read, offered=offered, why=why)
