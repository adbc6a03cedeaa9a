"""Part 2 of the reference site (issue 14): the encrypted private relay: key bundles, mutually signed channels, sealed envelopes the site stores and never decrypts (durableReceive.encrypted_private_chat).
A mixin of PlazaReference: its commands are ``cmd_<name>`` methods, its state lives under
its own keys of ``self.s`` (set by ``reset_private``), and ``PART_COMMANDS`` names the scope each
command needs."""

from __future__ import annotations

from typing import Any, ClassVar


class PrivateRelayPart:
    PART_COMMANDS: ClassVar[dict[str, str]] = {}
    s: dict[str, Any]

    def reset_private(self) -> None:
        """This part's state on a fresh site."""
