"""The local side: the ``capsule`` command, the MCP server, the signing client and the hooks."""
