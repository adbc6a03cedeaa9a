"""Each credential kind against an A2A agent that requires it (tests/auth_front.py: the reference,
its card declaring the kind's security scheme, every call refused with HTTP 401 without a
credential the front issued). With the credential the run passes, its auth rows included
(they send what the card asks for); without it nothing fails: the rows that need it are
untested, saying why; and no secret reaches the report folders, the console or a case file
(a twin of the front with a fault makes a row fail, so a case file holds the requests).

The certificates (a CA, the server's, a client's per caller) are made here with the
`cryptography` package, which the kit's own dependencies bring (jwcrypto needs it)."""

from __future__ import annotations

import datetime
import ipaddress
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT, child_server, free_port

FRONT = ROOT / "tests" / "auth_front.py"
DENIED = {"CancelTask": "tasks:cancel", "ListTasks": "tasks:list"}  # the reference's (reference.DENIED)
REFERENCE_TOKENS = {"full": "a2a-reference-token-full", "other": "a2a-reference-token-other",
                    "limited": "a2a-reference-token-limited"}
LABELS = ("full", "other", "limited")
AUTH_ROWS = ("A2A-AUTH-REQUIRED", "A2A-AUTH-UNKNOWN-TOKEN", "A2A-AUTH-STATUS", "A2A-AUTH-CHALLENGE",
             "A2A-AUTH-TASK-SCOPE", "A2A-AUTH-TASK-HIDDEN", "A2A-AUTH-LIST-SCOPE", "A2A-AUTH-FORBIDDEN",
             "A2A-AUTH-FORBIDDEN-DETAIL")
FAULT = ("foreign_task_served", "A2A-AUTH-TASK-SCOPE")  # the twin's fault, and the row it fails


