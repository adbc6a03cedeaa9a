"""Opening a run: the built-in reference in-process or a live URL, the user's
config file (credentials, control interface), and the preflight probe."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import yaml

from conformance.budgets import BUDGETS
from conformance.check import RunContext
from conformance.examples import example_database
from conformance.live import disposable_labels
from conformance.model import Profile
from conformance.transport.http import (
    DEFAULT_MAX_ANSWER,
    DEFAULT_TIMEOUT,
    HttpTransport,
    Redactor,
    validate_target_url,
)
from conformance.yamltext import load_yaml, read_user_text

CONTROL_PREFIX = "/_control"


KNOWN_KEYS = {"target", "timeout", "max_answer_mib", "credentials", "control", "world", "declared", "examples"}

class ConfigError(Exception):
    """Bad input to the tool itself (exit 2)."""


class UsageFailure(ConfigError):
    """A bad combination of options, or a file or port the tool cannot use (exit 2)."""


def read_yaml(path: Path, what: str) -> Any:
    """A user's YAML file, or ConfigError with a one-line reason naming ``what`` and the file:
    one that cannot be read, is not UTF-8 text (a binary file, say) or does not parse."""
    try:
        text = read_user_text(path, what)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    try:
        return load_yaml(text)
    except (yaml.YAMLError, RecursionError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ConfigError(f"{what} {path} does not parse: {first}") from exc


def load_config(path: str | Path | None) -> dict[str, Any]:
    """Read and check a run config (YAML); ConfigError names the first bad value.
    Keys: target, timeout, max_answer_mib, credentials, control, world, declared, examples."""
    if path is None:
        return {}
    path = Path(path)
    data = read_yaml(path, "config")
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config {path} must be a mapping (keys: {', '.join(sorted(KNOWN_KEYS))})")
    unknown = set(data) - KNOWN_KEYS
    if unknown:
        raise ConfigError(f"config {path}: unknown keys {sorted(map(str, unknown))} (known: {', '.join(sorted(KNOWN_KEYS))})")
    where = f"config {path}"
    if "target" in data and data["target"] != "reference":
        try:
            validate_target_url(data["target"])
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    for key, unit in (("timeout", "seconds for one exchange"), ("max_answer_mib", "MiB of one answer")):
        if key in data:
            positive_number(data[key], f"{where}: {key} ({unit})")
    credentials = data.get("credentials", {})
    if not isinstance(credentials, dict):
        raise ConfigError(f"{where}: credentials must be a mapping of label to token")
    for label, value in credentials.items():
        if not isinstance(value, str | dict) and value is not None:
            raise ConfigError(f"{where}: credentials.{label} must be a token (text) or a mapping, not {value!r}")
        if isinstance(value, dict) and "disposable" in value and not isinstance(value["disposable"], bool):
            raise ConfigError(f"{where}: credentials.{label}.disposable must be true or false, not {value['disposable']!r}")
    if "control" in data and not isinstance(data["control"], str):
        raise ConfigError(f"{where}: control must be a URL or a path (text), not {data['control']!r}")
    if "declared" in data and not (isinstance(data["declared"], list) and all(isinstance(d, str) for d in data["declared"])):
        raise ConfigError(f"{where}: declared must be a list of optional feature names, not {data['declared']!r}")
    if "examples" in data and not isinstance(data["examples"], str):
        raise ConfigError(f"{where}: examples must be a folder or a redis:// URL, not {data['examples']!r}")
    if "world" in data and not isinstance(data["world"], dict):
        raise ConfigError(f"{where}: world must be a mapping of role to id, not {type(data['world']).__name__}")
    return data


def positive_number(value: Any, what: str) -> float:
    """``value`` as a finite number > 0, or ConfigError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{what} must be a number greater than 0, not {value!r}")
    return float(value)


