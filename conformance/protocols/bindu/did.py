"""Bindu's DIDs (specs/bindu/openapi.yaml): Layer 2 request signing (X-DID,
X-DID-Timestamp, X-DID-Signature over the spec's payload, its three gates and the 403
reasons), the signatures on artifacts, and /did/resolve. Each requirement is declared on
its check, with the faults that prove it can fail."""

from __future__ import annotations

import json
import time
from typing import Any

import base58
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from conformance.checks.expect import expect_mapping
from conformance.checks.inputs import expect_matches
from conformance.documents.openapi import schema_at
from conformance.documents.schemas import resolve_pointer
from conformance.kit.check import CheckContext, Untested
from conformance.kit.declare import at, requirement
from conformance.kit.faults import replaces, returns
from conformance.protocols.bindu.answers import task_result
from conformance.protocols.bindu.client import BinduClient, fresh_id
from conformance.protocols.bindu.reference import BinduReference, Caller, RpcError
from conformance.protocols.bindu.signing import sign_request, verify_signature
from conformance.transport.binding import dig
from conformance.transport.http import json_excerpt

CATALOG = "/info/description"
SIGNING = "/components/securitySchemes/didSignature/description"
# the reason of the documented 403 body of POST /
FORBIDDEN = ("/paths/~1/post/responses/403/content/application~1json/schema"
             "/properties/details/properties/reason")
SIGNING_HEADERS = ("X-DID", "X-DID-Timestamp", "X-DID-Signature")


# -- signed requests ------------------------------------------------------------------------
def _did_call(ctx: CheckContext, tamper: str = "", offset: int = 0, drop: tuple[str, ...] = (),
              signer: str = "did") -> Any:
    """tasks/list signed as the ``signer`` credential, with one deliberate defect: a
    timestamp ``offset`` seconds off, ``drop``ped headers, or a ``tamper``."""
    did = ctx.credential(signer)
    seed = bytes.fromhex(did["seed"])
    body = json.dumps({"jsonrpc": "2.0", "id": fresh_id(), "method": "tasks/list", "params": {}}).encode()
    ts = int(time.time()) + offset
    headers = sign_request(seed, did["id"], body, ts)
    if tamper == "body":
        body = body.replace(b'"params": {}', b'"params": {"history_length": 1}')
    elif tamper == "did":
        headers["X-DID"] = did["id"] + "-someone-else"
        resigned = sign_request(seed, headers["X-DID"], body, ts)
        headers.update({k: v for k, v in resigned.items() if k != "X-DID"})
    elif tamper == "malformed":
        headers["X-DID-Signature"] = "0OIl-not-base58"
    elif tamper == "short":
        headers["X-DID-Signature"] = base58.b58encode(b"\x01" * 12).decode()
    for name in drop:
        del headers[name]
    headers["Authorization"] = f"Bearer {did['token']}"
    return ctx.binding.send_raw(body, headers=headers)


def _reason(reply: Any) -> Any:
    return dig(reply.envelope, "error", "data", "reason") or dig(reply.envelope, "details", "reason")


def expect_did_refused(ctx: CheckContext, reply: Any, reasons: tuple[str, ...], what: str) -> None:
    """403 with one of ``reasons`` (in error.data or in the documented 403 body's details)."""
    ctx.expect(reply.status == 403, f"{what}: HTTP {reply.status}, expected 403 ({reply.describe()})",
               kind="wrong_status")
    got = _reason(reply)
    ctx.expect(got in reasons, f"{what}: reason {got!r}, expected {' or '.join(map(repr, reasons))}")


def did_rejected(ctx: CheckContext, tamper: str, reason: str) -> None:
    expect_did_refused(ctx, _did_call(ctx, tamper), (reason,), f"signed request with {tamper} defect")


@requirement(id="BINDU-DID-VALID", level="MUST",
             title="A correctly signed request (the spec's payload, base58 Ed25519) is accepted",
             source=at(SIGNING), needs=["did"], optional="did_signing")
def check_did_valid(ctx: CheckContext) -> None:
    reply = _did_call(ctx)
    ctx.expect(reply.ok and reply.status == 200,
               f"a correctly signed request was refused: {reply.describe()}")


@check_did_valid.fault
def rejects_valid_signature(ref: BinduReference) -> None:
    """The verifier builds the payload with compact separators, so valid signatures fail."""
    @replaces(ref.signed_payload)
    def payload(_original: Any, body: bytes, did: str, timestamp: int) -> bytes:
        doc = {"body": body.decode("utf-8"), "did": did, "timestamp": timestamp}
        return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()


