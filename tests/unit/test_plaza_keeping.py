"""Plaza's client reports every call to the keeping of a live run (keeper.py) without
importing it: keeper.py registers itself in the client at import, and a live run with no
keeper registered stops as the kit's bug instead of leaving behind what it made."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from conformance.protocols.plaza import client, keeper


def ctx(live: bool) -> SimpleNamespace:
    return SimpleNamespace(run=SimpleNamespace(live=live), scratch={})


def test_the_keeper_registers_itself_in_the_client() -> None:
    assert client.KEEPING == [keeper.keeper_of]


def test_with_control_there_is_nothing_to_keep() -> None:
    assert client.keeper_for(ctx(live=False)) is None


def test_a_live_run_without_a_keeper_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client, "KEEPING", [])
    with pytest.raises(RuntimeError, match="would not put back"):
        client.keeper_for(ctx(live=True))
    assert client.keeper_for(ctx(live=False)) is None
