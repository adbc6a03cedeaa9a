"""Before the first requirement: does the target answer the profile's probe in its
protocol, and which configured credentials does it refuse? One preflight for every way
a run starts (``conformance run``, the pytest plugin, ``conformance fuzz``).

Credentials are checked before they are judged. Each credential the config gives (and the
profile declares) is tried on the profile's own harmless probe. One the target answers
with HTTP 401 is *refused*: every requirement that would send it is ``untested`` with that
reason, named in one console line, and none fails on it (an expired CI secret is not a
broken implementation). The same holds when the run has no token and the target wants
one, when a credential's OAuth2 token cannot be fetched from its token URL, and when a
credential holds nothing the target asks for (an A2A card that wants HTTP Basic, and a
token given). Credentials the profile lists under ``refused_credentials:`` (an expired
token, say) are meant to be refused and are not tried."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from conformance.kit.check import CheckContext, CheckFailed, ProtocolMismatch, RunContext, Untested
from conformance.kit.evidence import answered
from conformance.model import Profile, Requirement, Source
from conformance.run.config import ConfigError
from conformance.transport.credentials import parse_credential
from conformance.transport.http import DEAD_AFTER, CredentialUnfit, RunAborted, RunStopped, TransportFailure


@dataclass
class Preflight:
    """What the preflight found: ``unreachable`` says why the target cannot be tested
    (no answer, or not the profile's protocol), ``note`` what it wants that the run lacks
    (unless that is a credential it refused),
    ``refused`` the credentials it refused (label -> why)."""

    unreachable: str = ""
    note: str = ""
    refused: dict[str, str] = field(default_factory=dict)


def preflight(run: RunContext, *, credentials: bool = True) -> Preflight:
    """Probe the target (a reset or two must not condemn it: ``DEAD_AFTER`` tries), then,
    with ``credentials``, try each configured credential. Sets ``run.unreachable`` and
    ``run.refused``; the exchanges it made are not any requirement's evidence."""
    found = Preflight()
    probe = Requirement("PREFLIGHT", "MAY", "the target speaks the protocol", Source("profile", "preflight"),
                        run.profile.probe, ())
    ctx = CheckContext(run, probe)
    for attempt in range(1, DEAD_AFTER + 1):
        try:
            run.profile.probe(ctx)
            break
        except RunStopped:
            break
        except Untested as exc:  # it answered in its protocol, but wants what the run lacks
            if not run.refused:  # a refused credential has its own line
                found.note = run.http.redact(str(exc))
            break
        except CredentialUnfit as exc:  # the run's own credential holds nothing the target asks for
            run.refused.setdefault(exc.label, unfit(exc))
            break
        except TransportFailure as exc:
            if attempt == DEAD_AFTER:
                found.unreachable = run.http.redact(str(exc))
            else:
                time.sleep(0.25 * attempt)
        except (RunAborted, ProtocolMismatch) as exc:
            found.unreachable = run.http.redact(str(exc))
            break
    run.unreachable = found.unreachable or run.unreachable
    if not run.unreachable and not run.http.stopped:
        check_control(run)
    if credentials and not run.unreachable and not run.http.stopped:
        try:
            check_credentials(run.profile, ctx)
        except RunAborted:
            pass
    if found.note and any(f"credentials.{label}" in found.note or f"'{label}'" in found.note
                          for label in run.refused):
        found.note = ""  # said by the refused credential's own line
    found.refused = dict(run.refused)
    run.http.log.clear()
    return found


def check_control(run: RunContext) -> None:
    """A control interface the config names (on the target's origin or another: an admin
    port, an adapter beside the server) must answer; one that does not is the config's
    problem, said in one line before anything runs (ConfigError: exit 2), never a failure
    of the target. Any HTTP answer will do here (a GET changes nothing, whatever the
    interface does with it); an action it then refuses leaves the rows that need it
    untested with its answer, and one it fails on blocks them (``CheckContext.control``)."""
    if not run.control_path or not run.http.live:
        return
    try:
        run.http.request("GET", f"{run.control_path}/snapshot")
    except TransportFailure as exc:
        why = str(exc).split(": ", 1)[-1]
        raise ConfigError(f"control {run.control_path} does not answer ({why}): check config control:, or "
                          "leave it out to run without the control interface") from None


REFUSED_STATUS = 401  # HTTP's "no valid credentials": a 403 is an authenticated caller without the right


def configured(value: Any) -> bool:
    """A credential the run was given: a token, or a mapping with one of the credential kinds."""
    return bool(value) and parse_credential("", value, strict=False).given


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
        except CredentialUnfit as exc:
            run.refused[label] = unfit(exc)
            continue
        except (Untested, CheckFailed, TransportFailure, ProtocolMismatch):
            pass  # judged below by what the target answered, if it answered
        refusal = next((e for e in ctx.http.log[before:]
                        if (e.response or {}).get("status") == REFUSED_STATUS), None)
        if refusal is not None:
            run.refused[label] = ("refused by the target on the probe: "
                                  f"{ctx.http.redact(answered(refusal.response or {}))}")
    return dict(run.refused)


def unfit(exc: CredentialUnfit) -> str:
    return f"holds nothing the target asks for ({str(exc).split(': ', 1)[-1]})"
