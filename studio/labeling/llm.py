"""A client for any OpenAI-compatible chat endpoint: what the LLM labeler and the LLM formaliser
send their prompts through.  No Django, no dependency beyond the standard library.

The caller passes an ``LLMConfig`` in; ``config_from_env`` builds one from the environment and is
the only place here that reads it:

    LLM_BASE_URL         the API root, e.g. http://127.0.0.1:8080/v1 (/chat/completions is added)
    LLM_API_KEY          sent as ``Authorization: Bearer ...`` when set
    LLM_MODEL            the model asked when a caller names none
    LLM_TIMEOUT          seconds a request may wait for the endpoint (default 60)
    LLM_MAX_RETRIES      further attempts after a 429, a 5xx, a timeout or a refused connection (3)
    LLM_PRICE_PROMPT     price of 1000 prompt tokens, for the cost counter (0)
    LLM_PRICE_COMPLETION price of 1000 completion tokens (0)

Every completion is cached under (model, SHA-256 of the exact prompt: messages and sampling
settings), in a pluggable store: a dict in memory unless the application installs another
(``use_default_store``; the Django app installs a database table), so asking the same thing twice
costs one request.  Failures are ``LLMError`` with a message fit to show a person; the API key
never appears in one.
"""

from __future__ import annotations

import email.utils
import hashlib
import http.client
import json
import math
import os
import random
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from studio.caching import LruCache

# An answer larger than this is not a chat completion we asked for.
MAX_RESPONSE_BYTES = 8 * 1024 * 1024
# How much of an endpoint's error body a message quotes.
ERROR_DETAIL_LIMIT = 300
# Requests ``complete_many`` sends at once, at most.
MAX_CONCURRENT = 8


