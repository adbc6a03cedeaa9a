"""Wever Connect against a relay without control (issue 24; conformance/protocols/wever/uncontrolled.py):
the run registers mailboxes of its own within the source's registrations of the day and
does everything lasting to them (closing, using a quota up); the configured mailboxes get
light use, half of each daily quota at most, and every change to them is put back; a quota
the relay enforces sooner than the run planned blocks the rows it meets, naming it."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from conformance.kit.check import RunContext
from conformance.proofs.liverun import compare_holdings, holdings_of, run_without_control
from conformance.protocols.wever import uncontrolled as wever_live
from conformance.protocols.wever.protocol import FIRST
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile
from conformance.run.runner import execute

NAME = "wever-connect"
CLOSING = ("WEVER-CLOSE-MAILBOX", "WEVER-INPUT-VALID-CLOSE-MAILBOX", "WEVER-INPUT-INVALID-CLOSE-MAILBOX")
CONFIGURED = ("alice", "bob", "carol")
# What the run ends with: the rows that use a mailbox's day up, close one, spend the source's
# registrations (live.LAST, in that order).
LAST = ("WEVER-LIMIT-SENT-PER-DAY", "WEVER-LIMIT-RECEIVED-PER-DAY", "WEVER-LIMIT-NEW-GRANTS-PER-DAY",
        "WEVER-CLOSE-MAILBOX", "WEVER-INPUT-INVALID-CLOSE-MAILBOX", "WEVER-INPUT-VALID-CLOSE-MAILBOX",
        "WEVER-LIMIT-REGISTRATIONS-PER-SOURCE")


def live_run(config: dict[str, Any] | None = None, **options: Any) -> RunContext:
    """A run against the reference without control, as an operator's relay is run."""
    profile = copy.copy(load_profile(NAME))
    return open_run(profile, "reference", budget="quick",
                    config={"world": dict(profile.reference_world), **(config or {})},
                    reference_options={"control": False, **options}, shrink=False)


def no_registrations_left(run: RunContext) -> None:
    """The source's registrations of the day spent (by this run's count): no mailbox of the run's own."""
    run.quotas.spend(wever_live.REGISTRATIONS_SOURCE, wever_live.SOURCE,
                     run.quotas.limits[wever_live.REGISTRATIONS_SOURCE])


@pytest.fixture(scope="module")
def whole_run():
    return run_without_control(NAME)


def test_a_live_run_reaches_every_row_a_client_can_and_harms_no_configured_mailbox(whole_run):
    live = whole_run
    assert live.before, "holdings() read no configured mailbox"
    assert live.problems == [] and live.run.not_put_back == [], (live.problems, live.run.not_put_back)
    bad = [(r.id, v.status, v.message[:200]) for r, v in live.verdicts if v.status in ("failed", "blocked")]
    assert bad == [], bad
    assert live.reached >= 0.95 * live.testable and live.count("untested", reason="harm") == 0, live.figures()
    untested = {r.id: v.reason for r, v in live.verdicts if v.status == "untested"}
    # a clock or more mailboxes than a source may register
    assert set(untested.values()) == {"control"}, untested
    assert {"WEVER-LIMIT-SENT-PER-DAY", "WEVER-LIMIT-RECEIVED-PER-DAY", "WEVER-LIMIT-NEW-GRANTS-PER-DAY",
            "WEVER-LIMIT-PENDING-REQUESTS-SENDER",
            "WEVER-LIMIT-REGISTRATIONS-PER-SOURCE"}.isdisjoint(untested)


def test_the_mailboxes_closed_and_used_up_are_the_runs_own(whole_run):
    live = whole_run
    verdicts = {r.id: v for r, v in live.verdicts}
    assert all(verdicts[rid].status == "passed" for rid in CLOSING), {rid: verdicts[rid].message
                                                                      for rid in CLOSING}
    pool = wever_live.pool_of(live.run)
    assert len(pool.closed) == len(CLOSING) and pool.closed <= live.run.identities.created
    for label in CONFIGURED:
        assert (live.after[label]["same"]["token works"]
                and live.after[label]["same"] == live.before[label]["same"])
    registered = live.run.quotas.spent[(wever_live.REGISTRATIONS_SOURCE, wever_live.SOURCE)]
    assert registered == live.run.quotas.limits[wever_live.REGISTRATIONS_SOURCE] == len(pool.members)


