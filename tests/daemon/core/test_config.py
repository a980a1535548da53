"""Settings read from the environment: the mutual-TLS port's among them."""
from memnest_daemon.core.config import Settings, TlsSettings

TLS_NAMES = {"listen": "MEMNEST_TLS_LISTEN", "dir": "MEMNEST_TLS_DIR",
             "cert": "MEMNEST_TLS_CERT", "key": "MEMNEST_TLS_KEY", "ca": "MEMNEST_TLS_CA",
             "clients": "MEMNEST_TLS_CLIENTS"}


def test_tls_settings_are_read_with_the_others(monkeypatch):
    for field, name in TLS_NAMES.items():
        monkeypatch.setenv(name, f"  {field}-value ")
    tls = Settings.from_env().tls
    assert {field: getattr(tls, field) for field in TLS_NAMES} == \
        {field: f"{field}-value" for field in TLS_NAMES}


def test_tls_settings_default_to_unset(monkeypatch):
    for name in TLS_NAMES.values():
        monkeypatch.delenv(name, raising=False)
    assert TlsSettings.from_env() == TlsSettings() == Settings.from_env().tls
    assert not TlsSettings().listen
