"""What the part-2 modules (groups, private relay, continuation) share: each optional part
asked once whether it is served (its read-only probe command), a row's check gated on it
(``served``), refusals judged by their cause (``refused``), the ids a target minted (a UUID
its request did not carry, naming no run agent), and the branch of a command a rule cites."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from conformance.checks.causes import cause_of
from conformance.checks.expect import catalog_entry, refused_as
from conformance.kit import locate
from conformance.kit.check import Blocked, CheckContext, Untested
from conformance.kit.declare import At, at
from conformance.model import Profile
from conformance.protocols.plaza.answers import INVALID, UNSUPPORTED, unsupported
from conformance.protocols.plaza.client import PlazaClient, dig
from conformance.transport.binding import Reply

UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
# The optional parts (profiles/agent-plaza.yaml ``optional:``) and the read-only command that
# asks the target whether it serves each.
GROUPS, PRIVATE_RELAY, CONTINUATION = "groups", "private_relay", "continuation"
PROBES = {GROUPS: "group_authorization", PRIVATE_RELAY: "private_capabilities",
          CONTINUATION: "continuation_status"}


# ----------------------------------------------------------------------------------------------
# served parts, refusals by cause, minted ids
# ----------------------------------------------------------------------------------------------
declined = unsupported  # the answer is the not-served one (UNSUPPORTED_OPERATION, A2A's -32004)


def require(ctx: CheckContext, feature: str) -> None:
    """The optional part ``feature`` must be served: asked once per run (its read-only
    probe command); a target that answers it as not served leaves every row of the part
    untested with its answer, whatever order they run in."""
    def probe() -> str | None:
        reply = PlazaClient(ctx, reset=False).command(PROBES[feature], {})
        return f"{PROBES[feature]}: {reply.describe()}" if declined(ctx, reply) else None

    ctx.require_served(feature, probe)


def served(feature: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """The check of a row of the optional part ``feature`` (declared ``optional=feature``):
    it asks first whether the target serves the part (once per run), so a target that
    declines it leaves the row untested with its answer, whatever order the rows run in."""
    def gate(check: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(check)
        def served_first(ctx: CheckContext, **kwargs: Any) -> None:
            require(ctx, feature)
            check(ctx, **kwargs)
        return served_first
    return gate


def refused(c: PlazaClient | CheckContext, reply: Reply, what: str, *, error: Any = None,
            strict: bool = False, invalid_ok: bool = False) -> None:
    """A refusal for the rule the check is about (the ambiguity rule: any refusal; ``strict``:
    ``error``, the profile's code). A refusal for another cause judges nothing: the command
    not served leaves the row untested, the credential or a quota blocks it, and invalid
    parameters for a schema-valid request (unless ``invalid_ok``: a semantically broken input
    another site may call invalid) is a failure."""
    ctx = c.ctx if isinstance(c, PlazaClient) else c
    if declined(ctx, reply):
        raise Untested(f"{what}: the target answers {UNSUPPORTED}, it does not serve this command: "
                       f"{reply.describe()}", "optional")
    cause = cause_of(ctx, reply)
    if cause is not None:
        raise Blocked(f"{what}: refused for the {cause}, not for what the check asks: {reply.describe()}",
                      kind="refusal_cause")
    if (not invalid_ok and not reply.ok and error != INVALID
            and reply.error_code == catalog_entry(ctx.profile, INVALID).code):
        ctx.fail(f"{what}: a schema-valid request was refused as invalid parameters ({reply.describe()}); "
                 "what the check asks is refused for another reason", kind="rejected_valid")
    refused_as(ctx, reply, error, what, strict)


class Answer(dict[str, Any]):
    """A command's data, with the strings its request carried (what the target did not mint)."""

    sent: frozenset[str] = frozenset()


def sent_strings(reply: Reply) -> frozenset[str]:
    """Every string of the request ``reply`` answers (its body as recorded)."""
    body = (reply.http.exchange.request or {}).get("body")
    try:
        value = json.loads(body) if isinstance(body, str) else None
    except ValueError:
        return frozenset()
    return frozenset(f.value for f in locate.walk(value) if isinstance(f.value, str))


def agent_ids(ctx: CheckContext) -> set[str]:
    """The public ids of the run's agents (never an id a target minted for an object)."""
    return {str(v["id"]) for v in ctx.run.credentials.values() if isinstance(v, dict)
            and isinstance(v.get("id"), str)}


def minted(ctx: CheckContext, answer: Any, sent: Iterable[str] = ()) -> list[str]:
    """The UUIDs an answer carries that its request did not and that name no run agent,
    nearest the root first: the ids the target made (a new group, offer, request)."""
    return locate.new_strings(answer, UUID, set(sent) | agent_ids(ctx))


# ----------------------------------------------------------------------------------------------
# the document's values
# ----------------------------------------------------------------------------------------------
def branch_index(profile: Profile, name: str) -> int:
    branches = profile.spec["schemas"]["command"]["anyOf"]
    return next(i for i, b in enumerate(branches) if dig(b, "properties", "operation", "const") == name)


def command_at(name: str, tail: str = "") -> Callable[[Profile], At]:
    """The source of a rule a command's branch states (the branch found by its operation)."""
    return lambda profile: at(f"/schemas/command/anyOf/{branch_index(profile, name)}{tail}")


def prop(ctx: CheckContext, command: str, *path: str) -> Any:
    """A field's schema in a command's branch (``rules``' fields with ``"rules", name``)."""
    branch = ctx.profile.spec["schemas"]["command"]["anyOf"][branch_index(ctx.profile, command)]
    node: Any = branch["properties"]
    for i, key in enumerate(path):
        node = node[key] if i == 0 else node["properties"][key]
    return node


def names(answer: Any, needle: str) -> bool:
    """``needle`` (an id or text the suite knows) is in a string of the answer."""
    return bool(locate.with_marker(answer, needle))
