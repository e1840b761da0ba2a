"""One name, one schema, in the API's OpenAPI document.

ninja files every schema under its class name: two classes named ``ReviewIn`` (the formula
review's body and the approve/reject body) shared one entry, and the docs showed the formula
review's body for approving a version.  The schemas are collected from every operation the
API serves, so a later clash fails here too.
"""

from __future__ import annotations

import types
import typing
from collections import defaultdict

import pytest
from django.test import Client
from pydantic import BaseModel

from studio.api.urls import api

pytestmark = pytest.mark.django_db


def _models_in(annotation, seen: set) -> None:
    """Every pydantic model an annotation names, however nested (``list[X] | None``, ...)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation in seen:
            return
        seen.add(annotation)
        for field in annotation.model_fields.values():
            _models_in(field.annotation, seen)
        return
    if isinstance(annotation, (typing._GenericAlias, types.GenericAlias, types.UnionType)) or \
            typing.get_origin(annotation) is not None:
        for argument in typing.get_args(annotation):
            _models_in(argument, seen)


def _operations():
    for _, router in api._routers:
        for path, path_view in router.path_operations.items():
            for operation in path_view.operations:
                yield path, operation


def _served_models() -> set[type[BaseModel]]:
    seen: set = set()
    for _, operation in _operations():
        for params in operation.models:
            _models_in(params, seen)
        for response in operation.response_models.values():
            if isinstance(response, type):
                _models_in(response, seen)
    return seen


def test_no_two_served_schemas_share_a_name_in_the_openapi_document():
    components = Client().get("/api/openapi.json").json()["components"]["schemas"]
    classes_by_name = defaultdict(set)
    for model in _served_models():
        if model.__name__ in components:  # ninja's own wrappers are inlined, never named
            classes_by_name[model.__name__].add(f"{model.__module__}.{model.__qualname__}")
    assert len(classes_by_name) > 30  # the walk found the schemas (it cannot pass empty)
    shared = {name: sorted(classes) for name, classes in classes_by_name.items()
              if len(classes) > 1}
    assert shared == {}


def test_each_body_in_the_docs_is_the_body_its_route_reads():
    document = Client().get("/api/openapi.json").json()
    components = document["components"]["schemas"]
    checked = 0
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            content = operation.get("requestBody", {}).get("content", {})
            reference = content.get("application/json", {}).get("schema", {}).get("$ref")
            if reference is None:
                continue
            name = reference.rsplit("/", 1)[1]
            body = _body_model(path, method)
            assert body is not None, (method, path)
            assert body.__name__ == name, (method, path, name)
            documented = set(components[name].get("properties", {}))
            assert documented == set(body.model_json_schema(by_alias=True)
                                     .get("properties", {})), (method, path)
            checked += 1
    assert checked > 20


def _body_model(openapi_path: str, method: str):
    for prefix, router in api._routers:
        for path, path_view in router.path_operations.items():
            if "/api" + prefix.rstrip("/") + "/" + path.lstrip("/") != openapi_path:
                continue
            for operation in path_view.operations:
                if method.upper() not in operation.methods:
                    continue
                for params in operation.models:
                    if "body" in params.model_fields:
                        return params.model_fields["body"].annotation
    return None


def test_approving_a_version_documents_the_comment_it_reads():
    document = Client().get("/api/openapi.json").json()
    for action in ("approve", "reject"):
        operation = document["paths"][
            f"/api/w/{{slug}}/rules/{{rule_id}}/versions/{{number}}/{action}"]["post"]
        name = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        schema = document["components"]["schemas"][name.rsplit("/", 1)[1]]
        assert set(schema["properties"]) == {"comment"}
