"""The database store of the LLM client's cache (``studio.labeling.llm.CacheStore``).

Installed as the shared clients' store when the rules app is ready, so the web processes and
every worker share what the model already answered: an audit run again, a session page replaying
its steps, or another worker labelling the same step finds the answer here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .models import LLMCacheEntry

# Digests looked up per query.
LOOKUP_CHUNK = 500


class DatabaseStore:
    def get_many(self, model: str, digests: Iterable[str]) -> dict[str, str]:
        wanted = list(dict.fromkeys(digests))
        found: dict[str, str] = {}
        for start in range(0, len(wanted), LOOKUP_CHUNK):
            found.update(LLMCacheEntry.objects.filter(
                model=model, digest__in=wanted[start:start + LOOKUP_CHUNK])
                .values_list("digest", "text"))
        return found

    def put_many(self, model: str, entries: Mapping[str, str]) -> None:
        # A conflict is the same prompt answered concurrently by another worker: either answer
        # will do, and the one stored first stays (entries are never changed).
        LLMCacheEntry.objects.bulk_create(
            [LLMCacheEntry(model=model, digest=digest, text=text)
             for digest, text in entries.items()], ignore_conflicts=True, batch_size=500)
