"""Approvals (request_approval and check_approval): blocking by default and failing
closed, detached approvals, the statuses check_approval reports, the replay window, the
binding to the creating conversation, the owner's session rules, and the diff the human
sees (clipped, sensitive paths and secret tokens kept from them)."""

from __future__ import annotations

import json
import time
from typing import Any

from conformance.checks.expect import expect_refused, expect_result
from conformance.kit.check import CheckContext
from conformance.kit.declare import at, chosen, requirement
from conformance.kit.faults import answer, replaces, returns, returns_arg
from conformance.model import Profile
from conformance.protocols.canon.answers import objects
from conformance.protocols.canon.client import CanonClient, fresh
from conformance.protocols.canon.reference import CanonReference
from conformance.protocols.canon.shared import DEFS, HOUR_MS, MINUTE_MS, SECOND_MS, needs_control

# without control, an approval's deadline is waited out: this short (the document's
# timeoutMs minimum is a second; two leave room for the check of the pending approval)
WAITED_DEADLINE_MS = 2 * SECOND_MS


@requirement(id="CANON-APPROVAL-FAILS-CLOSED", level="MUST",
             title="request_approval blocks by default; unanswered it times out closed (timeout or deny, "
                   "never allow)",
             source=at(f"{DEFS}/request_approval_input/description"),
             faults=[answer("approval_timeout_allows", "approval_timeout_result",
                            "A blocking approval that times out is answered allow.", set={"status": "allow"}),
                     returns("approval_default_detached", "approval_mode", "detached",
                             "A request_approval without mode is detached (the default is blocking).")])
def check_approval_fails_closed(ctx: CheckContext) -> None:
    """Nobody answers: a scripted human who lets it time out, or (without control) nobody
    at all, for the shortest deadline."""
    c = CanonClient(ctx)
    if c.humans:
        c.script("request_approval", action="timeout")
    result = expect_result(ctx, c.call("request_approval", {"toolName": "rm", "toolSummary": "delete",
                                                            "timeoutMs": SECOND_MS}),
                           "request_approval (no mode: blocking) that nobody answers")
    ctx.expect(result.get("status") in ("timeout", "deny"),
               f"an unanswered blocking approval must wait and fail closed (timeout or deny), got {result}")


@requirement(id="CANON-APPROVAL-DETACHED", level="MUST",
             title="mode detached answers pending at once; the decision (and its responder) arrives through "
                   "check_approval",
             source=at(f"{DEFS}/request_approval_input/description"),
             faults=[returns("detached_approval_blocks", "approval_mode", "blocking",
                             'mode "detached" behaves as blocking.')])
