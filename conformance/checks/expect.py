"""Answers judged against a profile's error catalog: the spec's (JSON-RPC codes
with their HTTP statuses) or the profile's own (code strings with statuses).
Written once over transport.binding.Reply, for every binding."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from conformance.kit.check import CheckContext
from conformance.model import ErrorCode, Profile
from conformance.transport.binding import Reply
from conformance.transport.http import json_excerpt


def catalog_entry(profile: Profile, code_or_name: Any) -> ErrorCode:
    """The catalog row with this code, or else this name (names are the spec's, e.g. 'TaskNotFound')."""
    if code_or_name in profile.errors:
        return profile.errors[code_or_name]
    for err in profile.errors.values():
        if isinstance(code_or_name, str) and err.name.lower() == code_or_name.lower():
            return err
    raise KeyError(f"the {profile.name} error catalog has no error {code_or_name!r}")


def error_named(profile: Profile, name: str) -> ErrorCode:
    return catalog_entry(profile, name)


def _label(err: ErrorCode) -> str:
    return f"{err.code} {err.name}" if err.name != err.code else str(err.code)


def expect_status(ctx: CheckContext, reply: Reply, err: ErrorCode, what: str) -> None:
    """Where the binding's HTTP statuses carry meaning, an error comes with the catalog's."""
    if reply.statuses:
        ctx.expect(reply.status == err.http_status,
                   f"{what}: error {_label(err)} came with HTTP {reply.status}; "
                   f"the catalog says {err.http_status}",
                   kind="wrong_status", statement=str(err.source), expected_status=err.http_status,
                   actual_status=reply.status, actual_code=reply.error_code)


def expect_error(ctx: CheckContext, reply: Reply, expected: Any, what: str,
                 also: Iterable[Any] = ()) -> ErrorCode:
    """The answer is the catalog error ``expected`` (a code or a name; ``also`` lists
    others the spec allows), flagged by the binding, with the catalog's HTTP status."""
    wanted = catalog_entry(ctx.profile, expected)
    allowed = {wanted.code} | {catalog_entry(ctx.profile, a).code for a in also}
    names = " or ".join(_label(catalog_entry(ctx.profile, c))
                        for c in [wanted.code, *sorted(allowed - {wanted.code}, key=str)])
    ctx.expect(not reply.ok and reply.error_code in allowed,
               f"{what}: expected error {names}, got {reply.describe()}",
               kind="accepted_invalid" if reply.ok else "wrong_error_code", statement=str(wanted.source),
               expected_code=wanted.code, actual_code=reply.error_code, actual_status=reply.status)
    got = ctx.profile.errors[reply.error_code]
    ctx.expect(reply.flagged,
               f"{what}: error {_label(got)} is not flagged as an error by the {reply.binding} binding",
               kind="malformed_answer")
    expect_status(ctx, reply, got, what)
    return got


def expect_refused(ctx: CheckContext, reply: Reply, what: str, statement: str | None = None) -> None:
    """The answer is a refusal of any kind the binding flags (an error, with an HTTP
    error status where statuses mean something): for statements that say "refused"
    without naming the error (the code may then be a SHOULD of the profile)."""
    ctx.expect(not reply.ok, f"{what}: expected a refusal, got {reply.describe()}", kind="accepted_invalid",
               statement=statement)
    ctx.expect(reply.flagged, f"{what}: the answer is not flagged as an error by the {reply.binding} binding "
                              f"({reply.describe()})",
               kind="malformed_answer", statement=statement)
    # a 5xx is the server failing, not refusing, whatever the binding
    ctx.expect(reply.status < 500, f"{what}: the server failed (HTTP {reply.status}) instead of refusing",
               kind="wrong_status",
               statement=statement)
    if reply.statuses:
        ctx.expect(400 <= reply.status < 500,
                   f"{what}: a refusal must come with a 4xx status, got HTTP {reply.status}",
                   kind="wrong_status", statement=statement)


def expect_mapping(ctx: CheckContext, value: Any, what: str, keys: Iterable[str] = ()) -> dict[str, Any]:
    """``value`` as a JSON object holding ``keys``: an answer of another shape is a
    finding that quotes it, never a crash of the check."""
    missing = [k for k in keys if not isinstance(value, dict) or k not in value]
    if not isinstance(value, dict) or missing:
        shown = json_excerpt(value)
        ctx.fail(f"{what}: expected an object{' with ' + ', '.join(missing) if missing else ''}, got {shown}",
                 kind="malformed_answer")
    return value


def expect_refusal(ctx: CheckContext, reply: Reply, error: Any, what: str) -> None:
    """``error`` (a catalog code or name), or any refusal when ``error`` is None: for
    rows whose MUST asserts what the spec says (refused) and whose SHOULD asks for the
    profile's code."""
    if error is None:
        expect_refused(ctx, reply, what)
    else:
        expect_error(ctx, reply, error, what)


def refused_as(ctx: CheckContext, reply: Reply, error: Any, what: str, strict: bool) -> None:
    """The ambiguity rule for refusals: the spec says "refused" (the MUST: any refusal);
    the code is the profile's (``strict``: the SHOULD that asks for it)."""
    expect_refusal(ctx, reply, error if strict else None, what)


def expect_list(ctx: CheckContext, value: Any, what: str) -> list[Any]:
    """``value`` as a JSON array (another shape is a finding that quotes it)."""
    if not isinstance(value, list):
        ctx.fail(f"{what}: expected an array, got {json_excerpt(value)}", kind="malformed_answer")
    return value


def expect_result(ctx: CheckContext, reply: Reply, what: str, keys: Iterable[str] | None = None) -> Any:
    """The answer is a success (a result, with HTTP 200 where statuses carry meaning);
    with ``keys``, a JSON object holding them (another shape is a finding, not a crash)."""
    ctx.expect(reply.ok, f"{what}: expected a result, got {reply.describe()}",
               kind="rejected_valid" if reply.flagged else "malformed_answer")
    if reply.statuses:
        ctx.expect(reply.status == 200, f"{what}: a result came with HTTP {reply.status}, expected 200",
                   kind="wrong_status")
    if keys is not None:
        return expect_mapping(ctx, reply.result, f"{what} result", keys)
    return reply.result


def expect_catalogued(ctx: CheckContext, reply: Reply, what: str, require_error: bool = False) -> None:
    """An error that comes back is in the catalog, flagged, with the catalog's status."""
    if reply.ok:
        ctx.expect(not require_error, f"{what}: expected an error, got {reply.describe()}",
                   kind="accepted_invalid")
        return
    err = ctx.profile.errors.get(reply.error_code)
    if err is None:
        ctx.fail(f"{what}: error code {reply.error_code!r} is not in the {ctx.profile.name} error catalog "
                 f"({reply.describe()})",
                 kind="wrong_error_code")
        return
    ctx.expect(reply.flagged,
               f"{what}: error {_label(err)} is not flagged as an error by the {reply.binding} binding",
               kind="malformed_answer")
    expect_status(ctx, reply, err, what)


def not_found(ctx: CheckContext, *, calls: Mapping[str, Callable[[], Reply]], error: Any) -> None:
    """Family: each call names an object that does not exist and gets ``error``."""
    for what, call in calls.items():
        with ctx.subcheck(what):
            expect_error(ctx, call(), error, what)
