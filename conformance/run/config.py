"""The user's own input: the run config file (YAML: target, timeout, credentials, tls, control,
world, declared, examples) and option values (durations, folders), each checked with a
one-line ``ConfigError`` naming its option or file (exit 2). Texts in ``credentials:`` and
``tls:`` may name environment variables (``${NAME}``); files they name are relative to the
config's folder (transport/credentials.py)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml

from conformance.transport.credentials import (
    CERT_KEYS,
    CredentialError,
    expand_env,
    file_setting,
    parse_credential,
    tls_setting,
)
from conformance.transport.http import validate_target_url
from conformance.yamltext import load_yaml, read_user_text

KNOWN_KEYS = {"target", "timeout", "max_answer_mib", "credentials", "tls", "control", "world", "declared",
              "examples", "scenarios", "keys", "receiver"}

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
    Keys: target, timeout, max_answer_mib, credentials, tls, control, world, declared, examples,
    scenarios, keys, receiver."""
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
        raise ConfigError(f"config {path}: unknown keys {sorted(map(str, unknown))} (known: "
                          f"{', '.join(sorted(KNOWN_KEYS))})")
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
    if credentials is None:
        credentials = data["credentials"] = {}
    if not isinstance(credentials, dict):
        raise ConfigError(f"{where}: credentials must be a mapping of label to token")
    for label, value in credentials.items():
        if not isinstance(value, str | dict) and value is not None:
            raise ConfigError(f"{where}: credentials.{label} must be a token (text) or a mapping, "
                              f"not {value!r}")
        if isinstance(value, dict) and "disposable" in value and not isinstance(value["disposable"], bool):
            raise ConfigError(f"{where}: credentials.{label}.disposable must be true or false, "
                              f"not {value['disposable']!r}")
        credentials[label] = credential_setting(label, value, where, path.parent)
    if "tls" in data:
        data["tls"] = tls_settings(data["tls"], where, path.parent)
    if "control" in data:
        data["control"] = control_url(data["control"], where)
    if "declared" in data and not (isinstance(data["declared"], list)
                                   and all(isinstance(d, str) for d in data["declared"])):
        raise ConfigError(f"{where}: declared must be a list of optional feature names, "
                          f"not {data['declared']!r}")
    if "examples" in data:
        shared_examples(data["examples"], "", where=f"{where}: examples")
    scenarios = data.get("scenarios", {})
    if not isinstance(scenarios, dict) or not all(isinstance(v, str | dict) for v in scenarios.values()):
        raise ConfigError(f"{where}: scenarios must map an outcome to the message (text, or a message "
                          f"object) that drives the target there, not {scenarios!r}")
    if "keys" in data and not isinstance(data["keys"], dict):
        raise ConfigError(f"{where}: keys must be a JWK Set (a mapping with keys:) or a mapping of key id to "
                          f"public JWK, not {type(data['keys']).__name__}")
    if "receiver" in data:
        data["receiver"] = receiver_settings(data["receiver"], where)
    if "world" in data and not isinstance(data["world"], dict):
        raise ConfigError(f"{where}: world must be a mapping of role to id, "
                          f"not {type(data['world']).__name__}")
    return data


def credential_setting(label: str, value: Any, where: str, base: Path) -> Any:
    """``credentials.<label>`` with its environment variables read and its files found (relative
    to the config's folder), or ConfigError naming the key."""
    try:
        value = expand_env(value, f"credentials.{label}")
        parse_credential(label, value, base=base)
    except CredentialError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if isinstance(value, dict):
        value = {k: file_setting(v, k, base) if k in ("cert", "key") and v is not None else v
                 for k, v in value.items()}
    return value


def tls_settings(value: Any, where: str, base: Path) -> dict[str, Any]:
    """Config ``tls:`` checked (ca, verify, cert, key, key_password), its files found."""
    try:
        value = expand_env(value, "tls")
        tls_setting(value, "tls", base)
    except CredentialError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return {k: file_setting(v, f"tls.{k}", base) if k in (*CERT_KEYS[:2], "ca") and v is not None else v
            for k, v in (value or {}).items()}


def control_url(value: Any, where: str) -> str:
    """Config ``control:``: an http(s) URL (on the target's origin or any other: an admin port,
    a control adapter beside the server) or a path on the target (``/_control``)."""
    if isinstance(value, str) and value.startswith("/"):
        return value.rstrip("/")
    try:
        return validate_target_url(value)
    except (ValueError, TypeError):
        raise ConfigError(f"{where}: control must be an http(s) URL (e.g. http://127.0.0.1:3774/_control) "
                          f"or a path on the target (e.g. /_control), not {value!r}") from None


def receiver_settings(value: Any, where: str) -> dict[str, Any]:
    """Config ``receiver:``: the URL a target calls to reach the run's webhook receiver (a
    forward to its local port), as text or ``{url, port}``; ``port`` the local port to listen on."""
    settings = {"url": value} if isinstance(value, str) else value
    if not isinstance(settings, dict) or set(settings) - {"url", "port"}:
        raise ConfigError(f"{where}: receiver must be a URL, or a mapping of url and port, not {value!r}")
    url = settings.get("url")
    if url is not None:
        try:
            validate_target_url(url)
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"{where}: receiver.url: {exc}") from None
    port = settings.get("port")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536):
        raise ConfigError(f"{where}: receiver.port must be a port number (1-65535), not {port!r}")
    return {k: v for k, v in settings.items() if v is not None}


def positive_number(value: Any, what: str) -> float:
    """``value`` as a finite number > 0, or ConfigError naming ``what``."""
    if (isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
        or value <= 0):
        raise ConfigError(f"{what} must be a number greater than 0, not {value!r}")
    return float(value)


def parse_duration(text: Any, what: str = "--max-time") -> float:
    """Seconds from ``900``, ``90s``, ``15m``, ``2h`` or ``30d``; ConfigError naming ``what``
    (the option or setting it came from) otherwise."""
    value = str(text).strip().lower()
    scale = {"s": 1, "m": 60, "h": 3600, "d": 86400}.get(value[-1:], None)
    number = value[:-1] if scale else value
    try:
        seconds = float(number) * (scale or 1)
    except ValueError:
        raise ConfigError(f"{what} {text!r} is not a duration (e.g. 900, 90s, 15m, 2h, 30d)") from None
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


def shared_examples(value: Any, namespace: str, where: str = "config examples") -> Any:
    """Config ``examples``: a folder or a redis:// URL, or a mapping of ``at`` (the same)
    and ``keep`` (how long examples nobody reads are kept: a duration such as 30d, or
    ``forever``, the default); None when not given."""
    from datetime import timedelta

    # start-up: examples.py imports hypothesis, which the commands that read a config but run
    # nothing (`diff`, `baseline`, `fuzz merge`) never need
    from conformance.run.examples import KEEP_FOREVER, SharedExamples

    if value is None:
        return None
    if isinstance(value, str) and value.strip():
        return SharedExamples(value.strip(), namespace=namespace)
    if isinstance(value, dict) and set(value) <= {"at", "keep"} and isinstance(value.get("at"), str) \
            and value["at"].strip():
        keep = value.get("keep", "forever")
        kept = KEEP_FOREVER if str(keep).strip().lower() == "forever" else \
            timedelta(seconds=parse_duration(keep, f"{where}.keep"))
        return SharedExamples(value["at"].strip(), keep=kept, namespace=namespace)
    raise ConfigError(f"{where} must be a folder or a redis:// URL, or a mapping of at: (one of those) and "
                      f"keep: (a duration such as 30d, or forever), not {value!r}")
