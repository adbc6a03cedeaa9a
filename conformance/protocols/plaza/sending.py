"""What a client may send: the document's client-side rules a generated "valid" request is
held to before it goes out (a request the document would not let a client send makes a
correct site look wrong). Applied by the generators of valid inputs (commands.py World,
parameters.py), and read by the test that holds those inputs to the same rules
(tests/unit/test_plaza_client_rules.py).

- A new intent has its own keys: a fresh ``messageId`` (/examplesSetup: "generate a fresh
  messageId for each new intent"; /multiTurn: "A new message intent uses a new messageId")
  and a fresh ``request_key`` (a retry with the same key answers the original outcome:
  docs/agent-plaza.md "Retries"; the device request's "{{new_uuid_saved_before_request}}").
- A paired cursor goes together or not at all, with values the site returned
  (/inboxPagination/conversationCursor: "Copy before_updated_at and before_id together from
  next_page_request; do not synthesize or round the timestamp"); ``before_seq`` is "the exact
  returned decimal string" (/conversationRead/pagination/before_seq) and never beside
  ``after_seq``.
- Ids name what the client owns or was given: its connections, tasks, groups, channels,
  keys, batches, the agents it knows (/examplesSetup: "use your own connection/task IDs");
  a reference to an object (a cursor ``after``, ``reply_to``, ``mentions``, ``request_id``)
  is a value the site returned, or is left out.
- Nothing an agent or another party sets: ROLE_USER only (the schema's const), no
  ``tenant`` (the agent card names none), message ``extensions`` only the document's own
  extension URI."""

from __future__ import annotations

import copy
from typing import Any

from conformance.model import Profile
from conformance.protocols.plaza.client import extension_uri, fresh_id

FRESH_KEYS = ("request_key",)  # a command's own idempotency key: new for each intent
PAIRED = (("before_updated_at", "before_id"),)  # /inboxPagination/conversationCursor
NOT_TOGETHER = (("after_seq", "before_seq"),)  # /conversationRead/pagination/before_seq
# references to objects a client only copies from an answer (or leaves out)
RETURNED = ("after", "before_seq", "reply_to", "mentions", "request_id", *PAIRED[0])
# fields whose value the client mints for a new object (its own ids, never one it was given): a
# channel it offers; its key bundle's key_id and an envelope's message_id sit one level down
MINTED = {"private_channel_offer": ("channel_id",)}


def fresh_keys(data: Any) -> Any:
    """A drawn command with a fresh idempotency key (a drawn one may repeat across runs and
    replay another intent's outcome, or be refused as consumed)."""
    if not isinstance(data, dict):
        return data
    out = dict(data)
    for key in FRESH_KEYS:
        if key in out:
            out[key] = fresh_id()
    return out


def paired(data: Any) -> Any:
    """Both halves of a paired cursor, or neither; never two cursors that exclude each other."""
    if not isinstance(data, dict):
        return data
    out = dict(data)
    for pair in PAIRED:
        if not all(f in out for f in pair):
            for f in pair:
                out.pop(f, None)
    for first, second in NOT_TOGETHER:
        if first in out and second in out:
            del out[second]
    return out


def message_as_a_client(spec: dict[str, Any], params: Any, free: Any = None) -> Any:
    """SendMessage params a client may send: a fresh messageId, no tenant, message
    extensions only the document's own URI. ``free(pointer)`` says whether a pointer is not
    what a break is about (an invalid input keeps its break as drawn)."""
    if not isinstance(params, dict):
        return params
    allowed = (lambda pointer: True) if free is None else free
    params = copy.deepcopy(params)
    if allowed("/tenant"):
        params.pop("tenant", None)
    message = params.get("message")
    if isinstance(message, dict):
        if allowed("/message/messageId"):
            message["messageId"] = fresh_id()
        extensions = message.get("extensions")
        if isinstance(extensions, list) and allowed("/message/extensions"):
            ext = extension_uri(spec)
            if extensions:
                message["extensions"] = [ext]
    return params


def get_task_as_a_client(params: Any) -> Any:
    """GetTask params a client may send: no tenant (the agent card names none)."""
    if isinstance(params, dict):
        params = {k: v for k, v in params.items() if k != "tenant"}
    return params


def cursor_fields(profile: Profile) -> tuple[str, ...]:
    """The fields RETURNED names that some command of the document takes (read when used,
    so a renamed field fails the test that holds the rules, not silently)."""
    names = {name for b in profile.spec["schemas"]["command"]["anyOf"] for name in b["properties"]}
    return tuple(f for f in RETURNED if f in names)


__all__ = ["FRESH_KEYS", "MINTED", "NOT_TOGETHER", "PAIRED", "RETURNED", "cursor_fields", "fresh_keys",
           "get_task_as_a_client", "message_as_a_client", "paired"]
