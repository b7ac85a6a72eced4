"""The originals' conventions (the Vector Bridge's, the first Capsule's) read onto ours: pure mappings.
May import: capsule.core.

The originals' conventions (the Vector Bridge's, the first Capsule's) read onto ours.

Pure mappings with no I/O; imports only the memory model. The MCP layer, the hooks and the
importers call these so each original's contract is interpreted in one place.
"""
