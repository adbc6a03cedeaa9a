"""Not applicable by declaration (CheckContext.require_declared): a row about a feature the
target's own declaration says it does not offer is skipped, its verdict carrying that
declaration; asked once per run, then every later row of the feature gets the same answer
whatever order the rows run in (a row tagged with the feature before anything is sent); a
row about what a feature declared off calls for is skipped where it is declared on; the
config's declared: is the user's declaration, told apart. (What each profile declares:
tests/e2e/test_declared_profiles.py.)"""

import dataclasses

from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.run.runner import execute, verdict_from_json, verdict_to_json

FEATURE = "did_signing"  # bindu's optional part (profiles/bindu.yaml optional:), its rows tagged with it


def asking(offered, said, asked, *, want=True):
    def check(ctx):
        def read():
            asked.append(1)
            return offered, said
        ctx.require_declared(FEATURE, read, offered=want, why="the row's own words")
        ctx.expect(True, "the row's own judgement")
    return check


def rows():
    profile = load_profile("bindu")
    tagged = [r for r in profile.requirements if r.optional == FEATURE]
    assert tagged, "bindu names requirements of its optional did_signing part"
    return profile, tagged


def test_a_feature_declared_off_makes_every_row_of_it_not_applicable_and_is_read_once():
    profile, tagged = rows()
    run = open_run(profile, "reference", budget="quick")
    asked = []
    said = "the agent card declares no DID signing"
    verdict = execute(dataclasses.replace(tagged[0], check=asking(False, said, asked)), run)
    assert verdict.status == "skipped" and verdict.reason == ""
    assert verdict.message == f"not applicable by declaration: {said} (the row's own words)"
    d = verdict.declared
    assert (d.feature, d.offered, d.said, d.by) == (FEATURE, False, said, "target")
    assert verdict_from_json(verdict_to_json(verdict)).declared == verdict.declared  # it travels (xdist)
    sent = run.http.total
    for row in tagged:  # the real rows, after: skipped the same way before anything is sent
        later = execute(row, run)
        assert later.status == "skipped" and later.declared == verdict.declared, later.message
        assert said in later.message
    again = execute(dataclasses.replace(tagged[0], check=asking(True, "on after all", asked)), run)
    assert again.status == "skipped" and asked == [1]
    assert run.http.total == sent
    assert run.declaration_askers[FEATURE][0] == tagged[0].id  # the selftest gives later ones its reach


def test_a_feature_declared_on_runs_its_rows_and_skips_the_rows_about_it_off():
    profile, tagged = rows()
    run = open_run(profile, "reference", budget="quick")
    asked = []
    on = execute(dataclasses.replace(tagged[0], check=asking(True, "the card declares it", asked)), run)
    assert on.status == "passed" and on.declared is None
    off_row = dataclasses.replace(profile.requirements[0], check=asking(True, "ignored", asked, want=False))
    off = execute(off_row, run)
    assert off.status == "skipped" and off.declared.offered and off.declared.said == "the card declares it"
    assert asked == [1]


def test_the_configs_declared_is_the_users_own_declaration():
    """A feature the config declares away: its rows are not applicable by the config, said so
    apart from the target's own; a row about the feature declared off still reads the target."""
    profile, tagged = rows()
    run = open_run(profile, "reference", budget="quick", config={"declared": [FEATURE]})
    asked = []
    verdict = execute(dataclasses.replace(tagged[0], check=asking(True, "the card declares it", asked)), run)
    assert verdict.status == "skipped" and verdict.declared.by == "config" and asked == []
    assert "not applicable (declared: the deployment does not offer did_signing" in verdict.message
    assert execute(tagged[1], run).declared.by == "config"  # the runner's own skip says the same
    check = asking(False, "the card declares none", asked, want=False)
    off_row = dataclasses.replace(profile.requirements[0], check=check)
    assert execute(off_row, run).status == "passed" and asked == [1]


def test_not_applicable_without_a_declaration_carries_none():
    profile, _ = rows()
    run = open_run(profile, "reference", budget="quick")
    from conformance.kit.check import NotApplicable

    def check(ctx):
        raise NotApplicable("about another binding")
    verdict = execute(dataclasses.replace(profile.requirements[0], check=check), run)
    assert verdict.status == "skipped" and verdict.declared is None
    assert verdict_to_json(verdict)["declared"] is None
