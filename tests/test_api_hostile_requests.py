"""Every API request issue 18 reported (items 3, 7, 9 and 10), one by one: each answers 2xx, or
4xx with {detail, code}; none answers 5xx. The status each should get is spelled out too."""

import math

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from curator.conversations import InvalidTurn, record_turn
from curator.models import Attachment, ConversationTurn, Fact
from tests.api_helpers import assert_error

LATE = "9999-12-31T23:59:59-14:00"
EARLY = "0001-01-01T00:00:00+14:00"
TURN = {"session_id": "s1", "turn_index": 0, "role": "user", "content": "tea in the garden"}
MEMORY = {"content": "drinks oolong", "confidence": 0.95, "operation_id": "op-tea"}
PART = 'Content-Disposition: form-data; name="file"; filename="a.txt"'
LONG_HEADER = f"--B\r\n{PART}\r\nX-Pad: {'a' * 2000}\r\n\r\nhi\r\n--B--\r\n"

# (label, method, path, body or query, expected status)
REQUESTS = [
    (
        "search, naive time_from",
        "post",
        "/search",
        {"query": "tea", "time_from": "2020-01-01T00:00:00"},
        200,
    ),
    (
        "search, naive date time_to",
        "post",
        "/search",
        {"query": "tea", "time_to": "2999-01-01"},
        200,
    ),
    (
        "search, time_to past the calendar",
        "post",
        "/search",
        {"query": "tea", "time_to": LATE},
        200,
    ),
    (
        "search, time_from before the calendar",
        "post",
        "/search",
        {"query": "tea", "time_from": EARLY},
        200,
    ),
    (
        "search, time_from past the calendar",
        "post",
        "/search",
        {"query": "tea", "time_from": LATE},
        200,
    ),
    ("traces, time_to late", "get", "/traces", {"time_to": LATE}, 200),
    ("traces, time_from early", "get", "/traces", {"time_from": EARLY}, 200),
    ("episodes, time_to late", "get", "/episodes", {"time_to": LATE}, 200),
    ("episodes, time_from early", "get", "/episodes", {"time_from": EARLY}, 200),
    ("memories, updated_after late", "get", "/memories", {"updated_after": LATE}, 200),
    ("memories, updated_after early", "get", "/memories", {"updated_after": EARLY}, 200),
    ("turn, timestamp late", "post", "/turns", {**TURN, "turn_index": 5, "timestamp": LATE}, 422),
    ("turn, timestamp early", "post", "/turns", {**TURN, "turn_index": 6, "timestamp": EARLY}, 422),
    ("PATCH expires_at late", "patch", "/memories/{fact}", {"expires_at": LATE}, 422),
    ("PATCH expires_at early", "patch", "/memories/{fact}", {"expires_at": EARLY}, 422),
    (
        "context naming 9999-12-31",
        "post",
        "/context",
        {"query": "what happened on 9999-12-31?"},
        200,
    ),
    (
        "turn with a / in its session id",
        "post",
        "/turns",
        {**TURN, "session_id": "a/b", "turn_index": 1},
        201,
    ),
    ("end the session a/b", "post", "/sessions/a%2Fb/end", {}, 202),
    (
        "operation_id reused with other content",
        "post",
        "/memories",
        {**MEMORY, "content": "drinks green tea"},
        409,
    ),
    ("time_to: 0.5", "post", "/search", {"query": "tea", "time_to": 0.5}, 422),
    ("explain: 0", "post", "/search", {"query": "tea", "explain": 0}, 422),
    ("PATCH [null, null]", "patch", "/memories/{fact}", [None, None], 422),
]
MULTIPART = [
    ("multipart without a boundary", "multipart/form-data", b"--x\r\n\r\nhi\r\n--x--\r\n", 400),
    (
        "multipart part header over 1 KB",
        "multipart/form-data; boundary=B",
        LONG_HEADER.encode(),
        400,
    ),
]


