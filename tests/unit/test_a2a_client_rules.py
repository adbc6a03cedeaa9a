"""Every "valid" request the a2a profile generates is one a client may send by the documents:
a request the document would not let a client send (the agent's role, an id the client does
not own) makes a correct server look wrong. For each method of A2AService, the generated
requests (the sweep's two examples and hypothesis's draws, made safe as A2A-PARAMS-VALID-*
sends them) are held to the client-side rules:

- every Message a request carries is the client's: the Role the proto says is "from the client
  to the server" (a2a.proto, enum Role), with a messageId of its own, fresh per message (the
  proto: "created by the message creator"; section 3.3.1 lets an agent take a repeated one
  for a duplicate), and no contextId the client made up (section 3.4.1);
- the ids a request names are the client's: a task the check made, or an id no agent issued;
  referenceTaskIds name the check's own task only;
- no page token the agent never issued, no tenant but the one the card declares;
- a SendMessage's push config names no task (the proto: "Task id should be empty");
- a push notification's authentication names a scheme of the registry the proto names (its
  examples), with credentials a header can carry (a token68);
- media types are ones the card takes (defaultInputModes);
- the request carries the A2A-Version header the profile pins (section 3.6.1);
- and the request is valid by its message's schema."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.documents.schemas import validator_for
from conformance.generation.strategies import strategy_for
from conformance.kit.check import CheckContext
from conformance.protocols.a2a import documents as docs
from conformance.protocols.a2a.inputs import Inputs, at, loose, messages_in
from conformance.run.launch import open_run
from conformance.run.profiles import load_profile

PROFILE = load_profile("a2a")
ROWS = {r.id: r for r in PROFILE.requirements}
TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


@pytest.fixture(scope="module")
def run() -> Any:
    return open_run(PROFILE, "reference", budget="quick", seed=3, binding="jsonrpc")


def problems(inputs: Inputs, params: Any, seen_ids: set[str]) -> list[str]:
    """What of ``params`` a client may not send (empty: nothing)."""
    out: list[str] = []
    world = set(inputs.safe.world)
    card = inputs.client.card
    if not isinstance(params, dict):
        return [f"params {params!r} are no object"]
    if not validator_for(inputs.schema).is_valid(params):
        return []  # the row skips a request its schema refuses: never sent
    for path, name in messages_in(inputs.safe.request, params, ()):
        obj = at(params, [str(p) for p in path])
        where = "/".join(map(str, path)) or "(root)"
        if name == "Message":
            if obj.get("role") != docs.client_role():
                out.append(f"{where}: role {obj.get('role')!r}, not the client's {docs.client_role()}")
            mid = obj.get("messageId")
            if not (isinstance(mid, str) and mid.startswith("conformance-")) or mid in seen_ids:
                out.append(f"{where}: messageId {mid!r} is not a fresh id of the client's")
            seen_ids.add(str(mid))
            if "contextId" in obj:
                out.append(f"{where}: a contextId the client made up ({obj['contextId']!r})")
            for ref in obj.get("referenceTaskIds") or []:
                if ref not in world:
                    out.append(f"{where}: referenceTaskIds names {ref!r}, no task of the client's")
        for key in ("taskId", "id"):
            value = obj.get(key)
            ours = value in world or str(value).startswith("conformance-")
            if name in ("Message", inputs.safe.request) and isinstance(value, str) \
                    and "PushNotification" not in name and not ours:
                out.append(f"{where}.{key}: {value!r} is neither the client's task nor an id no agent issued")
        if name == "TaskPushNotificationConfig" and inputs.safe.request == "SendMessageRequest" \
                and obj.get("taskId"):
            out.append(f"{where}: a taskId in a SendMessage's push config (the proto: it should be empty)")
        if "pageToken" in obj:
            out.append(f"{where}: a pageToken the agent never issued ({obj['pageToken']!r})")
        if obj.get("tenant", inputs.client.tenant) != inputs.client.tenant:
            out.append(f"{where}: tenant {obj['tenant']!r}, not the card's")
        if name == "AuthenticationInfo":
            if obj.get("scheme") not in docs.example_schemes():
                out.append(f"{where}: scheme {obj.get('scheme')!r} is none of the registry's the proto names")
            credentials = obj.get("credentials")
            if credentials not in (None, "") and not TOKEN68.fullmatch(str(credentials)):
                out.append(f"{where}: credentials {credentials!r} are not in a header's form")
        taken = card.get("defaultInputModes", [])
        if name == "Part" and "mediaType" in obj and obj["mediaType"] not in taken:
            out.append(f"{where}: mediaType {obj['mediaType']!r} is none the card takes")
    return out


@pytest.mark.parametrize("method", list(PROFILE.operations))
def test_generated_valid_requests_are_ones_a_client_may_send(run: Any, method: str) -> None:
    requirement = ROWS[f"A2A-PARAMS-VALID-{docs.reason_of(method).replace('_', '-')}"]
    ctx = CheckContext(run, requirement)
    inputs = Inputs(ctx, method)
    inputs.make_world()
    headers = {k.lower(): v for k, v in inputs.client.binding.headers.items()}
    assert headers.get("a2a-version") == str(PROFILE.settings["version"]), headers
    seen: set[str] = set()
    found: list[str] = []
    sent = 0

    def judge(drawn: Any) -> None:
        nonlocal sent
        for in_world in (False, True):
            params = inputs.safe(drawn, in_world)
            found.extend(f"{method} {params}: {p}" for p in problems(inputs, params, seen))
            sent += 1

    for example in inputs.examples():
        judge(example)

    @settings(max_examples=60, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.data())
    def draws(data: st.DataObject) -> None:
        judge(data.draw(strategy_for(loose(inputs.schema))))

    draws()
    assert sent >= 60
    assert not found, "\n".join(found[:10])


def test_the_rules_are_the_documents_and_catch_what_a_client_may_not_send(run: Any) -> None:
    """The rules read the documents (the client's Role, the registry's schemes), and a request
    the agent could send (its role, a made-up contextId, a foreign task, a scheme off the
    registry) is caught: the test above cannot pass on nothing."""
    assert docs.client_role() == "ROLE_USER"
    assert docs.example_schemes() == ("Bearer", "Basic", "Digest")
    ctx = CheckContext(run, ROWS["A2A-PARAMS-VALID-SEND-MESSAGE"])
    inputs = Inputs(ctx, "SendMessage")
    inputs.make_world()
    good = inputs.safe(inputs.examples()[1], in_world=True)
    assert problems(inputs, good, set()) == []
    message = good["message"]
    bad = {"role": "ROLE_AGENT", "contextId": "ctx-made-up", "taskId": "task-of-someone-else",
           "referenceTaskIds": ["task-of-someone-else"]}
    for key, value in bad.items():
        found = problems(inputs, {**good, "message": {**message, key: value,
                                                      "messageId": f"conformance-{key}"}}, set())
        assert found, key
    push = {"url": "http://127.0.0.1:9/x", "authentication": {"scheme": "Ünïcode", "credentials": "é"}}
    found = problems(inputs, {**good, "configuration": {"taskPushNotificationConfig": push}}, set())
    assert len(found) == 2, found
