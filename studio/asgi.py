"""The ASGI application: the production server is uvicorn (docs/deployment.md, "Web server").

Under ASGI the guard's waiting polls are suspended coroutines (studio.guard.waits), so they hold
no worker.  Every other view is synchronous.  Django would take each through the async
middleware chain, where every middleware hops into a thread and back (about twenty hops a
request: several milliseconds on a busy machine), so ``StudioASGIHandler`` sends a request for a
synchronous view through the synchronous chain instead, in one hop to the request's thread.
"""

import os

from asgiref.sync import iscoroutinefunction, sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.base import BaseHandler
from django.urls import Resolver404, resolve

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "studio.settings")


class StudioASGIHandler(ASGIHandler):
    """Django's ASGI handler, with async views through the async middleware chain and
    synchronous views through the synchronous one (the same middleware, in the same order)."""

    def __init__(self):
        super().__init__()
        self._synchronous = BaseHandler()
        self._synchronous.load_middleware(is_async=False)

    async def get_response_async(self, request):
        if view_is_async(request.path_info):
            return await super().get_response_async(request)
        # The request's own thread (thread-sensitive, one per request under ASGI), as Django
        # runs a synchronous view there: database connections stay with the thread that opened
        # them.
        return await sync_to_async(self._synchronous.get_response,
                                   thread_sensitive=True)(request)


def view_is_async(path: str) -> bool:
    """Whether the view that serves ``path`` is a coroutine function (404s: no)."""
    try:
        return iscoroutinefunction(resolve(path).func)
    except Resolver404:
        return False


def get_application() -> StudioASGIHandler:
    import django

    django.setup(set_prefix=False)
    return StudioASGIHandler()


application = get_application()
