"""How bodies and bytes are written (sections 3.7 and 11 for HTTP+JSON bodies, the proto's bytes):
HTTP+JSON bodies are UTF-8, a raw part's bytes travel as base64 and come back as sent."""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from conformance.kit.check import CheckContext, NotApplicable, Untested
from conformance.kit.declare import requirement
from conformance.kit.faults import replaces
from conformance.kit.reference import Refusal
from conformance.protocols.a2a.client import A2AClient, a2a_error
from conformance.protocols.a2a.documents import proto_at, spec
from conformance.protocols.a2a.driving import fetched, result_of, task_answer
from conformance.protocols.a2a.parts import own_message, parts_in, plain_with, with_part
from conformance.protocols.a2a.reference import A2AReference
from conformance.transport.binding import Reply
from conformance.transport.http import json_excerpt

REST = "http-routes"


NON_ASCII = "conformance: héllo, naïve café — 日本語 ✓ 🙂"


RAW_BYTES = "conformance raw bytes: ✓ ünïcode".encode()


# -- UTF-8 ---------------------------------------------------------------------------------------
def utf8_body(ctx: CheckContext, reply: Reply, what: str) -> None:
    """An application/a2a+json body is UTF-8: its bytes decode, and a charset, where named, says so."""
    try:
        reply.http.content.decode("utf-8")
    except UnicodeDecodeError as exc:
        ctx.fail(f"{what}: the body is not UTF-8 ({exc}): {reply.http.content[:120]!r}",
                 kind="malformed_answer")
    media = reply.http.headers.get("content-type", "")
    charset = re.search(r"charset=\"?([\w-]+)", media, re.IGNORECASE)
    ctx.expect(charset is None or charset.group(1).lower().replace("_", "-") in ("utf-8", "utf8"),
               f"{what}: Content-Type {media!r} names another charset than UTF-8", kind="malformed_answer")


@requirement(id="A2A-JSON-UTF8", level="MUST",
             title="Over HTTP+JSON, application/a2a+json bodies are UTF-8: answers decode as UTF-8, and "
                   "non-ASCII text sent in UTF-8 is read as such",
             source=spec("UTF-8 encoding MUST be used for JSON text"),
             faults=["rest_body_latin1", "request_read_as_latin1"])
def check_json_utf8(ctx: CheckContext) -> None:
    """The kit sends its message as raw UTF-8 (not \\u escapes); where the task's history keeps
    that message (its messageId), its text is what was sent: a body read in another encoding
    would have changed it."""
    c = A2AClient(ctx)  # first: it finds the binding's interface on the card
    if c.binding.kind != REST:
        raise NotApplicable("application/a2a+json is the HTTP+JSON binding's media type (section 14.1)")
    message = with_part(c, {"text": NON_ASCII})
    params = {"message": message}
    sent = c.call("SendMessage", params, raw=json.dumps(params, ensure_ascii=False))
    with ctx.subcheck("SendMessage answer"):
        utf8_body(ctx, sent, "SendMessage's answer")
    task = task_answer(ctx, sent, "SendMessage with non-ASCII text")
    got = c.get(task["id"])
    with ctx.subcheck("GetTask answer"):
        utf8_body(ctx, got, "GetTask's answer")
    kept = own_message(got.result if got.ok and isinstance(got.result, dict) else {}, message["messageId"])
    if kept is None:
        return
    with ctx.subcheck("the message as the task keeps it"):
        texts = [p.get("text") for _, p in parts_in(kept)]
        ctx.expect(NON_ASCII in texts, f"the task's history keeps the kit's message {message['messageId']} "
                                       f"with texts {texts!r}; it was sent as {NON_ASCII!r} in UTF-8",
                   kind="expectation")


@check_json_utf8.fault
def rest_body_latin1(ref: A2AReference) -> None:
    """HTTP+JSON answers are encoded in ISO-8859-1, not UTF-8."""
    from starlette.responses import Response

    @replaces(ref.rest_response)
    def rest_response(original: Any, body: Any, status: int = 200) -> Any:
        text = json.dumps(body, ensure_ascii=False).encode("latin-1", errors="replace")
        return Response(text, status_code=status, media_type="application/a2a+json")


def mangled(message: Any) -> Any:
    """``message`` with the text of its parts as bytes read in ISO-8859-1."""
    if not isinstance(message, dict):
        return message
    parts = [{**p, "text": p["text"].encode().decode("latin-1")} if isinstance(p, dict)
             and isinstance(p.get("text"), str) else p for p in message.get("parts", [])]
    return {**message, "parts": parts}


