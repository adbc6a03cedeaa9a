"""Server-sent events read by the standard's framing (conformance/transport/sse.py), the one
reader of every binding that streams."""

from types import SimpleNamespace
from typing import Any

from conformance.transport.binding import stream_events
from conformance.transport.sse import sse_events

FRAMED = (": hello\r\nevent: message\r\nid: 1\r\ndata: {\"a\":\r\ndata:  1}\r\n\r\n"
          "data: 2\n\ndata: 3\r\rdata: 4")


def test_an_event_the_text_ends_inside_is_dispatched_only_when_asked():
    assert sse_events(FRAMED) == ['{"a":\n 1}', "2", "3"]
    assert sse_events(FRAMED, unfinished=True) == ['{"a":\n 1}', "2", "3", "4"]


def test_a_json_rpc_stream_with_its_data_over_several_lines_is_read_whole():
    """A reader of each data line alone found no JSON in such a stream, and a check then
    called a correct server's stream a refusal (the a2a variant sse_framing showed it)."""
    reply: Any = SimpleNamespace(text=FRAMED)  # what stream_events reads of an HttpReply
    assert stream_events(reply) == [{"a": 1}, 2, 3, 4]
