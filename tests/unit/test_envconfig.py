"""Connection settings: flags over FLOWFORGE_* variables over config-file profiles over defaults."""

from __future__ import annotations

import tomllib
from pathlib import Path

import click
import pytest

from flowforge.cli._connection import Connection
from flowforge.envconfig import (
    ClientConfig,
    ClientConfigProfile,
    ClientConfigTLS,
    ConfigError,
    ProfileNotFoundError,
    dump_toml,
)

# A file as Temporal's envconfig writes it (grpc_meta is kept but not used by this client).
TEMPORAL_STYLE = """
[profile.default]
address = "profile-default:7233"

[profile.prod]
address = "profile-prod:7233"
namespace = "payments"
api_key = "profile-key"

[profile.prod.tls]
server_ca_cert_path = "/etc/prod/ca.pem"
server_name = "prod.internal"

[profile.prod.grpc_meta]
x-team = "payments"
"""


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("ADDRESS", "NAMESPACE", "API_KEY", "PROFILE", "TLS", "TLS_SERVER_CA_CERT_PATH", "TLS_SERVER_NAME"):
        monkeypatch.delenv(f"FLOWFORGE_{name}", raising=False)
    path = tmp_path / "config.toml"
    path.write_text(TEMPORAL_STYLE)
    monkeypatch.setenv("FLOWFORGE_CONFIG_FILE", str(path))
    return path


def test_defaults_when_nothing_is_configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ADDRESS", "NAMESPACE", "API_KEY", "PROFILE", "TLS"):
        monkeypatch.delenv(f"FLOWFORGE_{name}", raising=False)
    monkeypatch.setenv("FLOWFORGE_CONFIG_FILE", str(tmp_path / "absent.toml"))
    assert Connection().resolve() == ClientConfigProfile(address="localhost:7233", namespace="default")


