"""AWS APIs served in-process by moto (PyPI, the 'dev' extra): fake credentials in the
environment, one region, nothing leaves the machine."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest


@contextlib.contextmanager
def mocked_aws(monkeypatch: pytest.MonkeyPatch, region: str) -> Iterator[None]:
    moto = pytest.importorskip("moto", reason="moto is in the 'dev' extra")
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": region,
    }.items():
        monkeypatch.setenv(name, value)
    with moto.mock_aws():
        yield
