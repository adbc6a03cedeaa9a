"""Text for a reader: cut where a word ends, never inside one."""

from __future__ import annotations

SEPARATORS = ("/", ",", ";", ":", "=", "&", "-", ".")  # where a token with no space (a URL) may end


def clipped(text: str, limit: int, mark: str = " …") -> str:
    """``text`` on one line, at most ``limit`` characters, cut after its last whole word that
    fits and marked when cut; a first token too long to fit (a URL, a JSON text) is cut after
    one of its separators, and only with none of them inside it."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    room = max(limit - len(mark), 1)
    head = text[:room + 1]  # its last character says whether the word before it ends there
    if " " in head:
        return head.rsplit(" ", 1)[0].rstrip(" ,;:") + mark
    at = max(head.rfind(sep, 0, room) for sep in SEPARATORS)
    return (head[:at + 1] if at > 0 else head[:room]) + mark