@check_json_utf8.fault
def request_read_as_latin1(ref: A2AReference) -> None:
    """Request bodies are read as ISO-8859-1: a message's non-ASCII text is stored garbled."""
    @replaces(ref.op_SendMessage)
    def send(original: Any, params: dict[str, Any], caller: str) -> Any:
        return original({**params, "message": mangled(params.get("message"))}, caller)


# -- bytes as base64 -----------------------------------------------------------------------------
def base64_bytes(value: Any) -> bytes | None:
    """The bytes of a base64 string (standard or URL-safe alphabet, padded or not: ProtoJSON
    readers take each), or None when it is not one."""
    if not isinstance(value, str):
        return None
    text = value.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def input_mode(c: A2AClient, prefer: str = "text/plain") -> str:
    modes = c.card.get("defaultInputModes")
    modes = [m for m in modes if isinstance(m, str)] if isinstance(modes, list) else []
    return prefer if prefer in modes or not modes else modes[0]


@requirement(id="A2A-JSON-BYTES-BASE64", level="MUST",
             title="Bytes travel as base64 in JSON: a raw part the kit sends in base64 is accepted, and "
                   "every raw part in an answer is base64 (the kit's own, where kept, decodes to what was "
                   "sent)",
             source=proto_at("In JSON serialization, this is encoded as a base64 string",
                             after="message Part"),
             faults=["raw_part_refused", "raw_part_stored_decoded"])
def check_bytes_base64(ctx: CheckContext) -> None:
    """A refusal for its media type (ContentTypeNotSupportedError) leaves it untested: the
    agent may not take files of that type."""
    c = A2AClient(ctx)
    part = {"raw": base64.b64encode(RAW_BYTES).decode(), "mediaType": input_mode(c),
            "filename": "conformance.txt"}
    message = plain_with(c, part)  # not driven: a refused message would leave the agent's script
    reply = c.send(message)
    if not reply.ok and a2a_error(ctx, reply) == "ContentTypeNotSupportedError":
        raise Untested(f"the agent refused a raw part of media type {part['mediaType']} for its type "
                       f"({reply.describe()})", "other")
    ctx.expect(reply.ok, f"SendMessage with a raw part in base64 was refused: {reply.describe()}",
               kind="rejected_valid")  # accepted: judged even where no answer shows the part again
    result = result_of(ctx, reply, "SendMessage with a raw part in base64")
    answers: list[tuple[str, Any]] = [("SendMessage", result)]
    task = result.get("task")
    if isinstance(task, dict) and isinstance(task.get("id"), str):
        answers.append(("GetTask", fetched(c, task["id"])))
    for name, value in answers:
        for where, p in parts_in(value):
            if "raw" in p:
                with ctx.subcheck(f"{name} {where}"):
                    ctx.expect(base64_bytes(p["raw"]) is not None,
                               f"{name}: the raw part at {where} is not base64: {json_excerpt(p['raw'])}",
                               kind="schema_mismatch")
        kept = own_message(value.get("task", value) if isinstance(value, dict) else {}, message["messageId"])
        raws = [p.get("raw") for _, p in parts_in(kept or {}) if "raw" in p]
        if raws:
            with ctx.subcheck(f"{name}: the kit's message as kept"):
                ctx.expect(RAW_BYTES in [base64_bytes(r) for r in raws],
                           f"{name}: the kit's raw part is kept as {json_excerpt(raws)}, which does not "
                           f"decode to the bytes sent ({base64.b64encode(RAW_BYTES).decode()!r})",
                           kind="expectation")


@check_bytes_base64.fault
def raw_part_refused(ref: A2AReference) -> None:
    """A raw part is refused as invalid parameters (its base64 taken for something else)."""
    @replaces(ref.check_media_types)
    def check(original: Any, message: dict[str, Any]) -> None:
        if any(isinstance(p, dict) and "raw" in p for p in message.get("parts", [])):
            raise Refusal("InvalidParamsError", "raw must be hexadecimal", data={"field": "message.parts"})
        original(message)


@check_bytes_base64.fault
def raw_part_stored_decoded(ref: A2AReference) -> None:
    """A raw part's bytes are decoded and kept (and answered) as text in ``raw``, not base64."""
    def decoded(message: Any) -> Any:
        parts = [{**p, "raw": base64.b64decode(p["raw"]).decode(errors="replace")} if isinstance(p, dict)
                 and isinstance(p.get("raw"), str) else p for p in message.get("parts", [])]
        return {**message, "parts": parts}

    @replaces(ref.op_SendMessage)
    def send(original: Any, params: dict[str, Any], caller: str) -> Any:
        return original({**params, "message": decoded(params["message"])}, caller)
