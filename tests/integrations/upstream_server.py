"""A real MCP server for the gateway's tests and benchmark, built with the official SDK's
MCPServer: a small bank (balance, payments) and an echo.

    python tests/integrations/upstream_server.py               # stdio
    python tests/integrations/upstream_server.py --http PORT   # streamable HTTP at /mcp
    python tests/integrations/upstream_server.py --prefix b_   # the same tools, named b_*

Its answers are fixed functions of the arguments, so a test can say what a forwarded call must
return.  Every call is appended to the file named by $UPSTREAM_CALLS (one JSON line), so a test
can tell a call that reached the upstream from one that did not.
"""

from __future__ import annotations

import argparse
import json
import os

from mcp.server import MCPServer


def build(prefix: str = "") -> MCPServer:
    server = MCPServer("test-bank")

    def note(tool: str, args: dict) -> None:
        path = os.environ.get("UPSTREAM_CALLS")
        if path:
            with open(path, "a") as out:
                out.write(json.dumps({"tool": tool, "args": args}) + "\n")

    @server.tool(name=f"{prefix}get_balance")
    def get_balance(account: str) -> dict:
        """The balance of an account."""
        note("get_balance", {"account": account})
        return {"account": account, "balance": 100 * len(account)}

    @server.tool(name=f"{prefix}send_money")
    def send_money(to: str, amount: int) -> dict:
        """Send money to someone."""
        note("send_money", {"to": to, "amount": amount})
        return {"sent": amount, "to": to, "reference": f"tx-{to}-{amount}"}

    @server.tool(name=f"{prefix}echo")
    def echo(text: str) -> str:
        """The text, back."""
        note("echo", {"text": text})
        return text

    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, help="serve streamable HTTP on this port")
    parser.add_argument("--prefix", default="", help="put this before every tool's name")
    args = parser.parse_args()
    server = build(args.prefix)
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run()
