"""Extensions (sections 3.2.6, 3.3.4, 4.6): a client opts into extensions with the
``A2A-Extensions`` service parameter (an HTTP header over both bindings, sections 9.2 and
11.2). An extension the card marks ``required`` that a request does not declare, or declares
only in a version the agent does not support, gets ExtensionSupportRequiredError in the
form section 5.4 gives it; extensions the agent does not support are ignored.

Every other row of the profile reaches the agent declaring the card's required extensions
(client.py ``declaring``); these rows call without them.

"When a server requests use of an extension marked as `required: true`" admits two readings:
every request must declare the extension, or only the requests the agent uses it for. The
MUST takes both: a request without the declaration is refused with that error, or served
with an answer that does not use the extension (no ``extensions`` of its messages or
artifacts names it, section 4.6.2). An answer that uses it, or any other error, fails."""

from __future__ import annotations

import re
from typing import Any

from conformance.kit.check import Blocked, CheckContext
from conformance.kit.declare import requirement, variant
from conformance.kit.faults import noop, recodes, replaces
from conformance.kit.reference import Refusal
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.answers import form
from conformance.protocols.a2a.client import A2AClient, required_extensions
from conformance.protocols.a2a.expectations import expect_mapped
from conformance.protocols.a2a.names import EXTENSIONS, EXTENSIONS_HEADER
from conformance.protocols.a2a.reference import A2AReference
from conformance.transport.binding import Reply

# a URI no agent supports (RFC 2606's reserved .invalid)
UNKNOWN_EXTENSION = "https://conformance.invalid/extensions/not-an-extension/v1"


HEADER = EXTENSIONS_HEADER  # section 3.2.6 (names.py)
MISSING = "ExtensionSupportRequiredError"


def bare(ctx: CheckContext) -> A2AClient:
    """A client of the run's binding that declares no extension."""
    client = A2AClient(ctx, binding=ctx.run.binding)
    client.binding.headers = {k: v for k, v in client.binding.headers.items() if k.lower() != HEADER.lower()}
    return client


def used_in(value: Any, depth: int = 0) -> set[str]:
    """The URIs the ``extensions`` of an answer's messages and artifacts name (section 4.6.2)."""
    found: set[str] = set()
    if depth > 12:
        return found
    if isinstance(value, dict):
        listed = value.get(EXTENSIONS)
        if isinstance(listed, list):
            found.update(u for u in listed if isinstance(u, str))
        for member in value.values():
            found |= used_in(member, depth + 1)
    elif isinstance(value, list):
        for member in value:
            found |= used_in(member, depth + 1)
    return found


def other_version(uri: str, declared: set[str]) -> str:
    """``uri`` with its last number raised until the card does not declare it (a version the
    agent does not support), or with a version segment added where it has no number."""
    found = list(re.finditer(r"\d+", uri))
    if not found:
        return uri.rstrip("/") + "/v0-conformance"
    last, number = found[-1], int(found[-1].group())
    while True:
        number += 1
        candidate = uri[:last.start()] + str(number) + uri[last.end():]
        if candidate not in declared:
            return candidate


def declared_uris(card: dict[str, Any]) -> set[str]:
    capabilities = card.get("capabilities")
    found = capabilities.get(EXTENSIONS) if isinstance(capabilities, dict) else None
    return {str(e.get("uri")) for e in found if isinstance(e, dict)} if isinstance(found, list) else set()


def judge_undeclared(ctx: CheckContext, reply: Reply, required: list[str], what: str) -> None:
    """Refused with ExtensionSupportRequiredError as section 5.4 maps it, or served without
    using a required extension (the second reading of section 3.3.4)."""
    if reply.ok:
        used = sorted(set(required) & used_in(reply.result))
        ctx.expect(not used, f"{what}: served, and the answer names the required extension(s) "
                             f"{', '.join(used)} in its `extensions` (section 4.6.2) although the request "
                             f"did not declare them; the agent must answer {MISSING} ({form(ctx, MISSING)}): "
                             f"{reply.describe()}", kind="accepted_invalid")
        return
    expect_mapped(ctx, reply, MISSING, what)


@requirement(id="A2A-EXT-REQUIRED", level="MUST",
             title="A request that does not declare an extension the card marks required (or declares "
                   "another version of it) gets ExtensionSupportRequiredError, -32008 over JSON-RPC, HTTP "
                   "400 with its ErrorInfo over HTTP+JSON, and no fallback to the supported version",
             source=docs.spec("but the client does not declare support for it, the agent **MUST** return",
                              after="#### 3.3.4"),
             faults=["required_extension_not_enforced", "required_extension_unsupported_operation",
                     "extension_version_fallback"])
def check_required(ctx: CheckContext) -> None:
    """Over the run's binding: SendMessage declaring the required extensions is served (so a
    refusal below is the declaration's doing); then without any declaration, and declaring
    each required extension in a version the card does not declare (section 4.6.3: an error,
    never a fallback)."""
    client = A2AClient(ctx)
    required = required_extensions(client.card)
    marked = ", ".join(required) or "no extension"
    ctx.require_declared("required extensions", lambda: (
        bool(required), f"the agent card marks {marked} required (capabilities.extensions)"))
    control = client.send(client.message())
    if not control.ok:
        raise Blocked(f"SendMessage declaring the required extensions ({HEADER}: {', '.join(required)}) was "
                      f"refused: {control.describe()}", kind="rejected_valid")
    plain = bare(ctx)
    others = ",".join(other_version(uri, declared_uris(client.card)) for uri in required)
    for what, headers in ((f"SendMessage without {HEADER}", {}),
                          (f"SendMessage declaring only another version ({HEADER}: {others})",
                           {HEADER: others})):
        with ctx.subcheck(what):
            judge_undeclared(ctx, plain.send(plain.message(), headers=headers), required, what)