@needs_control("a human's decision on the approval (control decide_approval)")
def check_approval_detached(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    pending = c.detached_approval()
    ctx.expect(isinstance(pending.get("expiresAt"), int),
               f"a detached approval must carry expiresAt: {pending}")
    ctx.control("decide_approval", approvalId=pending["approvalId"], decision="allow")
    got = expect_result(ctx, c.call("check_approval", {"approvalId": pending["approvalId"]}),
                        "check_approval after allow")
    ctx.expect(got.get("status") == "resolved" and got.get("decision") == "allow",
               f"check_approval must answer resolved/allow: {got}")
    ctx.expect(got.get("respondedBy") in (None, c.role("owner")),
               f"respondedBy must be the human who decided (the owner): {got}")


@check_approval_detached.fault
def responded_by_agent(ref: CanonReference) -> None:
    """check_approval names the agent, not the human who decided, as respondedBy."""
    @replaces(ref.verb_check_approval)
    def check(original: Any, args: dict[str, Any]) -> dict[str, Any]:
        out = original(args)
        return {**out, "respondedBy": ref.agent} if "respondedBy" in out else out


@requirement(id="CANON-CHECK-APPROVAL-STATUSES", level="MUST",
             title="check_approval: unknown is not a denial, pending while open, expired after the deadline",
             source=at(f"{DEFS}/check_approval_result/description"),
             faults=[answer("expired_reported_deny", "approval_expired_result",
                            "check_approval of an expired approval answers resolved deny.",
                            edit=lambda out, record: {**out, "status": "resolved", "decision": "deny",
                                                      "conversationId": record["conversationId"]}),
                     answer("unknown_reported_deny", "approval_unknown_result",
                            "check_approval of an unknown approval answers resolved deny.",
                            set={"status": "resolved", "decision": "deny"}),
                     answer("approval_never_expires", "approval_expired_result",
                            "check_approval keeps answering pending after the deadline.",
                            edit=lambda out, record: {**out, "status": "pending",
                                                      "expiresAt": record["expiresAt"]})])
def check_approval_statuses(ctx: CheckContext) -> None:
    """The deadline passes on the target's clock (control advance_clock), or, without
    control, in real time: the approval asks for a deadline two seconds away and the check
    waits it out."""
    c = CanonClient(ctx)
    unknown = expect_result(ctx, c.call("check_approval", {"approvalId": fresh("none")}),
                            "check_approval of an unknown id")
    ctx.expect(unknown.get("status") == "unknown",
               f"an unknown approval is 'unknown', not a decision: {unknown}")
    timeout = MINUTE_MS if ctx.run.control_path else WAITED_DEADLINE_MS
    pending = c.detached_approval(timeoutMs=timeout)
    got = expect_result(ctx, c.call("check_approval", {"approvalId": pending["approvalId"]}),
                        "check_approval of an undecided approval")
    ctx.expect(got.get("status") == "pending", f"an undecided approval is pending: {got}")
    if ctx.run.control_path:
        ctx.control("advance_clock", seconds=2 * MINUTE_MS // SECOND_MS)
    else:
        time.sleep(timeout / SECOND_MS + 0.5)
    got = expect_result(ctx, c.call("check_approval", {"approvalId": pending["approvalId"]}),
                        "check_approval after the deadline")
    ctx.expect(got.get("status") == "expired",
               f"an approval past its deadline is expired (not a denial): {got}")


def replay_title(profile: Profile) -> str:
    window = int(profile.limits["approval_replay_window_ms"].value)
    return (f"A resolved decision replays up to {window / HOUR_MS:g} h after the first consume, "
            "then is unknown")


@requirement(id="CANON-CHECK-APPROVAL-REPLAY", level="MUST", title=replay_title,
             source=at(f"{DEFS}/check_approval_input/description"),
             faults=[returns("check_approval_replay_consumed", "approval_replayable", False,
                             "A resolved decision answers unknown on its second check (no replay).",
                             when=lambda record: record.get("consumedAt") is not None)])
@needs_control("a human's decision (control decide_approval) and the target's clock moved past the replay "
               "window, hours away (control advance_clock)")
def check_approval_replay(ctx: CheckContext) -> None:
    """A decision replays up to the window after the first consume (a minute before its end)
    and is unknown after it (a minute past)."""
    c = CanonClient(ctx)
    pending = c.detached_approval()
    ctx.control("decide_approval", approvalId=pending["approvalId"], decision="deny")
    first = expect_result(ctx, c.call("check_approval", {"approvalId": pending["approvalId"]}),
                          "first check_approval")
    again = expect_result(ctx, c.call("check_approval", {"approvalId": pending["approvalId"]}),
                          "second check_approval")
    ctx.expect(first.get("status") == again.get("status") == "resolved" and again.get("decision") == "deny",
               f"a resolved decision replays within the window: {first} then {again}")
    window_s = ctx.limit("approval_replay_window_ms") // SECOND_MS
    minute_s = MINUTE_MS // SECOND_MS
    ctx.control("advance_clock", seconds=window_s - minute_s)
    edge = expect_result(ctx, c.call("check_approval", {"approvalId": pending["approvalId"]}),
                         "check_approval a minute before the window ends")
    ctx.expect(edge.get("status") == "resolved" and edge.get("decision") == "deny",
               f"a minute before the replay window ends the decision still replays: {edge}")
    ctx.control("advance_clock", seconds=2 * minute_s)
    late = expect_result(ctx, c.call("check_approval", {"approvalId": pending["approvalId"]}),
                         "check_approval a minute after the window")
    ctx.expect(late.get("status") == "unknown", f"a minute after the replay window the id is unknown: {late}")


@check_approval_replay.fault
def replay_window_loose(ref: CanonReference) -> None:
    """A resolved decision keeps replaying an hour past the replay window."""
    @replaces(ref.approval_replayable)
    def replayable(original: Any, record: dict[str, Any]) -> bool:
        consumed = record.get("consumedAt")
        return consumed is None or ref.now_ms() - consumed <= ref.limit("approval_replay_window_ms") + HOUR_MS


@requirement(id="CANON-CHECK-APPROVAL-BOUND", level="MUST",
             title="check_approval is bound to the conversation that created the approval",
             source=at(f"{DEFS}/check_approval_input/description"),
             faults=[returns("approval_conversation_unbound", "approval_bound", True,
                             "check_approval ignores a conversationId that did not create the approval.")])
@needs_control("a human's decision on the approval (control decide_approval)")
def check_approval_bound(ctx: CheckContext) -> None:
    """From another conversation the decision is not seen: a refusal, or any status but resolved."""
    c = CanonClient(ctx)
    pending = c.detached_approval()
    ctx.control("decide_approval", approvalId=pending["approvalId"], decision="allow")
    reply = c.call("check_approval", {"approvalId": pending["approvalId"], "conversationId": c.role("group")})
    if reply.ok:
        ctx.expect(reply.result.get("status") != "resolved",
                   f"check_approval from another conversation must not see the decision: {reply.result}")
    else:
        expect_refused(ctx, reply, "check_approval from another conversation")


@requirement(id="CANON-SESSION-RULE-OWNER-ONLY", level="MUST",
             title="A non-owner responder's session rule is dropped; the owner's is kept",
             source=at(f"{DEFS}/sessionRule/description"),
             faults=[returns("non_owner_session_rule_kept", "session_rule_allowed", True,
                             "A non-owner's sessionRule is kept.")])
@needs_control("a member and the owner who each allow the approval with a session rule (control script)")
def check_session_rule_owner_only(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    rule = {"type": "approve-tool", "toolPattern": "deploy"}
    c.script("request_approval", action="allow", sessionRule=rule, **{"as": c.role("member")})
    reply = c.call("request_approval", {"conversationId": c.role("group"), "toolName": "deploy",
                                        "toolSummary": "x", "allowSessionRule": True,
                                        "responseUserId": c.role("member")})
    result = expect_result(ctx, reply, "request_approval answered by a non-owner")
    ctx.expect(result.get("status") == "allow", f"scripted allow did not arrive: {result}")
    ctx.expect("sessionRule" not in result, f"a non-owner's sessionRule must be dropped: {result}")
    c.script("request_approval", action="allow", sessionRule=rule)
    owner = expect_result(ctx, c.call("request_approval", {"toolName": "deploy", "toolSummary": "x",
                                                           "allowSessionRule": True}),
                          "request_approval answered by the owner")
    ctx.expect(owner.get("sessionRule") == rule, f"the owner's sessionRule must be kept: {owner}")


# -- the diff the human sees ---------------------------------------------------------------
def diff_file(path: str, text: str) -> dict[str, Any]:
    return {"path": path, "status": "modified", "diff": text}


def approval_diff(c: CanonClient, files: list[dict[str, Any]]) -> dict[str, Any]:
    """The diff as the human sees it (control interaction) for a detached approval carrying ``files``."""
    pending = c.detached_approval(diff={"files": files})
    diff = c.interaction(pending["approvalId"]).get("diff")
    return diff if isinstance(diff, dict) else {}


@requirement(id="CANON-DIFF-CLIP", level="MUST",
             title="The human sees each file diff clipped to {limits[diff_file_clip_bytes]} bytes and all to "
                   "{limits[diff_total_clip_bytes]}",
             source=at(f"{DEFS}/unifiedDiff/description"),
             faults=[returns_arg("diff_unclipped", "clip_bytes", 0,
                                 "unifiedDiff file diffs are never clipped (neither per file nor in "
                                 "total).")])
@needs_control("the diff as the human sees it (control interaction), which no verb of the document shows")
def check_diff_clip(ctx: CheckContext) -> None:
    c = CanonClient(ctx)
    per_file = ctx.limit("diff_file_clip_bytes")
    total = ctx.limit("diff_total_clip_bytes")
    body = "+x\n"

    def text(n: int) -> str:
        return (body * (n // len(body) + 1))[:n]

    with ctx.subcheck("one file at the per-file clip"):
        seen = approval_diff(c, [diff_file("src/a.py", text(per_file))])
        ctx.expect([len(str(f.get("diff", "")).encode()) for f in objects(seen.get("files"))] == [per_file],
                   f"a file diff of exactly {per_file} bytes must reach the human whole: "
                   f"{[len(str(f.get('diff', ''))) for f in objects(seen.get('files'))]}")
    with ctx.subcheck("one file a byte past the per-file clip"):
        seen = approval_diff(c, [diff_file("src/a.py", text(per_file + 1))])
        sizes = [len(str(f.get("diff", "")).encode()) for f in objects(seen.get("files"))]
        ctx.expect(sizes and all(s <= per_file for s in sizes),
                   f"a file diff of {per_file + 1} bytes must be clipped to {per_file}: {sizes}")
    with ctx.subcheck("files past the total clip"):
        count = total // per_file + 1
        seen = approval_diff(c, [diff_file(f"src/f{i}.py", text(per_file)) for i in range(count)])
        shown = sum(len(str(f.get("diff", "")).encode()) for f in objects(seen.get("files")))
        ctx.expect(0 < shown <= total,
                   f"{count} file diffs of {per_file} bytes must be clipped to {total} in total, the human "
                   f"sees {shown}")


PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7conformance"
PEM = f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\n-----END PRIVATE KEY-----"


@requirement(id="CANON-DIFF-REDACTION", level="SHOULD",
             title="A .env diff is suppressed and a private key redacted before the human sees them",
             source=chosen("the spec names no sensitive path or secret-token form: a .env file and a PEM "
                           "private key are the profile's unmistakable cases"),
             faults=[returns_arg("secret_tokens_shown", "redact", 0,
                                 "Secret tokens inside a unifiedDiff reach the human unredacted."),
                     returns("sensitive_paths_shown", "path_sensitive", False,
                             "The diff of a sensitive path (.env, a private key) reaches the human.")])
@needs_control("the diff as the human sees it (control interaction), which no verb of the document shows")
def check_diff_redaction(ctx: CheckContext) -> None:
    """The profile's reading of "sensitive paths" and "secret tokens": a .env file and a PEM private key."""
    c = CanonClient(ctx)
    seen = approval_diff(c, [diff_file("src/app.py", f"+key = '''{PEM}'''\n"),
                             diff_file(".env", "+DB_PASSWORD=hunter2\n")])
    shown = json.dumps(seen)
    ctx.expect(PEM_BODY not in shown, "a private key in a diff reached the human unredacted")
    ctx.expect("hunter2" not in shown, "the diff of .env (a sensitive path) reached the human")
