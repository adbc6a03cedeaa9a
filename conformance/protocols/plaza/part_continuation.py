"""Part 2 of the reference site (issue 14): continuation and direct offers (friendContinuation) and plan.
A mixin of PlazaReference: its commands are ``cmd_<name>`` methods, its state lives under
its own keys of ``self.s`` (set by ``reset_continuation``), and ``PART_COMMANDS`` names the scope each
command needs."""

from __future__ import annotations

from typing import Any, ClassVar


class ContinuationPart:
    PART_COMMANDS: ClassVar[dict[str, str]] = {}
    s: dict[str, Any]

    def reset_continuation(self) -> None:
        """This part's state on a fresh site."""
