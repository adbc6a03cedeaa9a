"""The ``grpc`` binding kind: a proto service called with grpcio. Its messages are built at
run time from the proto the profile names (protoc's descriptor set, protobuf's message
factory), so a check's ProtoJSON dict goes in and a ProtoJSON dict comes out
(``google.protobuf.json_format``); a status and its ``google.rpc.Status`` details (the
``grpc-status-details-bin`` trailer) are read into the same ``Reply`` every binding gives.
A server-streaming method answers the list of its messages.

An entry declares, beside the common keys (bearer, headers: sent as metadata, with what a
caller's credential carries in headers; over TLS, the run's TLS settings and a caller's client
certificate make the channel's credentials):

    proto: specs/<protocol>/<file>.proto        (the document, under the data root)
    service: <Name>                             (a service of that file)
    url: host:port | http://host:port | https://host[:port]   (where it lives: a card says)

The binding knows no protocol: the proto, the service and the address are all it takes.
Only a loopback address or the run's own target host is called (http:// and a bare
host:port without TLS on loopback only)."""

from __future__ import annotations

import functools
import ipaddress
import json
import os
import re
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from conformance.documents.proto import compile_descriptor_set, load_proto
from conformance.model import Exchange
from conformance.paths import DATA_ROOT
from conformance.transport.binding import Binding, QueryReader, Reply, binding_kind
from conformance.transport.credentials import ClientCert, TlsSettings, loadable
from conformance.transport.http import DEFAULT_MAX_ANSWER, HttpReply, json_excerpt

# grpc's core logs to stderr (a peer going away, say): only its errors, unless the user asks
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

STATUS_DETAILS = "grpc-status-details-bin"  # where google.rpc.Status travels (the gRPC convention)
MAX_EVENTS = 1000  # the most messages of one stream a call keeps


@dataclass(frozen=True)
class Service:
    """One proto service: its full name and, per method, the request and response classes."""

    full_name: str
    methods: dict[str, tuple[Any, Any, bool]]  # name -> (request class, response class, server streaming)
    required: frozenset[str] = frozenset()  # full names of the fields the proto marks REQUIRED


