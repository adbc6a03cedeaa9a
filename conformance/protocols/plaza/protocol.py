"""What the Plaza package gives the engine (conformance/kit/protocol.py): its ``PROTOCOL``, found by
the loader (conformance/run/profiles.py) here, in a module of its own, so that the package's
``__init__`` imports nothing and no module importing a sibling imports the reference."""

from __future__ import annotations

from typing import Any

from conformance.kit.check import CheckContext, ProtocolMismatch
from conformance.kit.protocol import Protocol
from conformance.model import Profile
from conformance.protocols.plaza.keeper import PLANS, STOPS
from conformance.transport.binding import DEFAULT

# The modules declaring the rows (in the order they run), faults and variants.
MODULES = tuple(f"conformance.protocols.plaza.{name}" for name in (
    "wire", "message", "methods", "parameters", "friendship", "idempotency", "tasks", "identity",
    "document_examples", "machine", "machine_parts",
    "reads", "message_evidence", "inbox", "attention", "receive",  # the mailbox
    "groups", "groups_membership", "groups_messages", "private", "private_channels",  # part 2
    "continuation", "continuation_direct",
    "commands", "variants"))


def create_reference(profile: Profile, control: bool = True, **options: Any) -> Any:
    """The reference site's ASGI app; ``app.state.reference`` is what faults patch."""
    from conformance.protocols.plaza.reference import create_app
    from conformance.protocols.plaza.site import ReferenceConfig

    return create_app(profile, ReferenceConfig(control=control, **options))


def probe(ctx: CheckContext, caller: Any = DEFAULT) -> None:
    """The target must answer the document's status example as a JSON-RPC endpoint."""
    from conformance.protocols.plaza.client import PlazaClient

    client = PlazaClient(ctx, reset=False)
    reply = client.command("status", {}) if caller == DEFAULT else client.command("status", {}, who=caller)
    if not (reply.ok or reply.error_code is not None):
        raise ProtocolMismatch(
            f"{ctx.http.target} does not answer A2A JSON-RPC at {ctx.binding.path}: HTTP {reply.status} "
            f"{reply.http.text[:80]!r}"
        )


def credentials(profile: Profile) -> dict[str, Any]:
    """The reference's seeded agents as run credentials."""
    from conformance.protocols.plaza.site import reference_credentials

    return reference_credentials()


def binding_entries(profile: Profile) -> dict[str, dict[str, dict[str, str]]]:
    """The document's requiredHeaders on every call of the jsonrpc binding (values read from the spec)."""
    from conformance.protocols.plaza.client import required_headers

    return {"jsonrpc": {"headers": required_headers(profile.spec)}}


