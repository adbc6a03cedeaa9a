"""Credentials are checked before they are judged.

Before the first requirement, each credential the config gives (and the profile
declares) is tried on the profile's own harmless probe. One the target answers with
HTTP 401 is *refused*: every requirement that would send it is ``untested`` with that
reason, named in one console line, and none fails on it (an expired CI secret is not a
broken implementation). The same holds when the run has no token and the target wants
one. Credentials the profile lists under ``refused_credentials:`` (an expired token,
say) are meant to be refused and are not tried."""

from __future__ import annotations

from typing import Any

from conformance.check import CheckContext, CheckFailed, ProtocolMismatch, Untested
from conformance.evidence import answered
from conformance.model import Profile
from conformance.transport.http import TransportFailure

REFUSED_STATUS = 401  # HTTP's "no valid credentials": a 403 is an authenticated caller without the right


def configured(value: Any) -> bool:
    """A credential the run was given: a token, or a mapping with one."""
    return bool(value.get("token") if isinstance(value, dict) else value)


def check_credentials(profile: Profile, ctx: CheckContext) -> dict[str, str]:
    """Try each configured credential on ``profile.probe``; the refused ones, with the
    answer that refused them, are recorded in ``ctx.run.refused`` and returned."""
    run = ctx.run
    by_design = set(profile.settings.get("refused_credentials") or [])
    for label in profile.settings.get("credentials") or {}:
        if label in by_design or label in run.refused or not configured(run.credentials.get(label)):
            continue
        before = len(ctx.http.log)
        try:
            profile.probe(ctx, caller=label)
        except (Untested, CheckFailed, TransportFailure, ProtocolMismatch):
            pass  # judged below by what the target answered, if it answered
        refusal = next((e for e in ctx.http.log[before:] if (e.response or {}).get("status") == REFUSED_STATUS), None)
        if refusal is not None:
            run.refused[label] = f"refused by the target on the probe: {ctx.http.redact(answered(refusal.response or {}))}"
    return dict(run.refused)
