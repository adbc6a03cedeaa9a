"""What the rows of several requirement modules share about their faults: the name of the
fault every -CODE row of the mailbox names (declared in reads.py), and the change the
faults that lift a command's maximum make."""

from __future__ import annotations

import copy

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
