"""Faults of the groups part (issue 14): each patches one behaviour of part_groups.py."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from conformance.documents.schemas import validator_for
from conformance.faults import replaces
from conformance.protocols.plaza.part_groups import GROUP_MESSAGE, MANAGER_ROLE
from conformance.protocols.plaza.site import NOT_FOUND, NOT_PERMITTED, Issue, Principal, SiteError
from conformance.table import FaultRegistry

FAULTS = FaultRegistry()
fault: Callable[[Callable[[Any], None]], Callable[[Any], None]] = FAULTS
Data = dict[str, Any]
PERMISSIVE_GRANT = {"allow_create": True, "allow_join": True, "allow_invite": True, "allow_send": True,
                    "max_messages_per_hour": 60, "max_autonomous_turns": 6}


@contextmanager
def ungranted(ref: Any) -> Iterator[None]:
    """While inside, every grant check passes (the command runs as if authorized)."""
    saved = ref.require_authorization
    ref.require_authorization = lambda *args, **kwargs: dict(PERMISSIVE_GRANT)
    try:
        yield
    finally:
        ref.require_authorization = saved


def _default(ref: Any, command: str, field: str, value: Any) -> None:
    """``group_default(command, field)`` answers ``value``."""
    @replaces(ref, "group_default")
    def group_default(original: Any, asked: str, name: str) -> Any:
        return value if (asked, name) == (command, field) else original(asked, name)


# ------------------------------------------------------------------ authorization


@fault
def preflight_without_attention(ref: Any) -> None:
    """group_authorization answers without permission_attention."""
    @replaces(ref, "cmd_group_authorization")
    def preflight(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        out.pop("permission_attention", None)
        return out


@fault
def preflight_state_stale(ref: Any) -> None:
    """The preflight always describes the site before any grant."""
    @replaces(ref, "cmd_group_authorization")
    def preflight(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        out["authorization"] = {"state": "none", "live": False, "version": 0}
        out["permission_attention"] = {**out["permission_attention"], "state": "none", "live": False}
        return out


@fault
def request_grants_authority(ref: Any) -> None:
    """An authorization request is taken as the grant itself (new authority automatically)."""
    @replaces(ref, "cmd_group_authorization_request")
    def request(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        scopes = {name: True for name in data.get("scopes", [])}
        ref.cmd_group_authorize(who, {"operation": "group_authorize", "owner_authorized": True, "request_key": ref.new_uuid(), **scopes})
        return out


@fault
def requests_not_deduplicated(ref: Any) -> None:
    """Every authorization request is a new one, even while the same one is pending."""
    @replaces(ref, "cmd_group_authorization_request")
    def request(original: Any, who: Principal, data: Data) -> Data:
        for row in ref.s["group_auth_requests"].get(who.visitor_id, []):
            if row["status"] == "pending":
                row["status"] = "superseded"
        out: Data = original(who, data)
        return out


@fault
def create_without_authorization(ref: Any) -> None:
    """group_create runs without the owner's grant of allow_create."""
    @replaces(ref, "require_authorization")
    def require(original: Any, visitor_id: str, scope: str | None = None) -> Data:
        if scope == "allow_create":
            return dict(PERMISSIVE_GRANT)
        found: Data = original(visitor_id, scope)
        return found


@fault
def authorize_default_invite(ref: Any) -> None:
    """A grant without allow_invite allows inviting (the default is taken as true)."""
    _default(ref, "group_authorize", "allow_invite", True)