# -- a CA and its certificates ----------------------------------------------------------------
def make_pki(folder: Path) -> dict[str, Path]:
    """ca.pem, server.pem and server.key (for 127.0.0.1), and client-<label>.pem / .key for each
    caller (its common name the label), all issued by the CA; a stranger.pem/.key self-signed."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    out: dict[str, Path] = {}

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    def write(stem: str, cert: x509.Certificate, key: Any) -> None:
        (folder / f"{stem}.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        (folder / f"{stem}.key").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                               serialization.PrivateFormat.PKCS8,
                                                               serialization.NoEncryption()))
        out[stem], out[f"{stem}.key"] = folder / f"{stem}.pem", folder / f"{stem}.key"

    def issue(common: str, issuer: x509.Name, signer: Any, *, ca: bool = False,
              server: bool = False) -> tuple[Any, Any]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (x509.CertificateBuilder().subject_name(name(common)).issuer_name(issuer)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if ca:
            builder = builder.add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False,
                                                          False), critical=True)
        elif server:
            builder = (builder.add_extension(x509.SubjectAlternativeName([x509.IPAddress(
                ipaddress.ip_address("127.0.0.1"))]), critical=False)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False))
        else:
            builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]),
                                            critical=False)
        return builder.sign(signer or key, hashes.SHA256()), key

    ca, ca_key = issue("conformance test CA", name("conformance test CA"), None, ca=True)
    write("ca", ca, ca_key)
    write("server", *issue("127.0.0.1", ca.subject, ca_key, server=True))
    for label in LABELS:
        write(f"client-{label}", *issue(label, ca.subject, ca_key))
    return out


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_pki(tmp_path_factory.mktemp("pki"))


# -- the kinds ----------------------------------------------------------------------------------
def kinds(pki: dict[str, Path], token_port: int) -> dict[str, dict[str, Any]]:
    """Each kind: the front's setup, the run's config (credentials, tls), its environment, the
    secrets that must appear nowhere and the redaction marker the failed row's case must show."""
    key = {label: f"key-{label}-{os.urandom(6).hex()}" for label in LABELS}
    password = {label: f"pw-{label}-{os.urandom(6).hex()}" for label in LABELS}
    client = {label: f"cs-{label}-{os.urandom(6).hex()}" for label in LABELS}
    gateway = f"gw-{os.urandom(6).hex()}"
    token_url = f"http://127.0.0.1:{token_port}/token"
    server = {"cert": str(pki["server"]), "key": str(pki["server.key"])}

    def limited(value: dict[str, Any]) -> dict[str, Any]:
        return {**value, "denied": DENIED}
    return {
        # a bare secret goes where the card's apiKey scheme says (a header), read from the environment
        "api_key_header": {
            "setup": {"kind": "api_key_header", "secrets": key},
            "credentials": {"full": "${I46_KEY_FULL}", "other": key["other"],
                            "limited": limited({"api_key": key["limited"]})},
            "env": {"I46_KEY_FULL": key["full"]}, "secrets": list(key.values()), "marker": "<redacted:full>"},
        "api_key_query": {
            "setup": {"kind": "api_key_query", "secrets": key},
            "credentials": {"full": {"api_key": {"query": "api_key", "value": key["full"]}},
                            "other": key["other"], "limited": limited({"api_key": key["limited"]})},
            "secrets": list(key.values()), "marker": "<redacted:full.api_key>"},
        "api_key_cookie": {
            "setup": {"kind": "api_key_cookie", "secrets": key},
            "credentials": {"full": {"api_key": key["full"]}, "other": {"api_key": key["other"]},
                            "limited": limited({"api_key": key["limited"]})},
            "secrets": list(key.values()), "marker": "<redacted:full.api_key>"},
        "basic": {
            "setup": {"kind": "basic", "secrets": {label: [f"user-{label}", password[label]]
                                                   for label in LABELS}},
            "credentials": {"full": {"basic": {"username": "user-full", "password": "${I46_PW_full}"}},
                            "other": {"basic": {"username": "user-other", "password": "${I46_PW_other}"}},
                            "limited": limited({"basic": {"username": "user-limited",
                                                          "password": password["limited"]}})},
            "env": {f"I46_PW_{label}": password[label] for label in LABELS},
            "secrets": list(password.values()), "marker": "<redacted:full.basic>"},
        # an extra header a gateway wants, beside the agent's own bearer token
        "header": {
            "setup": {"kind": "header", "secrets": {"gateway": gateway}},
            "credentials": {label: (limited if label == "limited" else dict)(
                {"token": REFERENCE_TOKENS[label], "headers": {"X-Gateway-Key": gateway}})
                for label in LABELS},
            "secrets": [gateway, *REFERENCE_TOKENS.values()], "marker": ".headers.X-Gateway-Key>"},
        "oauth2": {
            "setup": {"kind": "oauth2", "token_port": token_port,
                      "secrets": {label: [f"client-{label}", client[label]] for label in LABELS}},
            "credentials": {label: (limited if label == "limited" else dict)(
                {"oauth2": {"token_url": token_url, "client_id": f"client-{label}",
                            "client_secret": client[label]}}) for label in LABELS},
            "secrets": [*client.values(), "front-access-"], "marker": "<redacted:full.oauth2.access_token>"},
        "oidc": {
            "setup": {"kind": "oidc", "token_port": token_port,
                      "secrets": {label: [f"client-{label}", client[label]] for label in LABELS}},
            "credentials": {label: (limited if label == "limited" else dict)(
                {"oauth2": {"token_url": token_url, "client_id": f"client-{label}",
                            "client_secret": client[label], "client_auth": "basic"}}) for label in LABELS},
            "secrets": [*client.values(), "front-access-"], "marker": "<redacted:full.oauth2.access_token>"},
        # a client certificate per caller (the full one as PEM text from the environment), the CA bundle
        "mtls": {
            "setup": {"kind": "mtls", "secrets": {label: label for label in LABELS},
                      "tls": {**server, "ca": str(pki["ca"])}},
            "credentials": {"full": {"cert": "${I46_CERT}", "key": "${I46_KEY}"},
                            **{label: (limited if label == "limited" else dict)(
                                {"cert": str(pki[f"client-{label}"]), "key": str(pki[f"client-{label}.key"])})
                               for label in LABELS if label != "full"}},
            "tls": {"ca": str(pki["ca"])},
            "env": {"I46_CERT": pki["client-full"].read_text(),
                    "I46_KEY": pki["client-full.key"].read_text()},
            "secrets": [pki["client-full.key"].read_text().strip().splitlines()[1]], "marker": None},
        # the agent's own bearer tokens over HTTPS whose certificate a private CA issued
        "ca_bundle": {
            "setup": {"kind": "tls", "secrets": {}, "tls": server},
            "credentials": {label: (limited({"token": token}) if label == "limited" else token)
                            for label, token in REFERENCE_TOKENS.items()},
            "tls": {"ca": str(pki["ca"])},
            "secrets": list(REFERENCE_TOKENS.values()), "marker": "<redacted:full>"},
        "verify_off": {
            "setup": {"kind": "tls", "secrets": {}, "tls": server},
            "credentials": {label: (limited({"token": token}) if label == "limited" else token)
                            for label, token in REFERENCE_TOKENS.items()},
            "tls": {"verify": False},
            "secrets": list(REFERENCE_TOKENS.values()), "marker": "<redacted:full>"},
    }


