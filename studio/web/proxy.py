"""The client's address, the one place the studio reads it.

Behind a proxy every request comes from the proxy's address (``REMOTE_ADDR``): counted as one
client, 20 failed sign-ins by anyone locked everyone out.  With ``TRUSTED_PROXY_COUNT`` proxies
in front, each appending the address it saw to ``X-Forwarded-For``, the client is the entry
that many places from the right: those entries were written by the trusted proxies, anything
left of them by whoever sent the request.  With no proxy configured (0, the default) the header
is never read, since any client could write it.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings

# A proxy writes an address; anything longer is not one (and is cut for the counters' keys).
MAX_ADDRESS_LENGTH = 100


def client_address(request) -> str:
    """The address of the client that sent ``request`` (``""`` without a request)."""
    if request is None:
        return ""
    connection = request.META.get("REMOTE_ADDR", "")
    trusted = settings.TRUSTED_PROXY_COUNT
    if trusted <= 0:
        return connection
    hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    hops = [hop for hop in hops if hop]
    if len(hops) < trusted:
        # It did not pass through the configured proxies (a health check from inside, a
        # proxy that was bypassed): the connection is all that is known.
        return connection
    return _normalised(hops[-trusted])


def _normalised(hop: str) -> str:
    """``1.2.3.4``, ``2001:db8::1`` as Python spells them; a port (``1.2.3.4:5678``,
    ``[2001:db8::1]:443``) and brackets dropped.  Text that is no address is kept (cut), so it
    still counts as one client of its own."""
    text = hop
    if text.startswith("[") and "]" in text:
        text = text[1:text.index("]")]
    elif text.count(":") == 1:
        text = text.split(":", 1)[0]
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return hop[:MAX_ADDRESS_LENGTH]
