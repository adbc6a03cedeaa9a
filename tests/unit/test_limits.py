"""Limits as data: every `limits:` entry of both profiles loads from its spec with the
values the specs state today, a spec that stops stating one fails the load in one line,
and no protocol package types a limit again as a number."""

from __future__ import annotations

import copy
import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest

from conformance.documents.limits import load_limit, load_limits
from conformance.documents.schemas import SpecError, load_document, resolve_pointer
from conformance.model import Limit, Source
from conformance.run.profiles import DATA_ROOT, load_profile, profile_path, read_settings

# What the specs state today, written out on purpose: a change here is a change of a spec.
EXPECTED: dict[str, dict[str, int]] = {
    "bindu": {
        "body_bytes": 10485760,  # "request bodies over 10 MB return 413"
        "did_timestamp_window_s": 300,  # "within ±300s of server clock"
        "payment_session_ttl_s": 300,  # the profile's choice (the spec is silent)
    },
    "canon-verbs": {
        "input_ceiling_ms": 1800000,  # request_input: "Ceiling 30 minutes"
        "card_ceiling_ms": 1800000,  # request_card: "Deadline ceiling 30 minutes"
        "approval_ceiling_ms": 259200000,  # "Approval deadline ceiling is 72 hours"
        "approval_replay_window_ms": 259200000,  # "replays for up to 72h after first consume"
        "card_envelope_bytes": 32768,  # "<= 32768 bytes serialized"
    },
}
PROFILE_CHOICES = {("bindu", "payment_session_ttl_s")}


