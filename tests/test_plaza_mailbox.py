"""The Agent Plaza mailbox rows (conformance/protocols/plaza/mailbox.py) are sound and in
the table; that they pass against the clean reference and catch each of their faults
(mailbox_faults.py) is tests/test_selftest.py's, as for every row."""

from __future__ import annotations

import pytest

from conformance.model import Profile, Requirement
from conformance.profiles import load_profile
from conformance.protocols.plaza import mailbox
from conformance.protocols.plaza.mailbox_faults import FAULTS
from conformance.table import Table


@pytest.fixture(scope="module")
def profile() -> Profile:
    return load_profile("agent-plaza")


@pytest.fixture(scope="module")
def rows(profile: Profile) -> list[Requirement]:
    return mailbox.rows(Table(profile))


def test_the_rows_are_sound(profile: Profile, rows: list[Requirement]) -> None:
    ids = [r.id for r in rows]
    assert len(ids) == len(set(ids))
    named = {f for r in rows for f in r.faults}
    assert all(r.faults for r in rows)
    assert named == set(FAULTS), (named ^ set(FAULTS))
    assert all(r.level in ("MUST", "SHOULD") for r in rows)


def test_the_rows_are_in_the_table(profile: Profile, rows: list[Requirement]) -> None:
    assert {r.id for r in rows} <= {r.id for r in profile.requirements}
