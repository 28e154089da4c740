"""Property-based fuzzing against the published OpenAPI schema: no input gives a 5xx.

For every operation, hypothesis builds requests from the schema itself (path, query and body),
mixing values that fit it with values of the wrong type, out of range or malformed, and checks
that the answer is never a server error and that every error has the documented JSON shape.
Date-times come naive and aware, with any offset up to +-14 h and at the ends of the calendar
(issue 18: "9999-12-31T23:59:59-14:00" overflowed); multipart operations also get malformed
bodies (no boundary, part headers over 1 KB, bad base64, truncated parts). A second property
sends wrongly typed values (numbers for dates, 0 / "true" for booleans) to every date-time and
boolean field and expects a 422 naming that field.
Examples are bounded (FUZZ_EXAMPLES per operation) so the run stays quick.
"""

import json
import os
from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.test import Client, TestCase, override_settings
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
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)


# Offsets from -14 h to +14 h (what ISO 8601 allows in practice), in whole minutes.
OFFSETS = st.integers(-14 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))
BEHIND = st.integers(-14 * 60, -1).map(lambda m: timezone(timedelta(minutes=m)))
AHEAD = st.integers(1, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))
EDGE_TIMES = [
    "9999-12-31T23:59:59-14:00",
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59.999999",
    "0001-01-01T00:00:00",
    "9999-12-31",
    "0001-01-01",
    "2999-01-01",
    "2020-01-01T00:00:00",
]


def _iso(moment: datetime) -> str:
    return moment.isoformat()


# Half of these sit at the ends of the calendar, where converting to UTC overflows.
DATETIMES = st.one_of(
    st.sampled_from(EDGE_TIMES),
    st.datetimes(min_value=datetime(9999, 12, 31, 10), timezones=BEHIND).map(_iso),
    st.datetimes(max_value=datetime(1, 1, 1, 14), timezones=AHEAD).map(_iso),
    st.datetimes(timezones=st.just(UTC)).map(_iso),
    st.datetimes().map(_iso),  # naive
    st.datetimes(timezones=OFFSETS).map(_iso),
    st.dates().map(lambda d: d.isoformat()),
)
# Free text that names a date, odd ones included (the context's time-expression parser).
DATE_TEXT = st.builds(
    "{} {} {}".format,
    st.sampled_from(["what happened on", "还记得", "since", ""]),
    st.one_of(
        st.dates().map(lambda d: d.isoformat()),
        st.dates().map(lambda d: f"{d.year}年{d.month}月{d.day}日"),
        st.dates().map(lambda d: d.strftime("%B %Y")),
        st.sampled_from(["9999-12-31", "0001-01-01", "December 9999", "January 0000"]),
    ),
    st.text(max_size=8),
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
            return DATETIMES
        low, high = schema.get("minLength", 0), schema.get("maxLength", 40)
        text = st.text(min_size=low, max_size=max(low, min(high, 40)))
        dated = DATE_TEXT.filter(lambda t: low <= len(t) <= high)
        return st.one_of(text, text, dated)
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
            st.sampled_from(["1", "2", "fuzz/s"]),  # the seeded objects (see seed())
            st.integers(-5, 2**70).map(str),
            st.text(min_size=1, max_size=20),
            valid(p["schema"]),
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
        body = st.one_of(multipart_form(content["multipart/form-data"]["schema"]), raw_multipart())
    else:
        body = st.just(None)
    return st.fixed_dictionaries(
        {"path": st.fixed_dictionaries(path_values), "query": query, "body": body}
    )


ALLOWED_TYPES = ["text/plain", "image/png", "application/pdf", "text/markdown", "text/html"]
NAMES = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["x.php", "a.txt", "../../etc/passwd", ".htaccess", "中文.md", "a.PNG"]),
).filter(lambda name: os.path.basename(name) not in {"", ".", ".."})  # the test client refuses


def multipart_form(schema: dict):
    """A well-formed multipart body: a file (any name, type and bytes) and fuzzed fields."""
    props = resolve(schema).get("properties", {})
    fields = {k: values(v).map(as_param) for k, v in props.items() if k != "file"}
    upload = st.fixed_dictionaries(
        {
            "name": NAMES,
            "type": st.one_of(st.sampled_from(ALLOWED_TYPES), st.text(max_size=30)),
            "data": st.binary(max_size=64),
        }
    )
    return st.fixed_dictionaries(
        {"kind": st.just("form"), "file": upload},
        optional={"fields": st.fixed_dictionaries({}, optional=fields)},
    )


