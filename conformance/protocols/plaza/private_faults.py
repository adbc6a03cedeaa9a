"""Faults of the private part (issue 14): each patches one behaviour of part_private.py."""

from __future__ import annotations

from conformance.table import FaultRegistry

FAULTS = FaultRegistry()
