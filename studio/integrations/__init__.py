"""Adapters that connect agent stacks to the studio as real clients of its public API.

Each one rides on ``studio.client`` (HTTP with a workspace token) and imports nothing else of the
studio: what they do, any agent outside could do with the same token (tests/test_layers.py keeps
it so).  ``mcp_gateway``: an MCP server that guards the tool calls of the upstream MCP servers it
proxies (``manage.py mcp_gateway``, docs/integrations/mcp.md).
"""
