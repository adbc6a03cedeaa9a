"""What the real Bindu server (PyPI ``bindu`` 2026.36.7, an echo agent served by ``bindufy``
on 127.0.0.1) answers, reproduced on the reference as faults and variants (issue 45): each
deviation is found by the row about it and by no other, and a set-up step the server
refuses blocks the row that only uses it, naming the row that judges it, instead of
failing it with the refusal (two rows failed with the server's -32700 that way).

The server itself is not installed by the project's tests (it needs Python 3.12 and
pulls a web3 stack); these faults are what a run against it showed."""

from __future__ import annotations

from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.run.runner import Verdict, execute

PROFILE = load_profile("bindu")


def verdict(rid: str, *faults: str, control: bool = True) -> Verdict:
    run = open_run(PROFILE, "reference", faults=faults, budget="quick", shrink=False,
                   reference_options={"control": control})
    try:
        return execute(PROFILE.requirement(rid), run)
    finally:
        run.http.close()


def test_a_send_without_ids_refused_blocks_the_rows_that_only_use_it():
    """The server refuses message/send without taskId (-32700): the spec makes it optional,
    so BINDU-SEND-CREATES-TASK fails; BINDU-SEND-NOT-IDEMPOTENT, whose repeat must name no
    task, is blocked by it; BINDU-SEND-FINDABLE sends ids of its own and still judges."""
    fault = "send_without_ids_refused"
    assert verdict("BINDU-SEND-CREATES-TASK", fault).status == "failed"
    blocked = verdict("BINDU-SEND-NOT-IDEMPOTENT", fault)
    assert blocked.status == "blocked", blocked.message
    assert "BINDU-SEND-CREATES-TASK" in blocked.message and "-32700" in blocked.message
    assert verdict("BINDU-SEND-FINDABLE", fault).status == "passed"
    # and each still catches its own fault once the send is accepted
    assert verdict("BINDU-SEND-NOT-IDEMPOTENT", "dedupes_message_id").status == "failed"
    assert verdict("BINDU-SEND-FINDABLE", "list_omits_history").status == "failed"


def test_the_agents_did_is_found_in_the_card_wherever_it_sits():
    """The server's card has no ``did`` member (REST-OPENAPI's finding) but names the DID as
    an extension's uri: the DID rows find it there; a card with no DID at all blocks them."""
    assert verdict("BINDU-REST-OPENAPI", "card_did_in_extension").status == "failed"
    for rid in ("BINDU-ARTIFACT-SIGNATURE", "BINDU-DID-RESOLVE"):
        assert verdict(rid, "card_did_in_extension").status == "passed", rid
        none = verdict(rid, "card_missing_did")
        assert none.status == "blocked" and "BINDU-REST-OPENAPI" in none.message, (rid, none.message)


def test_an_unknown_skill_is_judged_by_its_code_in_either_documented_body():
    """404 with -32030 inside the catalog's JSON-RPC envelope: the code is right, the body is
    not the path's schema (REST-OPENAPI's finding only)."""
    assert verdict("BINDU-SKILL-NOT-FOUND", "skill_not_found_enveloped").status == "passed"
    assert verdict("BINDU-REST-OPENAPI", "skill_not_found_enveloped").status == "failed"
    assert verdict("BINDU-SKILL-NOT-FOUND", "skill_not_found_500").status == "failed"


def test_a_result_without_success_is_the_result_rows_finding_only():
    """tasks/feedback and contexts/clear answering {"message": ...}: the result rows fail,
    the rows about what the calls do judge what they did; success false is still refused."""
    fault = "success_as_message"
    for rid in ("BINDU-RESULT-TASKS-FEEDBACK", "BINDU-RESULT-CONTEXTS-CLEAR"):
        assert verdict(rid, fault).status == "failed", rid
    for rid in ("BINDU-FEEDBACK-NO-STATE-CHANGE", "BINDU-CONTEXT-CLEAR", "BINDU-LIFECYCLE"):
        got = verdict(rid, fault)
        assert got.status == "passed", (rid, got.message)
    assert verdict("BINDU-FEEDBACK-NO-STATE-CHANGE", "feedback_refused_as_failure").status == "failed"


def test_contexts_listing_their_tasks_as_task_ids_are_read_by_content():
    for rid in ("BINDU-CONTEXTS-LIST", "BINDU-CONTEXT-CLEAR", "BINDU-SEND-FINDABLE"):
        assert verdict(rid, "contexts_list_task_ids").status == "passed", rid
    both = ("contexts_list_task_ids", "contexts_history_ignored")
    assert verdict("BINDU-CONTEXTS-LIST", *both).status == "failed"


def test_a_task_the_agent_finished_before_the_cancel_needs_control_not_a_finding():
    """Without control, the server answers message/send ``submitted`` and finishes the task
    before tasks/cancel arrives: the cancel's refusal is the spec's answer to a finished
    task, so the result row needs control instead of failing "expected a result"."""
    got = verdict("BINDU-RESULT-TASKS-CANCEL", "send_answers_submitted", control=False)
    assert (got.status, got.reason) == ("untested", "control"), got.message
    assert "before tasks/cancel reached it" in got.message


def test_the_push_configuration_sent_is_one_every_reading_accepts():
    """The spec's pushNotificationConfig is a free object; the kit sends it with an id and a
    url (A2A's shape), which the server parses, so -32003 is judged, not the config's shape."""
    assert verdict("BINDU-PUSH-NOT-SUPPORTED").status == "passed"
    assert verdict("BINDU-PUSH-NOT-SUPPORTED", "push_config_ignored").status == "failed"


def test_a_notification_gets_no_response_or_invalid_request():
    assert verdict("BINDU-RPC-NOTIFICATION").status == "passed"  # -32600: the schema requires id
    assert verdict("BINDU-RPC-NOTIFICATION", "notifications_unanswered").status == "passed"  # JSON-RPC 2.0
    failed = verdict("BINDU-RPC-NOTIFICATION", "notification_answered")
    assert failed.status == "failed" and "answered as a request" in failed.message


def test_the_extended_card_row_rests_on_a_method_the_spec_does_not_name():
    req = PROFILE.requirement("BINDU-EXTENDED-CARD")
    assert req.level == "SHOULD" and "agent/getAuthenticatedExtendedCard" in str(req.source)
