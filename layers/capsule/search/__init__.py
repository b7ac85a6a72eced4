"""The search engine: project index (rows, vectors, postings, snapshots), hybrid and tenant-wide search.
May import: capsule.core, governance, crypto, compat; never a store, the service or anything above it.
"""
