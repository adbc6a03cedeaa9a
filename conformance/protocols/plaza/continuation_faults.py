"""Faults of the continuation part (issue 14): each patches one behaviour of part_continuation.py."""

from __future__ import annotations

from conformance.table import FaultRegistry

FAULTS = FaultRegistry()