@functools.lru_cache(maxsize=4)
def service_of(proto: str, service: str) -> Service:
    """The message classes of ``service`` in the proto at ``proto`` (under the data root),
    from protoc's descriptor set in a pool of their own."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    path = Path(proto) if Path(proto).is_absolute() else DATA_ROOT / proto
    pool = descriptor_pool.DescriptorPool()
    for file in descriptor_pb2.FileDescriptorSet.FromString(compile_descriptor_set(path)).file:
        pool.Add(file)
    found = pool.FindFileByName(path.name).services_by_name.get(service)
    if found is None:
        raise ValueError(f"{proto} has no service {service!r}")

    def cls(descriptor: Any) -> type:
        return message_factory.GetMessageClass(descriptor)

    required = frozenset(f"{m.full_name}.{f.name}" for m in load_proto(path).messages.values()
                         for f in m.fields if f.required)
    return Service(found.full_name, {m.name: (cls(m.input_type), cls(m.output_type), m.server_streaming)
                                     for m in found.methods}, required)


@functools.lru_cache(maxsize=1)
def http_mapping() -> dict[str, int]:
    """Each gRPC status name -> the HTTP status google/rpc/code.proto maps it to ("HTTP
    Mapping: 404 Not Found"), read from the file googleapis-common-protos ships."""
    import google.rpc

    text = (Path(next(iter(google.rpc.__path__))) / "code.proto").read_text()
    mapped = r"HTTP Mapping: (\d{3})[^\n]*\n(?:\s*//[^\n]*\n)*?\s*([A-Z_]+) = \d+;"
    return {m.group(2): int(m.group(1)) for m in re.finditer(mapped, text)}


def status_details(trailers: Mapping[str, Any]) -> tuple[list[Any] | None, str]:
    """The details of a google.rpc.Status trailer as ProtoJSON (each an object with its
    ``@type``), or None without one; a detail of a type this process does not know is
    ``{"@type": ..., "value": base64}``. The second item says what could not be read."""
    from google.protobuf import json_format
    from google.rpc import error_details_pb2, status_pb2  # noqa: F401  (their types resolve in Any)

    raw = trailers.get(STATUS_DETAILS)
    if raw is None:
        return None, ""
    try:
        status = status_pb2.Status.FromString(raw if isinstance(raw, bytes) else str(raw).encode())
    except Exception as exc:  # noqa: BLE001  (a stranger's bytes)
        return None, f"{STATUS_DETAILS} is no google.rpc.Status ({type(exc).__name__})"
    out: list[Any] = []
    for detail in status.details:
        try:
            out.append(json_format.MessageToDict(detail))
        except Exception:  # noqa: BLE001  (a type no pool here knows)
            import base64

            value = base64.b64encode(detail.value).decode()
            out.append({"@type": detail.type_url, "value": value} if detail.type_url else {"value": value})
    return out, ""


def to_json(message: Any, required: frozenset[str] = frozenset()) -> Any:
    """A message as ProtoJSON the way its wire carries it: a field without presence at its
    default value (an empty string or list, a zero) did not travel and is left out, as
    ProtoJSON does, unless the proto marks it REQUIRED: then it is there, at that value
    (the wire cannot tell it from absent, and the proto says it is present)."""
    from google.protobuf import json_format

    return prune(json_format.MessageToDict(message, always_print_fields_with_no_presence=True),
                 message.DESCRIPTOR, required)


def prune(value: Any, descriptor: Any, required: frozenset[str]) -> Any:
    """``value`` (a message's ProtoJSON) without the defaults of its fields that have no
    presence and are not REQUIRED."""
    if not isinstance(value, dict) or descriptor.full_name.startswith("google.protobuf."):
        return value
    for f in descriptor.fields:
        if f.json_name not in value:
            continue
        repeated, inner = bool(f.is_repeated), value[f.json_name]
        if not f.has_presence and f.full_name not in required and is_default(f, inner):
            del value[f.json_name]
        elif f.message_type is not None and not f.message_type.GetOptions().map_entry:
            for item in inner if repeated and isinstance(inner, list) else [inner]:
                prune(item, f.message_type, required)
    return value


def is_default(field: Any, value: Any) -> bool:
    """Whether ProtoJSON ``value`` is ``field``'s default (proto3: empty, zero, the enum's 0)."""
    if field.is_repeated:
        return value in ([], {})
    if field.enum_type is not None:
        zero = field.enum_type.values_by_number.get(0)
        return zero is not None and value == zero.name
    return field.message_type is None and value in ("", "0", 0, False)


@dataclass
class GrpcReply(Reply):
    """A gRPC answer: ``error_code`` is the status code's number (google.rpc.Status.code),
    ``grpc_status`` its name; ``http`` holds what was recorded (its status the HTTP
    mapping of the gRPC status, for code that asks for one)."""

    grpc_status: str = "OK"
    events: list[Any] | None = None  # a stream's messages, in order
    cut: str = ""  # why a stream's reading ended before the server ended it (the deadline, MAX_EVENTS)

    def describe(self) -> str:
        if self.ok:
            return f"gRPC OK, result {json_excerpt(self.result)}"
        if not self.spoke:
            return f"no gRPC answer: {self.error_message[:160]}"
        data = f" details {json_excerpt(self.error_data)}" if self.error_data not in (None, [], "") else ""
        return f"gRPC {self.grpc_status} {self.error_message[:100]!r}{data}"


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return host == "localhost"


@binding_kind
class GrpcBinding(Binding):
    """Unary methods answer one message; server-streaming ones the list of their messages
    (``events``; ``result`` is that list). Each call is bounded by the run's timeout and
    its answer by the run's size limit."""

    kind = "grpc"
    kind_statuses = False
    key_places = ("header", "cookie")  # metadata; a call has no query

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.service = service_of(str(self.entry["proto"]), str(self.entry["service"]))
        self._channels: dict[tuple[str, bool, Any], Any] = {}

    # -- where ---------------------------------------------------------------------------
    def address(self) -> tuple[str, bool]:
        """(host:port, TLS) of the entry's ``url``: loopback, or the run's target host only."""
        url = str(self.entry.get("url") or "")
        parts = urllib.parse.urlsplit(url if "//" in url else f"//{url}")
        host, tls = parts.hostname or "", parts.scheme == "https"
        port = parts.port or (443 if tls else None)
        target = urllib.parse.urlsplit(self.http.target).hostname if "//" in self.http.target else None
        if not host or port is None:
            raise ValueError(f"binding {self.name}: no gRPC address (url {url!r})")
        if not is_loopback(host) and host != target:
            raise ValueError(f"binding {self.name}: {host} is neither loopback nor the run's target host")
        if not tls and not is_loopback(host):
            raise ValueError(f"binding {self.name}: {url} without TLS off loopback")
        return f"{'[' + host + ']' if ':' in host else host}:{port}", tls

    def secure(self) -> bool:
        try:
            return self.address()[1]
        except ValueError:
            return False

    def channel(self, cert: ClientCert | None = None) -> Any:
        """The channel to the entry's address, opened on the first call and closed with the
        run's transport: one connection per address (and client certificate), as a client keeps
        (a channel per call paid a connection and an HTTP/2 handshake each time, 5 ms on
        loopback). A target that goes away meanwhile fails the next call as UNAVAILABLE; none
        is retried."""
        import grpc

        where, tls = self.address()
        found = self._channels.get((where, tls, cert if tls else None))
        if found is None:
            limit = int(getattr(self.http, "max_answer", DEFAULT_MAX_ANSWER))
            options = [("grpc.max_receive_message_length", limit), ("grpc.max_send_message_length", limit),
                       ("grpc.enable_retries", 0)]
            found = (grpc.secure_channel(where, self.channel_credentials(cert), options=options)
                     if tls else grpc.insecure_channel(where, options=options))
            if not self._channels and hasattr(self.http, "closing"):
                self.http.closing.append(self.close_channels)
            self._channels[(where, tls, cert if tls else None)] = found
        return found

    def channel_credentials(self, cert: ClientCert | None) -> Any:
        """The run's TLS settings (its CA bundle; its or the caller's client certificate) as
        grpc's channel credentials; ValueError where grpc cannot follow them."""
        import grpc

        settings = getattr(self.http, "tls", None) or TlsSettings()
        if not settings.verify:
            raise ValueError("gRPC over TLS cannot skip verifying the target (config tls.verify: false): "
                             "name its CA in tls.ca instead")

        def read(value: str | None) -> bytes | None:
            return Path(loadable(value)).read_bytes() if value else None
        chosen = cert or settings.cert
        return grpc.ssl_channel_credentials(root_certificates=read(settings.ca),
                                            private_key=read(chosen.key or chosen.cert) if chosen else None,
                                            certificate_chain=read(chosen.cert) if chosen else None)

    def close_channels(self) -> None:
        while self._channels:
            self._channels.popitem()[1].close()

    # -- calling -------------------------------------------------------------------------
    def _send(self, operation: str, params: Any, headers: dict[str, str], raw: str | None,
              **options: Any) -> Reply:
        from google.protobuf import json_format

        self.http.check_running()
        started = time.perf_counter()
        if raw is not None:
            try:
                params = json.loads(raw)
            except ValueError:
                return self.unsent(operation, headers, raw, "the body is not JSON: protobuf cannot carry it",
                                   started)
        if operation not in self.service.methods:
            return self.unsent(operation, headers, params, f"the service has no method {operation}", started)
        request_cls, response_cls, streaming = self.service.methods[operation]
        try:
            request = json_format.ParseDict(params if params is not None else {}, request_cls(),
                                            ignore_unknown_fields=True)
        except (json_format.ParseError, TypeError, ValueError, AttributeError) as exc:
            why = f"the request cannot be expressed as {request_cls.__name__}: {str(exc)[:200]}"
            return self.unsent(operation, headers, params, why, started)
        metadata = tuple((k.lower(), v) for k, v in headers.items()
                         if v is not None and k.lower() not in ("content-type",))
        timeout = float(options.get("timeout") or self.http.timeout)
        deadline = getattr(self.http, "run_deadline", None)
        if deadline is not None:
            timeout = max(0.001, min(timeout, deadline - time.monotonic()))
        presented = getattr(self.http, "presented", None)
        try:
            channel = self.channel(presented.cert if presented is not None else None)
        except ValueError as exc:  # no address it may call, or TLS settings grpc cannot follow
            return self.unsent(operation, headers, params, str(exc), started)
        path = f"/{self.service.full_name}/{operation}"
        encode, decode = (lambda m: m.SerializeToString()), response_cls.FromString
        try:
            if streaming:
                return self.stream(channel, operation, request, metadata, timeout, path, encode, decode,
                                   started)
            call = channel.unary_unary(path, request_serializer=encode, response_deserializer=decode)
            answer, state = call.with_call(request, timeout=timeout, metadata=metadata)
        except ValueError as exc:  # grpcio refuses metadata it cannot send
            return self.unsent(operation, headers, params, str(exc), started)
        except Exception as exc:  # noqa: BLE001  (grpc.RpcError: a status)
            return self.failed(operation, metadata, params, exc, started)
        result = to_json(answer, self.service.required)
        return self.answered(operation, metadata, params, result, state.trailing_metadata(), started)

    def stream(self, channel: Any, operation: str, request: Any, metadata: tuple[tuple[str, str], ...],
               timeout: float, path: str, encode: Any, decode: Any, started: float) -> Reply:
        """A server stream read to its end (or its deadline, or MAX_EVENTS): its messages."""
        from google.protobuf import json_format

        params = json_format.MessageToDict(request)
        call = channel.unary_stream(path, request_serializer=encode, response_deserializer=decode)
        responses = call(request, timeout=timeout, metadata=metadata)
        events: list[Any] = []
        cut = ""
        try:
            for message in responses:
                events.append(to_json(message, self.service.required))
                if len(events) >= MAX_EVENTS:
                    cut = f"{MAX_EVENTS} messages read, the most a call keeps"
                    responses.cancel()
                    break
        except Exception as exc:  # noqa: BLE001  (grpc.RpcError)
            code = getattr(exc, "code", lambda: None)()
            if not events or getattr(code, "name", "") not in ("DEADLINE_EXCEEDED", "CANCELLED"):
                reply = self.failed(operation, metadata, params, exc, started)
                reply.events = events
                return reply
            cut = cut or f"still open after {timeout:g} s (gRPC {getattr(code, 'name', '')})"
        reply = self.answered(operation, metadata, params, events, responses.trailing_metadata() or (),
                              started, events=events)
        reply.cut = cut
        return reply

    # -- answers -------------------------------------------------------------------------
    def record(self, operation: str, metadata: Any, params: Any, status: int, trailers: Any, body: Any,
               started: float, error: str = "") -> HttpReply:
        """The exchange, redacted, in the run's log (as every HTTP exchange is)."""
        redact = self.http.redact
        text = json.dumps(body) if body is not None else ""
        request = {"method": "gRPC", "url": f"grpc://{self.entry.get('url', '')}/{self.service.full_name}/"
                                            f"{operation}",
                   "headers": {k: redact(str(v)) for k, v in metadata},
                   "body": redact(json.dumps(params)) if params is not None else None}
        response = None if error else {"status": status, "headers": {k: redact(str(v)) for k, v in trailers
                                                                     if not k.endswith("-bin")},
                                       "body": redact(text) if text else None}
        exchange = Exchange(request, response, (time.perf_counter() - started) * 1000, redact(error))
        self.http._remember(exchange)
        return HttpReply(status, httpx.Headers({k: str(v) for k, v in trailers if not k.endswith("-bin")}),
                         text.encode(), exchange)

    def answered(self, operation: str, metadata: Any, params: Any, result: Any, trailers: Any,
                 started: float, events: list[Any] | None = None) -> GrpcReply:
        http = self.record(operation, metadata, params, 200, tuple(trailers), result, started)
        self.http.silent = 0
        return GrpcReply(self.name, http, True, result, envelope=result, statuses=False, spoke=True,
                         events=events)

    def failed(self, operation: str, metadata: Any, params: Any, exc: BaseException,
               started: float) -> GrpcReply:
        """A status other than OK: its code, message and details."""
        code = getattr(exc, "code", lambda: None)()
        trailers = tuple(getattr(exc, "trailing_metadata", lambda: ())() or ())
        message = str(getattr(exc, "details", lambda: "")() or "")
        name = getattr(code, "name", "UNKNOWN")
        number = code.value[0] if code is not None else 2
        details, unread = status_details(dict(trailers))
        # a status the client made itself (no connection, a deadline passed here) is no answer
        spoke = not (name in ("UNAVAILABLE", "DEADLINE_EXCEEDED") and not trailers)
        body = {"code": number, "status": name, "message": message, "details": details}
        http = self.record(operation, metadata, params, http_mapping().get(name, 500), trailers, body,
                           started, "" if spoke else f"gRPC {name}: {message}")
        if not spoke:
            self.http._no_answer(f"gRPC {name}: {message}")
        envelope = {**body, "unread": unread} if unread else body
        return GrpcReply(self.name, http, False, None, number, message, True, envelope, statuses=False,
                         error_data=details, spoke=spoke, grpc_status=name)

    def unsent(self, operation: str, headers: Mapping[str, Any], params: Any, why: str,
               started: float) -> GrpcReply:
        """A request the binding could not send: not an answer of the target."""
        metadata = tuple((k.lower(), v) for k, v in headers.items() if v is not None)
        http = self.record(operation, metadata, params, 0, (), None, started, f"not sent: {why}")
        return GrpcReply(self.name, http, False, None, None, f"not sent: {why}", False, None, statuses=False,
                         grpc_status="")

    def carries(self, params: Any) -> bool:
        return isinstance(params, dict)

    def read_back(self, operation: str, params: Any, query: QueryReader | None = None) -> Any:
        """``params`` as the server reads them once they travel as ``operation``'s request
        message (what protobuf keeps of them: no member the proto does not have);
        ValueError where protobuf cannot carry them."""
        from google.protobuf import json_format

        request_cls = self.service.methods[operation][0]
        try:
            return json_format.MessageToDict(json_format.ParseDict(params, request_cls(),
                                                                   ignore_unknown_fields=True))
        except (json_format.ParseError, TypeError, AttributeError) as exc:
            raise ValueError(str(exc)) from None
