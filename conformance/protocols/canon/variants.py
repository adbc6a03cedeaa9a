"""Variants: behaviours the spec allows but the reference does not choose. Each
patches one reference instance, like a fault, and its docstring quotes the spec
text that allows it; `conformance selftest` runs every requirement against every
variant, and no MUST requirement may fail on one."""

from __future__ import annotations

from typing import Any

from conformance.kit.declare import variant
from conformance.kit.faults import answer, replaces
from conformance.protocols.canon.reference import CanonReference, VerbError

# The one error code the spec names; every other code is the profile's.
SPEC_CODES = ("MESSAGE_ID_EXISTS",)
ADVISORY = ("riskLevel", "risk", "category")


@variant
def deadline_clamped(ref: CanonReference) -> None:
    """A deadline beyond the verb's ceiling is clamped to the ceiling instead of refused.

    allowed by: /$defs/request_input_input/properties/timeoutMs/description "Relative deadline in ms (server
    ceiling …)"
    (a ceiling caps the deadline; the spec names no refusal)"""
    @replaces(ref.deadline)
    def deadline(original: Any, args: dict[str, Any], ceiling_ms: int) -> int:
        now = ref.now_ms()
        return min(ref.requested_deadline(args, now), now + ceiling_ms)


@variant
def refusal_codes_own(ref: CanonReference) -> None:
    """Every refusal carries the target's own code string (HTTP status and isError kept),
    except MESSAGE_ID_EXISTS, the only code the spec names.

    allowed by: /$defs/messageId/description "different payload -> 409 MESSAGE_ID_EXISTS"
    (the only error code in the spec; no other refusal is given a code)"""
    @replaces(ref.error_body)
    def body(original: Any, err: VerbError) -> dict[str, Any]:
        out = original(err)
        if err.code not in SPEC_CODES:
            out["error"]["code"] = "REFUSED_" + err.code.lower()
        return out


@variant
def responder_from_provenance(ref: CanonReference) -> None:
    """request_input and request_card ignore a model-supplied responseUserId: the
    responder is the turn's human (here the owner).

    allowed by: /$defs/request_input_input/properties/responseUserId/description "Trust-critical
    bindings (hermes) derive this from turn provenance and ignore model-supplied values\""""
    @replaces(ref.input_responder)
    def input_responder(original: Any, args: dict[str, Any], conv: dict[str, Any]) -> str:
        return ref.owner

    @replaces(ref.verb_request_card)
    def request_card(original: Any, args: dict[str, Any]) -> dict[str, Any]:
        return original({k: v for k, v in args.items() if k != "responseUserId"})


variant(answer("approval_timeout_denies", "approval_timeout_result",
               """A blocking approval that nobody answers comes back as status deny.

    allowed by: /$defs/request_approval_input/description "Timeouts fail closed to deny\"""",
               set={"status": "deny"}))


@variant
def advisory_fields_lenient(ref: CanonReference) -> None:
    """riskLevel, risk and category strings outside their enums are accepted (riskLevel
    dropped, risk and category stored).

    allowed by: /$defs/request_approval_input/properties/riskLevel/description "others are silently
    dropped, not rejected" (risk, category: "Advisory; server stores any string <= 64 chars today")"""
    @replaces(ref.validate_input)
    def validate(original: Any, verb: str, args: Any) -> None:
        if verb == "request_approval" and isinstance(args, dict):
            lenient = {k for k in ADVISORY if isinstance(args.get(k), str) and len(args[k]) <= 64}
            if lenient:
                original(verb, {k: v for k, v in args.items() if k not in lenient})
                args.pop("riskLevel", None)
                return
        original(verb, args)


@variant
def check_approval_bound_refused(ref: CanonReference) -> None:
    """check_approval from a conversation that did not create the approval is refused
    (rather than answered unknown).

    allowed by: /$defs/check_approval_input/description "Bindings must bind the check to the
    conversation that created the approval\""""
    @replaces(ref.verb_check_approval)
    def check(original: Any, args: dict[str, Any]) -> dict[str, Any]:
        record = ref.w["interactions"]["approval"].get(args["approvalId"])
        if record is not None and not ref.approval_bound(record, args):
            raise VerbError("NOT_A_MEMBER", "the approval belongs to another conversation")
        return original(args)