def test_a_configured_mailbox_keeps_half_of_each_daily_quota(whole_run):
    book = whole_run.run.quotas
    for quota in wever_live.DAILY_OWN:
        for label in CONFIGURED:
            assert book.spent[(quota, label)] <= book.limits[quota] // wever_live.CONFIGURED_SHARE, \
                (quota, label)
    # the run's own mailboxes did the heavy lifting
    own = sum(n for (quota, who), n in book.spent.items()
              if quota == wever_live.SENT and who in whole_run.run.identities.created)
    assert own > 3 * sum(book.spent[(wever_live.SENT, label)] for label in CONFIGURED)


def test_rows_that_meet_a_quota_served_lower_than_the_manifest_are_blocked_naming_it():
    """The relay serves 5 sends a day where the manifest (and so the run's plan) says 20: the
    rows that meet the refusal are blocked by it, never failed. The quota's own row is blocked
    too: its set-up sends up to the manifest's edge and is refused sooner; sending at most 5
    keeps "at most 20", so the row has nothing to judge (a quota refusal fails a row only
    past the manifest's number)."""
    quota = wever_live.SENT
    live = run_without_control(NAME, limits={quota: 5})
    assert live.problems == [] and live.run.not_put_back == []
    assert [r.id for r, v in live.verdicts if v.status == "failed"] == []
    blocked = {r.id: v.message for r, v in live.verdicts if v.status == "blocked"}
    assert len(blocked) >= 10, live.figures()
    assert all(quota in message for message in blocked.values()), blocked
    assert (blocked.get("WEVER-LIMIT-SENT-PER-DAY",
                        "").startswith("set-up failed")), blocked.get("WEVER-LIMIT-SENT-PER-DAY")


def test_a_close_row_is_untested_for_harm_unless_a_mailbox_may_be_closed():
    run = live_run()
    no_registrations_left(run)  # no mailbox of the run's own: only configured ones are left
    before, sent = holdings_of(run.profile, run), run.http.total
    verdict = execute(run.profile.requirement("WEVER-CLOSE-MAILBOX"), run)
    assert verdict.status == "untested" and verdict.reason == "harm", verdict.message
    assert run.http.total == sent  # decided before anything was sent
    assert compare_holdings(before, holdings_of(run.profile, run)) == []


def test_a_close_row_closes_a_configured_mailbox_marked_disposable():
    creds = load_profile(NAME).reference_credentials
    run = live_run(config={"credentials": {"bob": {**creds["bob"], "disposable": True}}})
    no_registrations_left(run)
    before = holdings_of(run.profile, run)
    verdict = execute(run.profile.requirement("WEVER-CLOSE-MAILBOX"), run)
    assert verdict.status == "passed", verdict.message
    after = holdings_of(run.profile, run)
    assert not after["bob"]["same"]["token works"]  # bob, and only bob, was closed
    assert [p for p in compare_holdings(before, after) if not p.startswith("bob:")] == []
    assert run.not_put_back == []


def test_changes_to_configured_mailboxes_are_put_back():
    """Without mailboxes of its own, the rows use the configured ones: grants, profiles and
    connection requests they change are put back when each row ends."""
    run = live_run()
    no_registrations_left(run)
    before = holdings_of(run.profile, run)
    rows = ("WEVER-SEND-OFFERED", "WEVER-MAILBOX-SENDERS", "WEVER-UPDATE-MAILBOX", "WEVER-CONN-RESPOND",
            "WEVER-GRANT-ALL-CAPABILITIES", "WEVER-INPUT-VALID-UPDATE-MAILBOX")
    verdicts = {rid: execute(run.profile.requirement(rid), run) for rid in rows}
    assert {rid: v.status for rid, v in verdicts.items()} == dict.fromkeys(rows, "passed"), \
        {rid: v.message[:200] for rid, v in verdicts.items()}
    assert compare_holdings(before, holdings_of(run.profile, run)) == [] and run.not_put_back == []


def test_a_row_whose_measured_use_does_not_fit_is_untested_before_it_sends():
    profile = load_profile(NAME)
    assert (profile.quota_use["WEVER-REGISTER-TOKEN"][wever_live.REGISTRATIONS_SOURCE]
            == {wever_live.SOURCE: 1})
    run = live_run()
    no_registrations_left(run)
    sent = run.http.total
    verdict = execute(run.profile.requirement("WEVER-REGISTER-TOKEN"), run)
    assert verdict.status == "untested" and verdict.reason == "quota", verdict.message
    assert wever_live.REGISTRATIONS_SOURCE in verdict.message and run.http.total == sent


