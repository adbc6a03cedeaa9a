"""An A2A 1.0 agent on the official Python SDK (``a2a-sdk``) that completes its tasks later,
for the kit's tests: the way a deployment hands long work to a worker.

Its executor answers at once (a new task ``TASK_STATE_SUBMITTED``, a follow-up on a task it
asked for input on ``TASK_STATE_WORKING``) and returns; a worker of its own finishes the task
a moment later in the SDK's task store (completed with the text echoed back as an artifact;
``input-required ...`` waits for input, ``fail ...`` fails, ``slow ...`` takes a few seconds,
long enough to be canceled, ``message ...`` is answered at once with a Message). Everything
else is the SDK's own (``DefaultRequestHandler``, ``InMemoryTaskStore``, its JSON-RPC, REST
and gRPC routes), served as tests/a2a_sdk_server.py serves its echo agent.

A blocking SendMessage is therefore answered before the task ends, where section 3.2.2 of
the specification (and the proto's ``SendMessageConfiguration.return_immediately``) says it
MUST wait: docs/a2a.md section 4 lists that finding. Every other row must hold, the kit
polling the task (GetTask) to where it ends before it judges what needs a finished task.

    python tests/a2a_sdk_later_server.py --port N [--grpc-port M] [--host 127.0.0.1]
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from a2a.helpers import new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskStore, TaskUpdater
from a2a.types import AgentCard, Part, Task, TaskState, TaskStatus

sys.path.insert(0, str(Path(__file__).resolve().parent))
from a2a_sdk_server import agent_card, main  # noqa: E402

LATER_SECONDS = 0.3  # how long the worker takes over an ordinary task
SLOW_SECONDS = 2.0  # ... over a "slow" one (a CancelTask lands meanwhile; as the echo server's)
WAITING = (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)


class LaterAgent(AgentExecutor):
    """Answers at once and leaves the work to ``finish``, which ends the task in the store."""

    def __init__(self, store: TaskStore) -> None:
        self.store = store
        self.jobs: set[asyncio.Task[None]] = set()  # the loop keeps only weak references

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        task_id, context_id = str(context.task_id), str(context.context_id)
        if context.current_task is None and text.startswith("message"):
            await event_queue.enqueue_event(new_text_message(text, context_id=context_id))
            return
        if context.current_task is None:
            await event_queue.enqueue_event(Task(
                id=task_id, context_id=context_id, history=[context.message] if context.message else [],
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)))
        else:  # a follow-up: the agent is on it
            await TaskUpdater(event_queue, task_id, context_id).start_work()
        job = asyncio.create_task(self.finish(event_queue, task_id, context_id, text))
        self.jobs.add(job)
        job.add_done_callback(self.jobs.discard)

    async def finish(self, event_queue: EventQueue, task_id: str, context_id: str, text: str) -> None:
        """The worker: a moment later, it ends the task as its text asks, through the event queue
        the SDK gave the executor (the SDK's task, store and subscribers follow it)."""
        await asyncio.sleep(SLOW_SECONDS if text.startswith("slow") else LATER_SECONDS)
        updater = TaskUpdater(event_queue, task_id, context_id)
        try:
            if text.startswith("input-required"):
                await updater.requires_input(updater.new_agent_message([Part(text="more input, please")]))
            elif text.startswith("fail"):
                await updater.failed(updater.new_agent_message([Part(text="failed as asked")]))
            else:
                await updater.add_artifact([Part(text=text)], name="echo")
                await updater.complete()
        except Exception:  # noqa: BLE001 - canceled meanwhile: the SDK refuses updates of a finished task
            return

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, str(context.task_id), str(context.context_id)).cancel()


def build_handler(base: str, grpc_address: str) -> tuple[AgentCard, DefaultRequestHandler]:
    card = agent_card(base, grpc_address, name="a2a-sdk later",
                      description="Answers at once and completes later: served by the official A2A Python "
                                  "SDK (a2a-sdk) for conformance tests.")
    store = InMemoryTaskStore()
    return card, DefaultRequestHandler(agent_executor=LaterAgent(store), task_store=store, agent_card=card)


if __name__ == "__main__":
    main(build_handler, __doc__)
