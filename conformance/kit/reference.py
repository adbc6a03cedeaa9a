"""What every built-in reference shares: its config (control on or off, a seed, a clock),
its limits (which a fault changes through ``limit_values``), its clock that control moves,
the control interface (POST /_control/<action>, dispatched to ``control_<action>(args)``),
routes whose endpoints look their handler up at request time (so a fault's patch takes
effect), the ASGI app, and the error a handler raises to refuse (``Refusal``).

Each behaviour of a reference is one small method, so that a fault replaces one method of
one instance and nothing else changes (conformance/kit/faults.py)."""

from __future__ import annotations

import contextlib
import inspect
import json
import time
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from conformance.model import Profile
from conformance.transport.inprocess import TURN

CONTROL_PATH = "/_control/{action}"


def let_others_in(scope: MutableMapping[str, Any]) -> None:
    """Before an answer waits for another request (a peer's message): in process, where
    requests take turns, let the others run meanwhile, as a server does; served, a no-op."""
    turn = (scope.get("extensions") or {}).get(TURN) or {}
    if callable(turn.get("let_others_in")):
        turn["let_others_in"]()


@dataclass
class ReferenceConfig:
    """How one reference instance behaves; each protocol's config adds its own fields."""

    control: bool = True  # serve the control interface
    seed: int | None = None  # when set, minted ids and tokens are reproducible from it
    clock: Callable[[], float] = time.time  # seconds since the epoch, before control moves it


def strict_json(raw: bytes) -> Any:
    """A request body as JSON, strictly: UTF-8, no NaN or Infinity; ValueError when it is
    not JSON (RecursionError when it is too deep)."""
    def reject(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(raw.decode("utf-8"), parse_constant=reject)


def is_int(value: Any) -> bool:
    """A JSON integer (a bool is none)."""
    return isinstance(value, int) and not isinstance(value, bool)


class Refusal(Exception):
    """A refusal the reference answers, named as its catalog names it (the spec's error
    name or the profile's ``errors:`` code); ``data`` goes with it, ``status`` replaces
    the catalog's HTTP status where the document gives another."""

    def __init__(self, name: str, message: str | None = None, data: dict[str, Any] | None = None,
                 status: int | None = None) -> None:
        super().__init__(message or name)
        self.name = name
        self.message = message or name
        self.data = data
        self.status = status


class CodedRefusal(Refusal):
    """A refusal named by one of the profile's own error codes (its ``errors:`` block), for
    a reference whose wire calls the name a ``code``: the code is the refusal's name."""

    def __init__(self, code: str, message: str | None = None) -> None:
        super().__init__(code, message)
        self.code = code


class Reference:
    """Base of a protocol's reference. A subclass gives ``own_routes()`` (its wire),
    ``reset()`` (the world as it starts) and any ``control_<action>`` it needs beyond
    reset, advance_clock and snapshot (which needs ``digest()``)."""

    lock: Any = None  # a lock the control actions take, where handlers take it too

    def __init__(self, profile: Profile, config: ReferenceConfig) -> None:
        self.profile = profile
        self.config = config
        self.limit_values: dict[str, Any] = {name: lim.value for name, lim in profile.limits.items()}
        self.clock_offset = 0.0  # seconds control moved the clock forward

    # -- limits and the clock ----------------------------------------------------------
    def limit(self, name: str) -> Any:
        """One of the profile's limits (its ``limits:`` block) as this instance serves it."""
        value = self.limit_values[name]
        return int(value) if isinstance(value, float) and value.is_integer() else value

    def now(self) -> float:
        """The reference's clock in seconds: the config's, plus what control advanced."""
        return self.config.clock() + self.clock_offset

    def now_ms(self) -> int:
        return int(self.now() * 1000)

    # -- the control interface ---------------------------------------------------------
    async def control(self, request: Request) -> Response:
        """Run ``self.control_<action>`` with the JSON object of the body (under ``lock``);
        404 when control is off or the action unknown, 400 for a body that is no JSON object."""
        if not self.config.control:
            return self.control_error(404, "Not Found")
        handler = getattr(self, f"control_{request.path_params['action']}", None)
        if handler is None:
            return self.control_error(404, "unknown control action")
        raw = await request.body()
        try:
            args = json.loads(raw) if raw.strip() else {}
        except (ValueError, RecursionError):
            return self.control_error(400, "body is not JSON")
        if not isinstance(args, dict):
            return self.control_error(400, "body must be a JSON object")
        with self.lock if self.lock is not None else contextlib.nullcontext():
            response: Response = handler(args)
            return response

    @staticmethod
    def control_error(status: int, message: str) -> Response:
        return JSONResponse({"error": message}, status_code=status)

    def reset(self) -> None:
        raise NotImplementedError

    def control_reset(self, args: dict[str, Any]) -> Response:
        self.reset()
        return JSONResponse({"ok": True})

    def control_advance_clock(self, args: dict[str, Any]) -> Response:
        """Move the clock forward by ``seconds`` (expiries, timestamps)."""
        seconds = args.get("seconds")
        if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds < 0:
            return self.control_error(400, "seconds must be a nonnegative number")
        self.clock_offset += seconds
        return JSONResponse({"ok": True, "now": self.now()})

    def digest(self) -> str:
        raise NotImplementedError

    def control_snapshot(self, args: dict[str, Any]) -> Response:
        return JSONResponse({"digest": self.digest()})

    # -- routes and the app ------------------------------------------------------------
    def endpoint(self, name: str) -> Callable[[Request], Any]:
        """A route endpoint calling ``self.<name>(request)``, looked up at request time."""
        async def handle(request: Request) -> Response:
            response: Any = getattr(self, name)(request)
            if inspect.isawaitable(response):
                response = await response
            return cast(Response, response)
        return handle

    def own_routes(self) -> list[BaseRoute]:
        raise NotImplementedError

    def routes(self) -> list[BaseRoute]:
        return [*self.own_routes(), Route(CONTROL_PATH, self.endpoint("control"), methods=["POST"])]

    def app(self, middleware: Sequence[Middleware] = ()) -> Starlette:
        """The reference as an ASGI app; ``app.state.reference`` is the instance faults patch."""
        app = Starlette(routes=self.routes(), middleware=list(middleware))
        app.state.reference = self
        return app


def split_control(app: Any, prefix: str) -> tuple[Any, Any]:
    """The app as two: the wire without the control interface under ``prefix``, and the
    control interface alone (served on an admin port of its own: ``conformance serve
    --control-port``); each answers 404 to what it does not serve."""
    def serving(control: bool) -> Any:
        async def asgi(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
            path = str(scope.get("path") or "")
            if scope["type"] == "http" and path.startswith(prefix + "/") != control:
                await JSONResponse({"error": "Not Found"}, status_code=404)(scope, receive, send)
                return
            await app(scope, receive, send)
        return asgi
    return serving(False), serving(True)
