"""The library's composition: a MemoryService, the learning side and the jobs, built from settings.
May import: every capsule package; only capsule's __init__ and the edges (functions, clients) import it.
"""
