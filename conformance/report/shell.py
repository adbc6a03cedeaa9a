"""Requests as shell text a user pastes: curl lines and a case's whole sequence as a bash
script. Secrets are never written: each ``<redacted:LABEL>`` marker of a recorded exchange
becomes the environment variable that holds it, ``$CONFORMANCE_TOKEN`` for the main caller's
token (credential ``full``, as `conformance run` reads it) and ``$CONFORMANCE_CREDENTIAL_<LABEL>``
for any other (``credentials.other`` is ``$CONFORMANCE_CREDENTIAL_OTHER``, ``did.token``
``$CONFORMANCE_CREDENTIAL_DID_TOKEN``)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from conformance.jsontext import parse_json
from conformance.model import Exchange

SECRET = re.compile(r"<redacted:([^<>\s]+)>")
MAIN_TOKEN = "CONFORMANCE_TOKEN"


def secret_variable(label: str) -> str:
    """The environment variable a pasted request reads the secret ``label`` from."""
    if label == "full":
        return MAIN_TOKEN
    return "CONFORMANCE_CREDENTIAL_" + (re.sub(r"[^A-Za-z0-9]+", "_", label).strip("_").upper() or "SECRET")


def secrets_named(texts: list[str]) -> dict[str, str]:
    """label -> its environment variable, for every secret marker in ``texts``."""
    return {m.group(1): secret_variable(m.group(1)) for text in texts for m in SECRET.finditer(text)}


def shell_word(text: str, values: Mapping[str, str] | None = None) -> str:
    """``text`` as one shell word: literal (single-quoted) but for each secret marker, which
    becomes ``"${VARIABLE}"``, and each of ``values`` (a literal -> the variable holding what
    replaces it), which becomes ``"${NAME}"``."""
    literals = sorted(values or {}, key=len, reverse=True)
    pattern = SECRET.pattern + "".join(f"|{re.escape(v)}" for v in literals)
    parts: list[str] = []
    pos = 0
    for m in re.finditer(pattern, text):
        if m.start() > pos:
            parts.append(shlex.quote(text[pos:m.start()]))
        name = secret_variable(m.group(1)) if m.group(1) else (values or {})[m.group(0)]
        parts.append(f'"${{{name}}}"')
        pos = m.end()
    if pos < len(text) or not parts:
        parts.append(shlex.quote(text[pos:]))
    return "".join(parts)


def request_words(exchange: Exchange, base_url: str = "$TARGET",
                  values: Mapping[str, str] | None = None) -> list[str] | None:
    """The curl words that send ``exchange``'s request again (None for a gRPC call, which curl
    cannot make): a URL recorded without its origin (an in-process run's) goes to ``base_url``."""
    req = exchange.request
    if str(req.get("method")) == "gRPC":
        return None
    url = str(req["url"])
    where = (f'"{base_url}"' + shell_word(url, values)) if url.startswith("/") else shell_word(url, values)
    words = ["curl", "-sS", "-X", shlex.quote(str(req["method"])), where]
    for name, value in (req.get("headers") or {}).items():
        words += ["-H", shell_word(f"{name}: {value}", values)]
    if req.get("body") is not None:
        words += ["--data-binary", shell_word(str(req["body"]), values)]
    return words


def grpc_note(exchange: Exchange) -> str:
    """A gRPC call as a comment: where, which method, what message (curl cannot send gRPC)."""
    req = exchange.request
    url = str(req.get("url") or "").removeprefix("grpc://")
    where, _, method = url.partition("/")
    sent = req.get("body") or "{}"
    return f"# gRPC {method} at {where or 'the target'} with {sent} (curl cannot send gRPC)"


# -- a case's whole sequence --------------------------------------------------------------------

ID_LIKE = re.compile(r"^(?=.*\d)[^\s\"'<>]{6,200}$")  # a value an answer gave that later requests use
PICK = r'''# pick FILE KEY...: the value at KEY... of the JSON answer in FILE ("data:N": event N of a stream)
pick() {
  python3 - "$@" <<'PY'
import json, sys
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
keys = sys.argv[2:]
try:
    if keys and keys[0].startswith("data:"):
        events = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        value = json.loads(events[int(keys[0][5:])])
        keys = keys[1:]
    else:
        value = json.loads(text)
    for key in keys:
        value = value[int(key)] if isinstance(value, list) else value[key]
except (ValueError, KeyError, IndexError, TypeError):
    sys.exit(1)
print(value if isinstance(value, str) else json.dumps(value), end="")
PY
}'''


def leaves(value: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    """Every string inside a JSON value, with its path (keys, and list indexes as text)."""
    if isinstance(value, dict):
        return [leaf for key, inner in value.items() for leaf in leaves(inner, (*path, str(key)))]
    if isinstance(value, list):
        return [leaf for i, inner in enumerate(value) for leaf in leaves(inner, (*path, str(i)))]
    return [(path, value)] if isinstance(value, str) else []


def answer_leaves(exchange: Exchange) -> list[tuple[tuple[str, ...], str]]:
    """The strings of an answer's JSON body, or of each event of an event stream (path
    ``data:N``), with their paths."""
    body = str((exchange.response or {}).get("body") or "")
    parsed, error = parse_json(body)
    if not error:
        return leaves(parsed)
    found = []
    events = [line[5:].strip() for line in body.splitlines() if line.startswith("data:")]
    for n, event in enumerate(events):
        parsed, error = parse_json(event)
        if not error:
            found += leaves(parsed, (f"data:{n}",))
    return found


def request_text(exchange: Exchange) -> str:
    req = exchange.request
    return " ".join([str(req.get("url") or ""), *map(str, (req.get("headers") or {}).values()),
                     str(req.get("body") or "")])


def sequence_script(exchanges: list[Exchange], *, title: str, target: str | None = None) -> str:
    """A bash script that sends ``exchanges``' requests in order and shows each answer, each
    value a target's answer gave that a later request carries (an id it assigned: a string
    with a digit, six characters or more, that no earlier request had sent) read from this
    replay's answer at the same place and carried in its stead. ``target`` is the run's target
    (a URL): the requests sent there go to ``$TARGET``, which defaults to it, so the script
    sends them elsewhere with TARGET set; requests recorded without an origin (an in-process
    run's) need TARGET."""
    if target and "://" in target:
        base_url = target.rstrip("/")

        def on_target(url: str) -> bool:
            return url == base_url or url.startswith(base_url + "/")

        exchanges = [replace(e, request={**e.request, "url": str(e.request["url"])[len(base_url):] or "/"})
                     if on_target(str(e.request.get("url") or "")) else e for e in exchanges]
    else:
        target = None
    texts = [request_text(e) for e in exchanges]
    variables: dict[str, str] = {}  # original value -> the variable holding this replay's
    picks: dict[int, list[tuple[str, tuple[str, ...], str]]] = {}  # after exchange i: (variable, path, value)
    sent_so_far = ""
    for i, exchange in enumerate(exchanges):
        sent_so_far += " " + texts[i]
        later = " ".join(texts[i + 1:])
        for path, value in answer_leaves(exchange):
            if (value in variables or not ID_LIKE.match(value) or SECRET.search(value)
                    or value in sent_so_far or value not in later):
                continue
            variables[value] = f"ID_{len(variables) + 1}"
            picks.setdefault(i, []).append((variables[value], path, value))
    secrets = secrets_named(texts)
    lines = ["#!/usr/bin/env bash",
             f"# {title}",
             f"# {len(exchanges)} request(s) in the order the run sent them; each id a target's answer gave "
             "is carried into the requests after it.",
             "# Secrets come from the environment: "
             + (", ".join(f"${var} (credential {label})" for label, var in sorted(secrets.items()))
                or "none needed") + ".",
             "set -u"]
    base = "TARGET"
    if target:
        default = shlex.quote(target.rstrip("/"))
        lines.append(f"TARGET=${{TARGET:-{default}}}  # set TARGET to send them elsewhere")
    elif any(str(e.request.get("url", "")).startswith("/") for e in exchanges):
        lines.append(': "${TARGET:?set TARGET to the base URL of the server to send to}"')
    for var in sorted(set(secrets.values())):
        lines.append(f': "${{{var}:?set {var}}}"')
    lines += ['out=$(mktemp -d)', "trap 'rm -rf \"$out\"' EXIT", PICK, ""]
    for i, exchange in enumerate(exchanges):
        req = exchange.request
        status = (exchange.response or {}).get("status")
        lines.append(f"# {i + 1} of {len(exchanges)}: {req.get('method')} {req.get('url')} "
                     f"(the run got: {status if status is not None else 'no answer'})")
        words = request_words(exchange, f"${base}", variables)
        if words is None:
            lines += [grpc_note(exchange), ""]
            continue
        lines.append(" ".join(words) + f' -D "$out/{i + 1}.head" -o "$out/{i + 1}.body"')
        lines.append(f'cat "$out/{i + 1}.head" "$out/{i + 1}.body" 2>/dev/null; echo')
        for var, path, value in picks.get(i, []):
            keys = " ".join(shlex.quote(k) for k in path)
            where = "/".join(path)
            lines.append(f'{var}=$(pick "$out/{i + 1}.body" {keys}) || {{ {var}={shlex.quote(value)}; '
                         f'echo "(no {where} in that answer: {var} keeps the recorded value)" >&2; }}')
        lines.append("")
    return "\n".join(lines)
