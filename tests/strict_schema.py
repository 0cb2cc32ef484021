"""Validate a MiniCluster as strictly as a real API server with strict field validation.

jsonschema alone accepts any key the CRD's openAPIV3Schema does not list: the
schema has no `additionalProperties: false`.  A real API server prunes such a
key silently, and with strict field validation (`kubectl apply
--validate=strict`, or `fieldValidation=Strict` on the request) rejects it.  So
a structural schema's rule applies here: wherever a schema node lists
`properties` and neither `additionalProperties` nor
`x-kubernetes-preserve-unknown-fields`, every other key is unknown.
`metadata` is ObjectMeta, which the server checks itself (the CRD lists it as a
bare object), so it is left to jsonschema's type check.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import yaml

__all__ = ["crd_schema", "unknown_fields", "validate_strictly"]


def crd_schema(crd: Path, version: str = "v1alpha2") -> dict[str, Any]:
    """The openAPIV3Schema of one version of a CRD file."""
    document = yaml.safe_load(crd.read_text())
    served = next(v for v in document["spec"]["versions"] if v["name"] == version)
    schema: dict[str, Any] = served["schema"]["openAPIV3Schema"]
    return schema


def unknown_fields(schema: dict[str, Any], value: Any, path: str = "") -> list[str]:
    """The dotted paths of keys in `value` that `schema` does not list (see the module doc)."""
    found: list[str] = []
    if isinstance(value, dict):
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields", False)
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if properties is not None and key in properties:
                found += unknown_fields(properties[key], item, where)
            elif isinstance(extra, dict):
                found += unknown_fields(extra, item, where)
            elif properties is not None and not preserve and extra is not True:
                found.append(where)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            found += unknown_fields(schema["items"], item, f"{path}[{index}]")
    return found


def validate_strictly(document: dict[str, Any], schema: dict[str, Any]) -> None:
    """jsonschema's check, then no unknown field: a ValidationError naming each one."""
    jsonschema.validate(document, schema)
    unknown = unknown_fields(schema, document)
    if unknown:
        raise jsonschema.ValidationError(f"unknown field(s): {', '.join(unknown)}")