def run(*args: str | Path, env: dict[str, str] | None = None, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "conformance.cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300, env={**os.environ, **(env or {})})


def front(port: int, setup: Path) -> list[str]:
    return [sys.executable, str(FRONT), "--port", str(port), "--setup", str(setup)]


def summary(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "summary.json").read_text(encoding="utf-8"))


def statuses(folder: Path) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in summary(folder)["requirements"]}


def leaks(folder: Path, secrets: list[str], *texts: str) -> list[str]:
    """Where any secret appears: files under ``folder`` and the given texts (the console)."""
    found = [f"{path}: {secret[:12]}..." for path in folder.rglob("*") if path.is_file()
             for secret in secrets if secret in path.read_text(encoding="utf-8", errors="replace")]
    return found + [f"console: {secret[:12]}..." for text in texts for secret in secrets if secret in text]


@pytest.mark.parametrize("kind", ["api_key_header", "api_key_query", "api_key_cookie", "basic", "header",
                                  "oauth2", "oidc", "mtls", "ca_bundle", "verify_off"])
def test_each_credential_kind_against_an_agent_that_requires_it(kind: str, pki: dict[str, Path],
                                                                tmp_path: Path) -> None:
    port, twin, token_port = free_port(), free_port(), free_port()
    case = kinds(pki, token_port)[kind]
    setup = {**case["setup"], "faulted_port": twin, "faults": [FAULT[0]]}
    (tmp_path / "setup.json").write_text(json.dumps(setup), encoding="utf-8")
    scheme = "https" if setup.get("tls") else "http"
    base, faulted = f"{scheme}://127.0.0.1:{port}", f"{scheme}://127.0.0.1:{twin}"

    def config(name: str, target: str, given: bool) -> Path:
        """With the credential, or without it: for the TLS kinds the TLS setting is what is left
        out; mutual TLS keeps the CA without the client certificates."""
        data: dict[str, Any] = {"target": target, "control": f"{target}/_control"}
        tls_kind = kind in ("ca_bundle", "verify_off")
        if given or tls_kind:
            data["credentials"] = case["credentials"]
        if case.get("tls") and (given or kind == "mtls"):
            data["tls"] = case["tls"]
        path = tmp_path / name
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
        return path

    env = case.get("env") or {}
    with child_server(front(port, tmp_path / "setup.json"), base, timeout=60):
        given = run("run", "a2a", "--target", base, "--config", config("given.yaml", base, True),
                    "--binding", "jsonrpc", "--budget", "quick", "--report", tmp_path / "given", env=env,
                    cwd=tmp_path)
        without = run("run", "a2a", "--target", base, "--config", config("without.yaml", base, False),
                      "--binding", "jsonrpc", "--budget", "quick", "--report", tmp_path / "without",
                      cwd=tmp_path)
        failing = run("run", "a2a", "--target", faulted, "--config", config("twin.yaml", faulted, True),
                      "--binding", "jsonrpc", "--budget", "quick", "--only", FAULT[1],
                      "--report", tmp_path / "twin", env=env, cwd=tmp_path)
    out = given.stdout + given.stderr

    # with the credential: the run passes, the auth rows (which send what the card asks for) included
    rows = statuses(tmp_path / "given")
    assert not [r for r, v in rows.items() if v["status"] in ("failed", "blocked")], out[-3000:]
    if kind == "mtls":  # a certificate the agent never issued is none the kit makes: that row says so
        unknown = rows.pop("A2A-AUTH-UNKNOWN-TOKEN")
        assert unknown["status"] == "untested" and unknown["reason"] == "credential", unknown
        assert "no client certificate the agent never issued" in unknown["message"], unknown
    assert {r: rows[r]["status"] for r in AUTH_ROWS if r in rows} == dict.fromkeys(
        set(AUTH_ROWS) & set(rows), "passed"), out[-3000:]
    untested = {r: v["message"] for r, v in rows.items() if v["status"] == "untested"}
    if kind == "api_key_query":  # gRPC has no query: the rows comparing it with the run's binding say so
        assert untested and all(r.startswith("A2A-AGREE-") and "cannot be sent over grpc" in m
                                for r, m in untested.items()), untested
        assert given.returncode == 5, out[-3000:]
    elif kind == "mtls":  # the reference's gRPC interface is plaintext: no client certificate travels there
        assert all(r.startswith("A2A-AGREE-") and "needs TLS" in m for r, m in untested.items()), untested
        assert given.returncode == (5 if untested else 0), out[-3000:]
    else:
        assert untested == {} and given.returncode == 0, out[-3000:]
    assert ("TLS verification is off" in given.stderr) == (kind == "verify_off"), given.stderr

    # without it: nothing fails; the rows that need it are untested, saying why
    quiet = statuses(tmp_path / "without")
    again = without.stdout + without.stderr
    assert not [r for r, v in quiet.items() if v["status"] in ("failed", "blocked")], again[-3000:]
    needing = [r for r in rows if rows[r]["status"] == "passed" and quiet[r]["status"] != "passed"]
    assert set(AUTH_ROWS) & set(rows) <= set(needing), again[-3000:]
    assert {quiet[r]["status"] for r in needing} == {"untested"}, again[-3000:]
    if kind == "ca_bundle":  # no CA: the target's certificate is not trusted, nothing reaches it
        assert without.returncode == 3 and "tls.ca" in again, again[-3000:]
    elif kind == "verify_off":  # without verify: false, the same
        assert without.returncode == 3 and "not trusted" in again, again[-3000:]
    else:
        assert without.returncode == 5, again[-3000:]
        assert [r for r in needing if not re.search(r"credential '(full|other|limited)'", quiet[r]["message"])
                ] == [], again[-3000:]
        assert {quiet[r]["reason"] for r in AUTH_ROWS if r in rows} == {"credential"}, again[-3000:]

    # a case file holds the failed row's requests: what they carried of the credential is redacted
    broken = statuses(tmp_path / "twin")
    assert broken[FAULT[1]]["status"] == "failed" and failing.returncode == 1, failing.stdout[-3000:]
    [case_file] = (tmp_path / "twin" / "cases").glob("*.json")
    text = case_file.read_text(encoding="utf-8")
    if case["marker"] is not None:
        assert case["marker"] in text, text[:3000]
    for folder, result in (("given", given), ("without", without), ("twin", failing)):
        assert leaks(tmp_path / folder, case["secrets"], result.stdout, result.stderr) == []


