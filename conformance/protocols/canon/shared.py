"""What the parts of the Canon profile share: units, where the spec's definitions sit,
the profile's rejection code, the fault every profile-code SHOULD names, and the guard of
a check that cannot run without the control interface."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from conformance.kit.check import CheckContext

DEFS = "/$defs"  # the spec's definitions (every <verb>_input and <verb>_result under it)
REJECTION = "VALIDATION_ERROR"  # the profile's code for an input breaking its schema or a description's rule
CODES = ("refusal_codes_swapped",)  # the fault every profile-code SHOULD catches (bindings.py)
SECOND_MS = 1000
MINUTE_MS = 60 * SECOND_MS
HOUR_MS = 60 * MINUTE_MS
HUMAN_VERBS = ("request_input", "request_card", "request_approval")  # a human answers them


def needs_control(why: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """A check that needs what only the control interface gives (``why``: a human who
    answers, a recipient's view, the target's clock): without it, untested (reason
    ``control``) before anything is sent."""
    def wrap(check: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(check)
        def run(ctx: CheckContext, *args: Any, **kwargs: Any) -> None:
            if not ctx.run.control_path:
                ctx.needs_control(why)
            check(ctx, *args, **kwargs)
        return run
    return wrap
