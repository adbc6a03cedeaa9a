"""Credentials and identity (`identity`, `authorization`): a credential with the read
scopes reads but does not write, an owner account's credential is refused and an account
Agent's accepted, every retry, history read and cancellation checks the current
credential, the protected-resource metadata names the endpoint, a token inside the A2A
arguments is no credential, and a task makes no new identity. Each requirement is
declared on its check, with the faults that prove it can fail; where one is an instance
of the engine's auth families (conformance/checks/auth.py) the check calls the family."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from conformance.checks import auth
from conformance.checks.expect import expect_mapping
from conformance.kit import locate
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, chosen, requirement
from conformance.kit.faults import answer, noop, replaces
from conformance.protocols.plaza.answers import field, find_receipt, served
from conformance.protocols.plaza.client import ALICE, PlazaClient
from conformance.protocols.plaza.reference import PlazaReference
from conformance.protocols.plaza.site import Principal, SiteError, seeded_visitor
from conformance.transport.binding import Reply
from conformance.transport.http import json_excerpt

IDENTITY = "/identity"
READER, OWNER = "reader", "owner"  # the config's account-Agent credential (read scopes) and the owner's
# the refusals a credential's own scopes or validity cause (an allowed read gets neither)
CREDENTIAL_REFUSALS = ("FORBIDDEN", "UNAUTHENTICATED")


@requirement(id="PLAZA-AUTH-SCOPES", level="SHOULD",
             title="A credential without the write scopes reads but does not write",
             source=chosen("docs/agent-plaza.md#scopes"),
             faults=[noop("scopes_ignored", "require_scope", "A read-only credential writes.")])
def check_scopes(ctx: CheckContext) -> None:
    """A read-only credential reads but does not write (the profile's scope mapping): the
    scopes family, whose allowed read must also answer a page."""
    c = PlazaClient(ctx)
    connection = c.befriend()

    def read(who: Any) -> Reply:
        reply = c.command("read_conversation", {"connection_id": connection}, who)
        c.data_of(reply, "read_conversation with read scopes only")
        return reply

    auth.scopes(ctx, credential=READER, allowed={"read_conversation": read},
                denied={"a text": lambda who: c.text(who, "no write scope", context=connection)},
                denied_error="FORBIDDEN", refusals=CREDENTIAL_REFUSALS)


@requirement(id="PLAZA-AUTH-OWNER-CREDENTIAL-REFUSED", level="MUST",
             title="An owner account's credential is not accepted",
             source=at(f"{IDENTITY}/ownerAccountCredentialAccepted"))
def check_owner_refused(ctx: CheckContext) -> None:
    c = PlazaClient(ctx, reset=False)
    ctx.token(OWNER)
    served(ctx, c.command("status", {}), "the status command with alice's visitor credential")
    auth.token_refused(ctx, operations={"the status command": lambda who: c.command("status", {}, who)},
                       error=None,
                       caller=OWNER, credential=ALICE)


@check_owner_refused.fault
def owner_credential_accepted(ref: PlazaReference) -> None:
    """An owner account's credential is served as its agent."""
    @replaces(ref.authenticate)
    def authenticate(original: Any, headers: Mapping[str, str]) -> Principal:
        record = ref.s["tokens"].get(ref.bearer_token(headers) or "")
        if record is not None and record["kind"] != "visitor" and record["visitor_id"] in ref.s["visitors"]:
            return Principal(record["visitor_id"], frozenset(ref.supported_scopes), "visitor")
        return original(headers)


@requirement(id="PLAZA-AUTH-RECHECK", level="MUST",
             title="Every retry, history read and cancellation checks the current credential",
             source=at("/authorization"))
def check_replay_auth(ctx: CheckContext) -> None:
    """A retry is authenticated again: the same requests without a token, or with one the
    site never issued, are refused (the token families)."""
    c = PlazaClient(ctx)
    connection = c.befriend()
    params = c.params({"text": "authenticated once"}, context=connection)
    task = c.task_of(c.send(params), "the first send")
    served(ctx, c.command("read_conversation", {"connection_id": connection}, ALICE),
           "alice's history read with her token",
           by="PLAZA-READ")
    operations = {"the replay": lambda who: c.send(copy.deepcopy(params), who),
                  "a history read": lambda who: c.command("read_conversation", {"connection_id": connection},
                                                          who),
                  "a cancellation": lambda who: c.rpc("CancelTask", {"id": task["id"]}, who)}
    auth.token_required(ctx, operations=operations, error=None, credential=ALICE)
    auth.token_refused(ctx, operations=operations, error=None, credential=ALICE)
    served(ctx, c.rpc("CancelTask", {"id": task["id"]}), "alice's cancellation with her token",
           by="PLAZA-TASK-CANCEL")


@check_replay_auth.fault
def replay_skips_auth(ref: PlazaReference) -> None:
    """A request repeating a used messageId is served without a valid token, as the
    messageId's first sender."""
    @replaces(ref.serve_a2a)
    def serve_a2a(original: Any, raw: bytes, headers: Mapping[str, str]) -> Any:
        try:
            message_id = json.loads(raw)["params"]["message"]["messageId"]
        except (ValueError, KeyError, TypeError):
            return original(raw, headers)
        owner = next((key.split("|", 1)[0] for key in ref.s["message_ids"] if key.endswith(f"|{message_id}")),
                     None)
        token = next((t for t, r in ref.s["tokens"].items()
                      if r["visitor_id"] == owner and r["kind"] == "visitor"), None)
        if token and ref.s["tokens"].get(ref.bearer_token(headers) or "") is None:
            headers = {**{k.lower(): v for k, v in headers.items()}, "authorization": f"Bearer {token}"}
        return original(raw, headers)


@check_replay_auth.fault
def history_and_cancel_skip_auth(ref: PlazaReference) -> None:
    """A history read or a CancelTask without a valid bearer token is served as alice's."""
    @replaces(ref.serve_a2a)
    def serve(original: Any, raw: bytes, headers: Mapping[str, str]) -> Any:
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        method = body.get("method") if isinstance(body, dict) else None
        data = (((body.get("params") or {}).get("message") or {}).get("parts") or [{}])[0].get("data") \
            if method == "SendMessage" else None
        reading = isinstance(data, dict) and data.get("operation") == "read_conversation"
        token = ref.bearer_token(headers)
        if (method == "CancelTask" or reading) and (token is None or token not in ref.s["tokens"]):
            headers = {**dict(headers), "authorization": f"Bearer {seeded_visitor('alice')[1]}"}
        return original(raw, headers)


@requirement(id="PLAZA-AUTH-ACCOUNT-AGENT", level="MUST", title="An account Agent's credential is accepted",
             source=at(f"{IDENTITY}/accountAgentCredentialAccepted"))
def check_account_agent(ctx: CheckContext) -> None:
    """An account Agent's credential (the config's reader) is accepted."""
    c = PlazaClient(ctx, reset=False)
    ctx.token(READER)
    c.data_of(c.command("status", {}, READER), "the status command with an account Agent's credential")


@check_account_agent.fault
def account_agent_refused(ref: PlazaReference) -> None:
    """Only visitor credentials are accepted; an account Agent's is refused."""
    @replaces(ref.authenticate)
    def authenticate(original: Any, headers: Mapping[str, str]) -> Principal:
        who: Principal = original(headers)
        if who.kind != "visitor":
            raise SiteError("UNAUTHENTICATED", "visitor credentials only")
        return who


def root_as_resource(meta: dict[str, Any], base_url: str) -> dict[str, Any]:
    return {**meta, "resource": base_url}


@requirement(id="PLAZA-AUTH-RESOURCE-METADATA", level="MUST",
             title="The protected-resource metadata names the endpoint",
             source=at(f"{IDENTITY}/profiles/accountAgent/resourceMetadata"),
             faults=[answer("resource_metadata_wrong", "resource_metadata",
                            "The protected-resource metadata names the site's root as its resource.",
                            edit=root_as_resource)])
def check_resource_metadata(ctx: CheckContext) -> None:
    """The protected-resource metadata is served and names the endpoint as its resource;
    any list of the document's scopes it gives stays within them (found by content: the
    URL whose path is the endpoint's, the lists holding a scope of the document)."""
    account = ctx.profile.spec["identity"]["profiles"]["accountAgent"]
    path = urlparse(account["resourceMetadata"]).path
    reply = ctx.http.request("GET", path)
    meta = expect_mapping(ctx, reply.json() if reply.status == 200 else None,
                          f"GET {path} (HTTP {reply.status})")
    endpoint = urlparse(account["resource"]).path

    def names_endpoint(value: Any) -> bool:
        return isinstance(value, str) and value.startswith(("http://", "https://")) \
            and urlparse(value).path == endpoint

    ctx.expect(locate.matching(meta, names_endpoint),
               f"looked for the endpoint's URL (path {endpoint}) anywhere in the protected-resource metadata "
               f"and found none: {json_excerpt(meta)}; the document says its resource is "
               f"{account['resource']}")
    supported = set(account["supportedScopes"])
    for scopes in locate.lists_of(meta):
        if all(isinstance(s, str) for s in scopes) and supported & set(scopes):
            ctx.expect(set(scopes) <= supported,
                       f"the metadata lists scopes {scopes}, beyond the document's {sorted(supported)}")


@requirement(id="PLAZA-AUTH-NO-SECRET-IN-ARGS", level="MUST",
             title="A credential inside the A2A arguments is not accepted",
             source=at(f"{IDENTITY}/privateSecretInA2AArgumentsAllowed"))
def check_no_secret_in_args(ctx: CheckContext) -> None:
    """A credential put in the message instead of the Authorization header is no credential:
    the status command carrying alice's token in message.metadata, sent without a bearer
    token (the token family), is refused."""
    c = PlazaClient(ctx, reset=False)
    token = str(ctx.token(ALICE))
    params = c.params({"data": {"operation": "status"}},
                      metadata={"token": token, "Authorization": f"Bearer {token}"})
    operations = {"the status command with the token in message.metadata": lambda who: c.send(params, who)}
    auth.token_required(ctx, operations=operations, error=None, credential=ALICE)


@check_no_secret_in_args.fault
def token_in_metadata_accepted(ref: PlazaReference) -> None:
    """A token found in message.metadata stands in for the Authorization header."""
    @replaces(ref.serve_a2a)
    def serve_a2a(original: Any, raw: bytes, headers: Mapping[str, str]) -> Any:
        try:
            token = json.loads(raw)["params"]["message"]["metadata"]["token"]
        except (ValueError, KeyError, TypeError):
            return original(raw, headers)
        if not ref.bearer_token(headers):
            headers = {**{k.lower(): v for k, v in headers.items()}, "authorization": f"Bearer {token}"}
        return original(raw, headers)


@requirement(id="PLAZA-IDENTITY-STABLE", level="MUST", title="No new identity per task",
             source=at(f"{IDENTITY}/newIdentityPerTask"))
def check_identity_stable(ctx: CheckContext) -> None:
    """Tasks create no new identity: where the status command names the caller's public
    id, it still does after a task; the text is sent under that id (its receipt's sender)."""
    c = PlazaClient(ctx)
    mine = c.agent_id(ALICE)
    before = locate.holds(c.data_of(c.command("status", {}), "status"), mine)
    task, _ = c.invite()
    sender = field(find_receipt(c, task), "sender")
    after = c.data_of(c.command("status", {}), "status")
    ctx.expect(sender in (None, mine), f"alice's text was sent as {sender!r}, not as her identity {mine}",
               kind="state_changed")
    ctx.expect(not before or locate.holds(after, mine),
               f"the status command named alice's public id {mine} before a task and no longer after: "
               f"{json_excerpt(after)}",
               kind="state_changed")


@check_identity_stable.fault
def identity_per_task(ref: PlazaReference) -> None:
    """Each text is sent under a fresh identity (a new visitor per task)."""
    @replaces(ref.store_message)
    def store_message(original: Any, conn: dict[str, Any], sender: str, text: str,
                      client_message_id: str) -> dict[str, Any]:
        msg: dict[str, Any] = original(conn, sender, text, client_message_id)
        msg["sender"] = ref.new_uuid()
        return msg


__all__: list[str] = []
