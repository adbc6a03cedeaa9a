"""What the rows of several requirement modules share about their faults: the name of
the fault every profile-code SHOULD catches (declared in access.py) and the limit the
faults that lift a quota set (no check reaches it)."""

from __future__ import annotations

CODES = ["refusal_codes_swapped"]  # the fault every profile-code SHOULD catches
UNBOUNDED = 10**9  # a limit no check reaches (the faults that lift one)
