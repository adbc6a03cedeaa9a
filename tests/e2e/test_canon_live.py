"""Canon without the control interface (issue 24): the world's roles come from the config
(what `serve --write-config` writes from the reference's seeding), checks share one world
that nothing resets, verbs that change what they name act on what the check made, the one
row that cannot is lasting, and the rows moved off control judge through the verbs the
document gives the agent, catching their faults with control and, where a client can
see them, without."""

import pytest

from conformance.proofs.liverun import compare_holdings, run_without_control
from conformance.proofs.selftest import bindings_of, fault_bindings
from conformance.protocols.canon.protocol import REFERENCE_TOKEN, holdings
from conformance.protocols.canon.reference import world_roles
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.run.runner import execute

PROFILE = "canon-verbs"
LASTING = ["CANON-GROUP-REMOVE-ADMIN-ONLY", "CANON-GROUP-REMOVE-ADMIN-ONLY-CODE"]
DISPOSABLE = {"credentials": {"full": {"token": REFERENCE_TOKEN, "disposable": True}}}
# rows that needed control before and now judge through the verbs (list_conversations,
# list_contacts), the shortest deadline nobody answers, or a short expiry waited out
MOVED = [
    "CANON-MESSAGE-ID-RESERVED", "CANON-MESSAGE-ID-RESERVED-CODE", "CANON-INPUT-ID-SINGLE-USE",
    "CANON-INPUT-ID-SINGLE-USE-CODE",
    "CANON-TEXT-BYTES", "CANON-ATTACHMENT-ALLOWLIST", "CANON-SEND-CONTENT-REQUIRED",
    "CANON-CONTENT-TYPE-DERIVED",
    "CANON-APPROVAL-FAILS-CLOSED", "CANON-CHECK-APPROVAL-STATUSES", "CANON-CARD-ENVELOPE",
    "CANON-CARD-ENVELOPE-CODE",
    "CANON-NO-REPLY-SILENT", "CANON-INPUT-VALID-REQUEST-INPUT", "CANON-INPUT-VALID-REQUEST-APPROVAL",
    "CANON-INPUT-VALID-REQUEST-CARD", "CANON-RESULT-REQUEST-INPUT", "CANON-RESULT-REQUEST-APPROVAL",
    "CANON-RESULT-REQUEST-CARD",
    *[f"CANON-INPUT-INVALID-{v}"
      for v in ("SEND-TO", "REQUEST-INPUT", "REQUEST-APPROVAL", "CHECK-APPROVAL", "SEND-CARD",
                "REQUEST-CARD", "SHARE-CONTACT", "REACT", "FORWARD", "CREATE-GROUP", "ADD-MEMBER",
                "REMOVE-MEMBER", "LEAVE-CONVERSATION", "LIST-CONTACTS", "LIST-CONVERSATIONS",
                "NO-REPLY")],
]
# what no client sees: the id counter only the digest covers, an input of only its required
# properties (without a human, a blocking verb is given the shortest deadline), and a human's
# answer in another branch (without control nobody is scripted: any answer may be a human's)
UNSEEN_LIVE = {"validation_after_write", "minimal_input_rejected", "request_input_result_other_branch",
               "request_card_result_other_branch"}


@pytest.fixture(scope="module")
def live():
    return run_without_control(PROFILE)


def test_a_live_run_leaves_the_agents_world_as_it_found_it_and_reaches_what_a_client_can(live):
    assert live.before, "holdings() read no configured identity"
    assert live.problems == [] and live.run.not_put_back == []
    assert [(r.id, v.message[:200]) for r, v in live.verdicts if v.status in ("failed", "blocked")] == []
    assert live.count("untested", reason="harm") == len(LASTING)
    assert live.count("untested") == live.count("untested", reason="control") + len(LASTING)
    assert live.reached >= 0.9 * live.testable, live.figures()
    assert live.count("passed") >= 93, live.figures()  # 7 before the world came from the config


def test_the_reference_world_is_what_control_world_answers():
    profile = load_profile(PROFILE)
    run = open_run(profile, "reference", budget="quick")
    answered = run.http.request("POST", f"{run.control_path}/world", json_body={}).json()["roles"]
    assert profile.reference_world == answered == world_roles()
    assert set(profile.reference_world) >= set(profile.settings["world_roles"])