def test_a_configured_mailbox_past_its_share_is_not_used_for_a_row():
    """A row about to spend a configured mailbox's daily quota past the half the run may
    spend is untested (reason quota), naming the quota and the mailbox."""
    run = live_run()
    no_registrations_left(run)
    for label in CONFIGURED:
        run.quotas.spend(wever_live.SENT, label,
                         run.quotas.limits[wever_live.SENT] // wever_live.CONFIGURED_SHARE)
    verdict = execute(run.profile.requirement("WEVER-SEND-OFFERED"), run)
    assert verdict.status == "untested" and verdict.reason == "quota", verdict.message
    assert wever_live.SENT in verdict.message


def test_a_quota_row_is_not_judged_across_a_utc_midnight(monkeypatch):
    run = live_run()
    midnight = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    # the run began as the relay's counts restarted
    wever_live.pool_of(run).started = midnight + timedelta(minutes=1)
    verdict = execute(run.profile.requirement("WEVER-LIMIT-SENT-PER-DAY"), run)
    assert verdict.status == "untested" and "UTC midnight" in verdict.message, verdict.message


def test_the_order_registers_first_and_closes_last():
    """FIRST (the package's) first, LAST last of Wever's rows: the MCP-level rows, added after
    the modules' rows while conformance/protocols/mcp is not declared on its checks (the
    package's transitional parts), come after them and change no mailbox."""
    ids = [r.id for r in load_profile(NAME).requirements]
    wever = [rid for rid in ids if rid.startswith("WEVER-")]
    assert ids[:len(FIRST)] == list(FIRST) and wever[-len(LAST):] == list(LAST)


def _mailbox(url: str, token: str) -> dict[str, Any]:
    import httpx

    reply = httpx.post(f"{url}/v1/actions/get_mailbox", json={}, headers={"Authorization": f"Bearer {token}"},
                       timeout=10)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    return {k: v for k, v in body.items() if "expire" not in k}  # what a run must leave as it was


def test_a_second_live_run_of_the_day_finds_less_room_and_says_so_never_a_finding(serve, tmp_path):
    """Two runs without control against one served relay, the same UTC day. The manifest
    lets a source register 5 mailboxes a day and a full run registers all 5 (its closing,
    per-day limit and registration rows need mailboxes of its own), so the second run has
    none of its own: its rows that need one, or more of a configured mailbox's day than
    the half a run may spend, are untested (quota, harm, or a connection request an earlier
    run left, which is not taken for the run's own) or blocked naming the registrations
    quota. Nothing fails, nothing crashes (WEVER-LIFECYCLE raised FlakyStrategyDefinition
    there), every verdict the second run reaches is the first run's, and the configured
    mailboxes are as they were."""
    import json

    import yaml

    from tests.conftest import conformance

    server = serve("wever-connect")
    tokens = {label: cred["token"]
              for label, cred in yaml.safe_load(server.config.read_text())["credentials"].items()}
    before = {label: _mailbox(server.url, token) for label, token in tokens.items()}
    runs = []
    for name in ("first", "second"):
        report = tmp_path / name
        result = conformance("run", NAME, "--config", str(server.config), "--gate", "live",
                             "--report", str(report))
        assert result.returncode in (0, 5), result.stdout[-2000:] + result.stderr[-2000:]
        runs.append({r["id"]: r for r in json.loads((report / "summary.json").read_text())["requirements"]})
    first, second = runs
    assert [i for i, r in first.items() if r["status"] in ("failed", "blocked")] == []
    assert [i for i, r in second.items() if r["status"] == "failed"] == []
    for rid, row in second.items():
        if row["status"] == first[rid]["status"]:
            continue
        if row["status"] == "untested":
            assert row.get("reason") in ("quota", "harm", "other"), (rid, row)
        else:
            assert row["status"] == "blocked" and "registrations_per_source" in row["message"], (rid, row)
            assert "WEVER-SEND-OFFERED" not in row["message"], (rid, row)  # a registration is no send
    assert {label: _mailbox(server.url, token) for label, token in tokens.items()} == before
