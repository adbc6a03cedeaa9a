"""Authentication, scopes and isolation: families a check calls with its operations
(each a call that takes a caller) and the errors its spec gives; the family does the
rest, one sub-check per operation.

A caller is a credential label (``"read"``), ``None`` (no token) or a
``RawToken`` (a token the target never issued)::

    auth.token_required(ctx, operations={"tasks/list": lambda who: c.list_tasks(who)},
                        error="AuthenticationRequired")"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from conformance.checks.expect import catalog_entry, expect_error, expect_refused, expect_result
from conformance.kit.check import CheckContext
from conformance.transport.binding import RawToken, Reply

Call = Callable[[Any], Reply]  # an operation, called as a caller
# Another answer the spec documents for the same refusal (a plain 401 body, say)
Documented = Callable[[CheckContext, Reply], bool]


def token_required(ctx: CheckContext, *, operations: Mapping[str, Call], error: Any, credential: str = "full",
                   also: Iterable[Any] = (), documented: Documented | None = None) -> None:
    """Every operation without a bearer token gets ``error`` (any refusal when None; or
    one of ``also``, or an answer ``documented`` accepts). Needs ``credential``: a run
    given no token does not expect the target to demand one."""
    _refused(ctx, operations, error, None, credential, also, documented)


def token_refused(ctx: CheckContext, *, operations: Mapping[str, Call], error: Any, caller: str | None = None,
                  credential: str = "full", also: Iterable[Any] = (),
                  documented: Documented | None = None) -> None:
    """Every operation with a bad token gets ``error`` (or one of ``also``, or an answer
    ``documented`` accepts): the ``caller`` credential (an expired token, say) or, when
    None, a token the server never issued."""
    _refused(ctx, operations, error, caller or RawToken(""), credential, also, documented)


def _refused(ctx: CheckContext, operations: Mapping[str, Call], error: Any, caller: str | RawToken | None,
             credential: str, also: Iterable[Any], documented: Documented | None) -> None:
    ctx.token(credential)
    for name, call in operations.items():
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


def scopes(ctx: CheckContext, *, credential: str, allowed: Mapping[str, Call], denied: Mapping[str, Call],
           denied_error: Any, refusals: Iterable[Any]) -> None:
    """``credential`` unlocks the ``allowed`` operations (none of the ``refusals``
    comes back) and nothing else (each ``denied`` one gets ``denied_error``)."""
    ctx.token(credential)
    refused = {catalog_entry(ctx.profile, r).code for r in refusals}
    for name, call in allowed.items():
        with ctx.subcheck(name):
            reply = call(credential)
            ctx.expect(reply.error_code not in refused,
                       f"{name} with the {credential} token was refused: {reply.describe()}",
                       kind="rejected_valid")
    for name, call in denied.items():
        with ctx.subcheck(name):
            expect_error(ctx, call(credential), denied_error, f"{name} with the {credential} token")


@dataclass(frozen=True)
class Listing:
    """A listing an object must not appear in: ``call(caller)`` lists, ``shows(result, obj)``
    says whether the object is in what it answered."""

    call: Call
    shows: Callable[[Any, Any], bool]


def isolation(ctx: CheckContext, *, create: Callable[[], Any],
              hidden: Mapping[str, Callable[[Any, Any], Reply]],
              error: Any, unlisted: Mapping[str, Listing] | None = None,
              intact: Callable[[Any], bool] | None = None,
              other: str = "other") -> None:
    """One caller never sees another's objects: the owner ``create``s one; as ``other``,
    each ``hidden`` operation on it (called with the object and the caller) gets
    ``error`` (a name, or ``error(operation)``: not found, not forbidden, so existence is
    not disclosed), no ``unlisted`` listing shows it, and afterwards the object is
    ``intact`` for its owner."""
    ctx.token(other)
    obj = create()
    for name, call in hidden.items():
        with ctx.subcheck(name):
            expected = error(name) if callable(error) else error
            expect_error(ctx, call(obj, other), expected, f"{name} of another caller's object")
    for name, listing in (unlisted or {}).items():
        with ctx.subcheck(name):
            result = expect_result(ctx, listing.call(other), f"{name} as another caller")
            ctx.expect(not listing.shows(result, obj), f"{name} shows another caller's object",
                       kind="auth_not_enforced")
    if intact:
        ctx.expect(intact(obj), "another caller's requests changed the owner's object", kind="state_changed")
