"""A finding quotes its strongest break: a type break a lossless coercion undoes (a messageId
sent as the number 12345, which a lenient parser reads as "12345") is the weakest evidence that
a server skips validation, so where the run also saw a plainer break taken (an enum value the
proto does not define, a REQUIRED member missing, a bound), that one is quoted, with its
exchanges in the case file; the coercion is quoted only when it is all the run found."""

from __future__ import annotations

import json

from conformance.checks.inputs import lossless, strength
from conformance.generation.invalid import InvalidInstance, Violation
from tests.conftest import conformance

RID = "A2A-PARAMS-INVALID-SEND-MESSAGE"


def test_a_type_break_a_lossless_coercion_undoes_is_the_weakest():
    assert lossless("12345", 12345) and lossless(5, "5") and lossless(True, "true") and lossless("x", 1.5)
    assert not (lossless("abc", {"a": 1}) or lossless(5, "five") or lossless(True, 1) or lossless([], "[]"))
    base = {"message": {"messageId": "m-1", "role": "ROLE_USER"}}

    def bad(pointer: str, keyword: str, value: object) -> InvalidInstance:
        instance = json.loads(json.dumps(base))
        instance["message"][pointer.rsplit("/", 1)[1]] = value
        return InvalidInstance(instance, Violation(pointer, keyword, ""), base)
    assert strength(bad("/message/messageId", "type", 12345)) == 0
    assert strength(bad("/message/messageId", "type", ["m-1"])) == 1
    assert strength(bad("/message/role", "enum", "ROLE_USER-invalid")) == 1


def finding(tmp_path, *faults: str) -> tuple[str, str]:
    report = tmp_path / "-".join(faults)
    args = ["run", "a2a", "--binding", "jsonrpc", "--only", RID, "--report", str(report)]
    for name in faults:
        args += ["--fault", name]
    conformance(*args)
    [row] = [r for r in json.loads((report / "summary.json").read_text())["requirements"] if r["id"] == RID]
    assert row["status"] == "failed", row
    return row["message"], (report / "cases" / f"{RID}.json").read_text()


def test_the_strongest_break_the_run_saw_is_quoted_with_its_exchanges(tmp_path):
    alone, _ = finding(tmp_path, "message_id_coerced")
    assert "at /message/messageId" in alone and "lossless coercion" in alone, alone
    message, case = finding(tmp_path, "message_id_coerced", "role_not_validated")
    # the role's break (its enum, or the anyOf of its two forms) over the coerced messageId
    assert "at /message/role" in message and "messageId" not in message, message
    assert "ROLE_USER-invalid" in case
