"""GET /api/v1/openapi.json and /api/v1/docs: for a logged-in person or a token; no CDN."""

import re

from django.contrib.staticfiles import finders

from tests.api_helpers import assert_error


def test_the_schema_lists_every_endpoint(api):
    schema = api.get("/openapi.json").json()
    paths = set(schema["paths"])
    assert {
        "/api/v1/health",
        "/api/v1/turns",
        "/api/v1/sessions/{session_id}/end",
        "/api/v1/memories",
        "/api/v1/memories/{fact_id}",
        "/api/v1/memories/{fact_id}/history",
        "/api/v1/pending",
        "/api/v1/pending/{item_id}/confirm",
        "/api/v1/pending/{item_id}/ignore",
        "/api/v1/pending/{item_id}/later",
        "/api/v1/traces",
        "/api/v1/episodes",
        "/api/v1/episodes/{episode_id}",
        "/api/v1/attachments",
        "/api/v1/attachments/{attachment_id}",
        "/api/v1/attachments/{attachment_id}/file",
        "/api/v1/profile",
        "/api/v1/onboarding",
        "/api/v1/search",
        "/api/v1/context",
        "/api/v1/openapi.json",
    } <= paths | {"/api/v1/openapi.json"}
    assert schema["components"]["securitySchemes"]["TokenAuth"]["scheme"] == "bearer"


def test_the_schema_documents_errors(api):
    turns = api.get("/openapi.json").json()["paths"]["/api/v1/turns"]["post"]["responses"]
    assert {"200", "201", "401", "403", "409", "413", "422", "429"} <= set(turns)


def test_the_schema_lists_the_400_of_every_operation_that_reads_a_body(api):
    paths = api.get("/openapi.json").json()["paths"]
    with_body = [
        (path, method)
        for path, item in paths.items()
        for method, op in item.items()
        if "requestBody" in op
    ]
    assert len(with_body) >= 9
    for path, method in with_body:
        bad = paths[path][method]["responses"].get("400")
        assert bad, (path, method)
        assert bad["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorOut")


def test_the_schema_needs_a_login_or_a_token(anon_api):
    assert_error(anon_api.get("/openapi.json"), 401, "not_authenticated")


def test_a_logged_in_person_reads_the_schema(client_in):
    assert client_in.get("/api/v1/openapi.json").status_code == 200


def test_a_bad_token_cannot_read_the_schema(client, db):
    response = client.get("/api/v1/openapi.json", headers={"Authorization": "Bearer nope"})
    assert_error(response, 401, "invalid_token")


def test_the_docs_page_works_offline(client_in):
    response = client_in.get("/api/v1/docs")
    assert response.status_code == 200
    html = response.content.decode()
    assert not re.search(r"(src|href)=\"https?://", html), "the docs must not load from a CDN"
    for asset in re.findall(r"(?:src|href)=\"/static/([^\"]+)\"", html):
        assert finders.find(asset), asset
    assert '"validatorUrl": null' in html  # Swagger UI would fetch a badge online


def test_the_docs_page_sends_a_visitor_to_the_login(client, db):
    response = client.get("/api/v1/docs")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_schema_is_built_once_and_then_served_as_built(api, monkeypatch):
    import ninja.main

    from memsite.api import api as ninja_api

    built = []
    real = ninja.main.get_schema
    monkeypatch.setattr(ninja.main, "get_schema", lambda **kw: built.append(kw) or real(**kw))
    monkeypatch.setattr(ninja_api, "_schemas", {})
    first, second = api.get("/openapi.json").json(), api.get("/openapi.json").json()
    assert first == second
    assert len(built) == 1


def test_operation_ids_are_the_readable_function_names(api):
    schema = api.get("/openapi.json").json()
    ids = [op["operationId"] for item in schema["paths"].values() for op in item.values()]
    assert len(ids) == len(set(ids))  # unique, so generated clients get one method each
    assert {"record_turn", "end_session", "search", "context", "propose", "forget"} <= set(ids)
    assert not [i for i in ids if i.startswith("memsite_")]
