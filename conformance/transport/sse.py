"""Server-sent events read once, by the standard's framing, for every binding that streams
(a JSON-RPC answer, A2A's REST stream, MCP's Streamable HTTP): a server may end lines with
CR, LF or CRLF, send comments and other fields, and spread one event's data over several
``data`` lines, and a reader of each ``data`` line on its own would call that stream broken."""

from __future__ import annotations


def sse_events(text: str, unfinished: bool = False) -> list[str]:
    """The data of each event of a text/event-stream (the WHATWG rules: lines end in CR, LF or
    CRLF; a blank line ends an event; ``data`` lines join with LF; comments and other fields
    are skipped; an event the stream ends inside is not dispatched, unless ``unfinished``:
    for a body read whole, whose server may leave its last event without the blank line)."""
    out: list[str] = []
    data: list[str] = []
    pending = False
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for line in (lines + [""]) if unfinished else lines[:-1]:
        if not line:
            if pending:
                out.append("\n".join(data))
            data, pending = [], False
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value[1:] if value.startswith(" ") else value)
            pending = True
    return out