def test_what_needs_control_says_which(live):
    for req, verdict in live.verdicts:
        if verdict.status == "untested" and verdict.reason == "control":
            assert "(control " in verdict.message, (req.id, verdict.message)


def test_no_verb_acts_on_a_configured_group_or_message_it_would_change():
    """add_member, remove_member and leave_conversation name a group the check made,
    react and forward a message it sent (the live run's holdings prove the rest)."""
    from conformance.protocols.canon.verbs import MADE, WORLD_IDS

    for verb in ("add_member", "remove_member", "leave_conversation"):
        assert WORLD_IDS[verb]["conversationId"] in MADE
    assert WORLD_IDS["react"]["messageId"] in MADE and WORLD_IDS["forward"]["messageId"] in MADE


def test_a_lasting_row_is_untested_for_harm_without_control_and_runs_when_the_agent_is_disposable():
    profile = load_profile(PROFILE)
    for rid in LASTING:
        assert profile.requirement(rid).lasting
    kept = run_without_control(PROFILE, only=LASTING)
    assert [(v.status, v.reason) for _, v in kept.verdicts] == [("untested", "harm")] * 2
    assert all("disposable" in v.message for _, v in kept.verdicts)
    free = run_without_control(PROFILE, only=LASTING, config=DISPOSABLE)
    assert [v.status for _, v in free.verdicts] == ["passed", "passed"], [v.message for _, v in free.verdicts]
    assert free.problems == [] and free.run.not_put_back == []


def test_a_disposable_agent_on_a_target_that_lets_a_plain_member_remove_gets_its_member_put_back():
    live = run_without_control(PROFILE, only=LASTING[:1], faults=("remove_member_by_non_admin",),
                               config=DISPOSABLE)
    assert live.verdicts[0][1].status == "failed", live.verdicts[0][1].message
    # removed, then added back (the member's policy is open)
    assert live.run.not_put_back == [] and live.problems == []


def test_the_holdings_see_a_left_conversation_a_removed_member_a_lost_contact_and_an_erased_message():
    profile = load_profile(PROFILE)
    run = open_run(profile, "reference", budget="quick", reference_options={"control": False})
    ref, roles = run.reference, world_roles()
    creds = {"full": REFERENCE_TOKEN}
    before = holdings(ref, creds)
    w = ref.w
    w["conversations"][roles["agent_group"]]["members"].remove(roles["agent"])
    w["conversations"][roles["group"]]["members"].remove(roles["member"])
    del w["contacts"][roles["open_user"]]
    w["conversations"][roles["owner_chat"]]["messages"].clear()
    problems = compare_holdings(before, holdings(ref, creds))
    assert any(roles["agent_group"] in p and p.endswith("is None") for p in problems), problems
    assert any(f"in conversation {roles['group']}" in p for p in problems)
    assert any(f"contact {roles['open_user']}" in p for p in problems)
    assert any(f"messages of {roles['owner_chat']} lost" in p for p in problems)
    assert compare_holdings(before,
                            holdings(ref, {"full": "another token"}))[0].startswith("full: token accepted")


@pytest.mark.parametrize("rid", MOVED)
def test_a_moved_row_judges_without_control_and_catches_its_faults_with_and_where_seen_without(rid):
    profile = load_profile(PROFILE)
    req = profile.requirement(rid)
    live = run_without_control(PROFILE, only=[rid])
    assert live.verdicts[0][1].status == "passed", live.verdicts[0][1].message
    for fault in req.faults:
        binding = fault_bindings(profile, fault)[0]  # a binding whose wire carries it
        run = open_run(profile, "reference", budget="quick", faults=(fault,), shrink=False, binding=binding)
        controlled = execute(req, run)
        assert controlled.status == "failed", (fault, controlled.status, controlled.message)
        # a live run speaks the first binding; a fault its wire does not carry is looked for over another
        if fault not in UNSEEN_LIVE and binding == bindings_of(profile)[0]:
            verdict = run_without_control(PROFILE, only=[rid], faults=(fault,)).verdicts[0][1]
            assert verdict.status == "failed", (fault, "without control", verdict.status, verdict.message)
