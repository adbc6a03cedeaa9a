"""Authentication, scopes and isolation, driven by rows: a protocol names its
operations (each a call that takes a caller) and the errors its spec gives; the
family does the rest, one sub-check per operation.

A caller is a credential label (``"read"``), ``None`` (no token) or a
``RawToken`` (a token the target never issued)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any

from conformance.checks.errors import catalog_entry, expect_error, expect_refused, expect_result
from conformance.runner import CheckContext
from conformance.transport.binding import RawToken, Reply

Operations = Callable[[CheckContext], dict[str, Callable[[Any], Reply]]]
# Another answer the spec documents for the same refusal (a plain 401 body, say)
Documented = Callable[[CheckContext, Reply], bool]


def token_required(operations: Operations, error: Any, credential: str = "full", also: Iterable[Any] = (),
                   documented: Documented | None = None) -> Callable[[CheckContext], None]:
    """Every operation without a bearer token gets ``error`` (any refusal when None; or
    one of ``also``, or an answer ``documented`` accepts). Needs ``credential``: a run given no token does not
    expect the target to demand one."""
    return _refused(operations, error, None, credential, also, documented)


def token_refused(operations: Operations, error: Any, caller: str | None = None, credential: str = "full",
                  also: Iterable[Any] = (), documented: Documented | None = None) -> Callable[[CheckContext], None]:
    """Every operation with a bad token gets ``error`` (or one of ``also``, or an answer
    ``documented`` accepts): the ``caller`` credential (an expired token, say) or, when
    None, a token the server never issued."""
    return _refused(operations, error, caller or RawToken(""), credential, also, documented)


def _refused(operations: Operations, error: Any, caller: str | RawToken | None, credential: str, also: Iterable[Any],
             documented: Documented | None) -> Callable[[CheckContext], None]:
    def check(ctx: CheckContext) -> None:
        ctx.token(credential)
        for name, call in operations(ctx).items():
            with ctx.subcheck(name):
                who: str | RawToken | None
                if caller is None:
                    who, what = None, f"{name} without a bearer token"
                elif isinstance(caller, RawToken):
                    who = RawToken("conformance-not-a-token-" + uuid.uuid4().hex)
                    what = f"{name} with a token the server never issued"
                else:
                    who, what = caller, f"{name} with the {caller} token"
                reply = call(who)
                if documented and documented(ctx, reply):
                    continue
                if error is None:  # a statement that says "refused" without naming the error
                    expect_refused(ctx, reply, what)
                else:
                    expect_error(ctx, reply, error, what, also)
    return check


def scopes(credential: str, allowed: Operations, denied: Operations, denied_error: Any,
           refusals: Iterable[Any]) -> Callable[[CheckContext], None]:
    """``credential`` unlocks the ``allowed`` operations (none of the ``refusals``
    comes back) and nothing else (each ``denied`` one gets ``denied_error``)."""
    def check(ctx: CheckContext) -> None:
        ctx.token(credential)
        refused = {catalog_entry(ctx.profile, r).code for r in refusals}
        for name, call in allowed(ctx).items():
            with ctx.subcheck(name):
                reply = call(credential)
                ctx.expect(reply.error_code not in refused, f"{name} with the {credential} token was refused: {reply.describe()}",
                           kind="rejected_valid")
        for name, call in denied(ctx).items():
            with ctx.subcheck(name):
                expect_error(ctx, call(credential), denied_error, f"{name} with the {credential} token")
    return check


def isolation(
    create: Callable[[CheckContext], Any],
    hidden: Callable[[CheckContext], dict[str, Callable[[Any, Any], Reply]]],
    error: Callable[[str], Any],
    unlisted: Callable[[CheckContext], dict[str, tuple[Callable[[Any], Reply], Callable[[Any, Any], bool]]]] | None = None,
    intact: Callable[[CheckContext, Any], bool] | None = None,
    other: str = "other",
) -> Callable[[CheckContext], None]:
    """One caller never sees another's objects: the owner creates one; as ``other``,
    each ``hidden`` operation on it gets ``error(name)`` (not found, not forbidden:
    existence is not disclosed), no ``unlisted`` listing shows it, and afterwards
    the object is ``intact`` for its owner."""
    def check(ctx: CheckContext) -> None:
        ctx.token(other)
        obj = create(ctx)
        for name, call in hidden(ctx).items():
            with ctx.subcheck(name):
                expect_error(ctx, call(obj, other), error(name), f"{name} of another caller's object")
        for name, (listing, shows) in (unlisted(ctx) if unlisted else {}).items():
            with ctx.subcheck(name):
                result = expect_result(ctx, listing(other), f"{name} as another caller")
                ctx.expect(not shows(result, obj), f"{name} shows another caller's object", kind="auth_not_enforced")
        if intact:
            ctx.expect(intact(ctx, obj), "another caller's requests changed the owner's object", kind="state_changed")
    return check
