"""The reference's gRPC binding (section 10): a mixin of A2AReference. A grpcio server on
127.0.0.1 (a free port), started the first time the card is served and stopped when the
reference is collected (or the process ends), serves A2AService of the proto over the
same instance as the HTTP bindings: the same ``caller``, ``check_version``,
``check_extensions`` and ``dispatch``, with the service parameters read from the call's
metadata (section 10.2). Messages are built from the proto at run time; an error is a
gRPC status (section 5.4's gRPC column) whose ``grpc-status-details-bin`` trailer is a
google.rpc.Status holding the error's details (section 10.6: an ErrorInfo for an A2A
error). Each behaviour is one method a fault replaces."""

from __future__ import annotations

import threading
import weakref
from concurrent import futures
from types import SimpleNamespace
from typing import Any

import grpc  # noqa: E402,I001  (after the transport, which sets grpc's log level first)
from starlette.datastructures import Headers, QueryParams

from conformance.kit.reference import Refusal
from conformance.protocols.a2a import documents as docs
from conformance.transport.grpc import STATUS_DETAILS, Service, service_of
from conformance.transport.http import DEFAULT_MAX_ANSWER


class CallMetadata:
    """A call's metadata read as the HTTP bindings read a request: ``headers`` (names in
    any case) and no query parameters."""

    def __init__(self, metadata: Any, path: str = "") -> None:
        self.url = SimpleNamespace(path=path)  # the call's method, /package.Service/Method
        self.method = "POST"  # a gRPC call is an HTTP/2 POST
        self.headers = Headers(raw=[(str(k).lower().encode("latin-1"), str(v).encode("latin-1"))
                                    for k, v in metadata or () if not str(k).endswith("-bin")])
        self.query_params = QueryParams("")
        self.base_url = ""


class GrpcParts:
    """The gRPC server of one reference, and how it answers."""

    grpc_lock = threading.Lock()

    def reset_part(self) -> None:
        """No state of its own: gRPC calls change the world the other bindings see."""

    # -- the server ----------------------------------------------------------------------
    def grpc_service(self) -> Service:
        ref: Any = self
        return service_of(docs.PROTO, ref.profile.settings["proto"]["service"])

    def grpc_service_name(self) -> str:
        """The full name the service is served under (``package.A2AService``)."""
        return self.grpc_service().full_name

    def grpc_address(self) -> str:
        """host:port of this reference's gRPC server, started on first use."""
        with GrpcParts.grpc_lock:
            found = getattr(self, "_grpc_address", None)
            if found is None:
                found = self._grpc_address = start_server(self)
            return str(found)

    def grpc_serves(self, method: str) -> bool:
        """Whether ``method`` of the service is served (every one is)."""
        return True

    def grpc_interface(self) -> dict[str, Any]:
        """The card's entry for the gRPC binding (section 8.3.1; the URL is host:port)."""
        ref: Any = self
        return {"url": self.grpc_address(), "protocolBinding": "GRPC", "protocolVersion": ref.config.version}

    # -- one call ------------------------------------------------------------------------
    def grpc_call(self, method: str, params: dict[str, Any], context: Any) -> Any:
        """What ``method`` answers to ``params`` (a Refusal to refuse), the service
        parameters read from the metadata (section 10.2)."""
        ref: Any = self
        request = CallMetadata(context.invocation_metadata(), f"/{self.grpc_service_name()}/{method}")
        caller = self.grpc_caller(request)
        self.grpc_check_version(request)
        ref.check_extensions(request, method)
        return ref.dispatch(method, params, caller)

    def grpc_caller(self, request: Any) -> str:
        """Who calls: the authorization metadata, read as the Authorization header is."""
        ref: Any = self
        return str(ref.caller(request))

    def grpc_check_version(self, request: Any) -> None:
        """The a2a-version metadata, checked as the A2A-Version header is."""
        ref: Any = self
        ref.check_version(request)

    # -- errors --------------------------------------------------------------------------
    def grpc_status(self, refusal: Refusal) -> str:
        """Section 5.4's gRPC column for an A2A error; for the others the status of the
        refusal's kind (a validation error INVALID_ARGUMENT, as 10.6's example)."""
        table = docs.grpc_statuses()
        if refusal.name in table:
            return table[refusal.name]
        if refusal.name == "MethodNotFoundError":
            return "UNIMPLEMENTED"
        if refusal.name == "InternalError" or (refusal.status or 0) >= 500:
            return "INTERNAL"
        from conformance.protocols.a2a.client import grpc_validation_status

        return {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED"}.get(refusal.status or 0,
                                                                      grpc_validation_status())

    def grpc_details(self, refusal: Refusal) -> list[dict[str, Any]]:
        """The status's details: those the other bindings carry (ErrorInfo, BadRequest)."""
        ref: Any = self
        return list(ref.error_details(refusal))

    def grpc_trailer(self, refusal: Refusal, code: int) -> bytes:
        """The google.rpc.Status of ``grpc-status-details-bin``; a detail whose @type no
        pool knows travels with its JSON as the value (and an empty type without one)."""
        from google.protobuf import any_pb2, json_format
        from google.rpc import error_details_pb2, status_pb2  # noqa: F401  (their types resolve)

        status = status_pb2.Status(code=code, message=refusal.message)
        for detail in self.grpc_details(refusal):
            packed = any_pb2.Any()
            try:
                json_format.ParseDict(detail, packed)
            except json_format.ParseError:
                packed.type_url = str(detail.get("@type", "")) if isinstance(detail, dict) else ""
                packed.value = str(detail).encode()
            status.details.append(packed)
        return bytes(status.SerializeToString())

    def grpc_abort(self, context: Any, refusal: Refusal) -> None:
        import grpc

        code = grpc.StatusCode[self.grpc_status(refusal)]
        ref: Any = self
        challenge = tuple((k.lower(), v) for k, v in ref.challenge(refusal).items())  # section 3.3.2
        details = self.grpc_trailer(refusal, code.value[0])
        context.set_trailing_metadata(((STATUS_DETAILS, details), *challenge))
        context.abort(code, refusal.message)