def read(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    settings = read_settings(profile_path(name))
    return settings, load_document(DATA_ROOT / settings["spec"])


def limits_of(name: str) -> dict[str, Limit]:
    settings, spec = read(name)
    return load_limits(settings.get("limits"), spec, settings["spec"])


# ---------------------------------------------------------------------------- (a) values


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_limit_loads_with_the_specs_value(name: str) -> None:
    settings, _ = read(name)
    limits = limits_of(name)
    assert {k: v.value for k, v in limits.items()} == EXPECTED[name]
    for key, limit in limits.items():
        assert limit.name == key
        assert isinstance(limit.value, int)
        if (name, key) in PROFILE_CHOICES:
            assert limit.source.is_profile and limit.source.pointer, limit
        else:
            assert limit.source == Source(settings["spec"], settings["limits"][key]["pointer"]), limit


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_load_profile_fills_profile_limits(name: str) -> None:
    assert load_profile(name).limits == limits_of(name)


def test_a_number_without_pattern_is_read_as_is() -> None:
    _, spec = read("canon-verbs")
    pointer = "/$defs/request_input_input/properties/timeoutMs/maximum"
    limit = load_limit("timeout_max_ms", {"pointer": pointer}, spec, "canon.json")
    assert limit == Limit("timeout_max_ms", 1800000, Source("canon.json", pointer))
    scaled = load_limit("x_s", {"pointer": pointer, "scale": 0.001}, spec, "canon.json")
    assert scaled.value == 1800


# ---------------------------------------------------------------------------- (b) errors

BAD_ENTRIES = [
    ({"pointer": "/paths/~1nowhere/post/description", "pattern": r"(\d+)"}, "does not resolve"),
    ({"pointer": "/paths/~1/post/description", "pattern": r"bodies over (\d+) GB"}, "does not match"),
    ({"pointer": "/paths/~1/post/description", "pattern": r"bodies over \d+ MB"}, "does not match"),
    ({"pointer": "/paths/~1/post/description"}, "not a number"),
    ({"pointer": "/paths/~1/post/description", "pattern": "(unclosed"}, "does not compile"),
    ({"pointer": "/info", "pattern": r"(\d+)"}, "not a text"),
    ({"pointer": "/info/description", "patern": r"(\d+)"}, "not ['patern']"),
    ({"value": 5, "source": "profile"}, "needs exactly value, source: profile and why"),
    ({"value": 5, "source": "spec", "why": "x"}, "needs exactly value, source: profile and why"),
    ({"value": "five", "source": "profile", "why": "x"}, "not a number"),
    ("10 MB", "is a mapping"),
]


@pytest.mark.parametrize("entry,reason", BAD_ENTRIES)
def test_a_bad_entry_fails_in_one_line(entry: Any, reason: str) -> None:
    _, spec = read("bindu")
    with pytest.raises(SpecError) as info:
        load_limits({"body_bytes": entry}, spec, "specs/bindu/openapi.yaml")
    message = str(info.value)
    assert "\n" not in message and len(message) < 300, message
    assert message.startswith("limit 'body_bytes'"), message
    assert reason in message, message


def test_a_spec_that_drops_the_sentence_fails_the_load() -> None:
    settings, spec = read("canon-verbs")
    edited = copy.deepcopy(spec)
    card = resolve_pointer(edited, "/$defs/runtimeCard")
    card["description"] = re.sub(r"<= \d+ bytes serialized, ", "", card["description"])
    with pytest.raises(SpecError, match=r"^limit 'card_envelope_bytes': .*#/\$defs/runtimeCard/description "
                                        r"no longer states it"):
        load_limits(settings["limits"], edited, settings["spec"])


def test_no_block_is_no_limits() -> None:
    assert load_limits(None, {}, "x") == {}
    with pytest.raises(SpecError, match="must be a mapping"):
        load_limits(["body_bytes"], {}, "x")


# ---------------------------------------------------------------------------- (c) the grep

UNITS = r"(?:MB|MiB|KB|KiB|bytes?|ms|s|secs?|seconds?|min|minutes?|h|hrs?|hours?)\b"
# the other units a limit could be typed in, by the unit its name ends with
ALSO_AS = {"_ms": {"s": 1000, "min": 60_000, "h": 3_600_000}, "_s": {"ms": 0.001, "min": 60, "h": 3600},
           "_bytes": {"KiB": 1024, "MiB": 1048576}}


def digits(number: int) -> str:
    """A regex for ``number`` as a literal: 32768, 32_768, not inside another number."""
    return r"(?<![\w.])" + "_?".join(str(number)) + r"(?![\w.])"


def forbidden(limit: Limit, scale: float) -> list[str]:
    """Patterns of ``limit`` typed by hand: its value (in its unit, the spec's and the usual
    others) bare when it is unmistakable (3 digits or more), and any of them followed by a
    unit or a multiplication (``72 *``, ``30 minutes``, ``10 * ONE_MB``) or after ±."""
    forms = {limit.value, limit.value / scale}
    for suffix, divisors in ALSO_AS.items():
        if limit.name.endswith(suffix):
            forms |= {limit.value / d for d in divisors.values()}
    patterns = []
    for form in forms:
        if not float(form).is_integer() or form <= 1:
            continue
        number = digits(int(form))
        if form >= 100:
            patterns.append(number)
        patterns.append(number + r"\s*(?:\*|-?\s*" + UNITS + ")")
        patterns.append("±" + r"\s*" + number)
    return patterns


def package_files(package: str) -> list[Path]:
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations, package
    folder = Path(next(iter(spec.submodule_search_locations)))
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_no_protocol_file_types_a_limit(name: str) -> None:
    settings, _ = read(name)
    files = package_files(settings["package"])
    assert files
    hits = []
    for key, limit in limits_of(name).items():
        scale = float(settings["limits"][key].get("scale", 1))
        for pattern in forbidden(limit, scale):
            for path in files:
                for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                    if re.search(pattern, line):
                        hits.append(f"{path.name}:{number}: {key} ({pattern}): {line.strip()}")
    assert not hits, "limits typed by hand instead of read from profile.limits:\n" + "\n".join(hits)


def test_the_grep_finds_what_it_is_for() -> None:
    lim = {k: v for k, v in limits_of("canon-verbs").items()}
    body = limits_of("bindu")["body_bytes"]
    cases = [
        (lim["card_envelope_bytes"], 1, "CARD_MAX_BYTES = 32768"),
        (lim["card_envelope_bytes"], 1, "big = 32_768"),
        (lim["approval_ceiling_ms"], 3_600_000, "APPROVAL_CEILING_MS = 72 * HOUR_MS"),
        (lim["approval_ceiling_ms"], 3_600_000, '"within the 72-hour ceiling"'),
        (lim["approval_replay_window_ms"], 3_600_000, "seconds=72 * 3600"),
        (lim["input_ceiling_ms"], 60_000, "INTERACTION_CEILING_MS = 30 * MINUTE_MS"),
        (lim["input_ceiling_ms"], 60_000, "timeout = 1_800_000"),
        (lim["input_ceiling_ms"], 60_000, "advance_clock(seconds=1800)"),
        (body, 1048576, "text='x' * (10 * ONE_MB)"),
        (body, 1048576, "MAX = 10485760"),
        (body, 1048576, "MAX = 10_485_760"),
        (body, 1048576, '"Bodies over 10 MB"'),
    ]
    for limit, scale, line in cases:
        assert any(re.search(p, line) for p in forbidden(limit, scale)), (limit.name, line)
    window = limits_of("bindu")["did_timestamp_window_s"]
    for line in ("WINDOW = 300", '"outside ±300 s"', "ts - 300"):
        assert any(re.search(p, line) for p in forbidden(window, 1)), line
    for line in ("minutes * 60 + 30", "x[:3000]", "0.300", "MINUTE_MS = 60_000", "range(60)"):
        assert not any(re.search(p, line) for lim_ in lim.values() for p in forbidden(lim_, 1)), line


# Canon limits added with the statement map (issue 9): what the spec states today.
EXPECTED["canon-verbs"].update({
    "text_bytes": 4096,  # send_to text: "<= 4096 UTF-8 bytes"
    "caption_bytes": 4096,  # forward text: "<= 4096 UTF-8 bytes"
    "metadata_utf16_units": 4096,  # turnMetadata: "length <= 4096 UTF-16 code units"
    "request_message_chars": 500,  # requestMessage: "senders truncate to 500 chars"
    "diff_file_clip_bytes": 24576,  # unifiedDiff: "per-file clip 24576 bytes"
    "diff_total_clip_bytes": 98304,  # unifiedDiff: "total 98304 bytes"
    "card_values_bytes": 8192,  # request_card values: "<= 8192 bytes"
    "card_values_depth": 8,  # request_card values: "depth <= 8"
    "card_title_authoring_chars": 120,  # runtimeCard: "authoring caps title 120"
    "card_fallback_authoring_chars": 500,  # "fallbackText 500"
    "card_blocks_authoring_count": 24,  # "blocks 24"
})


def test_a_check_reads_a_limit_by_name_and_an_unknown_name_says_which_exist() -> None:
    from conformance.kit.check import CheckContext
    from conformance.run.launch import open_run

    profile = load_profile("wever-connect")
    run = open_run(profile, "reference", budget="quick", seed=1)
    try:
        ctx = CheckContext(run, profile.requirements[0])
        assert ctx.limit("task_hours") == int(profile.limits["task_hours"].value) == 24
        with pytest.raises(ValueError, match="no limit 'task_days'.*task_hours"):
            ctx.limit("task_days")
    finally:
        run.http.close()
