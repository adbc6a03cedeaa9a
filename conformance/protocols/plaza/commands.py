"""The 52 data commands of ``schemas.command``, each generated on its own (the whole
union is far too slow to generate at once): schema-valid commands are never refused as
invalid parameters, and each input breaking one keyword of its branch is -32602. A
command the target answers UNSUPPORTED_OPERATION (the profile's documented "not
served") leaves its VALID requirement untested, never passed."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from conformance.checks.errors import catalog_entry, expect_error
from conformance.checks.inputs import invalid_inputs_rejected, valid_inputs_accepted
from conformance.model import Profile, Requirement
from conformance.protocols.plaza.client import PlazaClient
from conformance.protocols.plaza.wire import INVALID
from conformance.runner import CheckContext, Untested
from conformance.spec.invalid import InvalidInstance
from conformance.spec.schemas import validator_for
from conformance.table import Table, slug
from conformance.transport.binding import Reply

UNSUPPORTED = "UNSUPPORTED_OPERATION"
# Commands whose generated inputs would bind the run's agents for the rest of a live run:
# no command resumes a stopped agent, and a generated plan may cap the agent's turns.
# Generated only where control resets the site afterwards.
IRREVERSIBLE = ("stop", "plan")
SEQ_FIELDS = ("after_seq", "before_seq")


def data_schema(profile: Profile) -> dict[str, Any]:
    """The data part's schema: the union of every command."""
    part = profile.spec["schemas"]["sendMessageParams"]["properties"]["message"]["properties"]["parts"]["items"]["anyOf"][1]
    return dict(part["properties"]["data"])


def branch_validators(profile: Profile) -> dict[str, Any]:
    """A validator per command, by its ``operation`` const: the union's 52 branches
    checked one by one cost about 4 ms an instance, the one named branch 0.1 ms."""
    branches = data_schema(profile)["anyOf"]
    assert all("operation" in b["required"] for b in branches), "every command names its operation"
    return {b["properties"]["operation"]["const"]: validator_for(b) for b in branches}


def is_some_command(branches: dict[str, Any], data: Any) -> bool:
    """Valid against the union of commands: only the branch its ``operation`` names can
    accept it (each branch requires its const)."""
    name = data.get("operation") if isinstance(data, dict) else None
    branch = branches.get(name) if isinstance(name, str) else None
    return bool(branch and branch.is_valid(data))


def within_prose(profile: Profile, data: Any) -> Any:
    """A schema-valid command kept within what the document's prose adds (after_seq and
    before_seq never together, seq strings at most the int64 maximum it names) and
    quick to answer (no long poll)."""
    if not isinstance(data, dict):
        return data
    data = copy.deepcopy(data)
    if all(f in data for f in SEQ_FIELDS):
        del data["before_seq"]
    if data.get("wait_seconds"):
        data["wait_seconds"] = 0  # a generated pull does not wait: the wait is PLAZA-RECV-WAIT's subject
    cap = int(profile.limits["seq_maximum_count"].value)
    for field in SEQ_FIELDS:
        if isinstance(data.get(field), str) and int(data[field]) > cap:
            data[field] = str(cap)
    return data


def unsupported(ctx: CheckContext, reply: Reply) -> bool:
    """The answer is the profile's documented "not served" (UNSUPPORTED_OPERATION)."""
    return not reply.ok and reply.error_code == catalog_entry(ctx.profile, UNSUPPORTED).code


def valid_command(name: str) -> Callable[[CheckContext], None]:
    def check(ctx: CheckContext) -> None:
        if name in IRREVERSIBLE and not ctx.run.control_path:
            raise Untested(f"{name} cannot be undone over the wire: it is generated only where control resets the site")
        c = PlazaClient(ctx, reset=False)
        answered: list[Reply] = []

        def call(data: dict[str, Any]) -> Reply:
            fields = {k: v for k, v in data.items() if k != "operation"}
            reply = c.command(name, fields)
            answered.append(reply)
            return reply

        valid_inputs_accepted(ctx, ctx.profile.operations[name], call, (INVALID,),
                              prepare=lambda d: within_prose(ctx.profile, d), catalogued=False)
        if answered and all(unsupported(ctx, r) for r in answered):
            raise Untested(f"the target answers {name} {UNSUPPORTED} (not served): its valid inputs are untested")
    return check


