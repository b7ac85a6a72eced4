"""Secrets and personal data found on the way in: detectors, per-project policies, guarded trees and stored texts.
May import: capsule.core, governance, crypto, search, config, store; never the service or above.

Secrets and personal data found on the way in: a detector (:mod:`.detect`) and the per-project
policy that acts on its findings (:mod:`.policy`).
"""

from .detect import Finding, detect
from .policy import Policies, guard_text

__all__ = ["Finding", "Policies", "detect", "guard_text"]
