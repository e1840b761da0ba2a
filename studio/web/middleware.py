"""htmx and sign-in: a polling fragment whose session expired must not get the sign-in page
swapped into it.  For htmx requests, a redirect to the sign-in page becomes ``HX-Redirect``,
which htmx follows with a whole-page navigation."""

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import resolve_url


class HtmxSignInRedirect:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (request.headers.get("HX-Request") == "true" and response.status_code == 302
                and response.get("Location", "").startswith(resolve_url(settings.LOGIN_URL))):
            redirect = HttpResponse(status=204)
            redirect["HX-Redirect"] = response["Location"]
            return redirect
        return response
