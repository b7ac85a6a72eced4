"""The memory service (memory_service.MemoryService) and its parts: writes, memories, projects, search, history.
May import: search, store, embedders, guard, sealing, learning, governance, config, core; nothing above.
"""
