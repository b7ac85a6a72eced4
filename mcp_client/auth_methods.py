"""--auth's choices (mcp_client.auth_choice decides what each means): a module of their own, so
that the hooks register their options without the auth modules' imports."""

AUTO = "auto"
METHODS = ("auto", "sigv4", "apikey", "none")