def raw_multipart():
    """Multipart bodies Django's parser refuses or half-reads: (content type, bytes)."""
    boundary = st.one_of(st.just(""), st.text(max_size=80), st.sampled_from(["B", "x" * 70]))
    header = st.one_of(
        st.just('Content-Disposition: form-data; name="file"; filename="a.txt"'),
        st.just("Content-Transfer-Encoding: base64"),
        st.text(max_size=40),
        st.integers(900, 3000).map(lambda n: "X-Pad: " + "a" * n),  # over the 1 KB header limit
    )
    part = st.tuples(st.lists(header, max_size=4), st.binary(max_size=40))
    return st.builds(_raw_body, boundary, st.lists(part, max_size=3), st.booleans(), st.booleans())


def _raw_body(boundary: str, parts: list, closed: bool, declare: bool) -> dict:
    body = b"".join(
        f"--{boundary}\r\n".encode("utf-8", "replace")
        + "\r\n".join(headers).encode("utf-8", "replace")
        + b"\r\n\r\n"
        + data
        + b"\r\n"
        for headers, data in parts
    )
    if closed:
        body += f"--{boundary}--\r\n".encode("utf-8", "replace")
    content_type = f"multipart/form-data; boundary={boundary}" if declare else "multipart/form-data"
    return {"kind": "raw", "content_type": content_type, "body": body}


def send(client, headers, path, method, req):
    url = path
    for name, value in req["path"].items():
        url = url.replace("{" + name + "}", value.replace("/", "%2F").replace("?", "%3F"))
    body = req["body"]
    if isinstance(body, dict) and body.get("kind") == "raw":
        return client.generic(
            method.upper(), url, body["body"], content_type=body["content_type"], headers=headers
        )
    if isinstance(body, dict) and body.get("kind") == "form":
        from django.core.files.uploadedfile import SimpleUploadedFile

        upload = body["file"]
        data = {
            **body.get("fields", {}),
            "file": SimpleUploadedFile(upload["name"], upload["data"], upload["type"]),
        }
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
    client, headers = seed()

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


def seed():
    """A client with a token, and something to find, edit, confirm and end (ids 1), indexed
    (search must have results for its time filters to compare anything)."""
    limiter.reset()
    _, raw = create_token("fuzzer")
    client, headers = Client(raise_request_exception=False), {"Authorization": f"Bearer {raw}"}
    turn = {"session_id": "fuzz/s", "turn_index": 0, "role": "user", "content": "fuzz"}
    with TestCase.captureOnCommitCallbacks(execute=True):
        for path, body in (
            ("/api/v1/memories", {"content": "fuzz seed fact", "confidence": 0.95}),
            ("/api/v1/memories", {"content": "fuzz seed pending", "confidence": 0.7}),
            ("/api/v1/turns", turn),
        ):
            client.post(path, json.dumps(body), content_type="application/json", headers=headers)
    return client, headers


def test_every_operation_is_fuzzed():
    assert len(OPERATIONS) >= 20


# -- strict types: a wrong type is a 422 naming the field, never read loosely ----------------

NOT_A_DATETIME = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(),
    st.booleans(),
    st.integers(0, 2**40).map(str),  # pydantic would read digits as a Unix time
)
NOT_A_DATETIME_IN_A_QUERY = st.integers(0, 2**40).map(str)
NOT_A_BOOLEAN = st.one_of(
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),  # NaN and Infinity are not JSON: 400
    st.sampled_from(["true", "false", "1", "yes"]),
)


def _kinds(schema: dict) -> set[str]:
    options = [resolve(s) for s in schema.get("anyOf", [schema])]
    return {"date-time" if o.get("format") == "date-time" else o.get("type") for o in options}


def typed_fields() -> list[tuple]:
    """(path, method, where, field, kind) for every date-time and boolean input."""
    found = []
    for path, method, op in OPERATIONS:
        for param in op.get("parameters", []):
            if param["in"] == "query" and "date-time" in _kinds(param["schema"]):
                found.append((path, method, "query", param["name"], "date-time"))
        for name, schema in _body_properties(op).items():
            kinds = _kinds(schema)
            if "date-time" in kinds:
                found.append((path, method, "body", name, "date-time"))
            elif "boolean" in kinds:
                found.append((path, method, "body", name, "boolean"))
    return found


def _body_object(op: dict) -> dict:
    """The JSON body's object schema (an optional body is anyOf [object, null])."""
    body = op.get("requestBody", {}).get("content", {}).get("application/json")
    options = (
        [resolve(s) for s in resolve(body["schema"]).get("anyOf", [body["schema"]])] if body else []
    )
    return next((o for o in options if "properties" in o), {})


