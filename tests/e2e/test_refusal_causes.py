"""Refusals judged by their cause (conformance/checks/causes.py): a broken input's refusal
counts only when the same request without the break is answered otherwise; one that names
its cause (a credential, a quota) is set aside; a row whose every refusal was set aside is
blocked, never passed."""

import functools
import json

import pytest

from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.run.runner import execute
from conformance.transport.http import HttpTransport

# any refusal of a broken send_to input counts (the code is the profile's)
ROW = "CANON-INPUT-INVALID-SEND-TO"


class RefusingAll:
    """The reference behind a gate that refuses every call but the control interface."""

    def __init__(self, app, status, body):
        self.app, self.state, self.status, self.body = app, app.state, status, body

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"].startswith("/_control"):
            await self.app(scope, receive, send)
            return
        while (await receive()).get("more_body"):
            pass
        content = json.dumps(self.body).encode()
        await send({"type": "http.response.start", "status": self.status,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(content)).encode())]})
        await send({"type": "http.response.body", "body": content})


def run_behind(status, body):
    profile = load_profile("canon-verbs")
    run = open_run(profile, "reference", budget="quick", binding="http")
    from conformance.run.launch import reference_app

    # the run's credentials live on its transport (transport/credentials.py): the gate's keeps them
    run.http = HttpTransport(app=RefusingAll(reference_app(profile), status, body),
                             credentials=run.http.credentials)
    return profile, run


@pytest.mark.parametrize(("status", "body", "cause"), [
    (401, {"error": {"code": "UNAUTHENTICATED", "message": "no"}}, "credential refusal"),
    (429, {"error": {"code": "RATE_LIMITED", "message": "slow down"}}, "quota refusal"),
    (400, {"error": {"code": "VALIDATION_ERROR", "message": "refused"}},
     "the same request without the break got the same answer"),
])
def test_an_invalid_input_row_is_blocked_when_every_refusal_is_about_something_else(status, body, cause):
    profile, run = run_behind(status, body)
    verdict = execute(profile.requirement(ROW), run)
    assert verdict.status == "blocked", verdict.message
    assert verdict.cause == "refusal_cause"
    assert cause in verdict.message and "none was judged" in verdict.message


def test_the_refusal_of_a_break_counts_where_the_unbroken_request_is_answered_otherwise():
    """On the clean reference the unbroken request is served or refused for another reason:
    the row passes, having judged its breaks."""
    profile = load_profile("canon-verbs")
    run = open_run(profile, "reference", budget="quick", binding="http")
    assert execute(profile.requirement(ROW), run).status == "passed"


def test_a_fault_that_accepts_a_break_is_still_caught():
    profile = load_profile("canon-verbs")
    fault = next(f for f in profile.requirement(ROW).faults)
    run = open_run(profile, "reference", budget="quick", binding="http", faults=(fault,))
    verdict = execute(profile.requirement(ROW), run)
    assert verdict.status == "failed", verdict.message


VALID_ROW = "CANON-INPUT-VALID-SEND-TO"  # valid send_to inputs are served by the clean reference


@pytest.mark.parametrize(("status", "body", "said"), [
    (401, {"error": {"code": "UNAUTHENTICATED", "message": "no"}}, "refused for the caller, not the input"),
    (404, {"error": {"code": "CONVERSATION_NOT_FOUND", "message": "no such conversation"}}, "each of"),
])
def test_a_valid_input_row_whose_every_call_is_refused_is_blocked_never_passed(status, body, said):
    """Over a gate that refuses every call (for its credential, or with one error that is not
    a rejection of the input), no valid input was served: the row judged nothing accepted."""
    profile, run = run_behind(status, body)
    verdict = execute(profile.requirement(VALID_ROW), run)
    assert verdict.status == "blocked", verdict.message
    assert verdict.cause == "refusal_cause"
    assert "no schema-valid input was served" in verdict.message and said in verdict.message


def test_a_valid_input_row_passes_where_its_inputs_were_served():
    profile = load_profile("canon-verbs")
    run = open_run(profile, "reference", budget="quick", binding="http")
    assert execute(profile.requirement(VALID_ROW), run).status == "passed"


@pytest.mark.parametrize(("name", "row"), [
    ("bindu", "BINDU-PARAMS-VALID-TASKS-CANCEL"), ("bindu", "BINDU-PARAMS-VALID-CONTEXTS-CLEAR"),
    ("wever-connect", "WEVER-INPUT-VALID-DECLINE-TASK"),
    ("wever-connect", "WEVER-INPUT-VALID-RESPOND-CONNECTION-REQUEST"),
])
def test_a_valid_row_naming_objects_passes_on_the_ones_its_set_up_made(name, row, monkeypatch):
    """Generated ids name nothing the target holds: each is refused as not found, and sent only
    so the row is blocked; it passes because the same draws are sent naming the tasks,
    contexts and requests its set-up made, and those are served."""
    from conformance.checks import inputs

    profile = load_profile(name)
    assert (execute(profile.requirement(row), open_run(profile, "reference", budget="quick")).status
            == "passed")
    accepted = inputs.valid_inputs_accepted
    check = profile.requirement(row).check
    while isinstance(check, functools.partial):
        check = check.func
    monkeypatch.setattr(f"{check.__module__}.valid_inputs_accepted",  # the module the row's check is in
                        lambda *a, **kw: accepted(*a, **{**kw, "in_world": None}))
    verdict = execute(profile.requirement(row), open_run(profile, "reference", budget="quick"))
    assert verdict.status == "blocked" and verdict.cause == "refusal_cause", verdict.message
