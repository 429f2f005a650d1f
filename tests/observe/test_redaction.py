"""Log redaction replaces credentials, not the words around them."""

from __future__ import annotations

from somnid.logs import REDACTED, redact


def test_a_bearer_credential_is_redacted_and_the_word_token_is_not() -> None:
    assert redact("generated a bearer token into /data/token") == (
        "generated a bearer token into /data/token"
    )
    secret = "s0mn1d-" + "x" * 30
    assert redact(f"Authorization: Bearer {secret}") == f"Authorization: Bearer {REDACTED}"
    assert secret not in redact(f"GET /v1/bridge?access_token={secret} 101")