def parse_duration(text: Any, what: str = "--max-time") -> float:
    """Seconds from ``900``, ``90s``, ``15m`` or ``2h``; ConfigError naming ``what`` (the
    option or setting it came from) otherwise."""
    value = str(text).strip().lower()
    scale = {"s": 1, "m": 60, "h": 3600}.get(value[-1:], None)
    number = value[:-1] if scale else value
    try:
        seconds = float(number) * (scale or 1)
    except ValueError:
        raise ConfigError(f"{what} {text!r} is not a duration (e.g. 900, 90s, 15m, 2h)") from None
    return positive_number(seconds, f"{what} {text!r}")


def writable_dir(path: Path, what: str) -> Path:
    """``path`` as a folder that exists and can be written, or ConfigError."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".conformance-write-test"
        probe.write_text("", encoding="utf-8")
        probe.unlink()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError(f"{what} {path} cannot be written: {reason}") from None
    return path


def secrets_of(credentials: dict[str, Any]) -> dict[str, str]:
    """Every secret string inside the credentials, labelled for redaction."""
    out: dict[str, str] = {}
    for label, value in credentials.items():
        if isinstance(value, dict):
            for key, inner in value.items():
                if key in ("token", "seed", "private_key", "secret") and isinstance(inner, str):
                    out[f"{label}.{key}"] = inner
        elif isinstance(value, str):
            out[label] = value
    return out


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
        raise ConfigError(f"unknown budget {budget!r} (quick, standard, deep)")
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
    if token:
        credentials["full"] = token
    timeout = float(config.get("timeout", DEFAULT_TIMEOUT))
    max_answer = int(float(config.get("max_answer_mib", DEFAULT_MAX_ANSWER / 2**20)) * 2**20)
    http = HttpTransport(timeout=timeout, max_answer=max_answer, redactor=Redactor(secrets_of(credentials)), **http_kwargs)
    if max_time is not None:
        http.run_deadline = time.monotonic() + max_time
    run = RunContext(
        profile=profile,
        http=http,
        budget=BUDGETS[budget],
        seed=seed,
        credentials=credentials,
        control_path=control,
        database=_database(db_dir, config),
        binding=binding,
        world=dict(config.get("world") or {}),
        declared=declared_features(profile, config.get("declared") or []),
        shrink=shrink,
        reference=reference,
        reuse_examples=bool(config.get("examples")) if reuse_examples is None else reuse_examples,
    )
    run.identities.disposable = disposable_labels(credentials)
    run.quotas.limits = {name: int(profile.limits[name].value) for name in profile.settings.get("quotas") or {}}
    return run


def _database(db_dir: Path | None, config: dict[str, Any]) -> Any:
    """The example database; config ``examples`` shares it between workers and machines."""
    value = config.get("examples")
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"config examples must be a folder or a redis:// URL, not {value!r}")
    try:
        return example_database(db_dir, value)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def declared_features(profile: Profile, names: list[str]) -> frozenset[str]:
    """What the config declares the deployment does not offer: only features the spec
    makes optional (the profile's ``optional:`` block) can be declared away."""
    unknown = [n for n in names if n not in profile.optional]
    if unknown:
        offered = ", ".join(sorted(profile.optional)) or "none"
        raise ConfigError(f"declared {unknown} is not optional in the {profile.name} spec (optional features: {offered})")
    return frozenset(names)


def deviations(profile: Profile, names: tuple[str, ...] | list[str]) -> list[Any]:
    """The patch functions of named faults or variants, or ConfigError naming the unknown."""
    known = {**profile.variants, **profile.faults}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigError(f"unknown fault(s) or variant(s) {unknown} for profile {profile.name} "
                          f"(see `conformance list {profile.name}`)")
    return [known[n] for n in names]


def reference_app(profile: Profile, names: tuple[str, ...] | list[str] = (), shapes: int | None = None, **options: Any) -> Any:
    """The profile's reference app with the named faults or variants applied to its
    instance, its answers in the shape variant of seed ``shapes`` when given."""
    patches = deviations(profile, names)
    app = profile.create_reference(profile, **options)
    for patch in patches:
        patch(app.state.reference)
    if shapes is not None:
        from conformance.shapes import shaped

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
        raise ConfigError(f"unknown binding {binding!r} for profile {profile.name} (one of: {', '.join(bindings)})")
    return binding
