"""Faults of the groups part (issue 14): each patches one behaviour of part_groups.py."""

from __future__ import annotations

from conformance.table import FaultRegistry

FAULTS = FaultRegistry()
