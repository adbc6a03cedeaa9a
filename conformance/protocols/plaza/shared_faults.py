"""What the faults and variants of several modules share: the name of the fault every
-CODE row of the mailbox names (declared in reads.py), the change the faults that lift a
command's maximum make, and the profile's {message} / {task} wrapping of a result (a
fault of message.py unwraps it, a variant of variants.py)."""

from __future__ import annotations

import copy
from typing import Any

from conformance.documents.schemas import validator_for
from conformance.protocols.plaza.reference import PlazaReference

CODES = ["mailbox_codes_swapped"]  # the fault every -CODE row of the mailbox names


def unbounded(ref: PlazaReference, command: str, name: str) -> None:
    """A fault's change: the command's schema without the ``maximum`` of its field ``name``
    (and of that field's anyOf branches)."""
    schema = copy.deepcopy(ref.branches[command])
    prop = schema["properties"][name]
    for node in [prop, *prop.get("anyOf", [])]:
        node.pop("maximum", None)
    ref.validators.commands[command] = validator_for(schema)


def wrapped(request_id: Any, result: Any) -> bool:
    """A result the profile wraps: {message} or {task}."""
    return isinstance(result, dict) and len(result) == 1 and ("message" in result or "task" in result)


def unwrapped(result: dict[str, Any]) -> Any:
    return next(iter(result.values()))