def test_a_credential_that_holds_nothing_the_card_asks_for_is_untested_never_sent(pki: dict[str, Path],
                                                                                 tmp_path: Path) -> None:
    """The card wants HTTP Basic; the run was given bearer tokens: nothing is sent as them, every row
    that needs them is untested with the reason, named once in the preflight's line, and none fails."""
    port = free_port()
    setup = {"kind": "basic", "secrets": {label: [f"u-{label}", f"p-{label}-x"] for label in LABELS}}
    (tmp_path / "setup.json").write_text(json.dumps(setup), encoding="utf-8")
    base = f"http://127.0.0.1:{port}"
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"target": base, "control": f"{base}/_control",
                                      "credentials": {"full": "a-bearer-token-1234"}}), encoding="utf-8")
    with child_server(front(port, tmp_path / "setup.json"), base, timeout=60):
        result = run("run", "a2a", "--config", config, "--binding", "jsonrpc", "--budget", "quick",
                     "--only", "A2A-AUTH-*", "--only", "A2A-GET-TASK", "--report", tmp_path / "r",
                     cwd=tmp_path)
    out = result.stdout + result.stderr
    assert result.returncode == 5, out[-3000:]
    rows = statuses(tmp_path / "r")
    assert {v["status"] for v in rows.values() if v["status"] != "skipped"} == {"untested"}, out[-3000:]
    assert "the target asks for HTTP Basic; the run holds a bearer token for it" in out, out[-3000:]
    refused = summary(tmp_path / "r")["credentials_refused"]
    assert list(refused) == ["full"] and "holds nothing the target asks for" in refused["full"]
    assert leaks(tmp_path / "r", ["a-bearer-token-1234"], result.stdout, result.stderr) == []


