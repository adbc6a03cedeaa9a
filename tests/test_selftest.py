"""The fault matrix (DESIGN.md, "Checks that cannot fail are defects"): every
requirement passes against the clean reference, and each fault is caught by
every requirement that names it."""

import pytest

from conformance.profiles import available, load_profile
from conformance.selftest import run_clean, run_fault, structural_problems

PROFILES = available()


@pytest.mark.parametrize("name", PROFILES)
def test_table_is_sound(name):
    assert structural_problems(load_profile(name)) == []


@pytest.mark.parametrize("name", PROFILES)
def test_clean_reference_passes_everything(name):
    verdicts = run_clean(load_profile(name))
    bad = {rid: f"{v.status}: {v.message}" for rid, v in verdicts.items() if v.status != "passed"}
    assert bad == {}
    assert len(verdicts) == len(load_profile(name).requirements)


FAULTS = [(name, fault) for name in PROFILES for fault in sorted(load_profile(name).faults)]


@pytest.mark.parametrize(("name", "fault"), FAULTS, ids=[f"{n}:{f}" for n, f in FAULTS])
def test_fault_is_caught(name, fault):
    verdicts = run_fault(load_profile(name), fault)
    assert verdicts, f"no requirement names {fault}"
    missed = {rid: f"{v.status}: {v.message}" for rid, v in verdicts.items() if v.status != "failed"}
    assert missed == {}
