"""Typed failures: what kind of thing a target got wrong, in one small vocabulary.

A check says *what* broke, not only that something did: ``ctx.expect(cond, message,
kind="wrong_error_code", statement="specs/x.yaml#/...")``. The kind travels with the
failure into the verdict, the case file, summary.json, report.html and baselines
(an entry may name a kind). Pick the most specific kind that fits; ``expectation``
is the default when none does. Two kinds are set by the runner, never by a check:
``no_answer`` (the target gave no usable answer) and ``crash`` (the check raised
an exception it did not foresee: the kit's own error, never a finding about the target;
the requirement is blocked by it, the run exits 4, and ``selftest`` never counts it as
catching a fault). A request the kit itself could not send, or one to the control
interface that got no answer, is no finding either: it blocks (cause ``kit`` or
``control``, conformance/transport/http.py ``CAUSES``).

The shape follows schemathesis's typed failures (DESIGN.md, "Patterns worth borrowing").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

KINDS: dict[str, str] = {
    "expectation": "an expectation of the check did not hold (the default when no other kind fits)",
    "wrong_error_code": "an error came with a code other than the one the spec or profile requires",
    "wrong_status": "an answer came with an HTTP status other than the one required",
    "schema_mismatch": "an answer (result or error body) does not match its schema",
    "accepted_invalid": "an invalid request was answered with success instead of an error",
    "rejected_valid": "a valid request was refused",
    "state_changed": "state changed where it must not (a refused or read-only call, "
                     "a terminal state that moved)",
    "not_found_expected": "a request naming something that does not exist was not answered with not-found",
    "auth_not_enforced": "a call without, or with insufficient, credentials was served",
    "malformed_answer": "the answer is not the protocol's shape (not JSON, no envelope, "
                        "both or neither of result and error)",
    "no_answer": "the target sent no usable answer: timeout, reset, oversized (set by the runner)",
    "flaky": "hypothesis saw a failure that did not happen again on the same input (set by the runner)",
    "crash": "the kit's own error: the check raised an exception it did not foresee (its defect, or an "
             "answer it did not turn into a finding); never a finding about the target: the requirement is "
             "blocked and the run exits 4 (set by the runner)",
}

DEFAULT_KIND = "expectation"
KIT_ERROR = "crash"  # the kind of the kit's own error (a Failure kept for the report, never the target's)
# the causes of a blocked requirement that are not the target's doing, in words (any other
# cause is the kind of the target's finding that refused a set-up step)
NOT_THE_TARGET = {
    KIT_ERROR: "the kit's own error (exit 4)",
    "kit": "a request the kit could not send",
    "control": "the control interface the config names",
    "quota": "a quota this run spent itself",
}


def check_kind(kind: str) -> str:
    """``kind`` itself, or ValueError naming the vocabulary."""
    if kind not in KINDS:
        raise ValueError(f"unknown failure kind {kind!r}; one of: {', '.join(KINDS)} "
                         "(conformance/failures.py)")
    return kind


@dataclass
class Failure:
    """One thing a requirement found wrong. ``subcheck`` names the sub-check it
    came from (``ctx.subcheck``), ``statement`` the spec statement it breaks when
    the check named one more precisely than the requirement's source."""

    kind: str
    message: str
    statement: str | None = None
    subcheck: str | None = None
    # what the spec wanted and what came back, where the check knew (an error code, an
    # HTTP status), else the answer of the exchange that broke it: read, never parsed again
    expected_code: Any = None
    actual_code: Any = None
    expected_status: int | None = None
    actual_status: int | None = None

    def __post_init__(self) -> None:
        check_kind(self.kind)

    @property
    def line(self) -> str:
        """The message, prefixed with its sub-check when it has one."""
        if not self.subcheck or self.message.startswith(self.subcheck.split(" > ")[-1]):
            return self.message  # the message names its sub-check already
        return f"{self.subcheck}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Failure:
        return cls(str(data.get("kind") or DEFAULT_KIND), str(data.get("message", "")),
                   data.get("statement"), data.get("subcheck"), data.get("expected_code"),
                   data.get("actual_code"),
                   data.get("expected_status"), data.get("actual_status"))


def summarize(failures: list[Failure], subchecks: int = 0) -> str:
    """The one-line verdict message: a lone failure's own message, or
    "2 of 7 sub-checks failed: tasks/get: ...; tasks/list: ..." (a failure outside
    any sub-check, which ended the check, comes last)."""
    if not failures:
        return ""
    if len(failures) == 1 and failures[0].subcheck is None:
        return failures[0].message
    inside = [f for f in failures if f.subcheck is not None]
    outside = [f for f in failures if f.subcheck is None]
    named = len({f.subcheck for f in inside})
    head = f"{named} of {max(subchecks, named)} sub-checks failed: " if inside and subchecks else ""
    return head + "; ".join(f.line for f in inside + outside)