@requirement(id="BINDU-DID-TAMPERED", level="MUST",
             title="A body changed after signing is refused: 403 crypto_mismatch",
             source=at(CATALOG, 'reason: "crypto_mismatch"'), needs=["did"], optional="did_signing",
             faults=[returns("signature_not_verified", "verify", True,
                             "The Ed25519 verification is skipped (any well-formed signature passes).")])
def check_did_tampered(ctx: CheckContext) -> None:
    did_rejected(ctx, "body", "crypto_mismatch")


@requirement(id="BINDU-DID-TIMESTAMP", level="MUST",
             title="A timestamp outside ±{limits[did_timestamp_window_s]} s is refused: 403 "
                   "timestamp_out_of_window",
             source=at(CATALOG, "| `X-DID-Timestamp` |"), needs=["did"], optional="did_signing",
             faults=[returns("stale_timestamp_accepted", "timestamp_fresh", True,
                             "X-DID-Timestamp is not checked against the spec's window.")])
def check_did_timestamp(ctx: CheckContext) -> None:
    """Outside the window on either side is refused, inside near either edge is served.
    The probes stand 2 s beyond and inside the edges, for the exchange's own latency."""
    window = ctx.limit("did_timestamp_window_s")
    for side, sign in (("past", -1), ("future", 1)):
        with ctx.subcheck(f"timestamp {window + 2} s in the {side}"):
            expect_did_refused(ctx, _did_call(ctx, offset=sign * (window + 2)), ("timestamp_out_of_window",),
                               f"signed request stamped {window + 2} s in the {side}")
        with ctx.subcheck(f"timestamp {window - 2} s in the {side}"):
            reply = _did_call(ctx, offset=sign * (window - 2))
            ctx.expect(reply.ok and reply.status == 200,
                       f"a request stamped {window - 2} s in the {side}, inside ±{window} s, was refused: "
                       f"{reply.describe()}", kind="rejected_valid")


@check_did_timestamp.fault
def future_timestamp_accepted(ref: BinduReference) -> None:
    """Only timestamps in the past are held to the window: any future X-DID-Timestamp passes."""
    window = ref.limit("did_timestamp_window_s")

    @replaces(ref.timestamp_fresh)
    def fresh(_original: Any, timestamp: int) -> bool:
        return ref.now() - timestamp <= window


@check_did_timestamp.fault
def window_too_narrow(ref: BinduReference) -> None:
    """The X-DID-Timestamp window is half as wide as the spec's."""
    window = ref.limit("did_timestamp_window_s") / 2

    @replaces(ref.timestamp_fresh)
    def fresh(_original: Any, timestamp: int) -> bool:
        return abs(ref.now() - timestamp) <= window


@requirement(id="BINDU-DID-MISMATCH", level="MUST",
             title="An X-DID that is not the token's client_id is refused: 403 did_mismatch",
             source=at(CATALOG, "Gate 2"), needs=["did"], optional="did_signing",
             faults=[returns("did_mismatch_accepted", "did_matches", True,
                             "Gate 2 is skipped: X-DID need not equal the token's client_id.")])
def check_did_mismatch(ctx: CheckContext) -> None:
    did_rejected(ctx, "did", "did_mismatch")


@requirement(id="BINDU-DID-MALFORMED", level="MUST",
             title="A signature that is not base58 Ed25519 is refused: 403 malformed_input",
             source=at(FORBIDDEN), needs=["did"], optional="did_signing")
def check_did_malformed(ctx: CheckContext) -> None:
    did_rejected(ctx, "malformed", "malformed_input")


@check_did_malformed.fault
def malformed_signature_crashes(ref: BinduReference) -> None:
    """A malformed signature crashes the verifier (Internal error, HTTP 500)."""
    @replaces(ref.decode_signature)
    def decode(original: Any, signature: str) -> bytes | None:
        raw = original(signature)
        if raw is None:
            raise ValueError("signature is not 64 base58-encoded bytes")
        return raw


@requirement(id="BINDU-DID-MISSING-HEADERS", level="MUST",
             title="A request with some but not all three signing headers is refused: 403 "
                   "missing_signature_headers",
             source=at(SIGNING, "**Three headers** must all be present"), needs=["did"],
             optional="did_signing")
