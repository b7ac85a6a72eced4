"""The OpenAPI document covers every route, with request, response and error schemas."""

from openapi_spec_validator import validate

from functions import async_jobs, routes
from functions.openapi import document

from .events import event


def test_document_is_valid_openapi_3():
    doc = document()
    validate(doc)
    assert doc["openapi"].startswith("3.")


# Routes whose body (export: the response, import: the request) is JSON Lines, not JSON.
NDJSON = {"export": "response", "import_data": "request"}


def test_every_route_is_documented_with_its_schemas():
    doc = document()
    for route in routes.ROUTES:
        operation = doc["paths"][route.path][route.method.lower()]
        assert operation["operationId"] == route.name
        # A route that may run as a job (functions.async_jobs) also answers 202, its own schema.
        success = [s for s in operation["responses"] if s.startswith("2") and s != "202"]
        assert len(success) == 1, route
        if "202" in operation["responses"]:
            assert route.name in async_jobs.ROUTES, route
            assert operation["responses"]["202"]["content"]["application/json"]["schema"]["$ref"]
        media = "application/x-ndjson" if NDJSON.get(route.name) == "response" else "application/json"
        assert "schema" in operation["responses"][success[0]]["content"][media]
        if route.auth:
            assert operation["responses"]["401"]["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/ErrorResponse"
            }
            assert operation["security"]
        if NDJSON.get(route.name) == "request":
            assert operation["requestBody"]["content"]["application/x-ndjson"]["schema"]
        elif route.method in ("POST", "PUT") and "{id}" not in route.path:
            assert operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert set(doc["components"]["schemas"]["ErrorResponse"]["properties"]) == {"error"}
    assert {"bearer", "sigv4"} <= set(doc["components"]["securitySchemes"])


def test_request_schema_carries_the_models_limits():
    schema = document()["components"]["schemas"]["SearchRequest"]
    assert schema["properties"]["k"]["maximum"] == 20
    assert "global" in schema["properties"]
    assert schema["properties"]["as_of"]["anyOf"][0].items() >= {"type": "string", "format": "date-time"}.items()
    assert schema["properties"]["min_relevance"]["anyOf"][0] == {"type": "number", "minimum": 0.0, "maximum": 1.0}


def test_served_document_is_the_generated_one(call):
    r = call(event("openapi", tenant=None))
    assert r.json == document()
