"""When a row applies, declared on the requirement (``@requirement(applies=...)``): the
runner calls each guard before the check, and a guard's NotApplicable is the row's verdict
with its reason; the check's body then never runs."""

from __future__ import annotations

import pytest

from conformance.cli import main
from conformance.kit.check import CheckContext, NotApplicable
from conformance.kit.declare import Each, chosen, requirement
from conformance.model import Declared
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.run.runner import execute


@pytest.fixture(scope="module")
def run():
    return open_run(load_profile("bindu"), "reference", budget="quick")


def not_here(ctx: CheckContext) -> None:
    raise NotApplicable("a statement of another binding; this run speaks this one")


def declared_off(ctx: CheckContext) -> None:
    raise NotApplicable("not applicable by declaration", Declared("streaming", False, "the card says no"))


def always(ctx: CheckContext) -> None:
    """Applies everywhere."""


def rows(check, profile):
    return [row for declaration in check.declarations for row in declaration.rows(profile)]


def guarded(rid, applies, profile, ran):
    """The one row of a declaration with these guards, whose body notes that it ran."""
    @requirement(id=rid, level="SHOULD", title="a guarded row", source=chosen("test"), applies=applies)
    def check(ctx: CheckContext) -> None:
        ran.append("body")
        ctx.expect(True, "judged")

    (row,) = rows(check, profile)
    return row


def test_a_row_whose_guard_says_not_applicable_is_skipped_with_its_reason_and_never_runs(run):
    ran: list[str] = []
    row = guarded("TEST-GUARD-OFF", not_here, run.profile, ran)
    assert row.applies == (not_here,)
    verdict = execute(row, run)
    assert (verdict.status, verdict.message) == ("skipped", "a statement of another binding; this run speaks "
                                                            "this one")
    assert verdict.declared is None
    assert ran == []


def test_a_guard_by_declaration_carries_the_declaration_to_the_verdict(run):
    ran: list[str] = []
    verdict = execute(guarded("TEST-GUARD-DECLARED", [always, declared_off], run.profile, ran), run)
    assert verdict.status == "skipped"
    assert verdict.declared == Declared("streaming", False, "the card says no")
    assert ran == []


def test_a_row_whose_guards_pass_runs(run):
    ran: list[str] = []
    assert execute(guarded("TEST-GUARD-ON", always, run.profile, ran), run).status == "passed"
    assert ran == ["body"]


def test_a_members_guards_follow_the_declarations_and_reach_its_code_twin(run):
    ran: list[str] = []

    def members(profile):
        yield Each({"which": "a"}, applies=not_here)
        yield Each({"which": "b"})

    @requirement(id="TEST-GUARD-{which}", level="SHOULD", title="member {which}", source=chosen("test"),
                 applies=always, each=members, code="SOME_ERROR")
    def check(ctx: CheckContext, which: str, strict: bool = False) -> None:
        ran.append(which)
        ctx.expect(True, "judged")

    guarded = {row.id: row for row in rows(check, run.profile)}
    assert guarded["TEST-GUARD-a"].applies == guarded["TEST-GUARD-a-CODE"].applies == (always, not_here)
    assert guarded["TEST-GUARD-b"].applies == (always,)
    verdicts = {rid: execute(row, run).status for rid, row in guarded.items()}
    assert verdicts == {"TEST-GUARD-a": "skipped", "TEST-GUARD-a-CODE": "skipped",
                        "TEST-GUARD-b": "passed", "TEST-GUARD-b-CODE": "passed"}
    assert ran == ["b", "b"]


def test_a2a_declares_its_binding_and_streaming_rows_guards():
    """The a2a rows about one binding, or about streaming, say so on the requirement."""
    profile = load_profile("a2a")
    applies = {r.id: [g.__name__ for g in r.applies] for r in profile.requirements}
    assert applies["A2A-REST-ERROR-BODY"] == ["over_http_routes"]
    assert applies["A2A-RPC-BATCH"] == ["over_jsonrpc_http"]
    assert applies["A2A-GRPC-SERVICE"] == ["over_grpc"]
    assert applies["A2A-STREAM-SSE"] == ["over_http", "streaming"]
    assert applies["A2A-SUB-TASK-FIRST"] == ["streaming"]
    mapped = [rid for rid in applies if rid.startswith("A2A-ERR-") and rid.endswith("-GRPC")]
    assert mapped and all(applies[rid][0] == "over_grpc" for rid in mapped)


def test_conformance_list_shows_a_rows_guards(capsys):
    assert main(["list", "a2a"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if " A2A-STREAM-SSE " in line)
    assert "applies: over_http, streaming" in lines[at + 1] + lines[at + 2]


def test_a2a_rows_resting_on_the_cards_declarations_say_so():
    """Security, push, the extended card and the rows about an agent without a capability:
    each guard is ``offers.offered``'s, named by its feature; a declaration read after an
    exchange (the extended card's cache headers, over HTTP+JSON only) stays in the body."""
    profile = load_profile("a2a")
    applies = {r.id: [g.__name__ for g in r.applies] for r in profile.requirements}
    assert applies["A2A-AUTH-REQUIRED"] == applies["A2A-AUTH-FORBIDDEN"] == ["secured"]
    assert applies["A2A-PUSH-CREATE"] == applies["A2A-PUSH-DELIVERY"] == ["push"]
    assert applies["A2A-PUSH-SCOPED"] == ["push", "secured"]
    assert applies["A2A-SUB-SCOPED"] == ["streaming", "secured"]
    assert applies["A2A-XCARD-RESULT"] == ["extended_card"]
    assert applies["A2A-XCARD-CACHE-HEADERS"] == []
    assert [applies[f"A2A-CAP-{name}-OFF"] for name in ("PUSH", "STREAMING", "XCARD")] == \
        [["push_off"], ["streaming_off"], ["extended_card_off"]]
    assert applies["A2A-ERR-PUSH-NOT-SUPPORTED-REST"] == ["over_http_routes", "push_off"]
    assert applies["A2A-ERR-EXTENDED-CARD-NOT-CONFIGURED-GRPC"] == ["over_grpc", "extended_card"]
    assert applies["A2A-CAP-XCARD-NOT-CONFIGURED"] == ["extended_card"]
