"""A live run does no harm, and reaches what a client can reach (issue 24): every profile
runs against its reference without the control interface, as against an operator's
server; before and after, every configured identity still works and holds what it held,
nothing was left changed, no requirement fails on the compliant reference, and at least
90% of the requirements a client can test at all reach a verdict."""

import pytest

from conformance.proofs.liverun import run_without_control
from conformance.run.profiles import available
from tests.conftest import ROOT

# These profiles' whole run without control is asserted, more strictly (the exact untested
# set, the figures), by the module fixture of their own live tests: it is not run twice
ELSEWHERE = {"agent-plaza": ("tests/e2e/test_plaza_live_harm.py", "run_without_control(PROFILE, deadline_s="),
             "bindu": ("tests/e2e/test_bindu_live.py", "run_without_control(PROFILE, held=True)"),
             "canon-verbs": ("tests/e2e/test_canon_live.py", "run_without_control(PROFILE)"),
             "wever-connect": ("tests/e2e/test_wever_live.py", "run_without_control(NAME)")}
PROFILES = ["a2a"]


def test_every_profile_is_run_without_control_by_a_project_test():
    assert sorted(PROFILES + list(ELSEWHERE)) == sorted(available())
    for path, call in ELSEWHERE.values():
        assert call in (ROOT / path).read_text(encoding="utf-8")


@pytest.mark.parametrize("name", PROFILES)
def test_a_live_run_does_no_harm_and_reaches_what_a_client_can(name):
    live = run_without_control(name)
    assert live.before, f"{name}: holdings() read no configured identity"
    assert live.problems == [], live.problems
    assert live.run.not_put_back == [], live.run.not_put_back
    failed = [(r.id, v.message[:300]) for r, v in live.verdicts if v.status == "failed"]
    assert failed == [], failed
    assert live.reached >= 0.9 * live.testable, live.figures()
