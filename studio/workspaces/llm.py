"""A workspace's own LLM endpoint: its API key encrypted at rest, and the chat client the LLM
engine asks (the workspace's endpoint when one is set, else the environment's ``LLM_*``).

The key is stored as a Fernet token (AES-128-CBC with HMAC-SHA256, from ``cryptography``)
under a key derived from ``SECRET_KEY`` with HKDF; ``SECRET_KEY_FALLBACKS`` still decrypt, so
Django's own key rotation keeps stored keys readable.  A key that no current or fallback secret
decrypts is a clear ``LLMNotConfigured`` ("enter it again"), never a crash.

The environment's key (``LLM_API_KEY``) is only ever sent to the environment's endpoint
(``LLM_BASE_URL``): a workspace admin cannot point it at a server of their own.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

from studio.labeling.llm import ChatClient, LLMNotConfigured, config_from_env, shared_client

from .models import LLMEndpoint, Workspace

_HKDF_INFO = b"compliance-studio/llm-endpoint-api-key/v1"


def _fernet_for(secret: str) -> Fernet:
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                   info=_HKDF_INFO).derive(secret.encode("utf-8"))
    return Fernet(base64.urlsafe_b64encode(derived))


def _fernet() -> MultiFernet:
    secrets = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", ())]
    return MultiFernet([_fernet_for(s) for s in secrets if s])


def encrypt_key(api_key: str) -> str:
    return _fernet().encrypt(api_key.encode("utf-8")).decode("ascii")


def decrypt_key(token: str) -> str:
    try:
        return _fernet().decrypt(token.encode("ascii")).decode("utf-8")
    except (InvalidToken, ValueError):
        raise LLMNotConfigured("the workspace's LLM API key cannot be decrypted (SECRET_KEY "
                               "changed?): an admin enters it again on the LLM settings "
                               "page") from None


def key_ending(endpoint: LLMEndpoint) -> str:
    """The stored key's last four characters, for the settings page ("" when unreadable)."""
    if endpoint.key_source != LLMEndpoint.KeySource.STORED or not endpoint.encrypted_key:
        return ""
    try:
        return decrypt_key(endpoint.encrypted_key)[-4:]
    except LLMNotConfigured:
        return ""


def same_url(a: str, b: str) -> bool:
    return a.strip().rstrip("/").lower() == b.strip().rstrip("/").lower()


def environment_url(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    return (env.get("LLM_BASE_URL") or "").strip()


def config_of(endpoint: LLMEndpoint, environ: Mapping[str, str] | None = None):
    """The ``LLMConfig`` of a workspace's endpoint; its timeouts, retries and prices are the
    environment's (``LLM_TIMEOUT``...)."""
    env = dict(os.environ if environ is None else environ)
    source = endpoint.key_source
    if source == LLMEndpoint.KeySource.STORED:
        key = decrypt_key(endpoint.encrypted_key) if endpoint.encrypted_key else ""
    elif source == LLMEndpoint.KeySource.ENVIRONMENT:
        if not same_url(endpoint.base_url, environment_url(env)):
            raise LLMNotConfigured("the workspace's LLM endpoint is set to use the "
                                   "environment's key, which is only sent to the environment's "
                                   "endpoint (LLM_BASE_URL): store a key for this endpoint")
        key = env.get("LLM_API_KEY") or ""
    else:
        key = ""
    env.update(LLM_BASE_URL=endpoint.base_url, LLM_MODEL=endpoint.model, LLM_API_KEY=key)
    return config_from_env(env)


def endpoint_of(workspace: Workspace) -> LLMEndpoint | None:
    return LLMEndpoint.objects.filter(workspace=workspace).first()


def client_for(workspace: Workspace) -> ChatClient:
    """The chat client of ``workspace``'s LLM engine: its own endpoint when an admin set one,
    else the environment's.  Raises ``LLMError`` (``LLMNotConfigured``) with a message for a
    person when neither can be used."""
    endpoint = endpoint_of(workspace)
    if endpoint is None:
        return shared_client()
    return shared_client(config_of(endpoint))
