"""The alarm topic's subscriber, chosen at synth: ``-c alarm_email=you@example.com`` subscribes
an address (it confirms by mail), ``-c alarm_email=none`` deploys alarms that reach no one, said
out loud. ``cdk synth`` / ``cdk deploy`` (infra.app.main) refuse to run without either: the
alarms (5xx, throttles, the jobs' dead letters) are worth nothing if no one hears them."""

from __future__ import annotations

import re
from typing import Any

DECLINED = "none"
_EMAIL = re.compile(r"[^@\s,;]+@[^@\s,;]+\.[^@\s,;.]+")

MISSING = (
    "-c alarm_email is required: -c alarm_email=you@example.com subscribes an address to the alarm topic "
    "(confirm the mail AWS sends), or -c alarm_email=none deploys alarms that reach no one (subscribe later "
    "in the SNS console: the topic is the AlarmTopicArn output)"
)


def address(value: Any, *, required: bool = False) -> str | None:
    """The address to subscribe; None when declined (or, unless ``required``, not given)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise SystemExit(MISSING)
        return None
    if not isinstance(value, str):
        raise SystemExit(f"-c alarm_email={value!r}: expected an email address or none")
    text = value.strip()
    if text.lower() == DECLINED:
        return None
    if not _EMAIL.fullmatch(text):
        raise SystemExit(f"-c alarm_email={value!r}: expected an email address (you@example.com) or none")
    return text
