"""What a target says of itself before a run: the bindings it declares it serves (where its
protocol reads that off the target: an A2A agent card's interfaces) and the name, version
and address of the self-description it said it in. One run speaks each binding the target
declares, or those ``--binding`` names, or the profile's first."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from conformance.jsontext import parse_json
from conformance.model import Exchange, Profile
from conformance.run.config import ConfigError
from conformance.run.launch import choose_binding, reference_app
from conformance.run.profiles import protocol_of
from conformance.transport.http import DEFAULT_TIMEOUT, HttpTransport

ALL = "all"  # --binding all: every binding of the profile


@dataclass
class Declared:
    """``bindings``: the profile's bindings the target declares, in its order of preference
    (empty when it does not say, or its protocol has no way to); ``about``: its name,
    version and the URL of the self-description (each only when it gave one)."""

    bindings: list[str] = field(default_factory=list)
    about: dict[str, str] = field(default_factory=dict)


def declared(profile: Profile, target: str | None, config: dict[str, Any],
             faults: tuple[str, ...] = ()) -> Declared:
    """Ask the target (the built-in reference with ``faults``, or a URL) what its protocol's
    ``target_bindings`` reads; a target that does not answer declares nothing (the run's
    own preflight then says why)."""
    hook = protocol_of(profile.settings["package"]).target_bindings
    if hook is None or not profile.settings.get("bindings"):
        return Declared()
    target = target or config.get("target") or "reference"
    try:
        http = (HttpTransport(app=reference_app(profile, faults)) if target == "reference"
                else HttpTransport(base_url=target, timeout=float(config.get("timeout", DEFAULT_TIMEOUT))))
    except (ConfigError, ValueError):
        return Declared()
    try:
        try:
            names = [str(n) for n in hook(profile, http)]
        except Exception:  # noqa: BLE001  (the run's preflight says what is wrong with the target)
            names = []
        return Declared(names, self_description(http.log))
    finally:
        http.close()


def self_description(log: list[Exchange]) -> dict[str, str]:
    """Name, version and URL of the first JSON object a target answered with 2xx (an agent
    card, a server's info document): what it calls itself, where it said so."""
    for exchange in log:
        response = exchange.response or {}
        if not 200 <= int(response.get("status") or 0) < 300:
            continue
        body, error = parse_json(str(response.get("body") or ""))
        if error or not isinstance(body, dict):
            continue
        about = {key: body[key].strip() for key in ("name", "version")
                 if isinstance(body.get(key), str) and body[key].strip()}
        about["url"] = without_userinfo(str(exchange.request.get("url") or ""))
        return about
    return {}


def without_userinfo(url: str) -> str:
    """``url`` without ``user:password@``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def run_bindings(profile: Profile, asked: tuple[str, ...], said: Declared) -> list[str | None]:
    """The bindings a run speaks, in order: those ``asked`` (``all``: each of the profile's),
    else each the target declares (where the profile has several), else the profile's
    first (None for a profile without bindings)."""
    mine = list(profile.settings.get("bindings") or {})
    if ALL in asked:
        return list(mine) or [None]
    if asked:
        return [choose_binding(profile, name) for name in asked]
    if len(mine) >= 2 and said.bindings:
        return [name for name in said.bindings if name in mine] or [choose_binding(profile, None)]
    return [choose_binding(profile, None)]