def test_a_token_url_that_refuses_the_client_leaves_its_rows_untested(tmp_path: Path) -> None:
    """OAuth2 client credentials the token endpoint refuses: the credential is refused before
    anything is judged (one line naming the token URL's answer), its rows untested, none failed."""
    port, token_port = free_port(), free_port()
    setup = {"kind": "oauth2", "token_port": token_port,
             "secrets": {label: [f"client-{label}", f"right-{label}"] for label in LABELS}}
    (tmp_path / "setup.json").write_text(json.dumps(setup), encoding="utf-8")
    base = f"http://127.0.0.1:{port}"
    oauth = {"token_url": f"http://127.0.0.1:{token_port}/token", "client_id": "client-full",
             "client_secret": "wrong-secret-1234"}
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"target": base, "control": f"{base}/_control",
                                      "credentials": {"full": {"oauth2": oauth}}}), encoding="utf-8")
    with child_server(front(port, tmp_path / "setup.json"), base, timeout=60):
        result = run("run", "a2a", "--config", config, "--binding", "jsonrpc", "--budget", "quick",
                     "--only", "A2A-AUTH-*", "--only", "A2A-GET-TASK", "--report", tmp_path / "r",
                     cwd=tmp_path)
    out = result.stdout + result.stderr
    assert result.returncode == 5, out[-3000:]
    rows = statuses(tmp_path / "r")
    assert {v["status"] for v in rows.values() if v["status"] != "skipped"} == {"untested"}, out[-3000:]
    refused = summary(tmp_path / "r")["credentials_refused"]
    assert list(refused) == ["full"] and "gave no access token: HTTP 401" in refused["full"], refused
    assert f"the token URL http://127.0.0.1:{token_port}/token" in out
    assert leaks(tmp_path / "r", ["wrong-secret-1234"], result.stdout, result.stderr) == []


def test_grpc_carries_the_credential_as_metadata_and_the_tls_settings_as_channel_credentials(
        pki: dict[str, Path]) -> None:
    """A gRPC server over TLS that requires a client certificate its CA issued (grpcio's own): a
    call as a caller holding that certificate and an API key is served, the key arriving as
    metadata; a call presenting no certificate gets no answer; verify: false is refused in words
    (grpc cannot skip verification)."""
    from concurrent import futures

    import grpc

    from conformance.transport.credentials import CredentialStore, TlsSettings, secrets_of
    from conformance.transport.grpc import GrpcBinding, service_of
    from conformance.transport.http import HttpTransport, Redactor

    service = service_of("specs/a2a/a2a.proto", "A2AService")
    request_cls, response_cls, _ = service.methods["GetTask"]
    seen: list[dict[str, str]] = []

    def get_task(request: Any, context: Any) -> Any:
        seen.append(dict(context.invocation_metadata()))
        return response_cls(id=request.id, context_id="ctx-1")

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(service.full_name, {
        "GetTask": grpc.unary_unary_rpc_method_handler(get_task, request_cls.FromString,
                                                       response_cls.SerializeToString)})])
    credentials = grpc.ssl_server_credentials([(pki["server.key"].read_bytes(), pki["server"].read_bytes())],
                                              root_certificates=pki["ca"].read_bytes(),
                                              require_client_auth=True)
    port = server.add_secure_port("127.0.0.1:0", credentials)
    server.start()
    given = {"full": {"cert": str(pki["client-full"]), "key": str(pki["client-full.key"]),
                      "api_key": {"header": "X-API-Key", "value": "grpc-key-1234"}}}
    entry = {"proto": "specs/a2a/a2a.proto", "service": "A2AService", "bearer": "full",
             "url": f"https://127.0.0.1:{port}"}
    try:
        for tls, expect in ((TlsSettings(ca=str(pki["ca"])), "served"),
                            (TlsSettings(verify=False), "refused")):
            http = HttpTransport(base_url="http://127.0.0.1:9", tls=tls, redactor=Redactor(secrets_of(given)),
                                 credentials=CredentialStore(given, tls))
            binding = GrpcBinding("grpc", entry, http, lambda label, required: "" if label in given else None)
            try:
                reply = binding.call("GetTask", {"id": "t-1"})
                anonymous = binding.call("GetTask", {"id": "t-2"}, caller=None)
            finally:
                http.close()
            if expect == "served":
                assert reply.ok and reply.result["id"] == "t-1", reply.describe()
                assert seen[-1].get("x-api-key") == "grpc-key-1234"
                assert not anonymous.ok and not anonymous.spoke, anonymous.describe()
                assert "grpc-key-1234" not in json.dumps(http.log[0].request)
            else:
                assert not reply.ok and "cannot skip verifying" in reply.error_message, reply.describe()
    finally:
        server.stop(None)