def start_server(ref: GrpcParts) -> str:
    """A grpcio server for ``ref`` on 127.0.0.1; it holds ``ref`` weakly and stops once
    ``ref`` is collected."""
    service = ref.grpc_service()
    weak = weakref.ref(ref)
    handlers = {name: handler(weak, name, request_cls, response_cls, streaming)
                for name, (request_cls, response_cls, streaming) in service.methods.items()}
    limit = DEFAULT_MAX_ANSWER
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="a2a-grpc"),
                         options=[("grpc.max_receive_message_length", limit),
                                  ("grpc.max_send_message_length", limit), ("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers((Router(weak, handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    weakref.finalize(ref, server.stop, None)
    return f"127.0.0.1:{port}"


class Router(grpc.GenericRpcHandler):
    """Routes each call by its full method name, looked up on the reference at call time
    (a fault renames the service)."""

    def __init__(self, weak: Any, handlers: dict[str, Any]) -> None:
        self.weak, self.handlers = weak, handlers

    def service(self, details: Any) -> Any:
        ref = self.weak()
        if ref is None:
            return None
        service, _, method = details.method.lstrip("/").rpartition("/")
        if service != ref.grpc_service_name():
            return None
        return self.handlers.get(method) if ref.grpc_serves(method) else None


def handler(weak: Any, method: str, request_cls: Any, response_cls: Any, streaming: bool) -> Any:
    from google.protobuf import json_format

    def answer(request: Any, context: Any) -> Any:
        ref = weak()
        if ref is None:
            context.abort(grpc.StatusCode.UNAVAILABLE, "the reference is gone")
        params = json_format.MessageToDict(request)
        try:
            result = ref.grpc_call(method, params, context)
        except Refusal as refusal:
            ref.grpc_abort(context, refusal)
        return result

    def message(value: Any) -> Any:
        return json_format.ParseDict(value if value is not None else {}, response_cls(),
                                     ignore_unknown_fields=True)

    def unary(request: Any, context: Any) -> Any:
        return message(answer(request, context))

    def stream(request: Any, context: Any) -> Any:
        result = answer(request, context)
        stop = getattr(result, "stop", None)
        if callable(stop):  # a stream the caller stops reading frees its thread at once
            context.add_callback(stop)
        for event in [result] if isinstance(result, dict) or result is None else result:
            yield message(event)

    serializer = {"request_deserializer": request_cls.FromString,
                  "response_serializer": lambda m: m.SerializeToString()}
    if streaming:
        return grpc.unary_stream_rpc_method_handler(stream, **serializer)
    return grpc.unary_unary_rpc_method_handler(unary, **serializer)