def invalid_command(name: str) -> Callable[[CheckContext], None]:
    def check(ctx: CheckContext) -> None:
        c = PlazaClient(ctx, reset=False)
        branches = branch_validators(ctx.profile)

        def another_command(bad: InvalidInstance, reply: Reply) -> bool:
            """Broken for this branch but a valid instance of another command."""
            return is_some_command(branches, bad.instance)

        invalid_inputs_rejected(ctx, ctx.profile.operations[name], lambda d: c.send(c.params({"data": d})), INVALID,
                                tolerated=another_command, sweep=True)
    return check


def check_unknown_operation(ctx: CheckContext) -> None:
    """Only the listed operations are commands: a native-only one (open, send), the
    unavailable receive cancels and a made-up one are invalid parameters."""
    c = PlazaClient(ctx, reset=False)
    names = set(command_names(ctx.profile))
    native_only = [u["name"] for u in ctx.profile.spec["durableReceive"]["unavailable_operations"]]
    for name in ["open", "send", "return_visit", *native_only]:
        if name in names:
            continue
        with ctx.subcheck(name):
            expect_error(ctx, c.command(name, {}), INVALID, f"a data command with operation {name!r}")
    with ctx.subcheck("a data part without operation"):
        expect_error(ctx, c.send(c.params({"data": {"q": "reading"}})), INVALID, "a data part without operation")


def check_answer_message(ctx: CheckContext) -> None:
    """A control command is answered at once by a Message (ROLE_AGENT) with structured data."""
    c = PlazaClient(ctx)
    for name in ("status", "friends", "inbox_summary"):
        with ctx.subcheck(name):
            message = c.message_of(c.command(name, {}), name)
            ctx.expect(message.get("role") == "ROLE_AGENT", f"{name} answered a message with role {message.get('role')!r}")
            c.data_of(c.command(name, {}), name)


def command_names(profile: Profile) -> list[str]:
    """The commands, in the document's order (operations read from ``commands:``)."""
    branches = profile.spec["schemas"]["command"]["anyOf"]
    return [b["properties"]["operation"]["const"] for b in branches]


def refused_fault(name: str) -> str:
    return f"{name}_refused_as_invalid"


def unvalidated_fault(name: str) -> str:
    return f"{name}_unvalidated"


def rows(t: Table) -> list[Requirement]:
    out: list[Requirement] = [
        t.req("PLAZA-CMD-UNKNOWN-OPERATION", "MUST", "A data command outside the 52 operations is an invalid parameter",
              t.at("/controlMessages/allowedOperations"), check_unknown_operation, ("unknown_operation_accepted",)),
        t.req("PLAZA-CMD-ANSWER-MESSAGE", "MUST", "A control command is answered by a ROLE_AGENT Message with structured data",
              t.at("/controlMessages/response"), check_answer_message, ("command_answers_task",)),
    ]
    for index, name in enumerate(command_names(t.profile)):
        source = t.at(f"/schemas/command/anyOf/{index}")
        out.append(t.req(f"PLAZA-CMD-VALID-{slug(name)}", "MUST", f"Schema-valid {name} commands are not refused as invalid parameters",
                         source, valid_command(name), (refused_fault(name),)))
        out.append(t.req(f"PLAZA-CMD-INVALID-{slug(name)}", "MUST", f"{name} commands breaking their schema are invalid parameters (-32602)",
                         source, invalid_command(name), (unvalidated_fault(name),)))
    return out


__all__ = ["command_names", "data_schema", "refused_fault", "rows", "unvalidated_fault", "within_prose"]
