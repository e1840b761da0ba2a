"""`manage.py mcp_gateway --workspace SLUG --upstream NAME=COMMAND_OR_URL ...`: an MCP server that
proxies upstream MCP servers and asks the studio's guard before every tool call.

The gateway is a client of the studio's public API (studio.integrations.mcp_gateway): it reaches
the studio over HTTP at --studio-url with a workspace token (--token, or STUDIO_TOKEN, which
keeps it out of the process list), never through this process's database.  With --transport
stdio (the default) an MCP host starts it as a command; stdout then carries the protocol, and
everything the gateway says goes to stderr.  docs/integrations/mcp.md has the whole story.
"""

from __future__ import annotations

import logging
import os
import sys

import anyio
from django.core.management.base import BaseCommand, CommandError

from studio.integrations.mcp_gateway import (
    STORE_BATCH_EVENTS,
    STORE_DELAY_SECONDS,
    GatewayError,
    gateway_for,
)


class Command(BaseCommand):
    help = ("Run an MCP server that proxies upstream MCP servers and asks the studio's guard "
            "before every tool call.")

    def add_arguments(self, parser):
        parser.add_argument("--workspace", required=True, metavar="SLUG",
                            help="the workspace whose live rules guard the calls")
        parser.add_argument("--upstream", action="append", default=[], metavar="NAME=TARGET",
                            help="an upstream MCP server: NAME=COMMAND (started, spoken to over "
                                 "stdio) or NAME=URL (streamable HTTP); repeat for several")
        parser.add_argument("--token", default=os.environ.get("STUDIO_TOKEN", ""),
                            help="a token of the workspace (default: $STUDIO_TOKEN)")
        parser.add_argument("--studio-url",
                            default=os.environ.get("STUDIO_URL", "http://127.0.0.1:8000"),
                            help="where the studio answers (default: $STUDIO_URL or "
                                 "http://127.0.0.1:8000)")
        parser.add_argument("--fail-open", action="store_true",
                            help="let calls through unguarded while the studio cannot be "
                                 "reached (default: refuse them)")
        parser.add_argument("--session", help="the session of calls that name none (default: "
                                              "one per stdio process; over HTTP, the MCP "
                                              "session)")
        parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
        parser.add_argument("--host", default="127.0.0.1", help="HTTP: the address to bind")
        parser.add_argument("--port", type=int, default=8100, help="HTTP: the port")
        parser.add_argument("--path", default="/mcp", help="HTTP: the MCP endpoint's path")
        parser.add_argument("--studio-timeout", type=float, default=10.0,
                            help="seconds a request to the studio may take")
        parser.add_argument("--store-every", type=int, default=STORE_BATCH_EVENTS,
                            metavar="EVENTS",
                            help="ask the studio to store a session's events once this many "
                                 f"wait (default: {STORE_BATCH_EVENTS}; 1: after every call)")
        parser.add_argument("--store-within", type=float, default=STORE_DELAY_SECONDS,
                            metavar="SECONDS",
                            help="... or once the oldest has waited this long (default: "
                                 f"{STORE_DELAY_SECONDS:g})")

    def handle(self, *args, workspace: str, upstream: list[str], token: str, studio_url: str,
               fail_open: bool, session: str | None, transport: str, host: str, port: int,
               path: str, studio_timeout: float, store_every: int, store_within: float,
               **options):
        # -v 2: a line per call with where its time went (waiting for the session's earlier
        # events to be stored, the guard, the upstream).
        logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                            format="mcp_gateway %(levelname)s %(message)s")
        logging.getLogger("studio.mcp_gateway").setLevel(
            logging.DEBUG if options["verbosity"] >= 2 else logging.INFO)
        try:
            if store_every < 1 or not 0 <= store_within <= 60:
                raise GatewayError("--store-every must be 1 or more and --store-within from 0 "
                                   "to 60 seconds")
            gateway = gateway_for(studio_url, workspace, token, upstream,
                                  timeout=studio_timeout, fail_open=fail_open, session=session,
                                  store_batch=store_every, store_delay=store_within)
            if transport == "stdio":
                anyio.run(gateway.serve_stdio)
            else:
                def ready():
                    print(f"mcp_gateway: serving http://{host}:{port}{path} with "
                          f"{len(gateway.tools)} tools from {len(gateway.upstreams)} "
                          "upstream(s)", file=sys.stderr, flush=True)

                anyio.run(lambda: gateway.serve_http(host, port, path, ready))
        except KeyboardInterrupt:
            pass
        except Exception as exc:  # noqa: BLE001 - a GatewayError may come wrapped in a group
            found = configuration_error(exc)
            if found is None:
                raise
            raise CommandError(str(found)) from None


def configuration_error(exc: BaseException) -> GatewayError | None:
    """The GatewayError in ``exc`` (anyio's task groups wrap what they raise in groups)."""
    if isinstance(exc, GatewayError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = configuration_error(inner)
            if found is not None:
                return found
    return None
