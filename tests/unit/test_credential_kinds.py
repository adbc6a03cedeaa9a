"""Credentials as users have them (conformance/transport/credentials.py): the config's shapes and
their one-line errors, the environment, what a request carries as configured and as the target
asks, OAuth2 tokens kept and fetched again, and the redaction of every kind's secrets."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.run.config import ConfigError, load_config
from conformance.transport.credentials import (
    CannotPresent,
    ClientCert,
    Credential,
    CredentialStore,
    CredentialUnavailable,
    OAuth2,
    TlsSettings,
    parse_credential,
    present,
    secrets_of,
)
from conformance.transport.http import Redactor
from tests.conftest import in_process


def write(tmp_path: Path, data: Any, name: str = "c.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(("credential", "says"), [
    ({"api_key": {"header": "X-Key", "query": "k", "value": "v"}},
     "credentials.full.api_key must be a mapping"),
    ({"api_key": {"header": "X-Key"}}, "credentials.full.api_key must be a mapping"),
    ({"api_key": 12.5}, "credentials.full.api_key must be the key"),
    ({"basic": {"username": "u"}}, "credentials.full.basic must be a mapping of username: and password:"),
    ({"basic": {"username": "a:b", "password": "p"}}, "credentials.full.basic.username may not hold a colon"),
    ({"headers": {"X Bad": "v"}}, "credentials.full.headers: 'X Bad' is not a header name"),
    ({"headers": {"X-Ok": "a\nb"}}, "credentials.full.headers.X-Ok may not hold a line break"),
    ({"token": "${CONFORMANCE_TEST_NOT_SET_ANYWHERE}"},
     "credentials.full.token: environment variable CONFORMANCE_TEST_NOT_SET_ANYWHERE is not set"),
    ({"cert": "missing.pem", "key": "missing.key"}, "credentials.full.cert: no file"),
    ({"key": "k.pem"}, "credentials.full.key is given without credentials.full.cert"),
    ({"oauth2": {"token_url": "https://auth.example/token", "client_id": "c"}},
     "credentials.full.oauth2 must be a mapping of token_url:, client_id:, client_secret:"),
    ({"oauth2": {"token_url": "ftp://x", "client_id": "c", "client_secret": "s"}},
     "credentials.full.oauth2.token_url must be an http(s) URL"),
    ({"oauth2": {"token_url": "https://a.example/t", "client_id": "c", "client_secret": "s",
                 "client_auth": "jwt"}},
     "credentials.full.oauth2.client_auth must be basic or body"),
    ({"token": "t", "oauth2": {"token_url": "https://a.example/t", "client_id": "c", "client_secret": "s"}},
     "credentials.full: give token: or oauth2:"),
])
def test_a_bad_credential_is_one_line_naming_the_file_and_key(tmp_path: Path, credential: Any, says: str,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, {"credentials": {"full": credential}})
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"config {path}: {says}"), caught.value
    assert "\n" not in str(caught.value)
    result = in_process(capsys, "run", "bindu", "--config", str(path))
    assert result.returncode == 2 and says in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(("tls", "says"), [
    ({"verify": "no"}, "tls.verify must be true or false"),
    ({"ca": "nowhere.pem"}, "tls.ca: no file"),
    ({"ca": "ca.pem", "verify": False}, "tls: give ca: (verify with it) or verify: false, not both"),
    ({"cipher": "x"}, "tls must be a mapping of ca:, verify:, cert:, key:, key_password:"),
    ({"ca": "not-a-ca.pem"}, "tls.ca does not load as a CA bundle"),
])
def test_a_bad_tls_setting_is_one_line_naming_the_file_and_key(tmp_path: Path, tls: Any, says: str) -> None:
    (tmp_path / "ca.pem").write_text("placeholder", encoding="utf-8")
    (tmp_path / "not-a-ca.pem").write_text(
        "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n", encoding="utf-8")
    path = write(tmp_path, {"tls": tls})
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value).startswith(f"config {path}: {says}"), caught.value


def test_every_existing_credential_shape_still_loads(tmp_path: Path) -> None:
    """A token, a mapping of a protocol's own keys (id, token, seed, disposable, denied), null."""
    given = {"full": "t0ken", "did": {"id": "did:x", "token": "t", "seed": "00" * 32, "disposable": True},
             "limited": {"token": "t2", "denied": ["CancelTask"]}, "none": None}
    assert load_config(write(tmp_path, {"credentials": given}))["credentials"] == given


