"""A live run does no harm (docs/architecture.md, "Live runs").

The operator of a real server has no test-control interface and runs the kit against
identities that matter to them. Three rules keep such a run safe, and say in the report
what they kept from running:

- **Lasting actions** (close, stop, revoke, block, erase, spend a quota to its end,
  publish on a directory) run, without control, only on identities the run created
  itself or that the config marks ``disposable: true``; otherwise the requirement is
  ``untested`` with reason ``harm``.
- **Reversible changes are put back** when the requirement ends (a profile setting, a
  grant), whatever its verdict; what could not be put back is reported.
- **Quotas are planned**: the run counts what it spends of each quota the profile names
  (``quotas:``) per identity, and a requirement whose measured use would not fit is
  ``untested`` with reason ``quota`` before it sends anything; a quota refusal the run
  met anyway blocks the requirement (naming the quota), never fails it.

Why an ``untested`` requirement was not run is one of ``REASONS``: the console, the
summary and ``--gate live`` keep them apart."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.kit import locate
from conformance.transport.http import RunAborted, parse_json

# why a requirement is untested: key -> the phrase reports use
REASONS = {
    "control": "needs the test-control interface",
    "harm": "would harm a configured identity",
    "quota": "would exceed a quota",
    "credential": "no credential given, or the target refused it",
    "optional": "an optional part the target does not serve",
    "outcome": "the agent never went where the requirement needs (config scenarios: names a message that "
               "drives it there)",
    "unreachable": "the target could not be reached",
    "stopped": "the run stopped first",
    "unjudged": "the check weighed no answer of the target (nothing passes on nothing)",
    "other": "not testable with what was given",
}
# reasons that no client of the protocol could overcome without the operator's help: a
# server without control is gated on the rest (``--gate live``)
# (an outcome of the agent, too: which message drives the operator's agent there is the
# operator's to say, in the config's scenarios:)
BEYOND_A_CLIENT = ("control", "harm", "outcome")


@dataclass
class Identities:
    """Which configured identities the run may do something lasting to."""

    disposable: set[str] = field(default_factory=set)  # config credentials.<label>.disposable: true
    created: set[str] = field(default_factory=set)  # made by the run itself over the protocol

    def may_change(self, label: str) -> bool:
        return label in self.disposable or label in self.created


def disposable_labels(credentials: dict[str, Any]) -> set[str]:
    """The labels whose config mapping says ``disposable: true``."""
    return {label for label, value in credentials.items()
            if isinstance(value, dict) and value.get("disposable") is True}


@dataclass
class QuotaBook:
    """What this run has spent of each quota, per identity, against each quota's limit
    (the profile's ``limits:``, named by its ``quotas:`` block). It knows only what the
    run spent: what the identity spent earlier that day is the target's to say (a
    refusal the run meets anyway blocks, see ``quota_refusal``)."""

    limits: dict[str, int] = field(default_factory=dict)
    spent: Counter[tuple[str, str]] = field(default_factory=Counter)

    def room(self, quota: str, who: str) -> int:
        return max(0, self.limits[quota] - self.spent[(quota, who)])

    def spend(self, quota: str, who: str, count: int = 1) -> None:
        self.spent[(quota, who)] += count

    def give_back(self, quota: str, who: str, count: int = 1) -> None:
        """What a refused call did not spend after all, or a cap's unit freed again."""
        self.spent[(quota, who)] = max(0, self.spent[(quota, who)] - count)

    def describe(self, top: int = 3, said: str = "") -> str:
        """The quotas nearest their limit, as "sent_tasks_per_day_count 20 of 20 for alice";
        those whose name's words the refusal (``said``) carries first."""
        words = set(re.findall(r"[a-z]+", said.lower()))

        def named(quota: str) -> int:
            return sum(part in words for part in quota.split("_") if len(part) > 3)
        near = sorted(((named(q), count / max(1, self.limits[q]), q, who, count)
                       for (q, who), count in self.spent.items()
                       if q in self.limits and count), reverse=True)[:top]
        return "; ".join(f"{q} {count} of {self.limits[q]} for {who}" for _, _, q, who, count in near)

    def short(self, use: dict[str, dict[str, int]]) -> str | None:
        """The first quota that ``use`` ({quota: {who: count}}) would exceed, as a phrase,
        or None when it all fits."""
        for quota, per in use.items():
            for who, count in per.items():
                if quota in self.limits and count > self.room(quota, who):
                    return (f"would exceed {quota} for {who}: it needs {count}, "
                            f"and {self.room(quota, who)} of {self.limits[quota]} are left after what "
                            "this run spent")
        return None


@dataclass
class PutBack:
    """Changes a requirement made to a configured identity, with how to undo each."""

    undo: list[tuple[str, Callable[[], Any]]] = field(default_factory=list)

    def add(self, what: str, undo: Callable[[], Any]) -> None:
        self.undo.append((what, undo))

    def run(self) -> list[str]:
        """Undo everything, last change first; what could not be undone, with why."""
        problems = []
        while self.undo:
            what, undo = self.undo.pop()
            try:
                result = undo()
            except RunAborted as exc:  # the run stopped first (time limit, signal, gone): said, not raised
                problems.append(f"{what}: not sent, the run had stopped ({' '.join(str(exc).split())[:200]})")
                continue
            except Exception as exc:  # an odd answer must not hide the others
                problems.append(f"{what}: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
                continue
            if result is False or (isinstance(result, str) and result):
                problems.append(f"{what}: {result if isinstance(result, str) else 'refused'}")
        return problems


def quota_codes(profile: Any) -> set[Any]:
    """The error codes the profile's ``refusal_causes: quota:`` names (codes of its error table)."""
    names = set((profile.settings.get("refusal_causes") or {}).get("quota") or [])
    errors = list((getattr(profile, "errors", None) or {}).values())
    return {err.code for err in errors if err.name in names} | {
        code for code in names if not isinstance(code, str) or code not in {e.name for e in errors}}


def quota_refusal(profile: Any, response: dict[str, Any] | None) -> bool:
    """Whether a recorded answer refuses for a quota: HTTP 429 (RFC 6585), or an error
    answer carrying one of the profile's quota refusal codes: a text code wherever it
    sits, a number as JSON-RPC's ``error.code``."""
    if not response:
        return False
    status = response.get("status")
    if status == 429:
        return True
    codes = quota_codes(profile)
    if not codes:
        return False
    body, _ = parse_json(response.get("body") or "")
    if not isinstance(body, dict | list):
        return False
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("code") in codes:
        return True
    erring = (not (isinstance(status, int) and status < 400) or error is not None
              or locate.member(body, "isError") is True)
    texts = {code for code in codes if isinstance(code, str)}
    return erring and any(isinstance(found.value, str) and found.value in texts
                          for part in locate.expanded(body) for found in locate.walk(part))
