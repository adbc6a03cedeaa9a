"""Opening a run: the built-in reference in process (with the faults or variants asked
for) or a live URL, with the config's credentials, control interface, world and example
database, into the ``RunContext`` every requirement of the run shares."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from conformance.budgets import BUDGETS
from conformance.kit.check import RunContext
from conformance.kit.faults import apply
from conformance.kit.live import disposable_labels
from conformance.kit.shapes import shaped
from conformance.model import Profile
from conformance.run.config import ConfigError, control_url, shared_examples
from conformance.run.examples import example_database, namespace_of
from conformance.transport.credentials import CredentialError, CredentialStore, secrets_of, tls_setting
from conformance.transport.http import (
    DEFAULT_MAX_ANSWER,
    DEFAULT_TIMEOUT,
    HttpTransport,
    Redactor,
    validate_target_url,
)

CONTROL_PREFIX = "/_control"


_WARNED: set[str] = set()


def warn_once(text: str) -> None:
    """A one-line warning on stderr, once per process (a run opens one context per binding)."""
    if text not in _WARNED:
        _WARNED.add(text)
        print(f"warning: {text}", file=sys.stderr, flush=True)


def open_run(
    profile: Profile,
    target: str | None = "reference",
    *,
    config: dict[str, Any] | None = None,
    token: str | None = None,
    faults: tuple[str, ...] = (),
    budget: str = "standard",
    seed: int = 1,
    db_dir: Path | None = None,
    reference_options: dict[str, Any] | None = None,
    binding: str | None = None,
    max_time: float | None = None,
    shrink: bool = True,
    reuse_examples: bool | None = None,
    shapes: int | None = None,
) -> RunContext:
    """Build the RunContext for a run against ``target`` ("reference" or an http(s) URL);
    ``max_time`` seconds from now, the run stops sending. Saved examples are replayed
    (``reuse_examples``) when asked, by default only from a config's shared ``examples:``
    database: otherwise one seed gives one run, whatever earlier runs left behind.
    ``shapes`` (a seed) serves the reference's answers in a shape variant (shapes.py)."""
    config = config or {}
    target = target or config.get("target") or "reference"
    if budget not in BUDGETS:
        raise ConfigError(f"unknown budget {budget!r} ({', '.join(BUDGETS)})")
    deviations(profile, faults)
    binding = choose_binding(profile, binding)
    credentials: dict[str, Any] = {}
    control: str | None = None
    reference = None
    if target == "reference":
        app = reference_app(profile, faults, shapes=shapes, **(reference_options or {}))
        credentials.update(profile.reference_credentials)
        control = CONTROL_PREFIX if (reference_options or {}).get("control", True) else None
        http_kwargs: dict[str, Any] = {"app": app}
        reference = app.state.reference
    else:
        if faults:
            raise ConfigError("--fault applies to the built-in reference only")
        try:
            http_kwargs = {"base_url": validate_target_url(target)}
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        control = config.get("control")
    credentials.update(config.get("credentials") or {})
    if token:  # --token or CONFORMANCE_TOKEN: the bearer of `full`, beside what else the config gives it
        given = credentials.get("full")
        credentials["full"] = {**given, "token": token} if isinstance(given, dict) and not given.get(
            "oauth2") else token
    timeout = float(config.get("timeout", DEFAULT_TIMEOUT))
    max_answer = int(float(config.get("max_answer_mib", DEFAULT_MAX_ANSWER / 2**20)) * 2**20)
    try:
        tls = tls_setting(config.get("tls"), "config tls")
    except CredentialError as exc:
        raise ConfigError(str(exc)) from None
    if not tls.verify and target != "reference":
        warn_once("TLS verification is off (config tls.verify: false): the target's certificate is not "
                  "checked")
    http = HttpTransport(timeout=timeout, max_answer=max_answer, redactor=Redactor(secrets_of(credentials)),
                         tls=tls, credentials=CredentialStore(credentials, tls), **http_kwargs)
    for name, secret in tls.secrets().items():
        http.redact.add(name, secret)
    if max_time is not None:
        http.run_deadline = time.monotonic() + max_time
    if control and http.live and "://" in control:  # a control interface on another port or host
        http.allow(control_url(control, "control"), "control")
    for label in list(credentials):  # the token URLs the config names: the run may send there too
        oauth = http.credentials.get(label)
        if oauth is not None and oauth.oauth2 is not None:
            http.allow(oauth.oauth2.token_url, "token")
    run = RunContext(
        profile=profile,
        http=http,
        budget=BUDGETS[budget],
        seed=seed,
        credentials=credentials,
        control_path=control,
        database=_database(db_dir, config, namespace_of(profile.name, target)),
        binding=binding,
        world=dict(config.get("world") or {}),
        scenarios=scenarios_of(profile, config.get("scenarios") or {}),
        keys=dict(config.get("keys") or {}),
        declared=declared_features(profile, config.get("declared") or []),
        shrink=shrink,
        reference=reference,
        reuse_examples=bool(config.get("examples")) if reuse_examples is None else reuse_examples,
        receiver=dict(config.get("receiver") or {}),
    )
    run.identities.disposable = disposable_labels(credentials)
    run.quotas.limits = {name: int(profile.limits[name].value)
                         for name in profile.settings.get("quotas") or {}}
    return run


