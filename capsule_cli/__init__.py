"""The capsule command (cli.main): serve, bench, eval, loadtest, import/export, sync, keys, jobs, and the rest.
May import: the library, functions and mcp_client; nothing imports it but tests and scripts.
"""
