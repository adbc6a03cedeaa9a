"""Unexpected media types (section 13.4): a file part of a media type outside the card's
defaultInputModes is refused."""

from __future__ import annotations

import base64
from typing import Any

from conformance.checks.expect import expect_refused
from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import requirement
from conformance.kit.faults import replaces
from conformance.protocols.a2a.client import A2AClient
from conformance.protocols.a2a.documents import spec
from conformance.protocols.a2a.parts import covers, plain_with
from conformance.protocols.a2a.reference import A2AReference

UNEXPECTED_MEDIA = "application/x-conformance-unexpected"


def input_modes(card: dict[str, Any]) -> list[str]:
    """The media types the card says the agent takes (its defaults and every skill's)."""
    modes = list(card.get("defaultInputModes") or [])
    for skill in card.get("skills") or []:
        if isinstance(skill, dict):
            modes += list(skill.get("inputModes") or [])
    return [str(m) for m in modes]


@requirement(id="A2A-SEND-MEDIA-TYPE-REFUSED", level="SHOULD",
             title="A file part of a media type the card does not name is refused",
             source=spec("reject unexpected media types", after="### 13.4"),
             faults=["file_media_type_unchecked"])
def check_media_type_refused(ctx: CheckContext) -> None:
    c = A2AClient(ctx)
    modes = input_modes(c.card)
    if any(covers(mode, UNEXPECTED_MEDIA) for mode in modes):
        raise Untested(f"the card's input modes {modes} take any media type", "other")
    part = {"raw": base64.b64encode(b"conformance").decode(), "mediaType": UNEXPECTED_MEDIA,
            "filename": "conformance.bin"}
    reply = c.send(plain_with(c, part))  # not driven: a refused message would leave the agent's script
    expect_refused(ctx, reply, f"SendMessage with a file part of media type {UNEXPECTED_MEDIA} (input "
                               f"modes: {modes})")


@check_media_type_refused.fault
def file_media_type_unchecked(ref: A2AReference) -> None:
    """File parts (raw or url) are taken whatever their media type."""
    @replaces(ref.check_media_types)
    def check(original: Any, message: dict[str, Any]) -> None:
        original({**message, "parts": [p for p in message.get("parts", [])
                                       if not (isinstance(p, dict) and ("raw" in p or "url" in p))]})
