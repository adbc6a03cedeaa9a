"""Part 2 of the reference site (issue 14): group_* commands: owner authorization, groups,
membership, messages, queue and schedule (groupChat). A mixin of PlazaReference: its commands
are ``cmd_<name>`` methods, its state lives under its own keys of ``self.s`` (set by
``reset_groups``), and ``PART_COMMANDS`` names the scope each command needs.

The profile's choices where the document is silent (docs/agent-plaza.md, "Groups"):

- Authorization. ``group_authorize`` (its branch requires ``owner_authorized: true``) is the
  owner's grant as the Agent relays it: the reference cannot see the owner, so it takes that
  command as the owner's decision; ``group_authorization_request`` only records a request
  (deduplicated while pending, granting nothing); ``group_authorization_revoke`` ends the
  grant at once. A grant is live while not revoked and not past ``expires_hours`` (none with
  ``lifetime: until_revoked`` and ``confirm_until_revoked: true``). Reads (list, discover,
  detail, messages, ack) need no grant; every write needs a live one, create / join (and
  accepting an invitation) / invite / send (queue, flush, schedule) its ``allow_*`` scope.
- Groups are private by default: a private group is NOT_FOUND to anyone but its members,
  its pending invitees and applicants; a public one is discoverable and its detail readable,
  its messages only by members. Roles owner > manager > member; at most max_members.
- A member reads only messages stored after it joined (history_before_join_visible: false).
- A sender's messages per rolling hour are capped by the lower of the group's rule and its
  grant; an autonomous turn is a message sent right after another agent's message, capped
  (the loop guard) at the lower of the two max_autonomous_turns until the owner grants again.
- ``group_queue`` stores; only ``group_flush`` delivers (all of the caller's queued messages
  of the group, under the current grant). ``group_schedule`` only records a registration:
  the reference never sends or invokes anything by itself.
- Retries with the same ``request_key`` recheck the grant and the membership, then answer
  the original outcome (``replayed: true``) and store nothing new.
- Group work (group_invitation, group_application, group_message, group_membership_change)
  goes to the durable receive log through ``log_work`` with the group as its "connection"
  ({"id": group_id, "round_no": 1}) and ``group_id`` / ``read_group`` (a group_messages
  request) in the item.
- ``group_routing_issues`` refuses a group command whose message carries contextId, taskId
  or recipientId metadata (groupChat.scope); PlazaReference calls it while validating."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from conformance.protocols.plaza.site import (
    CONNECTIONS_READ,
    CONNECTIONS_WRITE,
    INVALID_STATE,
    MESSAGES_READ,
    MESSAGES_WRITE,
    NOT_FOUND,
    NOT_PERMITTED,
    RECIPIENT_FIELD,
    Issue,
    Principal,
    SiteError,
    iso,
)

Data = dict[str, Any]

# Durable receive work kinds of this part (durableReceive.supported_work).
GROUP_INVITATION, GROUP_APPLICATION = "group_invitation", "group_application"
GROUP_MESSAGE, GROUP_MEMBERSHIP_CHANGE = "group_message", "group_membership_change"
GROUP_WORK = (GROUP_INVITATION, GROUP_APPLICATION, GROUP_MESSAGE, GROUP_MEMBERSHIP_CHANGE)

# The profile's names for the states of a grant, a group and a member.
AUTH_NONE, AUTH_ACTIVE, AUTH_EXPIRED, AUTH_REVOKED = "none", "active", "expired", "revoked"
OPEN, CLOSED_GROUP = "open", "closed"
OWNER_ROLE, MANAGER_ROLE, MEMBER_ROLE = "owner", "manager", "member"
RANK = {OWNER_ROLE: 3, MANAGER_ROLE: 2, MEMBER_ROLE: 1}
PENDING = "pending"
SCOPE_FIELDS = ("allow_create", "allow_join", "allow_invite", "allow_send")
HOUR_MS = 3_600_000
UNTIL_REVOKED = "until_revoked"


class GroupsPart:
    PART_COMMANDS: ClassVar[dict[str, str]] = {
        "group_authorization": CONNECTIONS_READ, "group_authorize": CONNECTIONS_WRITE,
        "group_authorization_request": CONNECTIONS_WRITE, "group_authorization_revoke": CONNECTIONS_WRITE,
        "group_list": CONNECTIONS_READ, "group_discover": CONNECTIONS_READ, "group_detail": CONNECTIONS_READ,
        "group_create": CONNECTIONS_WRITE, "group_join_request": CONNECTIONS_WRITE,
        "group_admit": CONNECTIONS_WRITE,
        "group_invite": CONNECTIONS_WRITE, "group_respond": CONNECTIONS_WRITE,
        "group_settings": CONNECTIONS_WRITE,
        "group_close": CONNECTIONS_WRITE, "group_member": CONNECTIONS_WRITE,
        "group_messages": MESSAGES_READ, "group_ack": MESSAGES_READ,
        "group_send": MESSAGES_WRITE, "group_queue": MESSAGES_WRITE, "group_flush": MESSAGES_WRITE,
        "group_schedule": MESSAGES_WRITE,
    }
    s: dict[str, Any]
    spec: dict[str, Any]
    ext: str
    branches: dict[str, dict[str, Any]]
    new_uuid: Callable[[], str]
    now_ms: Callable[[], int]
    person: Callable[[str], dict[str, Any]]
    log_work: Callable[..., None]

    def reset_groups(self) -> None:
        """This part's state on a fresh site."""
        self.s.update({"group_auth": {}, "group_auth_requests": {}, "groups": {}, "group_keys": {},
                       "group_queue": {},
                       "group_schedules": {}, "group_order": 0})

    # ------------------------------------------------------------------ document values

    def group_default(self, command: str, field: str) -> Any:
        """A field's default in the command's branch (the document's number, never retyped)."""
        return self.branches[command]["properties"][field].get("default")

    def rule_defaults(self) -> Data:
        rules = self.branches["group_create"]["properties"]["rules"]["properties"]
        return {name: row["default"] for name, row in rules.items() if "default" in row}

    def max_members(self) -> int:
        return int(self.spec["groupChat"]["max_members"])

    # ------------------------------------------------------------------ routing (groupChat.scope)

    def group_routing_issues(self, message: Data, data: Data) -> list[Issue]:
        """group_id lives inside data only: a group command naming a contextId, a taskId or
        a recipientId is refused (the validation issue names the field that must go)."""
        if data.get("operation") not in self.PART_COMMANDS:
            return []
        issues = [Issue(f"params.message.{name}", "not") for name in ("contextId", "taskId")
                  if name in message]
        ext = (message.get("metadata") or {}).get(self.ext)
        if isinstance(ext, dict) and RECIPIENT_FIELD in ext:
            issues.append(Issue("params.message.metadata", "not"))
        return issues

    # ------------------------------------------------------------------ authorization

    def auth_record(self, visitor_id: str) -> Data | None:
        found: Data | None = self.s["group_auth"].get(visitor_id)
        return found

    def auth_state(self, visitor_id: str) -> str:
        record = self.auth_record(visitor_id)
        if record is None:
            return AUTH_NONE
        if record["revoked"]:
            return AUTH_REVOKED
        if record["expires_at"] is not None and self.now_ms() >= record["expires_at"]:
            return AUTH_EXPIRED
        return AUTH_ACTIVE

    def require_authorization(self, visitor_id: str, scope: str | None = None) -> Data:
        """The caller's live grant (with ``scope`` when named), checked now: every request and retry."""
        state = self.auth_state(visitor_id)
        if state != AUTH_ACTIVE:
            raise SiteError(NOT_PERMITTED,
                            f"no live group authorization from your owner ({state}); see group_authorization",
                            {"authorizationState": state, "permission": "group_authorization"})
        record = self.auth_record(visitor_id)
        assert record is not None
        if scope is not None and not record[scope]:
            raise SiteError(NOT_PERMITTED, f"your owner's group authorization does not allow {scope}",
                            {"authorizationState": state, "missingScope": scope})
        return record

    def auth_view(self, visitor_id: str) -> Data:
        record = self.auth_record(visitor_id)
        state = self.auth_state(visitor_id)
        if record is None:
            return {"state": state, "live": False, "version": 0}
        return {"state": state, "live": state == AUTH_ACTIVE, "version": record["version"],
                **{name: record[name] for name in SCOPE_FIELDS},
                "max_messages_per_hour": record["max_messages_per_hour"],
                "max_autonomous_turns": record["max_autonomous_turns"],
                "lifetime": record["lifetime"], "granted_at": iso(record["granted_at"]),
                "expires_at": iso(record["expires_at"]) if record["expires_at"] is not None else None}

    def pending_request(self, visitor_id: str) -> Data | None:
        return next((r for r in self.s["group_auth_requests"].get(visitor_id, []) if r["status"] == PENDING),
                    None)

    def request_view(self, request: Data) -> Data:
        return {"request_id": request["request_id"], "scopes": list(request["scopes"]),
                "status": request["status"],
                "created_at": iso(request["created_at"])}

    def permission_attention(self, visitor_id: str) -> Data:
        """What the caller's own group permission is (durableReceive.authorization.permission_attention)."""
        state = self.auth_state(visitor_id)
        pending = self.pending_request(visitor_id)
        return {"state": state, "live": state == AUTH_ACTIVE, "own_permission_only": True,
                "other_agents_offline_evidence": False,
                "pending_request_id": pending["request_id"] if pending else None,
                "re_request_allowed": state in (AUTH_NONE, AUTH_EXPIRED) and pending is None,
                "request_operation": self.spec["durableReceive"]["authorization"]["group_request_operation"]}

    def permission_answer(self, visitor_id: str, **extra: Any) -> Data:
        return {"authorization": self.auth_view(visitor_id),
                "permission_attention": self.permission_attention(visitor_id), **extra}

    def cmd_group_authorization(self, who: Principal, data: Data) -> Data:
        """The preflight: the caller's grant, its pending request and permission_attention."""
        pending = self.pending_request(who.visitor_id)
        return self.permission_answer(who.visitor_id,
                                      pending_request=self.request_view(pending) if pending else None)

    def cmd_group_authorization_request(self, who: Principal, data: Data) -> Data:
        """Asks the owner: a request, never authority; a pending one with the same scopes is reused."""
        caller = who.visitor_id
        scopes = sorted(set(data.get("scopes", self.group_default("group_authorization_request", "scopes"))))
        record = self.auth_record(caller)
        if self.auth_state(caller) == AUTH_ACTIVE and record is not None and all(record[s] for s in scopes):
            return self.permission_answer(caller, request=None, existing_authority_reused=True,
                                          deduplicated=False)
        requests = self.s["group_auth_requests"].setdefault(caller, [])
        same = next((r for r in requests if r["status"] == PENDING and r["scopes"] == scopes), None)
        if same is None:
            for other in requests:
                if other["status"] == PENDING:
                    other["status"] = "superseded"
            same = {"request_id": self.new_uuid(), "scopes": scopes, "status": PENDING,
                    "created_at": self.now_ms()}
            requests.append(same)
            deduplicated = False
        else:
            deduplicated = True
        return self.permission_answer(caller, request=self.request_view(same),
                                      existing_authority_reused=False,
                                      deduplicated=deduplicated)

    def cmd_group_authorize(self, who: Principal, data: Data) -> Data:
        """The owner's grant (owner_authorized: true), replacing the previous one."""
        caller = who.visitor_id
        prior = self.group_prior(caller, "group_authorize", data)
        if prior is not None:
            return prior
        record = self.auth_record(caller)
        version = record["version"] if record else 0
        if "expected_version" in data and data["expected_version"] != version:
            raise SiteError(INVALID_STATE,
                            f"the authorization is at version {version}, not {data['expected_version']}")
        lifetime = data.get("lifetime", "limited")
        if lifetime == UNTIL_REVOKED and data.get("confirm_until_revoked") is not True:
            raise SiteError(NOT_PERMITTED, "an authorization until revoked needs confirm_until_revoked: true")
        request = self.granted_request(caller, data.get("request_id"))
        now = self.now_ms()
        hours = data.get("expires_hours", self.group_default("group_authorize", "expires_hours"))
        grant = {name: data.get(name, self.group_default("group_authorize", name)) for name in SCOPE_FIELDS}
        self.s["group_auth"][caller] = {
            **grant, "version": version + 1, "revoked": False, "granted_at": now, "lifetime": lifetime,
            "expires_at": None if lifetime == UNTIL_REVOKED else now + int(hours) * HOUR_MS,
            "max_messages_per_hour": data.get("max_messages_per_hour",
                                              self.group_default("group_authorize", "max_messages_per_hour")),
            "max_autonomous_turns": data.get("max_autonomous_turns",
                                             self.group_default("group_authorize", "max_autonomous_turns"))}
        for group in self.s["groups"].values():  # the owner acted: the loop guard starts again
            if caller in group["members"]:
                group["members"][caller]["turns"] = 0
        return self.group_remember(caller, "group_authorize", data, self.permission_answer(
            caller, granted_request_id=request["request_id"] if request else None))

    def granted_request(self, caller: str, request_id: str | None) -> Data | None:
        """The pending request a grant decides (NOT_FOUND when it is not the caller's)."""
        if request_id is None:
            return None
        request = next((r for r in self.s["group_auth_requests"].get(caller, [])
                        if r["request_id"] == request_id), None)
        if request is None:
            raise SiteError(NOT_FOUND, "no such authorization request of yours")
        request["status"] = "granted"
        return request

    def cmd_group_authorization_revoke(self, who: Principal, data: Data) -> Data:
        """Ends the grant at once (nothing to revoke: changes nothing)."""
        caller = who.visitor_id
        record = self.auth_record(caller)
        if record is not None and not record["revoked"]:
            record["revoked"] = True
            record["version"] += 1
        for request in self.s["group_auth_requests"].get(caller, []):
            if request["status"] == PENDING:
                request["status"] = "withdrawn"
        return self.permission_answer(caller, revoked=True)

    # ------------------------------------------------------------------ retries (request_key)

    def group_key(self, caller: str, operation: str, data: Data) -> str:
        return f"{caller}|{operation}|{data.get('request_key')}"

    def group_prior(self, caller: str, operation: str, data: Data) -> Data | None:
        """The outcome of an earlier request with this request_key, replayed (the caller has
        just been rechecked), or None."""
        prior = self.s["group_keys"].get(self.group_key(caller, operation, data))
        return {**prior, "replayed": True} if prior is not None else None

    def group_remember(self, caller: str, operation: str, data: Data, payload: Data) -> Data:
        self.s["group_keys"][self.group_key(caller, operation, data)] = payload
        return {**payload, "replayed": False}

    # ------------------------------------------------------------------ groups

    def group_of(self, group_id: Any) -> Data | None:
        found: Data | None = self.s["groups"].get(group_id) if isinstance(group_id, str) else None
        return found

    def can_see(self, group: Data, visitor_id: str) -> bool:
        """Members, pending invitees and applicants see a group; others only a public one."""
        return (group["visibility"] == "public" or visitor_id in group["members"]
                or group["invitations"].get(visitor_id) == PENDING
                or group["applications"].get(visitor_id) == PENDING)

    def visible_group(self, caller: str, group_id: Any) -> Data:
        """The group when the caller may see it; NOT_FOUND (same text) for missing and private alike."""
        group = self.group_of(group_id)
        if group is None or not self.can_see(group, caller):
            raise SiteError(NOT_FOUND, "no such group")
        return group

    def member_group(self, caller: str, group_id: Any) -> tuple[Data, Data]:
        """The group and the caller's membership (a public group's outsider: NOT_PERMITTED)."""
        group = self.visible_group(caller, group_id)
        member = group["members"].get(caller)
        if member is None:
            raise SiteError(NOT_PERMITTED, "you are not a member of this group")
        found: Data = member
        return group, found

    def require_open(self, group: Data) -> None:
        if group["state"] != OPEN:
            raise SiteError(NOT_PERMITTED, "the group is closed")

    def require_role(self, group: Data, caller: str, role: str) -> None:
        if RANK[group["members"][caller]["role"]] < RANK[role]:
            raise SiteError(NOT_PERMITTED, f"only a group {role} may do this")

    def add_member(self, group: Data, visitor_id: str, role: str = MEMBER_ROLE) -> None:
        """A new member sees what is stored from now on (history_before_join_visible: false)."""
        if visitor_id in group["members"]:
            return
        if len(group["members"]) >= self.max_members():
            raise SiteError(NOT_PERMITTED, f"the group has {self.max_members()} members, its maximum")
        group["members"][visitor_id] = {"role": role, "joined_seq": group["last_seq"],
                                        "joined_at": self.now_ms(),
                                        "muted": False, "paused": False, "read_seq": group["last_seq"],
                                        "turns": 0}

    def group_work(self, visitor_id: str, kind: str, group: Data, **extra: Any) -> None:
        """A work item of the group in the visitor's durable receive log."""
        read = {"operation": "group_messages", "group_id": group["id"]}
        self.log_work(visitor_id, kind, {"id": group["id"], "round_no": 1}, group_id=group["id"],
                      read_group=read, **extra)

    def managers(self, group: Data) -> list[str]:
        return [v for v, m in group["members"].items() if RANK[m["role"]] >= RANK[MANAGER_ROLE]]

    def group_summary(self, group: Data, caller: str) -> Data:
        member = group["members"].get(caller)
        return {"group_id": group["id"], "name": group["name"], "visibility": group["visibility"],
                "state": group["state"],
                "member_count": len(group["members"]), "role": member["role"] if member else None,
                "created_by_you": group["creator"] == caller}

    def group_view(self, group: Data, caller: str) -> Data:
        out = {**self.group_summary(group, caller), "announcement": group["announcement"],
               "rules": dict(group["rules"]),
               "created_at": iso(group["created_at"])}
        member = group["members"].get(caller)
        if member is not None:
            out["members"] = [{**self.person(v), "role": m["role"], "muted": m["muted"],
                               "paused": m["paused"]}
                              for v, m in group["members"].items()]
            out.update(last_seq=group["last_seq"], read_seq=member["read_seq"])
        elif group["invitations"].get(caller) == PENDING:
            out["invitation"] = PENDING
        return out

    def cmd_group_list(self, who: Principal, data: Data) -> Data:
        """The caller's groups: created (by the caller), joined (a member, not the creator), or all."""
        caller = who.visitor_id
        wanted = data.get("filter", self.group_default("group_list", "filter"))
        mine = [g for g in self.ordered_groups() if caller in g["members"]]
        if wanted == "created":
            mine = [g for g in mine if g["creator"] == caller]
        elif wanted == "joined":
            mine = [g for g in mine if g["creator"] != caller]
        return {"filter": wanted, "groups": [self.group_summary(g, caller) for g in mine]}

    def ordered_groups(self) -> list[Data]:
        return sorted(self.s["groups"].values(), key=lambda g: g["order"])

    def cmd_group_discover(self, who: Principal, data: Data) -> Data:
        """Open public groups whose name or announcement holds q (case-insensitive)."""
        query = str(data.get("q", self.group_default("group_discover", "q"))).casefold()
        limit = data.get("limit", self.group_default("group_discover", "limit"))
        found = [g for g in self.ordered_groups() if g["visibility"] == "public" and g["state"] == OPEN
                 and (not query or query in g["name"].casefold() or query in g["announcement"].casefold())]
        return {"q": query, "groups": [self.group_summary(g, who.visitor_id) for g in found[:limit]],
                "has_more": len(found) > limit}

    def cmd_group_detail(self, who: Principal, data: Data) -> Data:
        caller = who.visitor_id
        return {"group": self.group_view(self.visible_group(caller, data["group_id"]), caller)}

    def cmd_group_create(self, who: Principal, data: Data) -> Data:
        """A new group (the document's defaults), the caller its owner; needs allow_create."""
        caller = who.visitor_id
        self.require_authorization(caller, "allow_create")
        prior = self.group_prior(caller, "group_create", data)
        if prior is not None:
            return prior
        self.s["group_order"] += 1
        now = self.now_ms()
        group: Data = {
            "id": self.new_uuid(), "name": data["name"], "order": self.s["group_order"], "creator": caller,
            "announcement": data.get("announcement", self.group_default("group_create", "announcement")),
            "visibility": data.get("visibility", self.group_default("group_create", "visibility")),
            "rules": {**self.rule_defaults(), **data.get("rules", {})}, "state": OPEN, "created_at": now,
            "members": {}, "invitations": {}, "applications": {}, "messages": [], "last_seq": 0}
        self.add_member(group, caller, OWNER_ROLE)
        self.s["groups"][group["id"]] = group
        return self.group_remember(caller, "group_create", data, {"group": self.group_view(group, caller)})

    # ------------------------------------------------------------------ membership

    def cmd_group_join_request(self, who: Principal, data: Data) -> Data:
        """An application to a visible group; it waits for a manager's group_admit."""
        caller = who.visitor_id
        self.require_authorization(caller, "allow_join")
        group = self.visible_group(caller, data["group_id"])
        prior = self.group_prior(caller, "group_join_request", data)
        if prior is not None:
            return prior
        self.require_open(group)
        if caller in group["members"]:
            raise SiteError(INVALID_STATE, "you are already a member")
        if group["applications"].get(caller) != PENDING:
            group["applications"][caller] = PENDING
            for manager in self.managers(group):
                self.group_work(manager, GROUP_APPLICATION, group, applicant=caller)
        return self.group_remember(caller, "group_join_request", data,
                                   {"group_id": group["id"], "application": PENDING})

    def cmd_group_admit(self, who: Principal, data: Data) -> Data:
        """A manager approves or declines a pending application."""
        caller = who.visitor_id
        self.require_authorization(caller)
        group, _ = self.member_group(caller, data["group_id"])
        self.require_role(group, caller, MANAGER_ROLE)
        prior = self.group_prior(caller, "group_admit", data)
        if prior is not None:
            return prior
        applicant = data["visitor_id"]
        if group["applications"].get(applicant) != PENDING:
            raise SiteError(INVALID_STATE, "no pending application of this visitor")
        if data["decision"] == "approve":
            self.require_open(group)
            self.add_member(group, applicant)
        group["applications"][applicant] = "approved" if data["decision"] == "approve" else "declined"
        self.group_work(applicant, GROUP_MEMBERSHIP_CHANGE, group, change=group["applications"][applicant])
        return self.group_remember(caller, "group_admit", data,
                                   {"group_id": group["id"], "visitor_id": applicant,
                                    "application": group["applications"][applicant]})

    def cmd_group_invite(self, who: Principal, data: Data) -> Data:
        """A manager (or any member where the rules allow member invites) invites a visitor;
        needs allow_invite."""
        caller = who.visitor_id
        self.require_authorization(caller, "allow_invite")
        group, member = self.member_group(caller, data["group_id"])
        if not group["rules"].get("member_invites") or member["muted"]:
            self.require_role(group, caller, MANAGER_ROLE)
        prior = self.group_prior(caller, "group_invite", data)
        if prior is not None:
            return prior
        self.require_open(group)
        invitee = data["visitor_id"]
        if invitee not in self.s["visitors"]:
            raise SiteError(NOT_FOUND, "no such visitor")
        if invitee in group["members"]:
            raise SiteError(INVALID_STATE, "the visitor is already a member")
        group["invitations"][invitee] = PENDING
        self.group_work(invitee, GROUP_INVITATION, group, invited_by=caller)
        return self.group_remember(caller, "group_invite", data,
                                   {"group_id": group["id"], "visitor_id": invitee, "invitation": PENDING})

    def cmd_group_respond(self, who: Principal, data: Data) -> Data:
        """The invitee accepts (needs allow_join) or declines its pending invitation."""
        caller = who.visitor_id
        accept = data["decision"] == "accept"
        self.require_authorization(caller, "allow_join" if accept else None)
        group = self.visible_group(caller, data["group_id"])
        prior = self.group_prior(caller, "group_respond", data)
        if prior is not None:
            return prior
        if group["invitations"].get(caller) != PENDING:
            raise SiteError(INVALID_STATE, "no pending invitation to this group")
        if accept:
            self.require_open(group)
            self.add_member(group, caller)
        group["invitations"][caller] = "accepted" if accept else "declined"
        for manager in self.managers(group):
            self.group_work(manager, GROUP_MEMBERSHIP_CHANGE, group, change=group["invitations"][caller],
                            member_id=caller)
        return self.group_remember(caller, "group_respond", data,
                                   {"group_id": group["id"], "invitation": group["invitations"][caller]})

    def cmd_group_settings(self, who: Principal, data: Data) -> Data:
        """A manager changes the announcement and rules (rules given replace the named ones)."""
        caller = who.visitor_id
        self.require_authorization(caller)
        group, _ = self.member_group(caller, data["group_id"])
        self.require_role(group, caller, MANAGER_ROLE)
        prior = self.group_prior(caller, "group_settings", data)
        if prior is not None:
            return prior
        self.require_open(group)
        if "announcement" in data:
            group["announcement"] = data["announcement"]
        group["rules"].update(data.get("rules", {}))
        return self.group_remember(caller, "group_settings", data, {"group": self.group_view(group, caller)})

    def cmd_group_close(self, who: Principal, data: Data) -> Data:
        """The group's owner closes it: no further messages or members."""
        caller = who.visitor_id
        self.require_authorization(caller)
        group, _ = self.member_group(caller, data["group_id"])
        self.require_role(group, caller, OWNER_ROLE)
        if group["state"] != CLOSED_GROUP:
            group["state"] = CLOSED_GROUP
            for visitor_id in group["members"]:
                if visitor_id != caller:
                    self.group_work(visitor_id, GROUP_MEMBERSHIP_CHANGE, group, change="closed")
        return {"group_id": group["id"], "state": group["state"]}

    def cmd_group_member(self, who: Principal, data: Data) -> Data:
        """mute / unmute / remove / pause / resume by a higher role (pause and resume also
        on oneself), promote / demote by the owner, leave by oneself."""
        caller = who.visitor_id
        self.require_authorization(caller)
        group, _ = self.member_group(caller, data["group_id"])
        action = data["action"]
        target = caller if action == "leave" else data.get("visitor_id", caller)
        if target not in group["members"]:
            raise SiteError(NOT_FOUND, "no such member")
        self.check_member_action(group, caller, target, action)
        getattr(self, f"member_{action}")(group, target)
        if target != caller:
            self.group_work(target, GROUP_MEMBERSHIP_CHANGE, group, change=action)
        else:
            for manager in self.managers(group):
                if manager != caller:
                    self.group_work(manager, GROUP_MEMBERSHIP_CHANGE, group, change=action, member_id=caller)
        member = group["members"].get(target)
        return {"group_id": group["id"], "visitor_id": target, "action": action,
                "member": {"role": member["role"], "muted": member["muted"], "paused": member["paused"]}
                if member else None}

    def check_member_action(self, group: Data, caller: str, target: str, action: str) -> None:
        role, target_role = group["members"][caller]["role"], group["members"][target]["role"]
        if action == "leave":
            if role == OWNER_ROLE:
                raise SiteError(NOT_PERMITTED, "the group's owner closes the group instead of leaving it")
        elif action in ("promote", "demote"):
            self.require_role(group, caller, OWNER_ROLE)
            if target == caller:
                raise SiteError(NOT_PERMITTED, "the owner keeps its role")
        elif not (target == caller and action in ("pause", "resume")) and RANK[role] <= RANK[target_role]:
            raise SiteError(NOT_PERMITTED, f"a {role} cannot {action} a {target_role}")

    def member_mute(self, group: Data, target: str) -> None:
        group["members"][target]["muted"] = True

    def member_unmute(self, group: Data, target: str) -> None:
        group["members"][target]["muted"] = False

    def member_pause(self, group: Data, target: str) -> None:
        group["members"][target]["paused"] = True

    def member_resume(self, group: Data, target: str) -> None:
        group["members"][target]["paused"] = False

    def member_promote(self, group: Data, target: str) -> None:
        group["members"][target]["role"] = MANAGER_ROLE

    def member_demote(self, group: Data, target: str) -> None:
        group["members"][target]["role"] = MEMBER_ROLE

    def member_remove(self, group: Data, target: str) -> None:
        del group["members"][target]

    def member_leave(self, group: Data, target: str) -> None:
        del group["members"][target]

    # ------------------------------------------------------------------ messages

    def group_message_view(self, msg: Data) -> Data:
        return {"id": msg["id"], "seq": msg["seq"], "sender": msg["sender"], "sender_kind": "agent",
                "content": msg["content"],
                "reply_to": msg["reply_to"], "mentions": list(msg["mentions"]),
                "created_at": iso(msg["created_at"])}

    def visible_messages(self, group: Data, member: Data) -> list[Data]:
        """Only what was stored after the member joined."""
        return [m for m in group["messages"] if m["seq"] > member["joined_seq"]]

    def cmd_group_messages(self, who: Principal, data: Data) -> Data:
        """A forward page of the messages a member may see: seq > after_seq, at most limit."""
        group, member = self.member_group(who.visitor_id, data["group_id"])
        after = data.get("after_seq", member["joined_seq"])
        limit = data.get("limit", self.group_default("group_messages", "limit"))
        newer = [m for m in self.visible_messages(group, member) if m["seq"] > after]
        page = newer[:limit]
        return {"group_id": group["id"], "messages": [self.group_message_view(m) for m in page],
                "has_more": len(newer) > limit,
                "next_after_seq": page[-1]["seq"] if page else after, "read_seq": member["read_seq"]}

    def cmd_group_ack(self, who: Principal, data: Data) -> Data:
        """Records the member's read position (never backwards, never past the last message)."""
        group, member = self.member_group(who.visitor_id, data["group_id"])
        if data["seq"] > group["last_seq"]:
            raise SiteError(INVALID_STATE,
                            f"seq {data['seq']} is past the group's last message {group['last_seq']}")
        member["read_seq"] = max(member["read_seq"], data["seq"])
        return {"group_id": group["id"], "read_seq": member["read_seq"]}

    def sender_group(self, caller: str, group_id: Any) -> tuple[Data, Data, Data]:
        """What every send (and its retry) rechecks: a live grant with allow_send, an open
        group, a member neither muted nor paused."""
        grant = self.require_authorization(caller, "allow_send")
        group, member = self.member_group(caller, group_id)
        self.require_open(group)
        if member["muted"]:
            raise SiteError(NOT_PERMITTED, "you are muted in this group")
        if member["paused"]:
            raise SiteError(NOT_PERMITTED, "your group sends are paused until resumed")
        return grant, group, member

    def check_rate(self, group: Data, grant: Data, caller: str) -> None:
        """At most the lower of the group's and the grant's max_messages_per_hour in a rolling hour."""
        cap = min(int(group["rules"]["max_messages_per_hour"]), int(grant["max_messages_per_hour"]))
        since = self.now_ms() - HOUR_MS
        sent = sum(1 for m in group["messages"] if m["sender"] == caller and m["created_at"] > since)
        if sent >= cap:
            raise SiteError(NOT_PERMITTED, f"at most {cap} group messages per hour",
                            {"limit": "max_messages_per_hour"})

    def is_turn(self, group: Data, caller: str) -> bool:
        """An autonomous turn: a message right after another agent's message."""
        return bool(group["messages"]) and group["messages"][-1]["sender"] != caller

    def check_turns(self, group: Data, grant: Data, member: Data, caller: str) -> None:
        """The loop guard: at most the lower max_autonomous_turns until the owner grants again."""
        cap = min(int(group["rules"]["max_autonomous_turns"]), int(grant["max_autonomous_turns"]))
        if self.is_turn(group, caller) and member["turns"] >= cap:
            raise SiteError(NOT_PERMITTED, f"the loop guard stops autonomous turns after {cap}",
                            {"limit": "max_autonomous_turns"})

    def store_group_message(self, group: Data, member: Data, caller: str, fields: Data) -> Data:
        """Append a message; every other member gets a group_message work item."""
        if self.is_turn(group, caller):
            member["turns"] += 1
        group["last_seq"] += 1
        msg = {"id": self.new_uuid(), "seq": group["last_seq"], "sender": caller,
               "content": fields["content"],
               "reply_to": fields.get("reply_to"), "mentions": list(fields.get("mentions", [])),
               "created_at": self.now_ms()}
        group["messages"].append(msg)
        for visitor_id in group["members"]:
            if visitor_id != caller:
                self.group_work(visitor_id, GROUP_MESSAGE, group, message_id=msg["id"], seq=msg["seq"])
        return msg

    def cmd_group_send(self, who: Principal, data: Data) -> Data:
        """One message per request_key; a retry is rechecked, then answers the original."""
        caller = who.visitor_id
        grant, group, member = self.sender_group(caller, data["group_id"])
        prior = self.group_prior(caller, "group_send", data)
        if prior is not None:
            return prior
        self.check_rate(group, grant, caller)
        self.check_turns(group, grant, member, caller)
        msg = self.store_group_message(group, member, caller, data)
        return self.group_remember(caller, "group_send", data, {"group_id": group["id"], "stored": True,
                                                                "message": self.group_message_view(msg)})

    def cmd_group_queue(self, who: Principal, data: Data) -> Data:
        """Stores a message for later: not delivery; needs the live grant to send."""
        caller = who.visitor_id
        _, group, _ = self.sender_group(caller, data["group_id"])
        prior = self.group_prior(caller, "group_queue", data)
        if prior is not None:
            return prior
        item = {"queue_id": self.new_uuid(), "group_id": group["id"], "content": data["content"],
                "reply_to": data.get("reply_to"), "mentions": list(data.get("mentions", [])),
                "due_at": self.now_ms() + int(data["after_seconds"]) * 1000, "status": "queued"}
        self.s["group_queue"].setdefault(caller, []).append(item)
        return self.group_remember(caller, "group_queue", data, {"group_id": group["id"], "delivered": False,
                                                                 "queued": self.queue_view(item)})

    def queue_view(self, item: Data) -> Data:
        return {"queue_id": item["queue_id"], "group_id": item["group_id"], "status": item["status"],
                "due_at": iso(item["due_at"])}

    def cmd_group_flush(self, who: Principal, data: Data) -> Data:
        """Sends the caller's queued messages of the group now, each under the current grant,
        membership, rate limit and loop guard; what they refuse stays queued."""
        caller = who.visitor_id
        grant, group, member = self.sender_group(caller, data["group_id"])
        prior = self.group_prior(caller, "group_flush", data)
        if prior is not None:
            return prior
        sent: list[Data] = []
        for item in self.s["group_queue"].get(caller, []):
            if item["group_id"] != group["id"] or item["status"] != "queued":
                continue
            self.check_rate(group, grant, caller)
            self.check_turns(group, grant, member, caller)
            item["status"] = "sent"
            sent.append(self.group_message_view(self.store_group_message(group, member, caller, item)))
        left = sum(1 for i in self.s["group_queue"].get(caller, []) if i["group_id"] == group["id"]
                   and i["status"] == "queued")
        return self.group_remember(caller, "group_flush", data,
                                   {"group_id": group["id"], "sent": sent, "queued_left": left})

    def cmd_group_schedule(self, who: Principal, data: Data) -> Data:
        """Records a bounded registration (after_seconds, max_runs); the site sends nothing by itself."""
        caller = who.visitor_id
        if data["enabled"]:
            self.sender_group(caller, data["group_id"])
        else:
            self.member_group(caller, data["group_id"])
        after = int(data.get("after_seconds", self.group_default("group_schedule", "after_seconds")))
        runs = int(data.get("max_runs", self.group_default("group_schedule", "max_runs")))
        schedule = {"group_id": data["group_id"], "enabled": data["enabled"], "after_seconds": after,
                    "max_runs": runs,
                    "runs_done": 0,
                    "next_run_at": iso(self.now_ms() + after * 1000) if data["enabled"] else None}
        self.s["group_schedules"][f"{caller}|{data['group_id']}"] = schedule
        return {"schedule": dict(schedule), "registration_only": True}
