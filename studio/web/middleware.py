"""Middleware of the pages and the API.

htmx and sign-in: a polling fragment whose session expired must not get the sign-in page
swapped into it.  For htmx requests, a redirect to the sign-in page becomes ``HX-Redirect``,
which htmx follows with a whole-page navigation.

Every 503 (a database, task queue, labeler or disk briefly unavailable) says when to retry."""

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import resolve_url


class BothModes:
    """Middleware that works in either mode: under ASGI a chain of async-capable middleware lets
    an async view (the guard's waiting poll) wait without holding a thread."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request):
        if iscoroutinefunction(self):
            return self._acall(request)
        return self.after(request, self.get_response(request))

    async def _acall(self, request):
        return self.after(request, await self.get_response(request))

    def after(self, request, response):
        return response


class HtmxSignInRedirect(BothModes):
    def after(self, request, response):
        if (request.headers.get("HX-Request") == "true" and response.status_code == 302
                and response.get("Location", "").startswith(resolve_url(settings.LOGIN_URL))):
            redirect = HttpResponse(status=204)
            redirect["HX-Redirect"] = response["Location"]
            return redirect
        return response


# Seconds a client is asked to wait after a 503 that did not say (the live routes say their own).
RETRY_AFTER_SECONDS = 30


class RetryAfterOn503(BothModes):
    def after(self, request, response):
        if response.status_code == 503 and not response.has_header("Retry-After"):
            response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