def holdings(reference: Any, credentials: dict[str, Any]) -> dict[str, Any]:
    """What each configured identity holds on the in-process reference (conformance/proofs/liverun.py):
    ``same`` must be equal after a live run, ``kept`` must still be held (new items may appear).

    Every credential: its token accepted, with its kind and scopes. The first credential of
    each visitor (alice, bob, carol; reader and owner are alice's) also holds, in ``same``:
    its alias, interests and whether it is stopped; per other configured visitor, their
    current relationships (each connection not removed, declined or closed: id, state, who
    blocked it); the open groups it belongs to (role, muted, paused) and its pending group
    invitations and applications; its group authorization (live, scopes, caps) and pending
    requests; its keys not revoked; in its current connections, its open private channels,
    negotiations and open direct offers; its continuation document; its plan; each durable
    receiver's position. In ``kept``: the messages of the connections it can still read, its
    tasks and those not canceled, its key ids, its receive log items and notices."""
    from conformance.protocols.plaza.site import BLOCKED, CLOSED, DECLINED, REMOVED

    s = reference.s
    tokens: dict[str, Any] = {}
    owner_of: dict[str, str] = {}  # visitor id -> the label that holds its facts
    for label, value in credentials.items():
        token = value.get("token") if isinstance(value, dict) else value
        record = s["tokens"].get(token) if isinstance(token, str) else None
        tokens[label] = record
        if record is not None and record["kind"] == "visitor" and record["visitor_id"] in s["visitors"]:
            owner_of.setdefault(record["visitor_id"], label)
    label_of = {v: label for v, label in owner_of.items()}
    out: dict[str, Any] = {}
    for label in credentials:
        record = tokens[label]
        held = [record["visitor_id"], record["kind"], sorted(record["scopes"])] if record else None
        same: dict[str, Any] = {"token": held}
        kept: dict[str, list[str]] = {}
        out[label] = {"same": same, "kept": kept}
        me = record["visitor_id"] if record else None
        if me is None or owner_of.get(me) != label:
            continue
        visitor = s["visitors"][me]
        same["visitor"] = [visitor["alias"], list(visitor["interests"]), visitor["stopped"]]
        mine = [c for c in s["connections"].values() if me in (c["inviter"], c["invitee"])]
        current = [c for c in mine if c["state"] not in (REMOVED, DECLINED, CLOSED)]
        for peer, other in sorted(label_of.items(), key=lambda item: item[1]):
            if peer != me:
                same[f"connections with {other}"] = sorted(
                    [c["id"], c["state"], label_of.get(c["blocked_by"] or "", c["blocked_by"])]
                    for c in current if reference.peer_of(c, me) == peer)
        readable = [c for c in mine
                    if c["state"] != REMOVED and not (c["state"] == BLOCKED and c["blocked_by"] != me)]
        kept["messages"] = sorted(m["id"] for c in readable for m in c["messages"])
        tasks = [t for t in s["tasks"].values() if t["owner"] == me]
        kept["tasks"] = sorted(t["id"] for t in tasks)
        kept["tasks not canceled"] = sorted(t["id"] for t in tasks if t["canceled_at"] is None)
        kept["receive log"] = sorted(item["event_id"] for item in s["logs"].get(me, []))
        kept["notices"] = sorted(n["notice_id"] for n in s["notices"].get(me, []))
        for key, receiver in sorted(s["receivers"].items()):
            if key.startswith(f"{me}|"):
                same[f"receiver {key.partition('|')[2]}"] = receiver.get("acked")
        groups = [g for g in s["groups"].values() if g["state"] == "open"]
        same["groups"] = sorted([g["id"], g["members"][me]["role"], g["members"][me]["muted"],
                                 g["members"][me]["paused"]] for g in groups if me in g["members"])
        same["group invitations"] = sorted(g["id"] for g in groups if g["invitations"].get(me) == "pending")
        same["group applications"] = sorted(g["id"] for g in groups if g["applications"].get(me) == "pending")
        auth = reference.auth_view(me)
        same["group authorization"] = ({k: v for k, v in auth.items()
                                        if k not in ("version", "granted_at", "expires_at")}
                                       if auth["live"] else {"live": False})
        same["group authorization requests"] = sorted(r["request_id"]
                                                      for r in s["group_auth_requests"].get(me, [])
                                                      if r["status"] == "pending")
        keys = [k for k in s["private_keys"].values() if k["visitor_id"] == me]
        same["keys"] = sorted(k["key_id"] for k in keys if not reference.key_revoked(k))
        kept["keys"] = sorted(k["key_id"] for k in keys)
        live = {c["id"] for c in current}
        same["private channels"] = sorted(c["channel_id"] for c in s["private_channels"].values()
                                          if c["connection_id"] in live
                                          and me in (c["offerer"], c["accepter"])
                                          and reference.channel_state(c) in ("active", "offered"))
        same["continuation negotiations"] = sorted(k for k in s["cont_negotiations"] if k.endswith(f"|{me}")
                                                   and k.partition("|")[0] in live)
        same["direct offers"] = sorted(o["id"] for o in s["direct_offers"].values()
                                       if o["by"] == me and o["connection_id"] in live
                                       and reference.offer_state(o) in ("pending", "accepted"))
        same["continuation"] = reference.declared(me)
        plan = reference.current_plan(me)
        same["plan"] = [plan["id"], plan["commission"]] if plan else None
    return out


PROTOCOL = Protocol(create_reference=create_reference, probe=probe, holdings=holdings, modules=MODULES,
                    reference="conformance.protocols.plaza.reference:PlazaReference",
                    credentials=credentials, binding_entries=binding_entries, last=(PLANS, STOPS))