def _database(db_dir: Path | None, config: dict[str, Any], namespace: str) -> Any:
    """The example database; config ``examples`` shares it between workers and machines."""
    try:
        return example_database(db_dir, shared_examples(config.get("examples"), namespace))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def scenarios_of(profile: Profile, given: dict[str, Any]) -> dict[str, Any]:
    """The config's ``scenarios:`` (outcome -> the message that drives the target there):
    only outcomes the profile names (its ``scenarios:`` block)."""
    known = profile.settings.get("scenarios") or {}
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise ConfigError(f"unknown scenarios {unknown} for profile {profile.name} "
                          f"(known: {', '.join(sorted(known)) or 'none'})")
    return dict(given)


def declared_features(profile: Profile, names: list[str]) -> frozenset[str]:
    """What the config declares the deployment does not offer: only features the spec
    makes optional (the profile's ``optional:`` block) can be declared away."""
    unknown = [n for n in names if n not in profile.optional]
    if unknown:
        offered = ", ".join(sorted(profile.optional)) or "none"
        raise ConfigError(f"declared {unknown} is not optional in the {profile.name} spec "
                          f"(optional features: {offered})")
    return frozenset(names)


def deviations(profile: Profile, names: tuple[str, ...] | list[str]) -> list[Any]:
    """The patch functions of named faults or variants, or ConfigError naming the unknown."""
    known = {**profile.variants, **profile.faults}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError(f"unknown fault(s) or variant(s) {unknown} for profile {profile.name} "
                          f"(see `conformance list {profile.name}`)")
    return [known[n] for n in names]


def reference_app(profile: Profile, names: tuple[str, ...] | list[str] = (), shapes: int | None = None,
                  **options: Any) -> Any:
    """The profile's reference app with the named faults or variants applied to its
    instance, its answers in the shape variant of seed ``shapes`` when given."""
    patches = deviations(profile, names)
    app = profile.create_reference(profile, **options)
    for patch in patches:
        apply(patch, app.state.reference)
    if shapes is not None:
        app = shaped(app, profile, shapes)
    return app


def choose_binding(profile: Profile, binding: str | None) -> str | None:
    """The binding to speak: the one asked for, else the profile's first; None if it has none."""
    bindings = list(profile.settings.get("bindings") or {})
    if not bindings:
        if binding:
            raise ConfigError(f"profile {profile.name} has no bindings to choose from")
        return None
    if binding is None:
        return bindings[0]
    if binding not in bindings:
        raise ConfigError(f"unknown binding {binding!r} for profile {profile.name} (one of: "
                          f"{', '.join(bindings)})")
    return binding
