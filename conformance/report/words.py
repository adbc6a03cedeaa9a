"""Text for a reader: cut where a word ends, never inside one."""

from __future__ import annotations


def clipped(text: str, limit: int, mark: str = " …") -> str:
    """``text`` on one line, at most ``limit`` characters, cut after a whole word (or after
    a whole punctuation-separated piece of a long token) and marked when cut."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    room = max(limit - len(mark), 1)
    head = text[:room + 1]
    cut = head.rstrip().rsplit(" ", 1)[0] if " " in head.rstrip() else ""
    if len(cut) < room // 2:  # one long token (a URL, a JSON text): end at one of its separators
        pieces = [head.rfind(sep, 0, room) for sep in ("/", ",", ";", ":", "=", "&", "-", ".")]
        at = max(pieces)
        cut = head[:at + 1] if at >= room // 2 else head[:room]
    return cut.rstrip(" ,;:") + mark