class LLMError(Exception):
    """The endpoint could not give an answer; ``message`` says why, for a person to read."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.message = message
        self.status = status


class LLMNotConfigured(LLMError):
    """No endpoint (or no model) is configured."""


@dataclass(frozen=True)
class LLMConfig:
    base_url: str
    model: str = ""
    api_key: str = field(default="", repr=False)
    timeout: float = 60.0
    max_retries: int = 3
    price_prompt: float = 0.0        # per 1000 prompt tokens
    price_completion: float = 0.0    # per 1000 completion tokens
    backoff: float = 1.0             # the first wait before a retry, doubled each time
    max_wait: float = 60.0           # the longest wait, also when Retry-After asks for more

    def __post_init__(self):
        if not isinstance(self.base_url, str) or not self.base_url.startswith(("http://",
                                                                               "https://")):
            raise LLMNotConfigured(f"LLM_BASE_URL must be an http:// or https:// URL such as "
                                   f"http://127.0.0.1:8080/v1, not {self.base_url!r}")
        if not self.timeout > 0:
            raise LLMNotConfigured("LLM_TIMEOUT must be a positive number of seconds")
        if self.max_retries < 0:
            raise LLMNotConfigured("LLM_MAX_RETRIES must be 0 or more")
        if self.price_prompt < 0 or self.price_completion < 0:
            raise LLMNotConfigured("LLM prices must not be negative")

    @property
    def endpoint(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"


def _env_number(env: Mapping[str, str], name: str, default: float, kind=float):
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise LLMNotConfigured(f"{name} must be a number, not {raw!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise LLMNotConfigured(f"{name} must be a finite number")
    return value


def config_from_env(environ: Mapping[str, str] | None = None) -> LLMConfig:
    """The endpoint configured by the ``LLM_*`` environment variables (see the module's doc)."""
    env = os.environ if environ is None else environ
    base_url = (env.get("LLM_BASE_URL") or "").strip()
    if not base_url:
        raise LLMNotConfigured("no LLM endpoint is configured: set LLM_BASE_URL (for example "
                               "http://127.0.0.1:8080/v1) and LLM_MODEL")
    return LLMConfig(
        base_url=base_url,
        model=(env.get("LLM_MODEL") or "").strip(),
        api_key=(env.get("LLM_API_KEY") or "").strip(),
        timeout=_env_number(env, "LLM_TIMEOUT", 60.0),
        max_retries=_env_number(env, "LLM_MAX_RETRIES", 3, int),
        price_prompt=_env_number(env, "LLM_PRICE_PROMPT", 0.0),
        price_completion=_env_number(env, "LLM_PRICE_COMPLETION", 0.0),
    )


# ---------------------------------------------------------------------------------------------
# Cache stores

class CacheStore(Protocol):
    """Texts kept under (model, digest).  Stores may drop entries; they never change one."""

    def get_many(self, model: str, digests: Iterable[str]) -> dict[str, str]: ...

    def put_many(self, model: str, entries: Mapping[str, str]) -> None: ...


class MemoryStore:
    """A bounded in-process store: the least recently used entries go first."""

    def __init__(self, limit: int = 100_000):
        self.limit = limit
        self._entries: LruCache[tuple[str, str], str] = LruCache(limit)

    def get_many(self, model: str, digests: Iterable[str]) -> dict[str, str]:
        found = {}
        for digest in digests:
            text = self._entries.get((model, digest))
            if text is not None:
                found[digest] = text
        return found

    def put_many(self, model: str, entries: Mapping[str, str]) -> None:
        for digest, text in entries.items():
            self._entries.put((model, digest), text)

    def __len__(self) -> int:
        return len(self._entries)


def prompt_digest(messages: Sequence[Mapping[str, str]], settings: Mapping[str, Any],
                  purpose: str = "completion") -> str:
    """SHA-256 of the exact prompt: the messages and every setting that changes the answer.
    ``purpose`` keeps entries derived from a prompt (a labeler's per-step answers) apart from
    the raw completion of the same prompt."""
    canonical = json.dumps({"purpose": purpose, "messages": list(messages),
                            "settings": dict(settings)},
                           sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------------------------
# The client

@dataclass
class Usage:
    """What a client has spent: HTTP requests sent (retries included), completions received,
    completions served from the cache, tokens as the endpoint counted them, and their cost."""

    requests: int = 0
    completions: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0


@dataclass(frozen=True)
class Completion:
    text: str
    model: str
    cached: bool
    prompt_tokens: int = 0
    completion_tokens: int = 0


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None,
                 status: int | None = None):
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.status = status


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header: a number of seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - time.time()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _error_detail(body: bytes) -> str:
    """The endpoint's own explanation of an error (``{"error": {"message": ...}}``), short."""
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            text = error["message"]
        elif isinstance(error, str):
            text = error
        elif isinstance(data.get("detail"), str):
            text = data["detail"]
    text = " ".join(text.split())
    if len(text) > ERROR_DETAIL_LIMIT:
        text = text[:ERROR_DETAIL_LIMIT] + "…"
    return f": {text}" if text else ""


class ChatClient:
    """``complete(messages)`` against one endpoint, with retries, a cache and a usage counter.

    Thread-safe: audits share one client between the batches a worker runs.
    """

    def __init__(self, config: LLMConfig, store: CacheStore | None = None, *,
                 sleep: Callable[[float], None] = time.sleep):
        self.config = config
        self.store = store if store is not None else MemoryStore()
        self.usage = Usage()
        self._sleep = sleep
        self._lock = threading.Lock()

    def usage_snapshot(self) -> Usage:
        with self._lock:
            return Usage(**vars(self.usage))

    def _count(self, **amounts) -> None:
        with self._lock:
            for name, amount in amounts.items():
                setattr(self.usage, name, getattr(self.usage, name) + amount)

    def model_for(self, model: str | None) -> str:
        chosen = (model or self.config.model or "").strip()
        if not chosen:
            raise LLMNotConfigured("no LLM model is named: set LLM_MODEL or give the labeler "
                                   "a model")
        return chosen

    def complete(self, messages: Sequence[Mapping[str, str]], *, model: str | None = None,
                 temperature: float = 0.0, max_tokens: int | None = None,
                 cache: bool = True, sample: int | None = None) -> Completion:
        """The assistant's answer to ``messages`` (``[{"role": ..., "content": ...}]``).

        ``sample``: which of several answers drawn for the same prompt this is (at a
        temperature above 0): each is cached apart, so asking again gives the same answers.
        It is not sent to the endpoint."""
        model = self.model_for(model)
        settings: dict[str, Any] = {"temperature": temperature}
        if max_tokens is not None:
            settings["max_tokens"] = max_tokens
        keyed = settings if sample is None else {**settings, "sample": sample}
        digest = prompt_digest(messages, keyed)
        if cache:
            hit = self.store.get_many(model, [digest]).get(digest)
            if hit is not None:
                self._count(cache_hits=1)
                return Completion(hit, model, cached=True)
        body = json.dumps({"model": model, "messages": list(messages), **settings},
                          ensure_ascii=False).encode("utf-8")
        answer = self._post_with_retries(body)
        completion = self._read_completion(answer, model)
        if cache:
            self.store.put_many(model, {digest: completion.text})
        return completion

    def complete_many(self, prompts: Sequence[tuple[Sequence[Mapping[str, str]], int | None]],
                      *, model: str | None = None, temperature: float = 0.0,
                      max_tokens: int | None = None,
                      cache: bool = True) -> list[Completion | LLMError]:
        """``complete`` of several ``(messages, sample)`` prompts at once: the endpoint is asked
        for those the cache lacks concurrently (at most ``MAX_CONCURRENT`` requests), while the
        cache is read and written in the calling thread only (a database store is bound to
        it).  Each answer is a ``Completion`` or the ``LLMError`` its request met."""
        model = self.model_for(model)
        settings: dict[str, Any] = {"temperature": temperature}
        if max_tokens is not None:
            settings["max_tokens"] = max_tokens
        digests = [prompt_digest(messages, settings if sample is None
                                 else {**settings, "sample": sample})
                   for messages, sample in prompts]
        out: list[Completion | LLMError | None] = [None] * len(prompts)
        if cache:
            hits = self.store.get_many(model, digests)
            for k, digest in enumerate(digests):
                if digest in hits:
                    self._count(cache_hits=1)
                    out[k] = Completion(hits[digest], model, cached=True)
        missing = [k for k, answer in enumerate(out) if answer is None]

        def ask(k: int) -> Completion | LLMError:
            body = json.dumps({"model": model, "messages": list(prompts[k][0]), **settings},
                              ensure_ascii=False).encode("utf-8")
            try:
                return self._read_completion(self._post_with_retries(body), model)
            except LLMError as exc:
                return exc

        if len(missing) > 1:
            with ThreadPoolExecutor(max_workers=min(len(missing), MAX_CONCURRENT)) as pool:
                answers = list(pool.map(ask, missing))
        else:
            answers = [ask(k) for k in missing]
        fresh = {}
        for k, answer in zip(missing, answers):
            out[k] = answer
            if isinstance(answer, Completion):
                fresh[digests[k]] = answer.text
        if cache and fresh:
            self.store.put_many(model, fresh)
        return out  # type: ignore[return-value]

    # -- HTTP ------------------------------------------------------------------------------

    def _post_with_retries(self, body: bytes) -> bytes:
        attempt = 0
        while True:
            try:
                return self._post(body)
            except _Retryable as exc:
                if attempt >= self.config.max_retries:
                    tries = f"{attempt + 1} attempt{'s' if attempt else ''}"
                    raise LLMError(f"the LLM endpoint {self.config.endpoint} failed: "
                                   f"{exc.reason} (gave up after {tries})", exc.status) from None
                if exc.retry_after is not None:
                    wait = exc.retry_after  # the server knows best when it will have room
                else:  # exponential backoff with jitter, so workers do not retry in step
                    wait = self.config.backoff * (2 ** attempt) * (0.5 + random.random() / 2)
                self._sleep(min(wait, self.config.max_wait))
                attempt += 1

    def _post(self, body: bytes) -> bytes:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        request = urllib.request.Request(self.config.endpoint, data=body, headers=headers,
                                         method="POST")
        self._count(requests=1)
        try:
            with urllib.request.urlopen(request, timeout=self.config.timeout) as response:
                raw = response.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            status = exc.code
            try:
                detail = _error_detail(exc.read(4096))
            except (OSError, http.client.HTTPException):
                detail = ""
            if status in (408, 409, 425, 429) or status >= 500:
                raise _Retryable(f"it answered {status}{detail}",
                                 _retry_after(exc.headers.get("Retry-After")), status) from None
            hint = " (check LLM_API_KEY)" if status in (401, 403) else ""
            raise LLMError(f"the LLM endpoint {self.config.endpoint} refused the request: "
                           f"{status}{detail}{hint}", status) from None
        except TimeoutError:
            raise _Retryable(f"no answer within {self.config.timeout:g} s (LLM_TIMEOUT)") from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError):
                raise _Retryable(
                    f"no answer within {self.config.timeout:g} s (LLM_TIMEOUT)") from None
            raise _Retryable(f"cannot connect ({reason})") from None
        except (ConnectionError, http.client.HTTPException, OSError) as exc:
            raise _Retryable(f"the connection failed ({type(exc).__name__}: {exc})") from None
        if len(raw) > MAX_RESPONSE_BYTES:
            raise LLMError(f"the LLM endpoint's answer is larger than {MAX_RESPONSE_BYTES} "
                           "bytes")
        return raw

    def _read_completion(self, raw: bytes, model: str) -> Completion:
        try:
            data = json.loads(raw)
            message = data["choices"][0]["message"]
            text = message["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise LLMError(f"the LLM endpoint {self.config.endpoint} did not answer with a "
                           "chat completion (no choices[0].message.content)") from None
        if not isinstance(text, str):
            raise LLMError("the LLM endpoint answered without text (choices[0].message."
                           "content is not a string)")
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        prompt_tokens = _count_of(usage.get("prompt_tokens"))
        completion_tokens = _count_of(usage.get("completion_tokens"))
        cost = (prompt_tokens * self.config.price_prompt
                + completion_tokens * self.config.price_completion) / 1000
        self._count(completions=1, prompt_tokens=prompt_tokens,
                    completion_tokens=completion_tokens, cost=cost)
        answered_by = data.get("model") if isinstance(data.get("model"), str) else model
        return Completion(text, answered_by or model, cached=False, prompt_tokens=prompt_tokens,
                          completion_tokens=completion_tokens)


def _count_of(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


# ---------------------------------------------------------------------------------------------
# The process's shared client

_shared_lock = threading.Lock()
_shared_clients: dict[LLMConfig, ChatClient] = {}
_default_store: CacheStore | None = None
_store_factory: Callable[[], CacheStore] = MemoryStore


def use_default_store(factory: Callable[[], CacheStore]) -> None:
    """Make ``factory()`` the store of the shared clients (the Django app installs its table)."""
    global _store_factory, _default_store
    with _shared_lock:
        _store_factory = factory
        _default_store = None
        _shared_clients.clear()


def default_store() -> CacheStore:
    """The store the shared clients use (answers can be read from it with no endpoint)."""
    global _default_store
    with _shared_lock:
        if _default_store is None:
            _default_store = _store_factory()
        return _default_store


def shared_client(config: LLMConfig | None = None) -> ChatClient:
    """One client per configuration for the whole process (the environment's by default), so
    their usage adds up and their store is shared."""
    config = config if config is not None else config_from_env()
    store = default_store()
    with _shared_lock:
        client = _shared_clients.get(config)
        if client is None or client.store is not store:
            client = _shared_clients[config] = ChatClient(config, store)
        return client
