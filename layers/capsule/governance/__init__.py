"""Governance's rules and shapes: visibility, audit actions, intake, the update/history/revert models.
May import: capsule.core (update with history is the service's: capsule.service.history).
"""
