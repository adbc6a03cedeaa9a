"""Refusals judged by their cause (docs/architecture.md, "The judging rule").

A refusal counts only for the cause it is about. An invalid-input row that passes
because the call was refused for its credential, a protocol header or a missing object
has judged nothing; a valid-input row over a binding whose every call was refused has
served nothing. So: a refusal that names its own cause (HTTP 401 or 429, or an error the
profile's ``refusal_causes:`` block lists as a credential or quota refusal) is set
aside, and a broken input's refusal counts only when the same request without the
break is answered otherwise (served, or refused differently): the break made the
difference."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.kit.check import Blocked, CheckContext
from conformance.transport.binding import Reply

CAUSE_STATUSES = {401: "credential", 429: "quota"}  # RFC 9110 and RFC 6585 say what these are about
CONTROLS = 5  # unbroken requests a check sends at most without learning anything


def cause_of(ctx: CheckContext, reply: Reply) -> str | None:
    """'credential' or 'quota' when the refusal says it is about the caller, not the input."""
    if reply.ok:
        return None
    if reply.status in CAUSE_STATUSES:
        return CAUSE_STATUSES[reply.status]
    causes = ctx.profile.settings.get("refusal_causes") or {}
    for cause, names in causes.items():
        codes = {err.code for err in ctx.profile.errors.values() if err.name in names}
        if reply.error_code is not None and reply.error_code in codes:
            return str(cause)
    return None


def signature(reply: Reply) -> tuple[Any, ...]:
    """What tells two refusals apart: the error code, and the status where it means something
    (or where there is no code)."""
    return (reply.error_code, reply.status if reply.statuses or reply.error_code is None else None)


@dataclass
class BreakControl:
    """For one check: whether a broken input's refusal is about its break. The first
    refusal of each kind (``signature``) is checked by sending the same request without
    the break (``unbroken()``); a kind once shown to be about a break counts from then on."""

    ctx: CheckContext
    proven: set[tuple[Any, ...]] = field(default_factory=set)
    unproven: int = 0
    judged: int = 0
    set_aside: list[str] = field(default_factory=list)

    def about_the_break(self, reply: Reply, unbroken: Callable[[], Reply | None]) -> bool:
        kind = signature(reply)
        cause = cause_of(self.ctx, reply)
        if cause is None and kind in self.proven:
            self.judged += 1
            return True
        if cause is None and self.unproven < CONTROLS:
            control = unbroken()
            if control is None:  # the check cannot build the unbroken request: judged as before
                self.judged += 1
                return True
            if control.ok or signature(control) != kind or control.error_message != reply.error_message:
                self.proven.add(kind)
                self.judged += 1
                return True
            self.unproven += 1
        self.set_aside.append(f"{reply.describe()}" + (f" (a {cause} refusal)" if cause else
                                                      " (the same request without the break got the "
                                                      "same answer)"))
        return False

    def done(self, what: str) -> None:
        """Blocked when every refusal was set aside: nothing was judged, and saying
        "passed" would rest on refusals that are about something else."""
        if self.set_aside and not self.judged:
            raise Blocked(f"{what}: every refusal of a broken input was about something else, "
                          f"so none was judged: {self.set_aside[0]}"
                          + (f" and {len(self.set_aside) - 1} more" if len(self.set_aside) > 1 else ""),
                          kind="refusal_cause")


@dataclass
class Served:
    """For one valid-input check: how many inputs were served (or otherwise shown read), and
    the answers set aside (a refusal for its cause, a credential or a quota; one the document
    tolerates): a row passes only on inputs that were read."""

    ctx: CheckContext
    served: int = 0
    refused: int = 0
    set_aside: list[str] = field(default_factory=list)

    def judge(self, reply: Reply) -> bool:
        """Whether to judge this answer (False: a refusal about the caller, not the input)."""
        if reply.ok:
            return True
        cause = cause_of(self.ctx, reply)
        if cause:
            self.set_aside.append(f"{reply.describe()} (a {cause} refusal)")
            return False
        return True

    def count(self, read: bool) -> None:
        """An answer judged: ``read`` when it shows the input was read (served, by default)."""
        if read:
            self.served += 1
        else:
            self.refused += 1

    def done(self, what: str) -> None:
        if self.served:
            return
        if self.set_aside:
            raise Blocked(f"{what}: no schema-valid input was served; each was set aside (refused for the "
                          f"caller, not the input, or an answer the document tolerates): {self.set_aside[0]}",
                          kind="refusal_cause")
        if self.refused:
            raise Blocked(f"{what}: no schema-valid input was served (each of {self.refused} was "
                          "refused or not shown read), so the row judged no accepted input",
                          kind="refusal_cause")
