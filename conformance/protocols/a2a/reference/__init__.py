"""The reference A2A 1.0 server: one agent, both bindings of part 1 (JSON-RPC 2.0 and
HTTP+JSON), the agent card at /.well-known/agent-card.json, tasks in memory, and a
scriptable agent whose next outcome control picks (``script``): completed (the text echoed
back as an artifact), input_required, auth_required, failed, rejected, long_running
(working until canceled or ``finish``ed) or message (a direct Message, no task).

Everything the documents fix is read from them: the methods and their REST routes (the
proto), the error codes and statuses (section 5.4), the ErrorInfo rules (section 11.6), the
task states and which are terminal (the proto), the request schemas (the bundle, with the
proto's REQUIRED fields). Each behaviour is one small method a fault replaces."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import re
import threading
import uuid
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, cast

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from conformance.documents.schemas import validator_for
from conformance.kit.reference import Reference, Refusal, is_int, strict_json
from conformance.model import Profile
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a import wire
from conformance.protocols.a2a.names import VERSION_HEADER
from conformance.protocols.a2a.reference.extensions import ExtensionParts
from conformance.protocols.a2a.reference.grpc import GrpcParts
from conformance.protocols.a2a.reference.host import A2AReferenceConfig
from conformance.protocols.a2a.reference.push import PushParts
from conformance.protocols.a2a.reference.signing import SigningParts
from conformance.protocols.a2a.reference.stream import EventStream, StreamParts

JSONRPC_PATH = "/a2a/jsonrpc"
REST_PREFIX = "/a2a/rest"
CARD_PATH = "/.well-known/agent-card.json"
TOKENS = {"full": "a2a-reference-token-full", "other": "a2a-reference-token-other",
          "limited": "a2a-reference-token-limited"}
# the reference's permission model (section 7.5 leaves it to the agent): the operations a
# caller may not call, each with the permission it lacks
DENIED = {"limited": {"CancelTask": "tasks:cancel", "ListTasks": "tasks:list"}}
FORBIDDEN_CODE = -31003  # a JSON-RPC custom error (section 3.3.2): outside the tables
OUTCOMES = ("completed", "input_required", "auth_required", "failed", "rejected", "long_running", "message")
INPUT_MODES = ["text/plain", "application/json"]


def rfc3339(seconds: float) -> str:
    """A timestamp as section 5.6.1 writes it: UTC, milliseconds, ``Z``."""
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class A2AReference(StreamParts, PushParts, ExtensionParts, SigningParts, GrpcParts, Reference):
    """The core operations, both bindings, the card; each part of part 2 (streaming, push
    notifications, extensions, signed cards) is a mixin in its own module."""

    def __init__(self, profile: Profile, config: A2AReferenceConfig) -> None:
        super().__init__(profile, config)
        self.config: A2AReferenceConfig = config
        self.lock = threading.RLock()
        self.errors = {e.name: e for e in profile.errors.values()}
        self.standard = docs.jsonrpc_errors()
        self.methods = {m.name: m for m in docs.proto().service(profile.settings["proto"]["service"])}
        self.routes_of = docs.rest_routes(profile)
        self.schemas = docs.schemas(profile)
        self.reset()

    # -- the world -----------------------------------------------------------------------
    def reset(self) -> None:
        self.tasks: dict[str, dict[str, Any]] = {}
        self.owners: dict[str, str] = {}  # task id -> caller label
        self.updated: dict[str, float] = {}  # task id -> when its status last changed
        self.script: list[str] = []
        self.counter = 0
        # who hears of each change of a task (streams, push deliveries): called with the task
        # and the change as a StreamResponse (statusUpdate, artifactUpdate)
        self.listeners: list[Callable[[dict[str, Any], dict[str, Any]], None]] = []
        for part in (StreamParts, PushParts, ExtensionParts, SigningParts):
            part.reset_part(self)

    def digest(self) -> str:
        return json.dumps({"tasks": self.tasks, "owners": self.owners}, sort_keys=True)

    def control_script(self, args: dict[str, Any]) -> Response:
        """The agent's next outcomes, in order (``outcome``, ``times``)."""
        outcome = args.get("outcome")
        if outcome not in OUTCOMES:
            return self.control_error(400, f"outcome must be one of {OUTCOMES}")
        times = args.get("times", 1)
        self.script.extend([outcome] * (times if is_int(times) and times > 0 else 1))
        return JSONResponse({"ok": True})

    def control_finish(self, args: dict[str, Any]) -> Response:
        """A long-running task completes (its work is done)."""
        task = self.tasks.get(str(args.get("id")))
        if task is None:
            return self.control_error(404, "no such task")
        self.complete(task, self.text_of(task["history"][-1]) if task.get("history") else "")
        return JSONResponse({"ok": True, "task": task})

    def new_id(self, kind: str) -> str:
        self.counter += 1
        if self.config.seed is not None:
            return f"{kind}-{self.config.seed}-{self.counter}"
        return f"{kind}-{uuid.uuid4()}"

    # -- the card ------------------------------------------------------------------------
    def card(self, request: Request) -> dict[str, Any]:
        base = str(request.base_url).rstrip("/")
        out: dict[str, Any] = {
            "name": "conformance reference agent",
            "description": "Echoes the text it is sent; control scripts its outcomes.",
            "supportedInterfaces": [
                {"url": base + JSONRPC_PATH, "protocolBinding": "JSONRPC",
                 "protocolVersion": self.config.version},
                {"url": base + REST_PREFIX, "protocolBinding": "HTTP+JSON",
                 "protocolVersion": self.config.version},
                self.grpc_interface(),
            ],
            "version": "1.0.0",
            "capabilities": {"streaming": self.config.streaming,
                             "pushNotifications": self.config.push_notifications,
                             "extendedAgentCard": self.config.extended_agent_card and self.config.security,
                             "extensions": self.card_extensions()},
            "defaultInputModes": INPUT_MODES,
            "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "echo", "name": "Echo", "description": "Echoes text back.", "tags": ["echo"]}],
        }
        if self.config.security:
            out["securitySchemes"] = {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}
            out["securityRequirements"] = [{"schemes": {"bearer": {"list": []}}}]
        return out

    def serve_card(self, request: Request) -> Response:
        card = self.sign_card(self.card(request))
        return JSONResponse(card, headers={"Cache-Control": "max-age=60", "ETag": self.etag(card)})

    def etag(self, card: Any) -> str:
        """Section 8.6.1: an ETag derived from a hash of the card's content."""
        return '"' + hashlib.sha256(json.dumps(card, sort_keys=True).encode()).hexdigest()[:32] + '"'

    def public_card(self) -> dict[str, Any]:
        """The public card as it is served now (at the base URL of the latest request)."""
        at = SimpleNamespace(base_url=getattr(self, "base_url", "http://localhost/"))
        return self.card(cast(Request, at))  # card reads only the request's base_url

    def endpoint(self, name: str) -> Any:
        """Each route remembers the base URL it was called at (the extended card names its interfaces)."""
        handle = super().endpoint(name)

        async def remember(request: Request) -> Response:
            self.base_url = str(request.base_url)
            response: Response = await handle(request)
            response.headers.update(self.extension_headers(request))
            return response
        return remember

    def extended_card(self, public: dict[str, Any], caller: str) -> dict[str, Any]:
        """The extended card (sections 3.1.11, 13.3): the public card and a skill only
        authenticated callers are shown."""
        skill = {"id": "echo-detailed", "name": "Echo (detailed)", "tags": ["echo"],
                 "description": "Echoes text back; shown to authenticated callers only."}
        return {**public, "skills": [*public.get("skills", []), skill]}

    # -- who calls, and in which version -----------------------------------------------
    def caller(self, request: Request) -> str:
        if not self.config.security:
            return "full"
        header = request.headers.get("authorization", "")
        token = header[7:] if header[:7].lower() == "bearer " else ""
        for label, value in TOKENS.items():
            if token == value:
                return label
        raise Refusal("Unauthenticated", "a bearer token the agent issued is required", status=401)

    def requested_version(self, request: Request) -> str:
        """Section 3.6.2: the header, or the request parameter; empty is 0.3."""
        return (request.headers.get(VERSION_HEADER) or request.query_params.get(VERSION_HEADER) or "").strip()

    def check_version(self, request: Request) -> None:
        asked = self.requested_version(request) or "0.3"
        major_minor = ".".join(asked.split(".")[:2])  # a patch number is not considered
        if major_minor != self.config.version:
            raise Refusal("VersionNotSupportedError", f"A2A-Version {asked} is not supported "
                                                      f"(supported: {self.config.version})")

    # -- the operations ------------------------------------------------------------------
    def validate(self, method: str, params: Any) -> None:
        """The request message's schema (open to unknown members: section 5.7 says to ignore them)."""
        if not isinstance(params, dict):
            raise Refusal("InvalidParamsError", "params must be an object")
        schema = self.schemas.schema(self.methods[method].request, "answer")
        errors = sorted(validator_for(schema).iter_errors(params), key=lambda e: list(e.path))
        if errors:
            path = [str(p) for p in errors[0].path]
            if errors[0].validator == "required":  # the missing field is at fault (section 10.6's example)
                path += re.findall(r"^'([^']+)' is a required", errors[0].message)[:1]
            where = ".".join(path) or "params"
            raise Refusal("InvalidParamsError", f"{where}: {errors[0].message[:200]}",
                          data={"field": where})

    def dispatch(self, method: str, params: Any, caller: str) -> Any:
        if method not in self.methods:
            raise Refusal("MethodNotFoundError", f"method {method!r} not found")
        self.permit(method, caller)
        self.validate(method, params)
        handler = getattr(self, "op_" + method)
        with self.lock:
            return handler(params, caller)

    def permit(self, method: str, caller: str) -> None:
        """Sections 3.3.2 and 7.5: a caller the agent knows but does not permit ``method``
        gets an authorization error naming the permission it lacks."""
        missing = DENIED.get(caller, {}).get(method)
        if missing:
            raise Refusal("PermissionDenied", f"{method} needs the permission {missing!r}, which this caller "
                                              "lacks", data={"permission": missing}, status=403)

    def owned_task(self, task_id: Any, caller: str) -> dict[str, Any]:
        task = self.tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None or self.owners.get(task_id) != caller:
            raise Refusal("TaskNotFoundError", f"task {task_id!r} not found")
        return task

    def text_of(self, message: dict[str, Any]) -> str:
        return " ".join(p["text"] for p in message.get("parts", []) if isinstance(p, dict)
                        and isinstance(p.get("text"), str))

    def check_media_types(self, message: dict[str, Any]) -> None:
        for part in message.get("parts", []):
            media = part.get("mediaType") if isinstance(part, dict) else None
            if media and media not in INPUT_MODES:  # file parts too (section 13.4)
                raise Refusal("ContentTypeNotSupportedError", f"media type {media!r} is not supported")

    def next_outcome(self) -> str:
        return self.script.pop(0) if self.script else "completed"

    def set_status(self, task: dict[str, Any], state: str, text: str | None = None) -> None:
        status: dict[str, Any] = {"state": docs.state_named(state), "timestamp": rfc3339(self.now())}
        if text is not None:
            status["message"] = self.agent_message(text, task)
        task["status"] = status
        self.updated[task["id"]] = self.now() + self.counter * 1e-6  # distinct, in the order of change
        self.publish(task, {"statusUpdate": {"taskId": task["id"], "contextId": task["contextId"],
                                             "status": json.loads(json.dumps(status))}})

    def publish(self, task: dict[str, Any], event: dict[str, Any]) -> None:
        """Each listener hears of a change of ``task`` (a StreamResponse, section 3.2.3)."""
        for listener in list(self.listeners):
            listener(task, event)

    def agent_message(self, text: str, task: dict[str, Any] | None = None,
                      context_id: str | None = None) -> dict[str, Any]:
        out = {"messageId": self.new_id("msg"), "role": docs.role_named("agent"), "parts": [{"text": text}],
               "contextId": task["contextId"] if task else context_id}
        if task:
            out["taskId"] = task["id"]
        return out

    def complete(self, task: dict[str, Any], text: str) -> None:
        artifact = {"artifactId": self.new_id("artifact"), "name": "echo", "parts": [{"text": text}]}
        task.setdefault("artifacts", []).append(artifact)
        self.publish(task, {"artifactUpdate": {"taskId": task["id"], "contextId": task["contextId"],
                                               "artifact": json.loads(json.dumps(artifact)),
                                               "lastChunk": True}})
        self.set_status(task, "completed")

    def run_agent(self, task: dict[str, Any], message: dict[str, Any], outcome: str) -> None:
        """One turn of the agent on ``task`` for ``message``."""
        text = self.text_of(message)
        if outcome == "completed":
            self.complete(task, text)
        elif outcome in ("input_required", "auth_required"):
            self.set_status(task, outcome, "more input is needed" if outcome == "input_required"
                            else "authorization is needed")
        elif outcome in ("failed", "rejected"):
            self.set_status(task, outcome, f"the agent {outcome.replace('_', ' ')} the task")
        else:  # long_running
            self.set_status(task, "working")

    def op_SendMessage(self, params: dict[str, Any], caller: str) -> dict[str, Any]:
        message = dict(params["message"])
        self.check_media_types(message)
        config = params.get("configuration") or {}
        task_id, context_id = message.get("taskId") or "", message.get("contextId") or ""
        outcome = self.next_outcome()
        if task_id:
            task = self.owned_task(task_id, caller)
            if context_id and context_id != task["contextId"]:
                raise Refusal("InvalidParamsError", "contextId is not the task's")
            if task["status"]["state"] in docs.terminal_states():
                raise Refusal("UnsupportedOperationError", "the task is in a terminal state")
        else:
            if outcome == "message":
                return {"message": self.agent_message(self.text_of(message),
                                                      context_id=context_id or self.new_id("ctx"))}
            task = {"id": self.new_id("task"), "contextId": context_id or self.new_id("ctx")}
            self.tasks[task["id"]] = task
            self.owners[task["id"]] = caller
            self.set_status(task, "submitted")
            task["history"] = []
        self.push_from_send(task, config)  # part 2: the request's push config (reference/push.py)
        message.update({"taskId": task["id"], "contextId": task["contextId"]})
        task.setdefault("history", []).append(message)
        if outcome == "message":
            outcome = "completed"
        if config.get("returnImmediately") is True:
            self.set_status(task, "working")
            snapshot = json.loads(json.dumps(task))
            self.run_agent(task, message, outcome)
            return {"task": self.view(snapshot, config.get("historyLength"))}
        self.run_agent(task, message, "completed" if outcome == "long_running" else outcome)
        return {"task": self.view(task, config.get("historyLength"))}

    def view(self, task: dict[str, Any], history_length: Any = None,
             artifacts: bool = True) -> dict[str, Any]:
        """A task as an answer shows it: at most ``history_length`` recent messages (0: none)."""
        out = json.loads(json.dumps(task))
        length = int(history_length) if history_length is not None else None
        if length is not None:
            if length <= 0:
                out.pop("history", None)
            else:
                out["history"] = out.get("history", [])[-length:]
        if not artifacts:
            out.pop("artifacts", None)
        return out

    def op_GetTask(self, params: dict[str, Any], caller: str) -> dict[str, Any]:
        self.check_history_length(params.get("historyLength"))
        return self.view(self.owned_task(params.get("id"), caller), params.get("historyLength"))

    def check_history_length(self, value: Any) -> None:
        if value is not None and int(value) < 0:
            raise Refusal("InvalidParamsError", "historyLength must not be negative")

    def op_CancelTask(self, params: dict[str, Any], caller: str) -> dict[str, Any]:
        task = self.owned_task(params.get("id"), caller)
        if task["status"]["state"] in docs.terminal_states():
            raise Refusal("TaskNotCancelableError", f"task {task['id']} is {task['status']['state']}")
        self.set_status(task, "canceled")
        return self.view(task)

    def op_ListTasks(self, params: dict[str, Any], caller: str) -> dict[str, Any]:
        size = params.get("pageSize")
        size = int(size) if size is not None else self.limit("list_page_size_default")
        if not 1 <= size <= self.limit("list_page_size_max"):
            raise Refusal("InvalidParamsError", f"pageSize must be 1..{self.limit('list_page_size_max')}")
        self.check_history_length(params.get("historyLength"))
        status = params.get("status")
        unspecified = str(status).endswith("UNSPECIFIED")
        if status is not None and status not in docs.task_states() and not unspecified:
            raise Refusal("InvalidParamsError", f"status {status!r} is not a task state")
        after = params.get("statusTimestampAfter")
        chosen = [t for tid, t in self.tasks.items() if self.owners.get(tid) == caller
                  and (not params.get("contextId") or t["contextId"] == params["contextId"])
                  and (not status or str(status).endswith("UNSPECIFIED") or t["status"]["state"] == status)
                  and (not after or t["status"].get("timestamp", "") >= self.normal_time(after))]
        chosen.sort(key=lambda t: self.updated.get(t["id"], 0.0), reverse=True)
        start = self.page_start(params.get("pageToken") or "", len(chosen))
        page = chosen[start:start + size]
        more = start + size < len(chosen)
        token = base64.urlsafe_b64encode(f"offset:{start + size}".encode()).decode() if more else ""
        return {"tasks": [self.view(t, params.get("historyLength"), params.get("includeArtifacts") is True)
                          for t in page],
                "nextPageToken": token, "pageSize": size, "totalSize": len(chosen)}

    def normal_time(self, value: Any) -> str:
        try:
            when = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            raise Refusal("InvalidParamsError",
                          f"statusTimestampAfter {value!r} is not a timestamp") from None
        return rfc3339(when.timestamp())

    def page_start(self, token: str, total: int) -> int:
        if not token:
            return 0
        try:
            found = re.fullmatch(r"offset:(\d+)", base64.urlsafe_b64decode(token.encode()).decode())
        except (ValueError, UnicodeDecodeError):
            found = None
        if not found or int(found.group(1)) > total:
            raise Refusal("InvalidParamsError", "pageToken is not one this agent issued")
        return int(found.group(1))

    def op_GetExtendedAgentCard(self, params: dict[str, Any], caller: str) -> Any:
        """Section 3.3.4: served only where the public card declares capabilities.extendedAgentCard."""
        public = self.public_card()
        if (public.get("capabilities") or {}).get("extendedAgentCard") is not True:
            raise Refusal("UnsupportedOperationError",
                          "no extended agent card (capabilities.extendedAgentCard)")
        return self.sign_card(self.extended_card(public, caller))

    # -- errors --------------------------------------------------------------------------
    def error_details(self, refusal: Refusal) -> list[dict[str, Any]]:
        """The details an error carries: ErrorInfo for an A2A error (sections 9.5, 11.6), a
        google.rpc.BadRequest naming the field at fault for a validation error (9.5's example)."""
        field = (refusal.data or {}).get("field")
        if refusal.name == "InvalidParamsError" and field:
            from conformance.protocols.a2a.answers import detail_type

            return [{"@type": detail_type("BadRequest"),
                     "fieldViolations": [{"field": field, "description": refusal.message}]}]
        if refusal.name not in self.errors:
            return []
        info = docs.error_info()
        return [{"@type": info["@type"], "reason": docs.reason_of(refusal.name), "domain": info["domain"],
                 "metadata": {k: str(v) for k, v in (refusal.data or {}).items()}}]

    def jsonrpc_code(self, refusal: Refusal) -> int:
        if refusal.name in self.errors:
            return int(self.errors[refusal.name].code)
        if refusal.name in self.standard:
            return self.standard[refusal.name]
        if refusal.status == 403:
            return FORBIDDEN_CODE
        unauthenticated = refusal.status == 401
        return self.standard["InvalidRequestError"] if unauthenticated else self.standard["InternalError"]

    def http_status(self, refusal: Refusal) -> int:
        if refusal.status is not None:
            return refusal.status
        if refusal.name in self.errors:
            return self.errors[refusal.name].http_status
        return 404 if refusal.name == "MethodNotFoundError" else 400

    # -- JSON-RPC ------------------------------------------------------------------------
    def rpc_envelope(self, request_id: Any, member: str, value: Any) -> dict[str, Any]:
        """A JSON-RPC 2.0 response: the request's id echoed, and ``result`` or ``error``."""
        return wire.response(request_id, **{member: value})

    def rpc_response(self, envelope: Any, status: int = 200) -> Response:
        """Section 9.1: JSON-RPC answers are application/json."""
        return JSONResponse(envelope, status_code=status)

    def rpc_error_object(self, refusal: Refusal) -> dict[str, Any]:
        """Section 9.5: the code, the message, the details as ``data``."""
        return wire.error_object(self.jsonrpc_code(refusal), refusal.message,
                                 self.error_details(refusal) or None)

    def rpc_error(self, request_id: Any, refusal: Refusal) -> Response:
        response = self.rpc_response(self.rpc_envelope(request_id, "error", self.rpc_error_object(refusal)),
                                     refusal.status if refusal.status in (401, 403) else 200)
        response.headers.update(self.challenge(refusal))
        return response

    def challenge(self, refusal: Refusal) -> dict[str, str]:
        """Sections 3.3.2 and 7.4: an authentication refusal says which scheme it wants."""
        if refusal.status == 403 and refusal.data:  # RFC 6750 section 3.1
            return {"WWW-Authenticate": f'Bearer realm="a2a", error="insufficient_scope", '
                                        f'scope="{refusal.data["permission"]}"'}
        return {"WWW-Authenticate": 'Bearer realm="a2a"'} if refusal.status == 401 else {}

    def is_request(self, body: Any) -> bool:
        """A JSON-RPC 2.0 Request object: ``jsonrpc`` "2.0", a string method, an id (when
        given) that is a string, an integer or null."""
        if not isinstance(body, dict) or body.get("jsonrpc") != "2.0":
            return False
        if not isinstance(body.get("method"), str):
            return False
        return "id" not in body or body["id"] is None or isinstance(body["id"], str) or is_int(body["id"])

    async def jsonrpc(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body = strict_json(raw)
        except (ValueError, RecursionError):
            return self.rpc_error(None, Refusal("JSONParseError", "invalid JSON payload"))
        if isinstance(body, list):
            return self.rpc_batch(request, body)
        return self.rpc_one(request, body)

    def rpc_one(self, request: Request, body: Any) -> Response:
        """One JSON-RPC request object: its answer; a notification's (no ``id``) none."""
        if not self.is_request(body):
            return self.rpc_error(body.get("id") if isinstance(body, dict) and is_int(body.get("id"))
                                  or isinstance(body, dict) and isinstance(body.get("id"), str) else None,
                                  Refusal("InvalidRequestError", "not a JSON-RPC 2.0 request"))
        request_id = body.get("id")
        try:
            caller = self.caller(request)
            self.check_version(request)
            self.check_extensions(request, body["method"])
            result = self.dispatch(body["method"], body.get("params", {}), caller)
        except Refusal as refusal:
            if "id" not in body:
                return self.rpc_notified(refusal)
            return self.rpc_error(request_id, refusal)
        if "id" not in body:
            if isinstance(result, EventStream):  # nobody reads it: the stream stops listening
                result.stop()
                result.done()
            return self.rpc_notified(None)
        if isinstance(result, EventStream):  # section 9.4.2: each event a response envelope
            return self.sse(result, lambda event: self.rpc_envelope(request_id, "result", event))
        return self.rpc_response(self.rpc_envelope(request_id, "result", result))

    def rpc_notified(self, refusal: Refusal | None) -> Response:
        """A notification (a request without ``id``) was run: JSON-RPC 2.0 says the server MUST
        NOT reply to one, so the HTTP answer carries no JSON-RPC response: 204, or the refusal's
        status where the caller was not let in (401, 403), with its challenge and no body."""
        if refusal is not None and refusal.status in (401, 403):
            return Response(status_code=refusal.status, headers=self.challenge(refusal))
        return Response(status_code=204)

    def rpc_batch(self, request: Request, batch: list[Any]) -> Response:
        """A JSON-RPC 2.0 batch (the A2A document says nothing of batches; the binding is JSON-RPC
        2.0, which lets a client send an array): an array of the responses, one per request that
        is no notification, in order; an empty array is one Invalid Request response; a batch of
        notifications only, no response. A streaming method has no place in one (its answer is
        an event stream): refused in its slot."""
        if not batch:
            return self.rpc_error(None, Refusal("InvalidRequestError", "an empty batch"))
        out = []
        for item in batch:
            streaming = isinstance(item, dict) and item.get("method") in self.methods \
                and self.methods[item["method"]].server_streaming
            if streaming and "id" in item:
                out.append(self.rpc_envelope(item.get("id"), "error", self.rpc_error_object(
                    Refusal("InvalidRequestError", "a streaming method cannot be part of a batch"))))
                continue
            answer = self.rpc_one(request, item)
            if answer.status_code == 204 or not answer.body:
                continue
            out.append(json.loads(bytes(answer.body)))
        return self.rpc_response(out) if out else Response(status_code=204)

    # -- HTTP+JSON -----------------------------------------------------------------------
    def rest_error_body(self, refusal: Refusal, status: int) -> dict[str, Any]:
        """Section 11.6: google.rpc.Status JSON under ``error``: the HTTP status as its code,
        the message, the details."""
        grpc = docs.grpc_statuses().get(refusal.name, "INVALID_ARGUMENT" if status == 400 else
                                        "UNAUTHENTICATED" if status == 401 else
                                        "PERMISSION_DENIED" if status == 403 else "NOT_FOUND")
        return {"error": {"code": status, "status": grpc, "message": refusal.message,
                          "details": self.error_details(refusal)}}

    def rest_response(self, body: Any, status: int = 200) -> Response:
        """Section 11.1: HTTP+JSON answers are application/a2a+json."""
        return JSONResponse(body, status_code=status, media_type="application/a2a+json")

    def rest_error(self, refusal: Refusal) -> Response:
        status = self.http_status(refusal)
        response = self.rest_response(self.rest_error_body(refusal, status), status)
        response.headers.update(self.challenge(refusal))
        return response

    def match_route(self, verb: str, path: str) -> tuple[str, dict[str, str]] | None:
        for method, routes in self.routes_of.items():
            for route in routes:
                if route["verb"].upper() != verb:
                    continue
                pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/:]+)", re.escape(route["path"]))
                found = re.fullmatch(pattern, path)
                if found:
                    return method, dict(found.groupdict())
        return None

    def query_params(self, method: str, request: Request) -> dict[str, Any]:
        """Query parameters as the request message's fields (section 11.5): numbers and
        booleans from their text, a repeated field from each value."""
        fields = docs.proto().message(self.methods[method].request)
        out: dict[str, Any] = {}
        for key in request.query_params:
            if key == VERSION_HEADER:
                continue
            values = request.query_params.getlist(key)
            try:
                f = fields.field(key)
            except Exception:
                out[key] = values[-1]
                continue
            cast: Any = values if f.repeated else values[-1]
            if f.kind in ("int32", "int64") and not f.repeated:
                cast = int(cast) if re.fullmatch(r"-?\d+", cast) else cast
            elif f.kind == "bool" and not f.repeated:
                cast = {"true": True, "false": False}.get(cast, cast)
            out[f.json_name] = cast
        return out

    async def rest(self, request: Request) -> Response:
        path = "/" + request.path_params["path"]
        found = self.match_route(request.method, path)
        if found is None:
            return self.rest_error(Refusal("MethodNotFoundError", f"no route {request.method} {path}",
                                           status=404))
        method, variables = found
        try:
            caller = self.caller(request)
            self.check_version(request)
            self.check_extensions(request, method)
            raw = await request.body()
            if raw.strip():
                try:
                    params = strict_json(raw)
                except (ValueError, RecursionError):
                    raise Refusal("JSONParseError", "the body is not JSON", status=400) from None
            else:
                params = self.query_params(method, request)
            if isinstance(params, dict):
                params = {**params, **variables}
            result = self.dispatch(method, params, caller)
        except Refusal as refusal:
            return self.rest_error(refusal)
        if isinstance(result, EventStream):  # section 11.7: each event a StreamResponse
            return self.sse(result, lambda event: event)
        return self.rest_result(method, result)

    def rest_result(self, method: str, result: Any) -> Response:
        """A method's answer; the extended card's with caching headers (section 13.3): private,
        since it is the caller's."""
        response = self.rest_response(result if result is not None else {})
        if method == "GetExtendedAgentCard":
            response.headers["Cache-Control"] = "private, max-age=60"
        return response

    def own_routes(self) -> list[BaseRoute]:
        return [Route(CARD_PATH, self.endpoint("serve_card"), methods=["GET"]),
                Route(JSONRPC_PATH, self.endpoint("jsonrpc"), methods=["POST"]),
                Route(REST_PREFIX + "/{path:path}", self.endpoint("rest"),
                      methods=["GET", "POST", "DELETE", "PUT", "PATCH"]), *self.signing_routes()]


def create_app(profile: Profile, config: A2AReferenceConfig) -> Any:
    return A2AReference(profile, config).app()
