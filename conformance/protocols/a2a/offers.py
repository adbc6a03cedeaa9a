"""What the agent card declares the agent offers, read through the engine's
``CheckContext.require_declared``: security (``securitySchemes`` with ``securityRequirements``,
section 7.3), and the capabilities of section 3.3.4 (push notifications, streaming, the
extended card), each one of the profile's ``optional:`` features. A row about a feature the
card declares off is not applicable, its verdict naming the declaration ("the agent card
declares no securitySchemes"), and so is every later row of that feature, whatever order they
run in; a row about the refusals a feature declared off calls for (A2A-CAP-PUSH-OFF, say) is
not applicable where the card declares it on. What the card declares on and the agent then
does not serve is a finding of the rows about it: nothing here sets it aside.

A row resting on a declaration says so on its requirement: ``applies=`` one of the guards
``offered`` makes (``secured``, ``push``, ``streaming``, ``extended_card``; ``push_off`` and the
like for a row about an agent without the feature), so it is not applicable before it sends a
thing; a row that reads the declaration after an exchange calls the guard in its body.

Other declarations a row may rest on (a signed card, required extensions, a tenant, a custom
binding) are read by their rows through ``CheckContext.require_declared``, as features of their
own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.kit.check import CheckContext
from conformance.model import Declared
from conformance.protocols.a2a.client import A2AClient
from conformance.protocols.a2a.names import named
from conformance.transport.binding import dig

SECURITY, PUSH, STREAMING, XCARD = "security", "push_notifications", "streaming", "extended_card"
SCHEMES, REQUIREMENTS = named("securitySchemes", "securityRequirements")
# a feature of the profile's optional: block -> its member of AgentCapabilities (section 3.3.4)
CAPABILITY = dict(zip((PUSH, STREAMING, XCARD), named("pushNotifications", "streaming", "extendedAgentCard"),
                      strict=True))
# a feature -> its guard's name, as `conformance list a2a` shows it on a row's applies: line
GUARD_NAME = {SECURITY: "secured", PUSH: "push", STREAMING: "streaming", XCARD: "extended_card"}


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


def offered(feature: str, *, offered: bool = True, why: str = "") -> Callable[[CheckContext], None]:
    """The guard of a row resting on the card's declaration of ``feature``
    (``@requirement(applies=offered(PUSH, why=...))``): ``require`` before the check runs, so
    a row about a feature declared off (``offered=False``: on) never sends a thing."""
    def guard(ctx: CheckContext) -> None:
        require(A2AClient(ctx), feature, offered=offered, why=why)
    name = GUARD_NAME[feature] + ("" if offered else "_off")
    guard.__name__ = guard.__qualname__ = name
    guard.__doc__ = f"applies where the card declares {feature} {'on' if offered else 'off'}"
    return guard


# the guards the rows share: each with the words its rows give
secured = offered(SECURITY, why="an agent may serve any caller")
push = offered(PUSH, why="A2A-CAP-PUSH-OFF judges the refusals it calls for")
streaming = offered(STREAMING, why="A2A-CAP-STREAMING-OFF judges the refusals")
extended_card = offered(XCARD, why="GetExtendedAgentCard must then be refused (A2A-CAP-XCARD-OFF)")
