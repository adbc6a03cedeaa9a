"""badge.svg: a flat two-part badge (shields.io style, hand-written, no external refs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from conformance.report.summary import breakdown

COLOURS = {
    "fully compliant": "#4c1",  # green
    "SHOULD-compliant": "#a4a61d",  # yellowgreen
    "MUST-compliant": "#dfb317",  # yellow
    "non-compliant": "#e05d44",  # red
    "ungraded": "#9f9f9f",  # grey
}

# Rough advance widths of 11px Verdana (shields' font), by character class.
_NARROW = set("fijlrtI!.,:;'|()[]{} ·")
_WIDE = set("mwMW@%")


def text_width(text: str) -> float:
    width = 0.0
    for ch in text:
        if ch in _NARROW:
            width += 4.0
        elif ch in _WIDE:
            width += 10.0
        elif ch.isupper() or ch.isdigit():
            width += 7.5
        else:
            width += 6.6
    return width


def badge_svg(label: str, message: str, colour: str, more: str = "") -> str:
    """The SVG text of a flat badge ``label | message`` with the message on ``colour``;
    ``more`` is added to its title (what a reader hovering over it sees)."""
    lw = round(text_width(label) + 12)
    mw = round(text_width(message) + 12)
    total = lw + mw
    lx, mx = lw / 2, lw + mw / 2
    lab, msg = escape(label), escape(message)
    title = escape(f"{label}: {message}" + (f"; {more}" if more else ""), {'"': "&quot;"})
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="20" role="img" aria-label="{title}">
<title>{title}</title>
<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/>\
<stop offset="1" stop-opacity=".1"/></linearGradient>
<clipPath id="r"><rect width="{total}" height="20" rx="3" fill="#fff"/></clipPath>
<g clip-path="url(#r)">
<rect width="{lw}" height="20" fill="#555"/>
<rect x="{lw}" width="{mw}" height="20" fill="{colour}"/>
<rect width="{total}" height="20" fill="url(#s)"/>
</g>
<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">
<text x="{lx:.1f}" y="15" fill="#010101" fill-opacity=".3">{lab}</text>
<text x="{lx:.1f}" y="14">{lab}</text>
<text x="{mx:.1f}" y="15" fill="#010101" fill-opacity=".3">{msg}</text>
<text x="{mx:.1f}" y="14">{msg}</text>
</g>
</svg>
"""


def not_reached_of(summary: dict[str, Any]) -> list[str]:
    """Why rows were not run to a verdict, in the words every report uses (``breakdown``)."""
    given = summary.get("not_reached")
    if isinstance(given, list):
        return [str(line) for line in given]
    return breakdown(dict(summary.get("untested_reasons") or {}), dict(summary.get("blocked_causes") or {}),
                     dict(summary.get("not_applicable") or {}))


def write_badge(report_dir: Path, summary: dict[str, Any]) -> Path:
    """Write ``report_dir/badge.svg``: "<profile> conformance" | "<grade> · <date of started_at>"."""
    grade = str(summary.get("grade") or "ungraded")
    day = str(summary.get("started_at") or "")[:10]
    # an ungraded badge says why: a stopped or partial run is no grade of the implementation
    word = {"interrupted": "interrupted", "unreachable": "unreachable", "time limit": "time limit",
            "kit error": "kit error"}.get(
        str(summary.get("verdict")), grade)
    live = summary.get("live") or {}
    if summary.get("gate") == "live" and summary.get("verdict") == "pass" and live:
        # gated on what a client can test: the count says how much that was, never a grade
        word = f"live: {str(summary.get('level') or 'must').upper()} {live['held']} of {live['of']}"
    message = f"{word} · {day}" if day else word
    label = f"{summary.get('profile') or 'protocol'} conformance"
    bindings = [str(b) for b in summary.get("bindings") or [] if b]
    more = "; ".join(([f"over {', '.join(bindings)}"] if len(bindings) > 1 else [])
                     + not_reached_of(summary))
    svg = badge_svg(label, message, COLOURS.get(grade if word == grade else "ungraded", COLOURS["ungraded"]),
                    more)
    report_dir = Path(report_dir)
    report_dir.mkdir(parents=True, exist_ok=True)
    path = report_dir / "badge.svg"
    path.write_text(svg, encoding="utf-8")
    return path
