"""The scheduled jobs (retention, mining, backfill, redact) and the guard's sweep over stored memories.
May import: capsule.service, learning, sealing, guard, store and everything below them.
"""