@pytest.fixture
def lived_in(api, django_capture_on_commit_callbacks):
    """A searchable turn and memory (time filters only compare when something is found), the
    session a/b recorded, and operation op-tea used once."""
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post("/turns", TURN).status_code == 201
        assert api.post("/turns", {**TURN, "session_id": "a/b"}).status_code == 201
        api.fact = api.post("/memories", MEMORY).json()["fact"]["id"]
    return api


def answered(response, expected: int) -> None:
    assert response.status_code < 500, response.content[:300]
    if response.status_code >= 400:
        assert_error(response, expected)
    else:
        assert response.status_code == expected, response.content[:300]


@pytest.mark.parametrize(
    ("method", "path", "body", "expected"),
    [r[1:] for r in REQUESTS],
    ids=[r[0] for r in REQUESTS],
)
def test_each_reported_request_answers_without_a_server_error(
    lived_in, method, path, body, expected
):
    path = path.replace("{fact}", str(lived_in.fact))
    response = (
        lived_in.get(path, body) if method == "get" else getattr(lived_in, method)(path, body)
    )
    answered(response, expected)


@pytest.mark.parametrize(
    ("content_type", "body", "expected"), [r[1:] for r in MULTIPART], ids=[r[0] for r in MULTIPART]
)
def test_each_reported_multipart_body_answers_without_a_server_error(
    api, content_type, body, expected
):
    response = api.client.generic(
        "POST", "/api/v1/attachments", body, content_type=content_type, headers=api._headers()
    )
    answered(response, expected)


def test_the_reported_php_upload_is_kept_as_a_png(api):
    upload = SimpleUploadedFile("x.php", b"\x89PNG\r\n", "image/png")
    response = api.upload("/attachments", {"file": upload})
    answered(response, 201)
    assert Attachment.objects.get().file.name.endswith(".png")


# Python's json reads NaN and Infinity and lets "\ud800" stand alone; SQLite's JSON columns and
# UTF-8 text refuse both, so a stored turn or memory could not hold them (CI's fuzzing found a
# turn whose tool_results held Infinity answer 500).
NOT_JSON = [
    ("Infinity in tool_results", "/turns", '{**T, "tool_results": [{"x": Infinity}]}'),
    ("NaN in tool_calls", "/turns", '{**T, "tool_calls": {"x": NaN}}'),
    ("-Infinity as a turn index", "/turns", '{**T, "turn_index": -Infinity}'),
    ("a lone surrogate in content", "/turns", '{**T, "content": "tea \\ud800"}'),
    ("a lone surrogate in a key", "/turns", '{**T, "tool_results": {"\\udc00": 1}}'),
    ("a lone surrogate in a memory", "/memories", '{"content": "oolong \\udfff"}'),
    ("NaN confidence", "/memories", '{"content": "oolong", "confidence": NaN}'),
]
TURN_FIELDS = '"session_id": "s9", "turn_index": 0, "role": "user", "content": "hi"'


@pytest.mark.parametrize(("path", "body"), [r[1:] for r in NOT_JSON], ids=[r[0] for r in NOT_JSON])
def test_a_body_that_is_not_strict_json_is_a_400_and_stores_nothing(api, path, body):
    response = api.post(path, "{" + body[1:].replace("**T", TURN_FIELDS))
    assert_error(response, 400)
    assert response.json()["code"] == "invalid_json"
    assert not ConversationTurn.objects.exists()
    assert not Fact.objects.exists()


@pytest.mark.parametrize("bad", [{"x": math.inf}, [math.nan], {"\udc00": 1}, ["tea \ud800"]])
def test_a_turn_python_callers_pass_that_cannot_be_stored_is_refused(db, bad):
    """The MCP server and the importers call the domain with Python values, past the parser."""
    with pytest.raises(InvalidTurn):
        record_turn("s9", 0, "user", "hi", tool_results=bad)
    assert not ConversationTurn.objects.exists()


def test_an_escaped_surrogate_pair_is_one_character(api):
    body = '{"session_id": "s9", "turn_index": 0, "role": "user", "content": "\\ud83c\\udf75 tea"}'
    assert api.post("/turns", body).status_code == 201