def test_flag_over_env_over_profile_over_default(config_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The default profile: its address, the default namespace.
    assert (Connection().resolve().address, Connection().resolve().namespace) == ("profile-default:7233", "default")
    # A named profile, by flag or by FLOWFORGE_PROFILE.
    prod = Connection(profile="prod").resolve()
    assert (prod.address, prod.namespace, prod.api_key) == ("profile-prod:7233", "payments", "profile-key")
    monkeypatch.setenv("FLOWFORGE_PROFILE", "prod")
    assert Connection().resolve() == prod
    # Environment variables over the profile.
    monkeypatch.setenv("FLOWFORGE_ADDRESS", "env:7233")
    monkeypatch.setenv("FLOWFORGE_API_KEY", "env-key")
    from_env = Connection().resolve()
    assert (from_env.address, from_env.namespace, from_env.api_key) == ("env:7233", "payments", "env-key")
    # Flags over the environment.
    flagged = Connection(address="flag:7233", namespace="flag-ns", api_key="flag-key").resolve()
    assert (flagged.address, flagged.namespace, flagged.api_key) == ("flag:7233", "flag-ns", "flag-key")


def test_tls_settings_follow_the_same_order(config_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    profile_tls = Connection(profile="prod").resolve().tls
    assert profile_tls == ClientConfigTLS(server_name="prod.internal", server_root_ca_cert=Path("/etc/prod/ca.pem"))
    assert profile_tls.enabled
    monkeypatch.setenv("FLOWFORGE_TLS_SERVER_CA_CERT_PATH", "/env/ca.pem")
    assert Connection(profile="prod").resolve().tls.server_root_ca_cert == Path("/env/ca.pem")  # type: ignore[union-attr]
    flagged = Connection(profile="prod", tls_ca_path=Path("/flag/ca.pem")).resolve().tls
    assert flagged is not None and flagged.server_root_ca_cert == Path("/flag/ca.pem")
    monkeypatch.setenv("FLOWFORGE_TLS", "false")
    assert not Connection(profile="prod").resolve().tls.enabled  # type: ignore[union-attr]
    assert Connection(profile="prod", tls=True).resolve().tls.enabled  # type: ignore[union-attr]
    # A --tls-* flag turns TLS on by itself; plaintext without any.
    assert Connection(profile="default", tls_server_name="x").resolve().tls.enabled  # type: ignore[union-attr]
    monkeypatch.delenv("FLOWFORGE_TLS")
    monkeypatch.delenv("FLOWFORGE_TLS_SERVER_CA_CERT_PATH")
    assert Connection(profile="default").resolve().tls is None


def test_a_named_profile_must_exist_and_the_error_names_the_flag(config_file: Path) -> None:
    with pytest.raises(
        ProfileNotFoundError, match=r"no profile 'staging' in .*config.toml \(profiles: default, prod\)"
    ):
        ClientConfigProfile.load("staging")
    with pytest.raises(click.BadParameter) as error:
        Connection(profile="staging").resolve()
    assert "--profile" in error.value.format_message()


def test_the_file_round_trips_through_dump_toml(config_file: Path) -> None:
    document = tomllib.loads(config_file.read_text())
    assert tomllib.loads(dump_toml(document)) == document
    loaded = ClientConfig.load(config_file=config_file)
    assert ClientConfig.from_dict(tomllib.loads(dump_toml(loaded.to_dict()))) == loaded
    assert dump_toml({"profile": {"a b": {"address": 'quote " and \\ back'}}}) == (
        '[profile."a b"]\naddress = "quote \\" and \\\\ back"\n'
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[profile.x]\nadress = 'h:1'\n", "profile.x: unknown key 'adress'"),
        ("[profile.x]\naddress = 7233\n", "profile.x.address: expected a string, got 7233"),
        ("[profile.x.tls]\ndisabled = 'no'\n", 'profile.x.tls.disabled: expected a bool, got "no"'),
        ("[profile.x.tls]\nclient_cert_path = 'a'\nclient_cert_data = 'b'\n", "client_cert_path or client_cert_data"),
        ("[server]\nport = 1\n", "unknown top-level key(s) server"),
        ("[profile.x\n", "is not valid TOML"),
    ],
)
def test_a_broken_file_is_an_error_naming_the_place(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as error:
        ClientConfig.load(config_file=path)
    assert message in str(error.value) and str(path) in str(error.value)


def test_a_bad_tls_switch_in_the_environment_is_an_error() -> None:
    with pytest.raises(ConfigError, match="FLOWFORGE_TLS: expected true or false, got 'maybe'"):
        ClientConfigProfile.load(disable_file=True, override_env_vars={"FLOWFORGE_TLS": "maybe"})


def test_certificates_are_read_from_paths_or_inline_data(tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text("CA PEM")
    tls = ClientConfigTLS(server_root_ca_cert=tmp_path / "ca.pem", client_cert="CERT PEM", client_private_key=b"KEY")
    assert tls.read_pem() == (b"CA PEM", b"CERT PEM", b"KEY")
    with pytest.raises(ConfigError, match=r"cannot read .*missing\.pem"):
        ClientConfigTLS(client_cert=tmp_path / "missing.pem").read_pem()


def test_tls_settings_become_what_client_connect_takes(tmp_path: Path) -> None:
    from flowforge.client import TLSConfig

    (tmp_path / "ca.pem").write_text("CA PEM")
    assert ClientConfigTLS().to_connect_tls_config() is False
    assert ClientConfigTLS(disabled=False).to_connect_tls_config() is True
    assert ClientConfigTLS(server_root_ca_cert=tmp_path / "ca.pem", disabled=True).to_connect_tls_config() is False
    assert ClientConfigTLS(
        server_root_ca_cert=tmp_path / "ca.pem",
        server_name="flowforge.test",
        client_cert="CERT",
        client_private_key="KEY",
    ).to_connect_tls_config() == TLSConfig(
        server_root_ca_cert=b"CA PEM", domain="flowforge.test", client_cert=b"CERT", client_private_key=b"KEY"
    )
    with pytest.raises(ConfigError, match="a client certificate needs its key"):
        ClientConfigTLS(client_cert="CERT").to_connect_tls_config()


def test_load_client_connect_config_splats_into_client_connect(config_file: Path, tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text("CA PEM")
    from flowforge.client import Client, TLSConfig

    assert ClientConfig.load_client_connect_config() == {"target_host": "profile-default:7233"}
    config_file.write_text(TEMPORAL_STYLE.replace("/etc/prod/ca.pem", str(tmp_path / "ca.pem")))
    assert ClientConfig.load_client_connect_config("prod") == {
        "target_host": "profile-prod:7233",
        "namespace": "payments",
        "api_key": "profile-key",
        "tls": TLSConfig(server_root_ca_cert=b"CA PEM", domain="prod.internal"),
    }
    # Environment over profile, Temporal's keyword arguments accepted.
    assert ClientConfig.load_client_connect_config(
        "prod",
        config_file=config_file,
        config_file_strict=True,
        override_env_vars={"FLOWFORGE_NAMESPACE": "other", "FLOWFORGE_TLS": "false"},
    ) == {"target_host": "profile-prod:7233", "namespace": "other", "api_key": "profile-key", "tls": False}
    assert ClientConfig.load_client_connect_config(disable_file=True, override_env_vars={}) == {}
    with pytest.raises(ProfileNotFoundError):
        ClientConfig.load_client_connect_config("absent")
    # Every key is a keyword of Client.connect.
    import inspect

    assert set(ClientConfig.load_client_connect_config("prod")) <= set(inspect.signature(Client.connect).parameters)