@fault
def grant_never_expires(ref: Any) -> None:
    """A limited grant never lapses (expires_hours ignored)."""
    @replaces(ref, "cmd_group_authorize")
    def authorize(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        ref.s["group_auth"][who.visitor_id]["expires_at"] = None
        return out


@fault
def grant_default_expiry_wrong(ref: Any) -> None:
    """A grant without expires_hours lasts twice the schema's default."""
    default = ref.branches["group_authorize"]["properties"]["expires_hours"]["default"]
    _default(ref, "group_authorize", "expires_hours", 2 * default)


@fault
def revoke_ignored(ref: Any) -> None:
    """group_authorization_revoke answers but the grant stays."""
    ref.cmd_group_authorization_revoke = lambda who, data: ref.permission_answer(who.visitor_id, revoked=True)


# ------------------------------------------------------------------ groups


@fault
def list_filter_ignored(ref: Any) -> None:
    """group_list lists all the caller's groups whatever the filter."""
    @replaces(ref, "cmd_group_list")
    def group_list(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, {**data, "filter": "all"})
        return out


@fault
def create_default_public(ref: Any) -> None:
    """A group created without visibility is public."""
    _default(ref, "group_create", "visibility", "public")


@fault
def create_default_member_invites(ref: Any) -> None:
    """A group created without rules lets every member invite."""
    @replaces(ref, "rule_defaults")
    def rule_defaults(original: Any) -> Data:
        return {**original(), "member_invites": True}


@fault
def create_default_rules_wrong(ref: Any) -> None:
    """A group created without rules allows the schema's largest max_autonomous_turns, not its default."""
    @replaces(ref, "rule_defaults")
    def rule_defaults(original: Any) -> Data:
        top = ref.branches["group_create"]["properties"]["rules"]["properties"]["max_autonomous_turns"]["maximum"]
        return {**original(), "max_autonomous_turns": top}


@fault
def discover_default_limit_ignored(ref: Any) -> None:
    """group_discover without limit lists every match (the schema's default is 20)."""
    @replaces(ref, "cmd_group_discover")
    def discover(original: Any, who: Principal, data: Data) -> Data:
        top = ref.branches["group_discover"]["properties"]["limit"]["maximum"]
        out: Data = original(who, data if "limit" in data else {**data, "limit": top})
        return out


@fault
def discover_ignores_limit(ref: Any) -> None:
    """group_discover lists up to the schema's maximum whatever the limit."""
    @replaces(ref, "cmd_group_discover")
    def discover(original: Any, who: Principal, data: Data) -> Data:
        top = ref.branches["group_discover"]["properties"]["limit"]["maximum"]
        out: Data = original(who, {**data, "limit": top})
        return out


@fault
def private_group_readable(ref: Any) -> None:
    """Anyone sees a private group's detail (visibility ignored)."""
    ref.can_see = lambda group, visitor_id: True


@fault
def private_group_wrong_code(ref: Any) -> None:
    """A group the caller cannot see is refused NOT_PERMITTED instead of NOT_FOUND."""
    @replaces(ref, "visible_group")
    def visible(original: Any, caller: str, group_id: Any) -> Data:
        try:
            found: Data = original(caller, group_id)
        except SiteError as err:
            raise SiteError(NOT_PERMITTED if err.name == NOT_FOUND else err.name, err.message) from err
        return found


# ------------------------------------------------------------------ membership


@fault
def join_admits_at_once(ref: Any) -> None:
    """A join request makes the applicant a member without any group_admit."""
    @replaces(ref, "cmd_group_join_request")
    def join(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        group = ref.s["groups"][data["group_id"]]
        ref.add_member(group, who.visitor_id)
        return out


@fault
def mute_ignored(ref: Any) -> None:
    """group_member mute changes nothing."""
    ref.member_mute = lambda group, target: None


@fault
def leave_ignored(ref: Any) -> None:
    """group_member leave changes nothing."""
    ref.member_leave = lambda group, target: None


@fault
def history_before_join_visible(ref: Any) -> None:
    """A member reads the whole history, from before it joined too."""
    ref.visible_messages = lambda group, member: list(group["messages"])


@fault
def members_unbounded(ref: Any) -> None:
    """A group admits members past max_members."""
    ref.max_members = lambda: 10 ** 6


# ------------------------------------------------------------------ settings, limits, close, routing


@fault
def grant_rate_ignored(ref: Any) -> None:
    """A grant's max_messages_per_hour is ignored: only the group's rule caps the rate."""
    @replaces(ref, "check_rate")
    def check_rate(original: Any, group: Data, grant: Data, caller: str) -> None:
        original(group, {**grant, "max_messages_per_hour": group["rules"]["max_messages_per_hour"]}, caller)


@fault
def rate_limit_ignored(ref: Any) -> None:
    """max_messages_per_hour is not enforced."""
    ref.check_rate = lambda group, grant, caller: None


@fault
def members_act_as_managers(ref: Any) -> None:
    """Any member may do what a manager does (settings, admission, invitations)."""
    @replaces(ref, "require_role")
    def require_role(original: Any, group: Data, caller: str, role: str) -> None:
        if role != MANAGER_ROLE:
            original(group, caller, role)


@fault
def loop_guard_off(ref: Any) -> None:
    """No cap on autonomous turns."""
    ref.check_turns = lambda group, grant, member, caller: None


@fault
def close_ignored(ref: Any) -> None:
    """A closed group still takes messages and members."""
    ref.require_open = lambda group: None


@fault
def group_routing_unchecked(ref: Any) -> None:
    """A group command carrying contextId, taskId or recipientId is served."""
    ref.group_routing_issues = lambda message, data: []


@fault
def group_routing_wrong_code(ref: Any) -> None:
    """A misrouted group command is refused NOT_PERMITTED instead of as invalid parameters."""
    @replaces(ref, "group_routing_issues")
    def routing(original: Any, message: Data, data: Data) -> list[Issue]:
        if original(message, data):
            raise SiteError(NOT_PERMITTED, "group_id lives inside data")
        return []


# ------------------------------------------------------------------ messages, retries


@fault
def group_after_seq_inclusive(ref: Any) -> None:
    """group_messages after_seq includes the message at after_seq."""
    @replaces(ref, "cmd_group_messages")
    def read(original: Any, who: Principal, data: Data) -> Data:
        if data.get("after_seq", 0) > 0:
            data = {**data, "after_seq": data["after_seq"] - 1}
        out: Data = original(who, data)
        return out


@fault
def group_limit_ignored(ref: Any) -> None:
    """group_messages ignores limit (the default page size)."""
    @replaces(ref, "cmd_group_messages")
    def read(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, {k: v for k, v in data.items() if k != "limit"})
        return out


@fault
def group_default_limit_ignored(ref: Any) -> None:
    """group_messages without limit lists up to the schema's maximum (the default is 40)."""
    @replaces(ref, "cmd_group_messages")
    def read(original: Any, who: Principal, data: Data) -> Data:
        top = ref.branches["group_messages"]["properties"]["limit"]["maximum"]
        out: Data = original(who, data if "limit" in data else {**data, "limit": top})
        return out


@fault
def group_content_truncated(ref: Any) -> None:
    """A long group message is stored cut to half its length."""
    @replaces(ref, "cmd_group_send")
    def group_send(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, {**data, "content": data["content"][: max(2, len(data["content"]) // 2)]})
        return out


@fault
def group_retry_stores_again(ref: Any) -> None:
    """A retry with the same request_key runs again (another message)."""
    ref.group_prior = lambda caller, operation, data: None


@fault
def group_retry_skips_recheck(ref: Any) -> None:
    """A group_send retry answers the original without checking grant and membership again."""
    @replaces(ref, "cmd_group_send")
    def group_send(original: Any, who: Principal, data: Data) -> Data:
        prior: Data | None = ref.group_prior(who.visitor_id, "group_send", data)
        if prior is not None:
            return prior
        out: Data = original(who, data)
        return out


# ------------------------------------------------------------------ queue, flush, schedule


@fault
def queue_delivers_at_once(ref: Any) -> None:
    """group_queue also sends the message at once."""
    @replaces(ref, "cmd_group_queue")
    def queue(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        group = ref.s["groups"][data["group_id"]]
        ref.store_group_message(group, group["members"][who.visitor_id], who.visitor_id, data)
        return out


@fault
def queue_without_authorization(ref: Any) -> None:
    """group_queue stores without a live grant."""
    @replaces(ref, "cmd_group_queue")
    def queue(original: Any, who: Principal, data: Data) -> Data:
        with ungranted(ref):
            out: Data = original(who, data)
        return out


@fault
def flush_skips_authorization(ref: Any) -> None:
    """group_flush sends the queue without a live grant."""
    @replaces(ref, "cmd_group_flush")
    def flush(original: Any, who: Principal, data: Data) -> Data:
        with ungranted(ref):
            out: Data = original(who, data)
        return out


@fault
def schedule_runs_unbounded(ref: Any) -> None:
    """group_schedule takes more runs than max_scheduled_runs."""
    schema = copy.deepcopy(ref.branches["group_schedule"])
    schema["properties"]["max_runs"].pop("maximum", None)
    ref.validators.commands["group_schedule"] = validator_for(schema)


@fault
def schedule_sends_message(ref: Any) -> None:
    """A schedule is a run: the site writes a message for the agent at once."""
    @replaces(ref, "cmd_group_schedule")
    def schedule(original: Any, who: Principal, data: Data) -> Data:
        out: Data = original(who, data)
        group = ref.s["groups"][data["group_id"]]
        ref.store_group_message(group, group["members"][who.visitor_id], who.visitor_id, {"content": "A scheduled run."})
        return out


# ------------------------------------------------------------------ durable receive


@fault
def group_messages_not_logged(ref: Any) -> None:
    """Group messages never reach the members' durable receive."""
    @replaces(ref, "group_work")
    def group_work(original: Any, visitor_id: str, kind: str, group: Data, **extra: Any) -> None:
        if kind != GROUP_MESSAGE:
            original(visitor_id, kind, group, **extra)
