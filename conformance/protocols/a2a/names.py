"""What the A2A documents name that the kit handles itself: proto field names (checked against
the proto when loaded), the standard JSON-RPC errors of section 9.5, the A2A errors of section
5.4's table, the methods of the service and the capability each needs (section 3.3.4), the
service parameters of section 3.2.6 (the A2A-Version and A2A-Extensions headers). Plaza's
and Wever's A2A faces read them here too."""

from __future__ import annotations

from typing import Any

from conformance.documents.openapi import markdown_tables
from conformance.documents.prose import document_text
from conformance.documents.schemas import SpecError
from conformance.model import Profile
from conformance.protocols.a2a import documents as docs


def proto_field_names() -> frozenset[str]:
    return frozenset(f.json_name for m in docs.proto().messages.values() for f in m.fields)


def named(*names: str) -> tuple[str, ...]:
    """Field names the kit handles itself, checked against the proto when loaded."""
    missing = [n for n in names if n not in proto_field_names()]
    if missing:
        raise SpecError(f"{docs.PROTO} names no field {missing}: the kit's handling of them is stale")
    return names


(TENANT, PAGE_TOKEN, EXTENSIONS, CONTEXT_ID, MESSAGE_ID, TASK_ID, ID, REFERENCE_TASK_IDS, URL, MEDIA_TYPE,
 ACCEPTED_OUTPUT_MODES, HISTORY_LENGTH, PAGE_SIZE, MESSAGE, STATUS, STATUS_AFTER, METADATA, ROLE) = named(
    "tenant", "pageToken", "extensions", "contextId", "messageId", "taskId", "id", "referenceTaskIds", "url",
    "mediaType", "acceptedOutputModes", "historyLength", "pageSize", "message", "status",
    "statusTimestampAfter", "metadata", "role")
CAPABILITIES = named("streaming", "pushNotifications", "extendedAgentCard")
SCHEME, CREDENTIALS = named("scheme", "credentials")


def service_parameter(name: str) -> str:
    """``name`` as the table of standard service parameters (section 3.2.6) lists it."""
    for table in markdown_tables(document_text(docs.SPEC)):
        if "3.2.6" in table.heading and "Name" in table.columns:
            if name in [row["Name"].strip("`") for row in table.rows]:
                return name
    raise SpecError(f"{docs.SPEC} section 3.2.6 lists no service parameter {name!r}")


VERSION_HEADER, EXTENSIONS_HEADER = service_parameter("A2A-Version"), service_parameter("A2A-Extensions")


# the proto's TaskStates the kit names itself (the a2a profile's, Plaza's and Wever's faces)
SUBMITTED, WORKING, INPUT_REQUIRED, COMPLETED, CANCELED, REJECTED = (
    docs.state_named(word) for word in ("submitted", "working", "input_required", "completed", "canceled",
                                        "rejected"))
# the Role a client's message carries (the proto: "from the client to the server")
CLIENT_ROLE = docs.client_role()


def standard(name: str) -> str:
    """A standard JSON-RPC error of section 9.5, by the name its table gives."""
    if name not in docs.jsonrpc_errors():
        raise SpecError(f"section 9.5 names no standard JSON-RPC error {name!r}")
    return name


INVALID_PARAMS, INTERNAL, METHOD_NOT_FOUND = (standard("InvalidParamsError"), standard("InternalError"),
                                              standard("MethodNotFoundError"))


def a2a_names(profile: Profile) -> frozenset[str]:
    """The A2A errors of the table of section 3.3.2 (with their codes in section 5.4)."""
    return frozenset(e.name for e in profile.errors.values())


def error_named(profile: Profile, name: str) -> str:
    if name not in a2a_names(profile):
        raise SpecError(f"the error table of section 5.4 names no {name!r}")
    return name


def methods(profile: Profile) -> dict[str, Any]:
    return {m.name: m for m in docs.proto().service(profile.settings["proto"]["service"])}


def capability_of(profile: Profile, method: str) -> tuple[str, str] | None:
    """The capability a method needs and the error it gets where the card declares it off
    (section 3.3.4): streaming for a server-streaming rpc, push notifications for the push
    notification config rpcs, the extended card for the rpc answering an AgentCard."""
    rpc = methods(profile)[method]
    streaming, push, card = CAPABILITIES
    if rpc.server_streaming:
        return streaming, error_named(profile, "UnsupportedOperationError")
    if "PushNotificationConfig" in rpc.name:
        return push, error_named(profile, "PushNotificationNotSupportedError")
    if rpc.response.rsplit(".", 1)[-1] == "AgentCard":
        return card, error_named(profile, "UnsupportedOperationError")
    return None


def slug(method: str) -> str:
    """``SendMessage`` -> ``SEND-MESSAGE`` (a requirement id's spelling of a method)."""
    return docs.reason_of(method).replace("_", "-")
