"""Property-based fuzzing against the published OpenAPI schema: no input gives a 5xx.

For every operation, hypothesis builds requests from the schema itself (path, query and body),
mixing values that fit it with values of the wrong type, out of range or malformed, and checks
that the answer is never a server error and that every error has the documented JSON shape.
Examples are bounded (FUZZ_EXAMPLES per operation) so the run stays quick.
"""

import json
import os
from datetime import UTC

import pytest
from django.test import Client, override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memsite.api import api as ninja_api
from memsite.api.ratelimit import limiter
from memsite.core.tokens import create_token

FUZZ_EXAMPLES = int(os.environ.get("MEMSITE_FUZZ_EXAMPLES", "25"))  # more for a deep run
SCHEMA = json.loads(json.dumps(ninja_api.get_openapi_schema(path_prefix="/api/v1/")))
DEFS = SCHEMA.get("components", {}).get("schemas", {})
OPERATIONS = [
    (path, method, op)
    for path, item in SCHEMA["paths"].items()
    for method, op in item.items()
    if method in {"get", "post", "patch", "delete"}
]

JUNK = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)


def resolve(schema: dict) -> dict:
    while "$ref" in schema:
        schema = DEFS[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def valid(schema: dict, depth: int = 0):
    """Values that fit the schema (roughly: the server decides the rest)."""
    schema = resolve(schema)
    if "anyOf" in schema:
        return st.one_of([values(s, depth) for s in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        if schema.get("format") == "date-time":
            return st.datetimes(timezones=st.just(UTC)).map(lambda d: d.isoformat())
        low = schema.get("minLength", 0)
        return st.text(min_size=low, max_size=max(low, min(schema.get("maxLength", 40), 40)))
    if kind == "integer":
        return st.integers(schema.get("minimum"), schema.get("maximum"))
    if kind == "number":
        return st.floats(schema.get("minimum"), schema.get("maximum"), allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(values(schema.get("items", {}), depth + 1), max_size=3)
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        return st.fixed_dictionaries(
            {k: values(v, depth + 1) for k, v in props.items() if k in required},
            optional={k: values(v, depth + 1) for k, v in props.items() if k not in required},
        )
    return JUNK


def values(schema: dict, depth: int = 0):
    """Mostly fitting values, sometimes anything at all."""
    if depth > 4:
        return JUNK
    return st.one_of(valid(schema, depth), valid(schema, depth), valid(schema, depth), JUNK)


def as_param(value) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def request_strategy(path: str, op: dict):
    params = op.get("parameters", [])
    path_values = {
        p["name"]: st.one_of(
            st.integers(-5, 2**70).map(str), st.text(min_size=1, max_size=20), valid(p["schema"])
        ).map(as_param)
        for p in params
        if p["in"] == "path"
    }
    query = st.fixed_dictionaries(
        {},
        optional={
            p["name"]: values(p["schema"]).map(as_param) for p in params if p["in"] == "query"
        },
    )
    content = op.get("requestBody", {}).get("content", {})
    if "application/json" in content:
        body = st.one_of(values(content["application/json"]["schema"]), JUNK).map(json.dumps)
        body = body | st.text(max_size=30)  # not JSON at all
    elif "multipart/form-data" in content:
        body = st.just("multipart")
    else:
        body = st.just(None)
    return st.fixed_dictionaries(
        {"path": st.fixed_dictionaries(path_values), "query": query, "body": body}
    )


def send(client, headers, path, method, req):
    url = path
    for name, value in req["path"].items():
        url = url.replace("{" + name + "}", value.replace("/", "%2F").replace("?", "%3F"))
    if req["body"] == "multipart":
        from django.core.files.uploadedfile import SimpleUploadedFile

        data = {"file": SimpleUploadedFile("f.txt", b"fuzz", "text/plain"), **req["query"]}
        return client.post(url, data, headers=headers)
    if method == "get" or req["body"] is None:
        return getattr(client, method)(url, req["query"], headers=headers)
    query = "&".join(f"{k}={v}" for k, v in req["query"].items())
    target = f"{url}?{query}" if query else url
    return getattr(client, method)(
        target, req["body"], content_type="application/json", headers=headers
    )


@pytest.mark.parametrize(
    "path, method, op", OPERATIONS, ids=[f"{m.upper()} {p}" for p, m, _ in OPERATIONS]
)
@override_settings(API_RATE_LIMIT=0)
def test_no_input_gives_a_server_error(db, path, method, op):
    limiter.reset()
    _, raw = create_token("fuzzer")
    client, headers = Client(raise_request_exception=False), {"Authorization": f"Bearer {raw}"}
    client.post(  # something to find, edit and confirm
        "/api/v1/memories",
        json.dumps({"content": "fuzz seed", "confidence": 0.7}),
        content_type="application/json",
        headers=headers,
    )

    @settings(
        max_examples=FUZZ_EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(request_strategy(path, op))
    def check(req):
        response = send(client, headers, path, method, req)
        assert response.status_code < 500, (req, response.content[:300])
        if response.status_code >= 400:
            body = response.json()
            assert isinstance(body.get("detail"), str) and isinstance(body.get("code"), str)

    check()


def test_every_operation_is_fuzzed():
    assert len(OPERATIONS) >= 20
