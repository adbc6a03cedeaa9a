"""Variants: behaviours the spec allows but the reference does not choose. Each
patches one reference instance, like a fault, and its docstring quotes the spec
text that allows it; `conformance selftest` runs every requirement against every
variant, and no MUST requirement may fail on one."""

from __future__ import annotations

from conformance.table import FaultRegistry

VARIANTS = FaultRegistry()
variant = VARIANTS
