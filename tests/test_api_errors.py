"""Every error under /api/ is JSON {"detail", "code", "fields"?} with the right status."""

import pytest
from django.db import OperationalError
from django.test import override_settings

from tests.api_helpers import assert_error


def test_unknown_api_paths_answer_json_404(api):
    assert_error(api.get("/nothing-here"), 404, "not_found")
    assert_error(api.client.get("/api/v2/turns"), 404, "not_found")
    assert_error(api.client.get("/api/"), 404, "not_found")


def test_a_wrong_method_answers_json_405(api):
    response = api.client.put("/api/v1/turns", "{}", content_type="application/json")
    assert_error(response, 405, "method_not_allowed")


def test_malformed_json_is_a_400(api):
    assert_error(api.post("/turns", "{not json"), 400, "invalid_json")


def test_validation_errors_name_each_field(api):
    body = assert_error(api.post("/turns", {"turn_index": -1, "role": "robot"}), 422, "invalid")
    assert {"session_id", "turn_index", "role"} <= set(body["fields"])
    assert "session_id" in body["detail"]


def test_query_validation_errors_name_the_parameter(api):
    body = assert_error(api.get("/traces", {"limit": 201}), 422, "invalid")
    assert set(body["fields"]) == {"limit"}


def test_a_body_that_is_not_an_object_is_a_422(api):
    assert_error(api.post("/turns", [1, 2, 3]), 422, "invalid")


def test_a_body_over_one_megabyte_is_a_413(api):
    big = {"session_id": "s", "turn_index": 0, "role": "user", "content": "x" * (1024 * 1024)}
    assert_error(api.post("/turns", big), 413, "too_large")


@override_settings(API_MAX_BODY_BYTES=100)
def test_the_body_limit_is_configurable(api):
    body = {"session_id": "s", "turn_index": 0, "role": "user", "content": "x" * 200}
    assert_error(api.post("/turns", body), 413, "too_large")


def test_a_locked_database_is_a_503(api, monkeypatch):
    from curator import conversations

    def locked(*args, **kwargs):
        raise OperationalError("database is locked")

    monkeypatch.setattr(conversations, "search_traces", locked)
    response = api.get("/traces")
    assert_error(response, 503, "database_busy")
    assert response["Retry-After"] == "1"


def test_an_unexpected_error_is_a_json_500(api, monkeypatch, caplog):
    from curator import conversations

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(conversations, "search_traces", broken)
    assert_error(api.get("/traces"), 500, "internal_error")
    assert "boom" not in api.get("/traces").json()["detail"]  # internals stay in the log


def test_pages_outside_the_api_keep_their_html_404(client_in):
    response = client_in.get("/no-such-page/")
    assert response.status_code == 404
    assert not response["Content-Type"].startswith("application/json")


@pytest.mark.django_db(transaction=True)
def test_a_real_lock_held_past_the_busy_timeout_is_a_503(fresh_limits):
    """Another writer holds SQLite's write lock longer than we are willing to wait."""
    import sqlean
    from django.db import connection
    from django.test import Client

    from memsite.core.tokens import create_token
    from tests.api_helpers import Api

    _, raw = create_token("agent")
    other = sqlean.connect(str(connection.settings_dict["NAME"]), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with connection.cursor() as cur:
            cur.execute("PRAGMA busy_timeout = 50")
        turn = {"session_id": "s", "turn_index": 0, "role": "user", "content": "hi"}
        response = Api(Client(), raw).post("/turns", turn)
    finally:
        other.rollback()
        other.close()
        connection.close()  # the next test gets a connection with the normal busy timeout
    assert_error(response, 503, "database_busy")


# --- malformed multipart (issue 18, item 9) ----------------------------------------------

PART = 'Content-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain'
MALFORMED_MULTIPART = {
    "no boundary": ("multipart/form-data", b"--x\r\n\r\nhello\r\n--x--\r\n"),
    "empty boundary": ("multipart/form-data; boundary=", b"--\r\n"),
    "control characters in the boundary": ("multipart/form-data; boundary=\x01", b"--\x01\r\n"),
    "a part header over 1 KB": (
        "multipart/form-data; boundary=B",
        f"--B\r\n{PART}\r\nX-Pad: {'a' * 2000}\r\n\r\nhello\r\n--B--\r\n".encode(),
    ),
    "bad base64 in a file": (
        "multipart/form-data; boundary=B",
        f"--B\r\n{PART}\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!x=\r\n--B--\r\n".encode(),
    ),
}


@pytest.mark.parametrize("case", MALFORMED_MULTIPART)
def test_malformed_multipart_is_a_400(api, case, caplog):
    content_type, body = MALFORMED_MULTIPART[case]
    response = api.client.generic(
        "POST", "/api/v1/attachments", body, content_type=content_type, headers=api._headers()
    )
    assert_error(response, 400, "invalid_multipart")
    assert "Unhandled API error" not in caplog.text


def test_too_many_form_fields_is_a_400(api):
    parts = "".join(
        f'--B\r\nContent-Disposition: form-data; name="f{i}"\r\n\r\nx\r\n' for i in range(1001)
    )
    response = api.client.generic(
        "POST",
        "/api/v1/attachments",
        f"{parts}--B--\r\n".encode(),
        content_type="multipart/form-data; boundary=B",
        headers=api._headers(),
    )
    assert_error(response, 400, "bad_request")
