import importlib
import json
from typing import Any

import pytest

from capsule.config import Settings
from capsule.runtime.service import build_service
from functions import app, routes


@pytest.fixture
def service(tmp_path):
    svc = build_service(Settings(data_dir=tmp_path, embedder="hashing"))
    app.set_service(svc)
    yield svc
    app.set_service(None)
    svc.store.close()


class Called:
    def __init__(self, response: dict[str, Any]) -> None:
        self.raw = response
        self.status = response["statusCode"]
        self.json = json.loads(response["body"]) if response.get("body") else None

    def __repr__(self) -> str:
        return f"<{self.status} {self.raw.get('body', '')[:300]}>"


@pytest.fixture
def call():
    """Invoke the handler the route table names, as Lambda would."""

    def invoke(event: dict[str, Any]) -> Called:
        route = next(r for r in routes.ROUTES if f"{r.method} {r.path}" == event["routeKey"])
        module_name, _, attribute = route.handler.partition(":")
        handler = getattr(importlib.import_module(module_name), attribute)
        context = app.LocalContext(function_name=route.name, aws_request_id=event["requestContext"]["requestId"])
        return Called(handler(event, context))

    return invoke