required_extension_not_enforced = noop(
    "required_extension_not_enforced", "check_extensions",
    "A request that does not declare the required extension is served, and the agent uses the extension "
    "in its answer anyway.")
check_required.fault(required_extension_not_enforced)

check_required.fault(recodes(
    "required_extension_unsupported_operation", "check_extensions",
    lambda err: Refusal("UnsupportedOperationError", str(err.message)),
    "A request missing the required extension is refused with UnsupportedOperationError, not "
    "ExtensionSupportRequiredError.", catch=Refusal))


@check_required.fault
def extension_version_fallback(ref: A2AReference) -> None:
    """A request declaring another version of the required extension is served with the version
    the agent supports (an automatic fallback, section 4.6.3)."""
    def stem(uri: str) -> str:
        return re.sub(r"\d+", "#", uri)

    @replaces(ref.check_extensions)
    def check(original: Any, request: Any, method: str) -> None:
        from conformance.protocols.a2a.reference.extensions import requested

        asked = {stem(u) for u in requested(request)}
        if not all(stem(u) in asked for u in ref.required_extensions()) or not asked:
            original(request, method)


@requirement(id="A2A-EXT-UNSUPPORTED-IGNORED", level="SHOULD",
             title="An extension the agent does not support, named in A2A-Extensions, is ignored: the "
                   "request is served, and the answer does not claim it",
             source=docs.spec("the agent **SHOULD** ignore the extension for that interaction and proceed",
                              after="#### 4.6.3"),
             faults=["unknown_extension_refused"])
def check_unsupported_ignored(ctx: CheckContext) -> None:
    """SendMessage declaring what the card requires and a URI no agent supports; the same
    request without that URI is served first (a refusal is then the unknown URI's doing)."""
    client = A2AClient(ctx)
    required = required_extensions(client.card)
    control = client.send(client.message(), headers={HEADER: ",".join(required)} if required else None)
    if not control.ok:
        raise Blocked(f"SendMessage declaring the card's required extensions was refused: "
                      f"{control.describe()}", kind="rejected_valid")
    what = f"SendMessage with {HEADER}: {', '.join([*required, UNKNOWN_EXTENSION])}"
    reply = client.send(client.message(), headers={HEADER: ",".join([*required, UNKNOWN_EXTENSION])})
    ctx.expect(reply.ok, f"{what}: refused ({reply.describe()}); section 4.6.3 says an extension the agent "
                         "does not support is ignored and the request proceeds", kind="rejected_valid")
    ctx.expect(UNKNOWN_EXTENSION not in used_in(reply.result),
               f"{what}: the answer names {UNKNOWN_EXTENSION}, which no agent supports, among its "
               f"`extensions`: {reply.describe()}", kind="expectation")


@check_unsupported_ignored.fault
def unknown_extension_refused(ref: A2AReference) -> None:
    """A request naming an extension the agent does not support is refused with
    ExtensionSupportRequiredError."""
    @replaces(ref.check_extensions)
    def check(original: Any, request: Any, method: str) -> None:
        from conformance.protocols.a2a.reference.extensions import requested

        unknown = sorted(set(requested(request)) - ref.supported_extensions())
        if unknown:
            raise Refusal(MISSING, f"extension(s) not supported: {', '.join(unknown)}")
        original(request, method)


# -- variants: what the specification allows that the reference does not choose -----------------
@variant
def required_extension_where_used(ref: A2AReference) -> None:
    """The agent refuses nothing for a missing declaration: it uses its required extension only
    in answers to requests that declared it, and serves the others without it.

    allowed by: §3.3.4 "When a server requests use of an extension marked as `required: true` in
    the Agent Card but the client does not declare support for it" (the error is owed where the
    server requests use of it; one reading has it request use only where the client opted in)"""
    from conformance.protocols.a2a.reference.extensions import requested

    @replaces(ref.check_extensions)
    def check(original: Any, request: Any, method: str) -> None:
        ref.activated = set(requested(request)) & ref.supported_extensions()

    @replaces(ref.used_extensions)
    def used(original: Any) -> set[str]:
        return set(getattr(ref, "activated", set()))


@variant
def more_extensions_declared(ref: A2AReference) -> None:
    """The card declares, besides its required extension, a second required one and an
    optional one with its own params.

    allowed by: §4.6.1 "Agents declare their supported extensions in the [`AgentCard`] using the
    `extensions` field, which contains an array of [`AgentExtension`] objects" (the proto's
    AgentExtension: "Optional. Extension-specific configuration parameters.")"""
    @replaces(ref.card_extensions)
    def declared(original: Any) -> list[dict[str, Any]]:
        return [*original(),
                {"uri": "https://conformance.example/extensions/citations/v2", "required": False,
                 "description": "Cites its sources when asked.", "params": {"style": "apa", "depth": 2}},
                {"uri": "https://conformance.example/extensions/audit-trail/v1", "required": True,
                 "description": "Every answer is logged for audit; clients must declare it."}]
