"""Shape variants: the reference's answers rewritten as another faithful implementation
might write them, wherever the document leaves the shape open.

Where a document names no answer shape, the profile chose one, and the references agree
with the profile, so a MUST check that reads the profile's shape passes on them and
raises a false alarm on a server written by someone else. A shape variant is that other
server: an ASGI wrapper around the reference that rewrites every JSON answer, driven by
what the profile declares document-named (``ShapeRules``):

- every key the document does not name is renamed (camelCase, snake_case, a suffix);
- an object under such a key loses its wrapping level (its members move up) or gains
  one; a member of a nested object moves up beside it; members are reordered;
- an unknown member is added to every object of the profile's shape;
- error codes the profile chose change (letter case, a prefix), and error messages are
  reworded.

What the document names (its schemas' property names, the JSON-RPC and MCP envelopes,
the keys a profile cites with a pointer) is left alone, and so is every object the
client itself sent that comes back (echoed content is the client's, not a shape).
Decisions are made per key name and seed, so one variant is consistent across answers,
as a real server is. ``conformance selftest`` runs every profile against several seeds:
every MUST must pass, and the SHOULD rows the profile lists as asking for its own shapes
(``shapes: rows:``) must fail on at least one.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from conformance.model import Profile
from conformance.paths import DATA_ROOT
from conformance.transport.binding import at_pointer
from conformance.yamltext import read_user_json

JSONRPC_ENVELOPE = frozenset({"jsonrpc", "id", "result", "error", "code", "message", "data", "method",
                              "params"})
MCP_OWN = ("initialize", "ping", "tools/list", "resources/", "prompts/", "notifications/", "completion/",
           "logging/",
           "server/", "subscriptions/")
WRAPPERS = ("entry", "item", "record", "details")
SUFFIXES = ("value", "info", "ref")
SEEDS = (1, 2, 3)  # the seeds `conformance selftest` runs
DEPTH = 12


@dataclass(frozen=True)
class ShapeRules:
    """What a profile's document names, so a shape variant leaves it alone."""

    named: frozenset[str]  # answer keys the document names (never renamed, wrapped or moved)
    maps: frozenset[str] = frozenset()  # named keys whose object is a map: its keys are data, not shape
    codes: frozenset[Any] = frozenset()  # error codes the profile chose: a variant changes them
    keep_paths: tuple[str, ...] = ()  # answers at these paths have the document's shape throughout
    rows: tuple[str, ...] = ()  # SHOULD rows (ids or globs) that ask for the profile's shapes
    # members whose value the document leaves free and fills with a vocabulary of its own
    # (an A2A data part holding a site's result): key -> the rules inside
    inner: tuple[tuple[str, ShapeRules], ...] = ()
    # answers at these path prefixes speak another document's vocabulary (an A2A surface
    # beside a profile's own actions): prefix -> the rules there
    paths: tuple[tuple[str, ShapeRules], ...] = ()

    def at_path(self, path: str) -> ShapeRules:
        for prefix, rules in self.paths:
            if path.startswith(prefix):
                return replace(rules, codes=self.codes)
        return self

    def inside(self, key: str) -> ShapeRules | None:
        return next((rules for name, rules in self.inner if name == key), None)


@dataclass(frozen=True)
class Mix:
    """How much of each rewrite one seed applies (probabilities per key name)."""

    rename: float
    unwrap: float
    wrap: float
    lift: float
    extra: bool = True
    codes: bool = True


def mix_of(seed: int) -> Mix:
    """Seed 1 renames everything; seed 2 moves levels (unwrap, wrap, lift) and renames
    little; others draw a mix of both."""
    if seed == 1:
        return Mix(rename=1.0, unwrap=0.0, wrap=0.0, lift=0.0)
    if seed == 2:
        return Mix(rename=0.2, unwrap=0.7, wrap=0.5, lift=0.7)
    r = _unit(seed, "mix")
    return Mix(rename=0.4 + 0.5 * r, unwrap=0.5 * (1 - r), wrap=0.3, lift=0.5)


def describe(seed: int) -> str:
    m = mix_of(seed)
    return (f"rename {m.rename:.0%}, unwrap {m.unwrap:.0%}, wrap {m.wrap:.0%}, lift {m.lift:.0%}, "
            "extra members, codes and messages changed")


