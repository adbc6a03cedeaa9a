"""The Agent Plaza mailbox rows (conformance/protocols/plaza/: reads.py, message_evidence.py,
inbox.py, attention.py, receive.py, each requirement declared on its check) are sound and in
the profile; that they pass against the clean reference and catch each of their faults
(declared beside their checks) is tests/e2e/test_selftest.py's, as for every row."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from conformance.kit.declare import REGISTRY
from conformance.model import Profile, Requirement
from conformance.protocols.plaza.protocol import PROTOCOL
from conformance.run.profiles import load_profile

MODULES = tuple(f"conformance.protocols.plaza.{name}"
                for name in ("reads", "message_evidence", "inbox", "attention", "receive"))


@pytest.fixture(scope="module")
def profile() -> Profile:
    return load_profile("agent-plaza")


@pytest.fixture(scope="module")
def rows(profile: Profile) -> list[Requirement]:
    assert all(REGISTRY.requirements.get(module) for module in MODULES), MODULES  # each declares rows
    return REGISTRY.rows(profile, MODULES)


@pytest.fixture(scope="module")
def faults(profile: Profile) -> dict[str, Callable[[Any], None]]:
    return REGISTRY.faults_of(MODULES)


def test_the_rows_are_sound(profile: Profile, rows: list[Requirement],
                            faults: dict[str, Callable[[Any], None]]) -> None:
    named = {f for r in rows for f in r.faults}
    assert all(r.faults for r in rows)
    assert named == set(faults), (named ^ set(faults))
    assert all(r.level in ("MUST", "SHOULD") for r in rows)


def test_the_rows_are_in_the_table(profile: Profile, rows: list[Requirement],
                                   faults: dict[str, Callable[[Any], None]]) -> None:
    assert set(MODULES) <= set(PROTOCOL.modules)
    assert {r.id for r in rows} <= {r.id for r in profile.requirements}
    assert all(profile.faults[name] is patch for name, patch in faults.items())
