"""Reading Wever Connect answers by content (docs/architecture.md, "The judging rule").

The manifest names one answer field of the HTTP actions (the token's,
``protocols.a2a.access_setup.token_response_field``) and none of their shapes: the
``{"task": {...}}`` and ``{"request": {...}}`` wrappers, ``allowed_senders`` or ``peers``
are the profile's choice. So a MUST check finds what it needs by what it is: a task by
its id (the task id pattern of the input schemas, or the id it got back), a task's state
by the values of the Connect states (the keys of ``protocols.a2a.state_mapping``), a
mailbox by the ``mbx_`` pattern, a connection request by the ``conn_`` pattern, a task's
content by the marker the check put in it, wherever they sit in the answer
(``conformance/kit/locate.py``). The vocabulary is loaded from the manifest, never typed.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from conformance.kit import locate
from conformance.model import Profile

# An integrity digest of at least 128 bits, written in hex or base64 (the manifest names
# no algorithm or encoding: /delivery "Results are recipient-reported with an integrity digest")
DIGEST = re.compile(r"[0-9a-fA-F]{32,}|[A-Za-z0-9+/_-]{22,}={0,2}")


@dataclass(frozen=True)
class Vocabulary:
    """What the manifest says answers are made of: id patterns, the states, the token field."""

    task_id: re.Pattern[str]
    mailbox_id: re.Pattern[str]
    request_id: re.Pattern[str]
    states: tuple[str, ...]
    token_field: str

    def state(self, name: str) -> str:
        """``name`` as one of the manifest's states (a check naming a state that is not one
        is a defect of the check, found at once)."""
        if name not in self.states:
            raise ValueError(f"{name!r} is not a Connect state of protocols.a2a.state_mapping "
                             f"({', '.join(self.states)})")
        return name


_VOCABULARIES: dict[int, Vocabulary] = {}


def vocabulary(profile: Profile) -> Vocabulary:
    """The vocabulary of ``profile``'s manifest (read once per loaded document)."""
    spec = profile.spec
    known = _VOCABULARIES.get(id(spec))
    if known is not None:
        return known
    actions = spec["actions"]

    def pattern(action: str, prop: str) -> re.Pattern[str]:
        return re.compile(str(actions[action]["inputSchema"]["properties"][prop]["pattern"]))

    a2a = spec["protocols"]["a2a"]
    vocab = Vocabulary(task_id=pattern("get_task", "task_id"),
                       mailbox_id=pattern("allow_sender", "sender_id"),
                       request_id=pattern("respond_connection_request", "request_id"),
                       states=tuple(a2a["state_mapping"]),
                       token_field=str(a2a["access_setup"]["token_response_field"]))
    _VOCABULARIES[id(spec)] = vocab
    return vocab


ids = locate.distinct  # the distinct strings of a pattern, nearest the root first


state_in = locate.nearest_enum  # the state nearest the root; None when none, or when they disagree


contains = locate.contains


def marked(answer: Any, marker: str) -> bool:
    return bool(locate.with_marker(answer, marker))


named_values = locate.members  # the values of a member the manifest names, in any object


def digests(answer: Any, not_ids: Iterable[re.Pattern[str]]) -> list[str]:
    """Strings that look like an integrity digest (a run of 128 bits or more of hex or
    base64), leaving out the ids of the manifest's patterns."""
    patterns = tuple(not_ids)
    out = []
    for found in locate.walk(answer):
        text = found.value
        if isinstance(text, str) and not any(p.fullmatch(text) for p in patterns) and DIGEST.search(text):
            out.append(text)
    return out


owners = locate.owners


def listing_ids(answer: Any, known: Iterable[str], pattern: re.Pattern[str]) -> list[list[str]]:
    """The ids each item of the answer's listing carries: the list whose items carry most
    of the ``known`` ids (or the first list); one entry per item."""
    items = locate.listing(answer, list(known))
    return [ids(item, pattern) for item in items] if items is not None else []


def digest_spellings(message_id: str) -> tuple[str, ...]:
    """The ways a2a-<sha256(messageId)> may be written: the manifest does not say (hex,
    base64url, base64: each accepted)."""
    digest = hashlib.sha256(message_id.encode()).digest()
    return (digest.hex(), base64.urlsafe_b64encode(digest).decode().rstrip("="),
            base64.b64encode(digest).decode())
