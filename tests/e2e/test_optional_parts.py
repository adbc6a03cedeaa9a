"""An optional part the target declines (CheckContext.require_served): asked once per run,
then every row of that feature is untested with the target's own answer, whatever order
the rows run in; a served part runs as usual."""

import dataclasses

from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.run.runner import execute

FEATURE = "did_signing"  # bindu's optional part (profiles/bindu.yaml optional:)


def asking(answer, asked):
    def check(ctx):
        def probe():
            asked.append(1)
            return answer
        ctx.require_served(FEATURE, probe)
        ctx.expect(True, "the row's own judgement")
    return check


def test_a_declined_part_makes_every_row_of_it_untested_and_is_asked_once():
    profile = load_profile("bindu")
    rows = [r for r in profile.requirements if r.optional == FEATURE]
    assert rows, "bindu names requirements of its optional did_signing part"
    run = open_run(profile, "reference", budget="quick")
    asked = []
    first = dataclasses.replace(rows[0], check=asking("HTTP 200, error -32004 'not served here'", asked))
    verdict = execute(first, run)
    assert verdict.status == "untested" and "-32004 'not served here'" in verdict.message
    sent = run.http.total
    for row in rows:  # the real rows, after: untested before anything is sent
        later = execute(row, run)
        assert later.status == "untested" and "does not serve did_signing" in later.message
    again = execute(dataclasses.replace(rows[0], check=asking("other", asked)), run)
    assert again.status == "untested" and asked == [1]
    assert run.http.total == sent


def test_a_served_part_runs_as_usual():
    profile = load_profile("bindu")
    row = next(r for r in profile.requirements if r.optional == FEATURE)
    run = open_run(profile, "reference", budget="quick")
    assert execute(dataclasses.replace(row, check=asking(None, [])), run).status == "passed"
    assert run.served == {FEATURE: None}


def test_only_a_feature_the_spec_makes_optional_can_be_declined():
    profile = load_profile("bindu")
    row = profile.requirements[0]
    run = open_run(profile, "reference", budget="quick")
    bad = dataclasses.replace(row, check=lambda ctx: ctx.require_served("no_such_part", lambda: None))
    verdict = execute(bad, run)  # a bug of the check: the kit's own error, never untested or failed
    assert verdict.status == "blocked" and [f.kind for f in verdict.failures] == ["crash"]
    assert "not an optional feature" in verdict.message
