"""A real MCP server for the gateway's tests and benchmark, built with the official SDK's
MCPServer: a small bank (balance, payments) and an echo.

    python tests/integrations/mcp/upstream_server.py               # stdio
    python tests/integrations/mcp/upstream_server.py --http PORT   # streamable HTTP at /mcp
    python tests/integrations/mcp/upstream_server.py --prefix b_   # the same tools, named b_*

Its answers are fixed functions of the arguments, so a test can say what a forwarded call must
return.  With ``--calls PATH`` every call is appended to that file (one JSON line), so a test can
tell a call that reached the upstream from one that did not.
"""

from __future__ import annotations

import argparse
import json
from typing import TypedDict

from mcp.server import MCPServer


class Balance(TypedDict):
    account: str
    balance: int


class Payment(TypedDict):
    sent: int
    to: str
    reference: str


def build(prefix: str = "", calls: str | None = None) -> MCPServer:
    server = MCPServer("test-bank")

    def note(tool: str, args: dict) -> None:
        if calls:
            with open(calls, "a") as out:
                out.write(json.dumps({"tool": tool, "args": args}) + "\n")

    @server.tool(name=f"{prefix}get_balance", structured_output=True)
    def get_balance(account: str) -> Balance:
        """The balance of an account."""
        note("get_balance", {"account": account})
        return {"account": account, "balance": 100 * len(account)}

    @server.tool(name=f"{prefix}send_money", structured_output=True)
    def send_money(to: str, amount: int) -> Payment:
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
    parser.add_argument("--calls", help="append every call to this file")
    args = parser.parse_args()
    server = build(args.prefix, args.calls)
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run()
