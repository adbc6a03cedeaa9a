"""What an agent's output is (sections 3.7, 7.6.1 and the proto): results as artifacts, and
parts within the output modes the request accepts."""

from __future__ import annotations

from typing import Any

from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import requirement
from conformance.kit.faults import replaces
from conformance.protocols.a2a.client import A2AClient
from conformance.protocols.a2a.documents import proto_at, spec
from conformance.protocols.a2a.driving import OUTCOME, fetched, reaching
from conformance.protocols.a2a.parts import covers, parts_in
from conformance.protocols.a2a.reference import A2AReference
from conformance.transport.http import json_excerpt


@requirement(id="A2A-TASK-RESULTS-AS-ARTIFACTS", level="SHOULD",
             title="A completed task returns its results as artifacts, not in messages",
             source=spec("Results SHOULD BE returned using Artifacts associated with a Task"),
             faults=["results_in_status_message"])
def check_results_as_artifacts(ctx: CheckContext) -> None:
    c = A2AClient(ctx)
    task = fetched(c, reaching(c)["id"])
    artifacts = task.get("artifacts")
    ctx.expect(isinstance(artifacts, list) and artifacts,
               f"the completed task {task['id']} has no artifacts (status message: "
               f"{json_excerpt(task.get('status', {}).get('message'))}): section 3.7 wants results as "
               "artifacts",
               kind="expectation")


@check_results_as_artifacts.fault
def results_in_status_message(ref: A2AReference) -> None:
    """A completed task carries its result in its status message, not as an artifact."""
    @replaces(ref.complete)
    def complete(original: Any, task: dict[str, Any], text: str) -> None:
        ref.set_status(task, "completed", text)


@requirement(id="A2A-SEND-OUTPUT-MODES", level="SHOULD",
             title="Given acceptedOutputModes, the parts of the task's output are of those media types",
             source=proto_at("Agents SHOULD use this to tailor their output",
                             after="message SendMessageConfiguration"),
             faults=["output_modes_ignored"])
def check_output_modes(ctx: CheckContext) -> None:
    """Each artifact part's mediaType (a text part without one is text/plain)."""
    c = A2AClient(ctx)
    modes = c.card.get("defaultOutputModes")
    modes = [m for m in modes if isinstance(m, str)] if isinstance(modes, list) else []
    accepted = ["text/plain"] if "text/plain" in modes or not modes else modes[:1]
    task = reaching(c, configuration={"acceptedOutputModes": accepted})
    shown = [(where, p.get("mediaType") or ("text/plain" if "text" in p else None))
             for where, p in parts_in(task.get("artifacts", []), "artifacts")]
    judged = [(where, media) for where, media in shown if isinstance(media, str)]
    if not judged:
        raise Untested("the task's artifacts hold no part of a known media type", OUTCOME)
    for where, media in judged:
        with ctx.subcheck(where):
            ctx.expect(any(covers(mode, media) for mode in accepted),
                       f"the output part at {where} is {media}; acceptedOutputModes was {accepted}",
                       kind="expectation")


@check_output_modes.fault
def output_modes_ignored(ref: A2AReference) -> None:
    """The agent adds a JSON part to its output whatever acceptedOutputModes says."""
    @replaces(ref.complete)
    def complete(original: Any, task: dict[str, Any], text: str) -> None:
        original(task, text)
        task["artifacts"][-1]["parts"].append({"data": {"echo": text}, "mediaType": "application/json"})