def test_the_environment_and_files_relative_to_the_config(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONF_TEST_KEY", "sekrit-from-env")
    folder = tmp_path / "cfg"
    folder.mkdir()
    from tests.e2e.test_credentials import make_pki

    pki = make_pki(tmp_path)
    (folder / "client.pem").write_bytes(pki["client-full"].read_bytes())
    (folder / "client.key").write_bytes(pki["client-full.key"].read_bytes())
    (folder / "ca.pem").write_bytes(pki["ca"].read_bytes())
    data = load_config(write(folder, {
        "credentials": {"full": {"api_key": {"header": "X-Key", "value": "pre-${CONF_TEST_KEY}"},
                                 "cert": "client.pem", "key": "client.key"}},
        "tls": {"ca": "ca.pem"}}))
    full = data["credentials"]["full"]
    assert full["api_key"]["value"] == "pre-sekrit-from-env"
    assert full["cert"] == str(folder / "client.pem") and full["key"] == str(folder / "client.key")
    assert data["tls"]["ca"] == str(folder / "ca.pem")
    assert TlsSettings(ca=data["tls"]["ca"]).context().verify_mode.name == "CERT_REQUIRED"


def test_as_configured_each_kind_travels_in_its_place() -> None:
    cert = ClientCert("c.pem", "c.key")
    credential = parse_credential("full", {"api_key": {"cookie": "session", "value": "k1"},
                                           "headers": {"X-Tenant": "acme"}})
    out = present(credential)
    assert out.headers == {"Cookie": "session=k1", "X-Tenant": "acme"} and out.query == {}
    out = present(Credential("full", token="t", basic=("u", "p"), cert=cert))
    assert out.headers == {"Authorization": "Bearer t"} and out.cert == cert  # a bearer first
    out = present(Credential("full", basic=("u", "p:q")))
    assert out.headers == {"Authorization": "Basic " + base64.b64encode(b"u:p:q").decode()}
    out = present(parse_credential("full", {"api_key": {"query": "api_key", "value": "k 2"}}))
    assert out.query == {"api_key": "k 2"} and out.headers == {}
    assert present(Credential("full", cert=cert), tls=False).cert is None  # no certificate without TLS
    assert present(None, raw="never-issued").headers == {"Authorization": "Bearer never-issued"}


WAYS = [[{"kind": "api_key", "in": "header", "name": "X-API-Key"}], [{"kind": "basic"}],
        [{"kind": "cert"}, {"kind": "bearer"}]]


def test_as_the_target_asks_the_first_way_the_credential_meets() -> None:
    keyed = present(Credential("full", token="s3cret"), bearer="s3cret", ways=WAYS)
    assert keyed.headers == {"X-API-Key": "s3cret"}
    basic = present(Credential("full", basic=("u", "p")), ways=WAYS[1:])
    assert basic.headers == {"Authorization": "Basic " + base64.b64encode(b"u:p").decode()}
    both = present(Credential("full", token="t", cert=ClientCert("c.pem")), bearer="t", ways=WAYS[2:])
    assert both.headers == {"Authorization": "Bearer t"} and both.cert == ClientCert("c.pem")
    # a run-wide client certificate meets the certificate part
    assert present(Credential("full", token="t"), bearer="t", ways=WAYS[2:], run_cert=True).cert is None
    # extra headers go along
    extra = present(Credential("full", token="t", headers=(("X-Gw", "g"),)), bearer="t", ways=WAYS)
    assert extra.headers == {"X-API-Key": "t", "X-Gw": "g"}
    # a value the target never issued goes where it asks, but no certificate is made for it
    assert present(None, raw="nope", ways=WAYS).headers == {"X-API-Key": "nope"}
    assert present(None, raw="nope", ways=WAYS[1:2]).headers["Authorization"].startswith("Basic ")
    with pytest.raises(CannotPresent, match="a client certificate"):
        present(None, raw="nope", ways=[[{"kind": "cert"}]])


def test_a_credential_that_meets_no_way_says_what_was_asked_and_what_it_holds() -> None:
    with pytest.raises(CannotPresent) as caught:
        present(Credential("full", token="t"), bearer="t", ways=[[{"kind": "basic"}], [{"kind": "cert"}]])
    assert str(caught.value) == ("the target asks for HTTP Basic or a client certificate; the run holds a "
                                 "bearer token for it")
    with pytest.raises(CannotPresent, match=r"in header or cookie only\); the run holds an API key"):
        present(Credential("full", api_key=parse_credential("x", {"api_key": "k"}).api_key),
                ways=[[{"kind": "api_key", "in": "query", "name": "k"}]], places=("header", "cookie"))
    with pytest.raises(CannotPresent, match="a client certificate needs TLS"):
        present(Credential("full", cert=ClientCert("c.pem")), ways=[[{"kind": "cert"}]], tls=False)


def test_every_kind_of_secret_is_redacted() -> None:
    credentials = {
        "full": {"api_key": {"query": "api_key", "value": "k/1+2 key"},
                 "headers": {"X-Gw": "gateway-secret"}},
        "other": {"basic": {"username": "bob", "password": "bobs-password"}},
        "oauth": {"oauth2": {"token_url": "https://a.example/t", "client_id": "cid",
                             "client_secret": "client-sec"}},
        "plain": "plain-token",
        "cert": {"cert": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
                 "key": "-----BEGIN PRIVATE KEY-----\nBBBB\n-----END PRIVATE KEY-----\n",
                 "key_password": "kpass"},
    }
    redact = Redactor(secrets_of(credentials))
    basic = base64.b64encode(b"bob:bobs-password").decode()
    client = base64.b64encode(b"cid:client-sec").decode()
    text = redact(f"k/1+2 key k%2F1%2B2%20key gateway-secret {basic} bobs-password client-sec {client} "
                  "plain-token kpass -----BEGIN PRIVATE KEY-----\nBBBB\n-----END PRIVATE KEY-----\n")
    for secret in ("k/1+2 key", "k%2F1%2B2%20key", "gateway-secret", basic, "bobs-password", "client-sec",
                   client, "plain-token", "kpass", "BBBB"):
        assert secret not in text, (secret, text)
    assert "<redacted:plain>" in text and "<redacted:other.basic>" in text


def test_an_oauth2_token_is_kept_until_shortly_before_it_expires(monkeypatch: pytest.MonkeyPatch) -> None:
    import conformance.transport.credentials as module

    clock = [1000.0]
    monkeypatch.setattr(module.time, "monotonic", lambda: clock[0])
    store = CredentialStore({"full": {"oauth2": {"token_url": "https://a.example/t", "client_id": "c",
                                                 "client_secret": "s"}}})
    fetched: list[str] = []
    redacted: list[tuple[str, str]] = []

    def fetch(oauth: OAuth2, label: str) -> tuple[str, float | None]:
        fetched.append(label)
        return f"access-{len(fetched)}", 300.0
    store.fetch, store.on_secret = fetch, lambda name, value: redacted.append((name, value))
    assert store.bearer("full") == "access-1"
    clock[0] += 269  # 300 s, less a tenth (30 s): still kept
    assert store.bearer("full") == "access-1" and fetched == ["full"]
    clock[0] += 2
    assert store.bearer("full") == "access-2"
    assert redacted == [("full.oauth2.access_token", "access-1"), ("full.oauth2.access_token", "access-2")]

    def refuse(oauth: OAuth2, label: str) -> tuple[str, float | None]:
        raise CredentialUnavailable("the token URL gave no access token: HTTP 401")
    store.fetch = refuse
    clock[0] += 1000
    with pytest.raises(CredentialUnavailable):
        store.bearer("full")


def test_the_readme_credentials_example_loads_as_written(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """README's "Credentials" block is a config the kit reads: every kind, from the environment, its
    files relative to the config's folder."""
    import re

    from tests.conftest import ROOT
    from tests.e2e.test_credentials import make_pki

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"### Credentials\n.*?```yaml\n(.*?)```", readme, re.S)
    assert block is not None
    for name in set(re.findall(r"\$\{([A-Z_0-9]+)\}", block.group(1))):
        monkeypatch.setenv(name, f"value-of-{name}")
    pki = make_pki(tmp_path)
    (tmp_path / "certs").mkdir()
    for source, copy in (("client-full", "client.pem"), ("client-full.key", "client.key"), ("ca", "ca.pem")):
        (tmp_path / "certs" / copy).write_bytes(pki[source].read_bytes())
    config = tmp_path / "conformance.yaml"
    config.write_text(block.group(1), encoding="utf-8")
    data = load_config(config)
    held = {label: parse_credential(label, value).kinds() for label, value in data["credentials"].items()}
    assert held == {"full": ["a bearer token"], "other": ["an API key"], "ci": ["HTTP Basic"],
                    "gateway": ["a bearer token"], "mtls": ["a client certificate"],
                    "service": ["a bearer token"]}
    assert data["credentials"]["other"]["api_key"]["value"] == "value-of-OTHER_KEY"
    assert TlsSettings(ca=data["tls"]["ca"]).context() is not None