def check_did_missing_headers(ctx: CheckContext) -> None:
    """Each signing header dropped in turn, and X-DID alone: refused with
    missing_signature_headers. Without X-DID the spec also reads as "not signed"
    ("When X-DID is sent"), so a request served unsigned then passes too."""
    cases = [(h,) for h in SIGNING_HEADERS] + [("X-DID-Timestamp", "X-DID-Signature")]
    for drop in cases:
        what = "signed request without " + " and ".join(drop)
        with ctx.subcheck(what):
            reply = _did_call(ctx, drop=drop)
            if "X-DID" in drop and reply.ok:
                continue  # the other reading: without X-DID the request is simply unsigned
            expect_did_refused(ctx, reply, ("missing_signature_headers",), what)


@check_did_missing_headers.fault
def partial_headers_ignored(ref: BinduReference) -> None:
    """Signing is checked only when all three X-DID headers are present."""
    names = ("x-did", "x-did-timestamp", "x-did-signature")

    @replaces(ref.signing_requested)
    def requested(_original: Any, headers: Any) -> bool:
        return all(h in headers for h in names)


@check_did_missing_headers.fault
def missing_timestamp_ignored(ref: BinduReference) -> None:
    """A request with X-DID and X-DID-Signature but no X-DID-Timestamp is served unverified."""
    @replaces(ref.check_signature)
    def check(original: Any, headers: Any, raw: bytes, caller: Caller) -> None:
        if "x-did-timestamp" not in headers and "x-did" in headers:
            return
        original(headers, raw, caller)


@requirement(id="BINDU-DID-GATE-CLIENT", level="MUST",
             title="Gate 1: a signed request whose token's client_id is not a DID is refused (403)",
             source=at(CATALOG, "1. Gate 1"), needs=["plain_signer"], optional="did_signing")
def check_did_gate_client(ctx: CheckContext) -> None:
    """Gate 1: a client whose client_id is not a DID, signing with a key it has (and
    X-DID equal to its client_id, so Gate 2 holds), is refused with a 403 reason."""
    reasons = tuple(resolve_pointer(ctx.profile.spec, f"{FORBIDDEN}/enum"))
    signer = ctx.credential("plain_signer")
    if str(signer["id"]).startswith("did:"):
        raise Untested("credentials.plain_signer.id must be a client_id that is not a DID", "credential")
    expect_did_refused(ctx, _did_call(ctx, signer="plain_signer"), reasons,
                       "a request signed by a client whose client_id is not a DID")


@check_did_gate_client.fault
def gate1_skipped(ref: BinduReference) -> None:
    """Gate 1 is skipped: a client whose client_id is not a DID may sign (if X-DID equals its client_id)."""
    @replaces(ref.signing_key_for)
    def key_for(_original: Any, did: str, caller: Caller) -> str | None:
        if caller.token is None:
            return ref.public_key_for_did(did)
        if not ref.did_matches(did, caller.client_id):
            raise ref.signature_failure("did_mismatch")
        return caller.token.public_key


@requirement(id="BINDU-DID-NO-PUBLIC-KEY", level="MUST",
             title="Gate 3: a DID client without a registered public key is refused: 403 "
                   "public_key_unavailable",
             source=at(CATALOG, "3. Gate 3"), needs=["did_nokey"], optional="did_signing")
def check_did_no_public_key(ctx: CheckContext) -> None:
    """Gate 3: a DID client without a registered public_key is refused: public_key_unavailable."""
    expect_did_refused(ctx, _did_call(ctx, signer="did_nokey"), ("public_key_unavailable",),
                       "a request signed by a DID client without a registered public key")


@check_did_no_public_key.fault
def no_key_accepted(ref: BinduReference) -> None:
    """Gate 3 is skipped: a DID client without a registered public key passes unverified."""
    @replaces(ref.check_signature)
    def check(original: Any, headers: Any, raw: bytes, caller: Caller) -> None:
        try:
            original(headers, raw, caller)
        except RpcError as err:
            if (err.data or {}).get("reason") != "public_key_unavailable":
                raise


