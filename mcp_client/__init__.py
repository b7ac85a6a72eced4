"""The local client: the signing proxy (client, auth, auth_choice, transport), the MCP server, its tools, hooks.
May import: the library and functions (credentials, routes), never capsule_cli; the proxy never capsule.search.
"""
