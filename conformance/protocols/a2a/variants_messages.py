"""Variants of duplicate messages and raw parts: behaviours the documents allow that the
reference does not choose. Each patches one reference instance like a fault; its docstring
quotes the text that allows it; no MUST may fail on one (`conformance selftest`)."""

from __future__ import annotations

import base64
from typing import Any

from conformance.kit.declare import variant
from conformance.kit.faults import replaces
from conformance.protocols.a2a.reference import A2AReference


@variant
def duplicate_message_same_task(ref: A2AReference) -> None:
    """A SendMessage repeating a messageId the agent has seen answers the task that message
    made, as it is now (the duplicate is detected, nothing is run again).

    allowed by: specification.md section 3.3.1 "**Send Message** operations MAY be idempotent.
    Agents may utilize the messageId to detect duplicate messages.\""""
    made: dict[tuple[str, str], str] = {}

    @replaces(ref.op_SendMessage)
    def send(original: Any, params: dict[str, Any], caller: str) -> Any:
        key = (caller, str(params["message"].get("messageId")))
        if key in made and made[key] in ref.tasks:
            return {"task": ref.view(ref.tasks[made[key]])}
        out = original(params, caller)
        if isinstance(out.get("task"), dict):
            made[key] = out["task"]["id"]
        return out


@variant
def raw_parts_echoed_unpadded(ref: A2AReference) -> None:
    """A completed task echoes the raw parts it was sent in an artifact, in base64 without
    padding.

    allowed by: a2a.proto Part.raw "In JSON serialization, this is encoded as a base64 string"
    and specification.md section 5.5 "This follows the ProtoJSON specification" (whose readers
    take base64 with or without padding)"""
    @replaces(ref.run_agent)
    def run_agent(original: Any, task: dict[str, Any], message: dict[str, Any], outcome: str) -> None:
        original(task, message, outcome)
        raws = [{**p, "raw": base64.b64encode(base64.b64decode(p["raw"])).decode().rstrip("=")}
                for p in message.get("parts", []) if isinstance(p, dict) and isinstance(p.get("raw"), str)]
        if raws and task.get("artifacts"):
            task["artifacts"].append({"artifactId": ref.new_id("artifact"), "name": "raw echo",
                                      "parts": raws})