def _unit(seed: int, *parts: Any) -> float:
    """A number in [0, 1) fixed by the seed and the parts (a key name, say)."""
    digest = hashlib.blake2b(repr((seed, *parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


# -- what a profile declares -------------------------------------------------------------
def property_names(schema: Any, into: set[str], depth: int = 40, maps: set[str] | None = None) -> set[str]:
    """Every property name (and required name) anywhere in a schema or document; the
    names whose schema is a map (``additionalProperties`` a schema, no ``properties``)
    go to ``maps`` too."""
    if depth <= 0:
        return into
    if isinstance(schema, dict):
        if isinstance(schema.get("properties"), dict):
            into.update(str(k) for k in schema["properties"])
            if maps is not None:
                maps.update(str(k) for k, sub in schema["properties"].items() if _is_map(sub))
        if isinstance(schema.get("required"), list):
            into.update(str(k) for k in schema["required"] if isinstance(k, str))
        for value in schema.values():
            property_names(value, into, depth - 1, maps)
    elif isinstance(schema, list):
        for value in schema:
            property_names(value, into, depth - 1, maps)
    return into


def _is_map(schema: Any) -> bool:
    if not isinstance(schema, dict) or schema.get("properties"):
        return False
    extra = schema.get("additionalProperties")
    return isinstance(extra, dict) or extra is True or bool(schema.get("patternProperties")) or (
        schema.get("type") == "object" and "additionalProperties" not in schema
        and schema.get("$ref") is None)


def rules_of(profile: Profile) -> ShapeRules:
    """The profile's ``shapes:`` block read against its document. Without the block every
    property name of the document is named (nothing it defines is rewritten). With it:
    ``named_from`` (pointers whose schemas name answer members, or ``{file, pointer}`` of
    a document the profile rests on), ``named`` (keys the document's prose names, each
    ``{key, at: pointer}``, checked to occur there), the operations' result schemas,
    ``maps`` (named keys whose objects are maps), ``codes`` (``profile``: the codes of
    ``errors:`` are the profile's choice; or a list of error names), ``keep_paths``,
    ``rows``, ``inner`` (key -> a block of the same form for what that member holds) and
    ``paths`` (a path prefix -> a block of the same form for the answers served there)."""
    block = profile.settings.get("shapes")
    if block is None:
        named: set[str] = set()
        maps: set[str] = set()
        property_names(profile.spec, named, maps=maps)
        return ShapeRules(frozenset(named), frozenset(maps))
    rules = _rules(profile, block, "shapes")
    for op in profile.operations.values():
        if op.result_schema:
            named, maps = set(rules.named), set(rules.maps)
            property_names(op.result_schema, named, maps=maps)
            rules = replace(rules, named=frozenset(named), maps=frozenset(maps))
    codes: frozenset[Any] = frozenset()
    chosen = block.get("codes")
    if chosen == "profile":
        codes = frozenset(e.code for e in profile.errors.values())
    elif isinstance(chosen, list):
        unknown = [c for c in chosen if c not in {e.name for e in profile.errors.values()}]
        if unknown:
            raise ValueError(f"profile {profile.name}: shapes.codes names errors that are not in "
                             f"errors: {unknown}")
        codes = frozenset(e.code for e in profile.errors.values() if e.name in chosen)
    elif chosen is not None:
        raise ValueError(f"profile {profile.name}: shapes.codes is 'profile' or a list of error names, "
                         f"not {chosen!r}")
    return replace(rules, codes=codes, keep_paths=tuple(block.get("keep_paths") or ()),
                   rows=tuple(block.get("rows") or ()))


def _rules(profile: Profile, block: Any, where_in: str) -> ShapeRules:
    if not isinstance(block, dict):
        raise ValueError(f"profile {profile.name}: {where_in}: must be a mapping")
    named: set[str] = set()
    maps: set[str] = set()
    for entry in block.get("named_from") or []:
        document, pointer, where = profile.spec, str(entry), profile.spec_relpath
        if isinstance(entry, dict):  # another document the profile rests on: {file, pointer}
            where, pointer = str(entry.get("file")), str(entry.get("pointer", ""))
            document = _document(where)
        found = at_pointer(document, pointer)
        if found is None:
            raise ValueError(f"profile {profile.name}: {where_in}.named_from {pointer!r} is not in {where}")
        property_names(found, named, maps=maps)
    for entry in block.get("named") or []:
        key, at = (entry.get("key"), entry.get("at")) if isinstance(entry, dict) else (entry, None)
        if at is not None:
            text = json.dumps(at_pointer(profile.spec, str(at)))
            if not re.search(rf"(?<![A-Za-z0-9_]){re.escape(str(key))}(?![A-Za-z0-9_])", text):
                raise ValueError(f"profile {profile.name}: {where_in}.named {key!r} does not occur at {at} "
                                 f"of {profile.spec_relpath}")
        named.add(str(key))
    maps.update(str(k) for k in block.get("maps") or [])
    inner = tuple((str(k), _rules(profile, v, f"{where_in}.inner.{k}"))
                  for k, v in (block.get("inner") or {}).items())
    paths = tuple((str(k), _rules(profile, v, f"{where_in}.paths.{k}"))
                  for k, v in (block.get("paths") or {}).items())
    return ShapeRules(frozenset(named), frozenset(maps), inner=inner, paths=paths)


@functools.lru_cache(maxsize=8)
def _document(relpath: str) -> Any:
    return read_user_json(DATA_ROOT / relpath, relpath, "a JSON document")


# -- the rewrite ---------------------------------------------------------------------------
@dataclass
class Rewriter:
    """Rewrites answers for one seed; ``sent`` holds what the client sent (echoed back, it
    is the client's content and stays as it was)."""

    rules: ShapeRules
    seed: int
    sent: set[str] = field(default_factory=set)

    @property
    def mix(self) -> Mix:
        return mix_of(self.seed)

    def remember(self, body: bytes) -> Any:
        """Note every object and list of a request body; returns the body parsed (or None)."""
        try:
            value = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return None
        for node in _containers(value, DEPTH):
            if len(self.sent) < 200_000:
                self.sent.add(_canon(node))
        return value

    def answer(self, body: Any, status: int) -> Any:
        """One whole answer: a JSON-RPC envelope, or the plain body of an action."""
        if isinstance(body, list):
            return [self.answer(item, status) for item in body]
        if isinstance(body, dict) and body.get("jsonrpc") == "2.0":
            return self.envelope(body)
        return self.payload(body, error=status >= 400)

    def envelope(self, env: dict[str, Any]) -> dict[str, Any]:
        env = dict(env)
        result = env.get("result")
        if isinstance(result, dict) and ("structuredContent" in result or _mcp_content(result)):
            env["result"] = self.mcp(result)
        elif "result" in env:
            env["result"] = self.payload(result, error=False)
        error = env.get("error")
        if isinstance(error, dict):
            error = dict(error)
            if "code" in error:
                error["code"] = self.code(error["code"])
            if isinstance(error.get("message"), str):
                error["message"] = self.message(error["message"])
            if "data" in error:
                error["data"] = self.payload(error["data"], error=True)
            env["error"] = error
        return env

    def mcp(self, result: dict[str, Any]) -> dict[str, Any]:
        """An MCP tool result: its structured content is the payload; a text block that
        carries the same JSON carries the rewritten one."""
        result = dict(result)
        original = result.get("structuredContent")
        shaped = self.payload(original, error=bool(result.get("isError")))
        if "structuredContent" in result:
            result["structuredContent"] = shaped
        content = result.get("content")
        if isinstance(content, list):
            blocks = []
            for block in content:
                if (isinstance(block, dict) and block.get("type") == "text"
                    and isinstance(block.get("text"), str)):
                    try:
                        parsed = json.loads(block["text"])
                    except ValueError:
                        parsed = None
                    if parsed is not None and (original is None or parsed == original):
                        block = {**block, "text": json.dumps(
                            shaped if original is not None
                            else self.payload(parsed, error=bool(result.get("isError"))))}
                blocks.append(block)
            result["content"] = blocks
        return result

    def payload(self, value: Any, *, error: bool) -> Any:
        """The part of an answer whose shape the profile chose (unless the document names it)."""
        shaped = self.node(value, DEPTH, error)
        if isinstance(shaped, dict) and self._profile_shaped(shaped):
            members = [k for k in shaped if k != self.extra_key]
            only = shaped[members[0]] if len(members) == 1 else None
            if (isinstance(only, dict) and not self.named(members[0])
                and self.decide("unwrap-root", members[0], self.mix.unwrap)):
                return only
            if self.decide("wrap-root", ",".join(sorted(shaped)), self.mix.wrap):
                return {self.wrapper("root"): shaped}
        return shaped

    @property
    def extra_key(self) -> str:
        return f"x_{self.seed}_{WRAPPERS[self.seed % len(WRAPPERS)]}_note"

    def node(self, value: Any, depth: int, error: bool, is_map: bool = False) -> Any:
        if depth <= 0:
            return value
        if isinstance(value, list):
            return value if self.echoed(value) else [self.node(v, depth - 1, error) for v in value]
        if is_map and isinstance(value, dict):  # a map the document defines: its keys are data
            return {k: self.node(v, depth - 1, error) for k, v in value.items()}
        if not isinstance(value, dict) or self.echoed(value):
            if isinstance(value, str) and _hashable(value) and value in self.rules.codes:
                return self.code(value)
            return value
        members: dict[str, Any] = {}
        for key, item in value.items():
            if error and key == "message" and isinstance(item, str):
                item = self.message(item)
            if key == "code" and _hashable(item) and item in self.rules.codes:
                item = self.code(item)
            members[key] = item
        # moves: unwrap an object member, or lift a member of a nested object beside it
        for key in list(members):
            item = members[key]
            if self.named(key) or not isinstance(item, dict) or not item or self.echoed(item):
                continue
            if self.decide("unwrap", key, self.mix.unwrap) and not set(item) & (set(members) - {key}):
                del members[key]
                members.update(item)
                continue
            for inner in list(item):
                if (len(item) > 1 and not self.named(inner) and inner not in members
                        and self.decide("lift", f"{key}.{inner}", self.mix.lift)):
                    members[inner] = item[inner]
                    item = {k: v for k, v in item.items() if k != inner}
            members[key] = item
        shaped: dict[str, Any] = {}
        profile_shaped = self._profile_shaped(members)
        for key, item in members.items():
            inside = self.rules.inside(key) if self.named(key) else None
            if inside is not None:
                item = Rewriter(replace(inside, codes=self.rules.codes), self.seed,
                                self.sent).node(item, depth - 1, error)
            else:
                item = self.node(item, depth - 1, error, key in self.rules.maps)
            if self.named(key):
                shaped[key] = item
                continue
            if isinstance(item, dict) and not self.echoed(item) and self.decide("wrap", key, self.mix.wrap):
                item = {self.wrapper(key): item}
            shaped[self.rename(key, set(members) | set(shaped))] = item
        if profile_shaped and self.mix.extra:
            shaped[self.extra_key] = "a member this client does not know"
        order = sorted(shaped, key=lambda k: _unit(self.seed, "order", k))
        return {k: shaped[k] for k in order}

    # -- decisions ------------------------------------------------------------------------
    def named(self, key: str) -> bool:
        return key in self.rules.named

    def echoed(self, value: Any) -> bool:
        return bool(value) and _canon(value) in self.sent

    def _profile_shaped(self, obj: dict[str, Any]) -> bool:
        return any(not self.named(k) for k in obj)

    def decide(self, what: str, key: str, chance: float) -> bool:
        return chance > 0 and _unit(self.seed, what, key) < chance

    def wrapper(self, key: str) -> str:
        return next(w for w in (WRAPPERS[int(_unit(self.seed, "wrapper", key) * len(WRAPPERS))], *WRAPPERS)
                    if not self.named(w))

    def rename(self, key: str, taken: Iterable[str]) -> str:
        if not self.decide("rename", key, self.mix.rename):
            return key
        taken = set(taken)
        for candidate in _renamings(key, self.seed):
            if candidate != key and candidate not in taken and not self.named(candidate):
                return candidate
        return key

    def code(self, code: Any) -> Any:
        if not self.mix.codes or not _hashable(code) or code not in self.rules.codes:
            return code
        if isinstance(code, str):
            return code.lower() if self.seed % 2 else f"E_{code}"
        if isinstance(code, int) and not isinstance(code, bool):
            return -32000 - (abs(code) * 7 + self.seed) % 99
        return code

    def message(self, text: str) -> str:
        """Reworded, keeping apart what the server kept apart (two refusals for two reasons
        still read differently, as on any server)."""
        if not text:
            return text
        tag = hashlib.blake2b(f"{self.seed}:{text}".encode(), digest_size=4).hexdigest()
        return f"refused ({tag})"


def _renamings(key: str, seed: int) -> list[str]:
    camel = re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), key)
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", lambda m: "_" + m.group(1).lower(), key)
    suffix = f"{key}_{SUFFIXES[int(_unit(seed, 'suffix', key) * len(SUFFIXES))]}"
    first = [camel, snake] if seed % 2 else [snake, camel]
    return [*first, suffix]


def _hashable(value: Any) -> bool:
    return not isinstance(value, (dict, list))


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _containers(value: Any, depth: int) -> Iterable[Any]:
    if depth <= 0:
        return
    if isinstance(value, (dict, list)) and value:
        yield value
        for item in value.values() if isinstance(value, dict) else value:
            yield from _containers(item, depth - 1)


def _mcp_content(result: dict[str, Any]) -> bool:
    content = result.get("content")
    return (isinstance(content, list) and all(isinstance(b, dict) and "type" in b for b in content)
            and bool(content))


# -- the ASGI wrapper ----------------------------------------------------------------------
class ShapedApp:
    """The reference app with every JSON answer rewritten by ``rewriter`` (control
    routes and ``keep_paths`` excepted); ``state`` is the wrapped app's, so faults and
    variants still patch the reference."""

    def __init__(self, app: Any, rewriter: Rewriter, skip: tuple[str, ...] = ("/_control",)) -> None:
        self.app = app
        self.state = app.state
        self.rewriter = rewriter
        self.skip = skip + rewriter.rules.keep_paths

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        path = scope.get("path", "")
        keep = [any(path.startswith(p) for p in self.skip)]
        rules = self.rewriter.rules.at_path(path)
        rewriter = (self.rewriter if rules is self.rewriter.rules
                    else Rewriter(rules, self.rewriter.seed, self.rewriter.sent))

        async def receiving() -> Any:
            message = await receive()
            if message.get("type") == "http.request":
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    sent = self.rewriter.remember(b"".join(chunks))
                    method = sent.get("method") if isinstance(sent, dict) else None
                    keep[0] = keep[0] or (isinstance(method, str) and method.startswith(MCP_OWN))
            return message

        start: dict[str, Any] = {}
        body: list[bytes] = []
        streaming = bytearray()  # an event stream's text not yet rewritten (a line cut short)

        async def sending(message: dict[str, Any]) -> None:
            if keep[0]:
                await send(message)
            elif message["type"] == "http.response.start":
                start.update(message)
                if "event-stream" in content_type(start):  # passed on as it comes, line by line
                    await send({**start, "headers": [(k, v) for k, v in start.get("headers", [])
                                                     if k.lower() != b"content-length"]})
            elif message["type"] == "http.response.body" and "event-stream" in content_type(start):
                streaming.extend(message.get("body", b""))
                more = bool(message.get("more_body"))
                cut = streaming.rfind(b"\n") + 1 if more else len(streaming)
                ready = bytes(streaming[:cut])
                del streaming[:cut]
                out = self.rewrite(ready, content_type(start), int(start.get("status", 200)), rewriter) \
                    if ready else b""
                await send({"type": "http.response.body", "body": out, "more_body": more})
            elif message["type"] == "http.response.body":
                body.append(message.get("body", b""))
                if not message.get("more_body"):
                    await self._emit(start, b"".join(body), send, rewriter)
            else:
                await send(message)

        await self.app(scope, receiving, sending)

    async def _emit(self, start: dict[str, Any], content: bytes, send: Any, rewriter: Rewriter) -> None:
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        kind = next((v.decode("latin-1") for k, v in headers if k.lower() == b"content-type"), "")
        status = int(start.get("status", 200))
        content = self.rewrite(content, kind, status, rewriter)
        headers.append((b"content-length", str(len(content)).encode()))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": content})

    def rewrite(self, content: bytes, kind: str, status: int, rewriter: Rewriter | None = None) -> bytes:
        rewriter = rewriter or self.rewriter
        if "json" in kind:
            try:
                return json.dumps(rewriter.answer(json.loads(content), status)).encode()
            except (ValueError, UnicodeDecodeError):
                return content
        if "event-stream" in kind:
            lines = []
            for line in content.decode("utf-8", "replace").split("\n"):
                if line.startswith("data:"):
                    try:
                        line = "data: " + json.dumps(rewriter.answer(json.loads(line[5:]), status))
                    except ValueError:
                        pass
                lines.append(line)
            return "\n".join(lines).encode()
        return content


def content_type(start: dict[str, Any]) -> str:
    """The Content-Type of an ASGI response start message ("" without one)."""
    return next((v.decode("latin-1") for k, v in start.get("headers", [])
                 if k.lower() == b"content-type"), "")


def shaped(app: Any, profile: Profile, seed: int) -> ShapedApp:
    return ShapedApp(app, Rewriter(rules_of(profile), seed))
