"""An A2A 1.0 echo agent served by the official Python SDK (``a2a-sdk``), for the kit's tests.

The kit's ``a2a`` profile needs a target that is not the kit's own idea of A2A: this module
serves the SDK's own request handler and task store over all three bindings (both HTTP
bindings from one ASGI app, gRPC from the SDK's ``GrpcHandler`` on a second port), so what the
profile reports about it is a statement about the reference implementation. Streaming is
declared on (the SDK serves it over SSE and gRPC server streams); push notifications and the
extended card are declared off.

    python tests/a2a_sdk_server.py --port N [--grpc-port M] [--host 127.0.0.1]

Routes (one uvicorn server, and the gRPC server at ``host:M``):

- ``GET  /.well-known/agent-card.json``  the agent card (the SDK's card route)
- ``POST /jsonrpc``                       JSON-RPC binding (the SDK has no default path here:
  ``create_jsonrpc_routes`` takes ``rpc_url``; its ``DEFAULT_RPC_URL`` constant is ``/``)
- ``/rest/...``                           HTTP+JSON binding (``/rest/message:send``,
  ``/rest/tasks/{id}``, ``/rest/tasks``, ``/rest/tasks/{id}:cancel``, ``/rest/extendedAgentCard``);
  the SDK also mounts the same routes under ``/{tenant}/rest/...``

The echo agent's outcome is chosen by how the message text starts, so the kit's
``scenarios:`` can drive each path: ``input-required``, ``fail``, ``slow``, ``message``;
anything else is echoed back as the one artifact of a completed task.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import grpc
import uvicorn
from a2a.helpers import new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Task,
    TaskState,
    TaskStatus,
    a2a_pb2_grpc,
)
from starlette.applications import Starlette

JSONRPC_PATH = "/jsonrpc"
REST_PREFIX = "/rest"
SLOW_SECONDS = 2.0


class EchoAgent(AgentExecutor):
    """Echoes the user's text; a leading keyword picks another outcome (see the module doc)."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        task_id, context_id = str(context.task_id), str(context.context_id)
        if context.current_task is None and text.startswith("message"):
            # a direct Message is only allowed as the sole reply of a new exchange
            await event_queue.enqueue_event(new_text_message(text, context_id=context_id))
            return
        if context.current_task is None and context.message is not None:
            # the SDK refuses a status update before the agent has enqueued the Task itself
            await event_queue.enqueue_event(Task(
                id=task_id, context_id=context_id, history=[context.message],
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)))
        updater = TaskUpdater(event_queue, task_id, context_id)
        await updater.start_work()
        if text.startswith("input-required"):
            await updater.requires_input(updater.new_agent_message([Part(text="more input, please")]))
            return
        if text.startswith("fail"):
            await updater.failed(updater.new_agent_message([Part(text="failed as asked")]))
            return
        if text.startswith("slow"):
            await asyncio.sleep(SLOW_SECONDS)  # long enough for a CancelTask to land
        await updater.add_artifact([Part(text=text)], name="echo")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        # the SDK cancels the running execute() after this returns; we only record the state
        await TaskUpdater(event_queue, str(context.task_id), str(context.context_id)).cancel()


def agent_card(base: str, grpc_address: str, name: str = "a2a-sdk echo",
               description: str = "Echo agent served by the official A2A Python SDK (a2a-sdk) for "
                                  "conformance tests.") -> AgentCard:
    """The card naming the three bindings; streaming on, push notifications and the extended
    card off, so the profile can check that the SDK refuses them."""
    return AgentCard(
        name=name,
        description=description,
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=base + JSONRPC_PATH, protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=base + REST_PREFIX, protocol_binding="HTTP+JSON", protocol_version="1.0"),
            AgentInterface(url=grpc_address, protocol_binding="GRPC", protocol_version="1.0"),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False, extended_agent_card=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(
            id="echo", name="Echo", tags=["echo", "test"],
            description="Echoes the text; a leading input-required, fail, slow or message picks"
                        " another outcome.",
            examples=["hello", "input-required", "fail", "slow", "message"])],
    )


def build_handler(base: str, grpc_address: str) -> tuple[AgentCard, DefaultRequestHandler]:
    """The card and one request handler (one task store: a task sent over one binding is
    visible over the others)."""
    card = agent_card(base, grpc_address)
    return card, DefaultRequestHandler(agent_executor=EchoAgent(), task_store=InMemoryTaskStore(),
                                       agent_card=card)


Build = Callable[[str, str], tuple[AgentCard, DefaultRequestHandler]]


def build_app(card: AgentCard, handler: DefaultRequestHandler) -> Starlette:
    """One Starlette app with the card, the JSON-RPC route and the REST routes of the handler."""

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        yield
        await handler.aclose()  # no agent task left pending at shutdown

    # the REST routes last: the SDK mounts them again under a catch-all "/{tenant}" prefix,
    # which would otherwise swallow the card and JSON-RPC paths
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url=JSONRPC_PATH),
              *create_rest_routes(handler, path_prefix=REST_PREFIX)]
    return Starlette(routes=routes, lifespan=lifespan)


async def serve(host: str, port: int, grpc_port: int, build: Build = build_handler) -> None:
    """Run the gRPC server and uvicorn, and print the ready line once both sockets are bound
    (the tests wait for it); ``build`` makes the card and the handler (another agent)."""
    base = f"http://{host}:{port}"
    card, handler = build(base, f"{host}:{grpc_port}")
    rpc = grpc.aio.server()
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), rpc)
    rpc.add_insecure_port(f"{host}:{grpc_port}")
    await rpc.start()
    server = uvicorn.Server(uvicorn.Config(build_app(card, handler), host=host, port=port,
                                           log_level="warning", access_log=False,
                                           timeout_graceful_shutdown=1))
    running = asyncio.create_task(server.serve())
    while not server.started and not running.done():
        await asyncio.sleep(0.02)
    if server.started:
        print(f"listening on {base}", flush=True)
    try:
        await running
    finally:
        await rpc.stop(1)


def main(build: Build = build_handler, doc: str | None = None) -> None:
    parser = argparse.ArgumentParser(description=(doc or __doc__ or "").splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--grpc-port", type=int, default=0,
                        help="the gRPC server's port (default: --port + 1)")
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args()
    asyncio.run(serve(args.host, args.port, args.grpc_port or args.port + 1, build))


if __name__ == "__main__":
    main()