# -- artifacts and DID documents ------------------------------------------------------------
def _agent_key(ctx: CheckContext, c: BinduClient) -> str:
    did = c.agent_did()
    reply = ctx.http.request("GET", "/did/resolve", params={"did": did})
    doc = reply.json()
    ctx.expect(reply.status == 200 and isinstance(doc, dict),
               f"/did/resolve of the card's DID: HTTP {reply.status}")
    methods = doc.get("verificationMethod") or doc.get("authentication") or []
    keys = ([m.get("publicKeyBase58") for m in methods if isinstance(m, dict)]
            if isinstance(methods, list) else [])
    ctx.expect(keys and isinstance(keys[0], str) and keys[0],
               "the DID document has no publicKeyBase58 in verificationMethod or authentication: "
               f"{json_excerpt(doc)}",
               kind="malformed_answer")
    return str(keys[0])


def _objects(value: Any) -> list[dict[str, Any]]:
    """The objects of a list in an answer (anything else holds none)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _key_bytes(value: Any) -> int:
    """How many bytes a base58 key decodes to (-1 when it is not base58)."""
    try:
        return len(base58.b58decode(value)) if isinstance(value, str) else -1
    except ValueError:
        return -1


@requirement(id="BINDU-ARTIFACT-SIGNATURE", level="MUST",
             title="Artifact did.message.signature verifies with the key /did/resolve gives for the card's "
                   "DID",
             source=at("/components/schemas/Artifact/properties/parts/description"))
def check_artifact_signatures(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    key = _agent_key(ctx, c)
    task = task_result(ctx, c.get(c.new_task()["id"]), "tasks/get of a completed task")
    signed = 0
    for artifact in _objects(task.get("artifacts")):
        for part in _objects(artifact.get("parts")):
            sig = dig(part, "metadata", "did.message.signature")
            if sig is None:
                continue
            signed += 1
            text = part["text"] if "text" in part else json.dumps(part.get("data"), sort_keys=True)
            ctx.expect(isinstance(text, str) and isinstance(sig, str)
                       and verify_signature(key, text.encode(), sig),
                       f"artifact {artifact.get('artifact_id')} signature {str(sig)[:24]}... does not verify "
                       f"with the agent's DID key over the part's text {str(text)[:60]!r}")
    if not signed:
        raise Untested("no artifact part carried did.message.signature")


@check_artifact_signatures.fault
def artifact_signature_wrong(ref: BinduReference) -> None:
    """Artifacts are signed over a different text than the one they carry."""
    @replaces(ref.sign_artifact)
    def sign(original: Any, text: str) -> str:
        return original(text + " ")


@requirement(id="BINDU-DID-RESOLVE", level="MUST",
             title="/did/resolve GET and POST give the same DID document; unknown 404, missing did 400",
             source=at("/paths/~1did~1resolve"))
def check_did_resolve(ctx: CheckContext) -> None:
    c = BinduClient(ctx)
    did = c.agent_did()
    schema = schema_at(ctx.profile.spec, "/components/schemas/DidDocument")
    got = ctx.http.request("GET", "/did/resolve", params={"did": did})
    posted = ctx.http.request("POST", "/did/resolve", json_body={"did": did})
    ctx.expect(got.status == 200, f"GET /did/resolve: HTTP {got.status}")
    ctx.expect(posted.status == 200, f"POST /did/resolve: HTTP {posted.status}")
    doc = expect_mapping(ctx, got.json(), "GET /did/resolve document")
    expect_matches(ctx, schema, doc, "GET /did/resolve document")
    ctx.expect(doc == posted.json(), "POST /did/resolve returns a different document than GET")
    ctx.expect(doc.get("id") == did, f"the DID document's id is not the DID asked for: {json_excerpt(doc)}")
    for vm in _objects(doc.get("authentication")):
        ctx.expect(_key_bytes(vm.get("publicKeyBase58")) == 32,
                   f"publicKeyBase58 is not a 32-byte Ed25519 key: {json_excerpt(vm)}")
    missing = ctx.http.request("POST", "/did/resolve", json_body={})
    ctx.expect(missing.status == 400, f"POST /did/resolve without did: HTTP {missing.status}, expected 400")
    unknown = ctx.http.request("GET", "/did/resolve",
                               params={"did": "did:bindu:conformance:unknown:" + fresh_id()})
    ctx.expect(unknown.status == 404,
               f"GET /did/resolve of an unknown DID: HTTP {unknown.status}, expected 404")


@check_did_resolve.fault
def did_resolve_post_missing(ref: BinduReference) -> None:
    """POST /did/resolve answers 405."""
    @replaces(ref.did_resolve_post)
    def post(_original: Any, request: Request, body: bytes) -> Response:
        return JSONResponse({"error": "Method Not Allowed"}, status_code=405)
