"""Encryption at rest: records sealed and opened, sealed store and governance in front of any store, rotation.
May import: capsule.crypto, store, guard and what lies below them; never the service or above.
"""
