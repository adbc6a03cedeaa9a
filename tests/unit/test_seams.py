"""Seams named by the method and checked at load: a fault patches what the reference has,
or the profile refuses to load, naming the fault and the seam (conformance/faults.py)."""

from __future__ import annotations

import functools
import importlib
from types import SimpleNamespace
from typing import Any

import pytest

from conformance.catalog import ProfileError
from conformance.cli import main
from conformance.kit.declare import REGISTRY
from conformance.kit.faults import (
    MissingSeam,
    apply,
    check_seams,
    noop,
    replaces,
    returns_arg,
    seams,
    setting,
    watch,
)
from conformance.protocols.bindu.reference import BinduReference
from conformance.run import profiles

TASKS = "conformance.protocols.bindu.tasks"


def misspelt_seam(ref: BinduReference) -> None:
    """tasks/list answers nothing (a fault whose seam is misspelt)."""
    @replaces(ref.task_lits)  # type: ignore[attr-defined]
    def listing(_original: Any, params: dict[str, Any], caller: Any) -> list[Any]:
        return []


def test_a_profile_refuses_a_fault_whose_seam_does_not_exist(monkeypatch):
    importlib.import_module(TASKS)
    monkeypatch.setattr(profiles, "_CACHE", {})
    monkeypatch.setitem(REGISTRY.faults[TASKS], "misspelt_seam", misspelt_seam)
    with pytest.raises(ProfileError) as refused:
        profiles.load_profile("bindu")
    assert str(refused.value) == ("profile bindu: fault misspelt_seam patches BinduReference.task_lits, "
                                  "which does not exist")


def test_the_vocabulary_names_its_seam_and_a_missing_one_is_refused_at_load():
    faults = {"dead": noop("dead", "tasks_lits", "tasks/list answers nothing."),
              "alive": noop("alive", "tasks_list", "tasks/list answers nothing.")}
    with pytest.raises(ValueError, match="fault dead patches BinduReference.tasks_lits, which does not"):
        check_seams("bindu", faults, BinduReference)
    assert [s.name for s in seams(faults["alive"], BinduReference)] == ["BinduReference.tasks_list"]


@pytest.mark.parametrize("make", [lambda: noop("f", "missing", "doc"),
                                  lambda: returns_arg("f", "missing", 0, "doc"),
                                  lambda: setting("f", "missing", 1, "doc")])
def test_noop_returns_arg_and_setting_never_create_an_attribute(make):
    ref = SimpleNamespace(present=1)
    with pytest.raises(MissingSeam, match="fault f: SimpleNamespace has no 'missing' to patch"):
        make()(ref)
    assert vars(ref) == {"present": 1}


def test_replaces_takes_a_bound_method_and_a_replaced_one_can_be_replaced_again():
    class Host:
        def answer(self, value: int) -> int:
            return value

    host = Host()

    @replaces(host.answer)
    def doubled(original: Any, value: int) -> int:
        return original(value) * 2

    @replaces(host.answer)
    def plus_one(original: Any, value: int) -> int:
        return original(value) + 1

    assert host.answer(5) == 11
    with pytest.raises(TypeError, match="bound method"):
        replaces(lambda: None)


@pytest.mark.parametrize("name", profiles.available())
def test_every_seam_of_every_profile_is_read_and_exists(name):
    prof = profiles.load_profile(name)
    reference = profiles.reference_class(profiles.protocol_of(prof.settings["package"]))
    found = check_seams(name, {**prof.faults, **prof.variants}, reference)
    assert found and all(seam.owner is not None and seam.exists for seam in found)


def test_list_seams_shows_each_seam_and_the_faults_that_patch_it(capsys):
    assert main(["list", "bindu", "--seams"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("BinduReference.choose_task_id "))
    assert line.split(None, 1)[1] == "ignores_caller_task_id"
    assert "BinduReference.store_feedback" in out and "feedback_changes_state" in out
    assert "variant " in out  # variants are listed by what they patch too
    assert out.rstrip().splitlines()[-1].startswith("bindu: ")


class _Part:
    def render(self, value: int) -> int:
        return value


class _Host:
    def __init__(self) -> None:
        self.part = _Part()
        self.size = 1

    def answer(self, value: int) -> int:
        return self.part.render(value)

    def unused(self) -> None:
        return None


def _on_part(ref: _Host) -> None:
    @replaces(ref.part.render)
    def render(original: Any, value: int) -> int:
        return original(value) + 1


def _by_hand(ref: _Host) -> None:
    ref.size = 2


def _in_place(ref: _Host) -> None:
    vars(ref.part)["size"] = 2


def test_watch_notes_what_each_patch_installs_and_which_installed_methods_are_called():
    """The selftest's proof that a variant's seam is used: a method a patch installs (by the
    vocabulary, ``replaces`` on the reference or on a part of it) notes its calls; what a
    patch changes by hand is named, for a trace of the reference's reads to judge."""
    ref = _Host()
    patches = [noop("quiet", "unused", "nothing"), returns_arg("echo", "answer", 0, "its argument"),
               _on_part, _by_hand, setting("sized", "size", 3, "a setting"), _in_place]
    with watch() as log:
        for patch in patches:
            apply(patch, ref)
    assert log.seams("quiet") == ["_Host.unused"] and log.seams("_on_part") == ["_Part.render"]
    assert log.seams("_by_hand") == ["size"] and log.seams("sized") == ["size"]
    assert ref.answer(5) == 5 and ref.part.render(5) == 6
    assert log.used("echo", set()) and log.used("_on_part", set())
    assert not log.used("quiet", set()), "a noop no one calls is not used"
    assert not log.used("_by_hand", set()) and log.used("_by_hand", {"size"})
    assert log.used("never_applied", set()), "a patch applied without the log: nothing to say"
    assert log.seams("_in_place") == [] and log.used("_in_place", set()), "nothing seen: nothing to say"


def test_without_watch_apply_installs_the_patch_as_it_is():
    ref = _Host()
    apply(returns_arg("echo", "answer", 0, "its argument"), ref)
    assert ref.answer(7) == 7 and not isinstance(vars(ref)["answer"], functools.partial)  # no noting wrapper