def _body_properties(op: dict) -> dict:
    return _body_object(op).get("properties", {})


def example(schema: dict):
    """One plain value that fits the schema (for the fields a request needs besides the one
    under test): the first choice, the minimum, "fuzz"."""
    schema = resolve(schema)
    if "anyOf" in schema:
        return example(next(s for s in schema["anyOf"] if resolve(s).get("type") != "null"))
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "string":
        return "2026-01-01T00:00:00+00:00" if schema.get("format") == "date-time" else "fuzz"
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    required = set(schema.get("required", []))
    return {k: example(v) for k, v in schema.get("properties", {}).items() if k in required}


OPS = {(path, method): op for path, method, op in OPERATIONS}
TYPED = typed_fields()


def send_field(client, headers, path, method, where, field, value):
    """The operation with its required fields filled in and `field` set to `value`."""
    url = path.replace("{fact_id}", "1").replace("{item_id}", "1")
    if where == "query":
        return client.get(url, {field: value}, headers=headers)
    required = set(_body_object(OPS[path, method]).get("required", []))
    body = {k: example(v) for k, v in _body_properties(OPS[path, method]).items() if k in required}
    return getattr(client, method)(
        url, json.dumps({**body, field: value}), content_type="application/json", headers=headers
    )


def _wrong(where: str, kind: str):
    if kind == "boolean":
        return NOT_A_BOOLEAN
    return NOT_A_DATETIME_IN_A_QUERY if where == "query" else NOT_A_DATETIME


@pytest.mark.parametrize(
    "path, method, where, field, kind",
    TYPED,
    ids=[f"{m.upper()} {p} {f}" for p, m, _, f, _ in TYPED],
)
@override_settings(API_RATE_LIMIT=0)
def test_a_wrongly_typed_value_is_a_422_naming_its_field(db, path, method, where, field, kind):
    client, headers = seed()

    @settings(max_examples=10, deadline=None, database=None)
    @given(_wrong(where, kind))
    def check(value):
        response = send_field(client, headers, path, method, where, field, value)
        assert response.status_code == 422, (field, value, response.content[:300])
        assert field in response.json()["fields"], (field, value, response.json())

    check()


DATE_FIELDS = [t for t in TYPED if t[4] == "date-time"]


@pytest.mark.parametrize(
    "path, method, where, field, kind",
    DATE_FIELDS,
    ids=[f"{m.upper()} {p} {f}" for p, m, _, f, _ in DATE_FIELDS],
)
@override_settings(API_RATE_LIMIT=0, TIME_ZONE="Asia/Shanghai")
def test_odd_dates_in_a_date_field_never_give_a_server_error(db, path, method, where, field, kind):
    """Naive and aware, any offset, the ends of the calendar: 2xx or a 4xx with the shape."""
    client, headers = seed()

    @settings(max_examples=15, deadline=None, database=None)
    @given(DATETIMES)
    def check(value):
        response = send_field(client, headers, path, method, where, field, value)
        assert response.status_code < 500, (field, value, response.content[:300])
        if response.status_code >= 400:
            body = response.json()
            assert isinstance(body.get("detail"), str) and isinstance(body.get("code"), str)

    check()


def test_every_date_and_boolean_input_is_type_checked():
    names = {(p, f) for p, _, _, f, _ in TYPED}
    assert {
        ("/api/v1/search", "time_to"),
        ("/api/v1/search", "explain"),
        ("/api/v1/context", "explain"),
        ("/api/v1/turns", "timestamp"),
        ("/api/v1/memories/{fact_id}", "expires_at"),
        ("/api/v1/traces", "time_from"),
        ("/api/v1/memories", "updated_after"),
        ("/api/v1/pending/{item_id}/later", "until"),
    } <= names


@override_settings(API_RATE_LIMIT=0)
def test_a_message_naming_any_date_never_breaks_the_context(db):
    """POST /context reads times out of the message itself ("9999-12-31" overflowed)."""
    client, headers = seed()

    @settings(max_examples=30, deadline=None, database=None)
    @given(DATE_TEXT, st.sampled_from(["auto", "always"]))
    def check(message, evidence):
        body = json.dumps({"query": message, "evidence": evidence})
        response = client.post(
            "/api/v1/context", body, content_type="application/json", headers=headers
        )
        assert response.status_code == 200, (message, response.content[:300])

    check()
