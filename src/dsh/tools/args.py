"""Checking a model's tool arguments against the tool's JSON schema (the subset dsh uses).

Supported keywords: ``type`` (object, array, string, integer, number, boolean, null),
``properties``, ``required``, ``items``, ``enum``, ``minimum``, ``maximum``,
``additionalProperties``. An object accepts no key it does not declare, unless its schema says
``additionalProperties`` is true or a schema (the extra values are checked against it) or it
declares no ``properties`` at all (a free-form object, as MCP servers' schemas may have); any
other keyword (``anyOf``, ``$ref`` …) constrains nothing here. JSON booleans are not numbers
here, and ``integer`` means a whole number. Every failure raises
``ToolError(code="INVALID_ARGUMENT")`` naming the offending key (``todos[1].status``).
"""

from __future__ import annotations

from typing import Any

from dsh.errors import ToolError

INVALID_ARGUMENT = "INVALID_ARGUMENT"

_JSON_TYPE_NAMES = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}


def json_type_name(value: Any) -> str:
    """The JSON type of a decoded value, as a schema would spell it."""
    return _JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def _matches_type(value: Any, expected: str) -> bool:
    if expected == "object":
        return isinstance(value, dict)
    if expected == "array":
        return isinstance(value, list)
    if expected == "string":
        return isinstance(value, str)
    if expected == "boolean":
        return isinstance(value, bool)
    if expected == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if expected == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if expected == "null":
        return value is None
    return True  # an unknown type keyword constrains nothing


def validate_args(value: Any, schema: dict[str, Any], where: str = "") -> None:
    """Raise ``ToolError`` (``INVALID_ARGUMENT``) unless ``value`` fits ``schema``."""
    label = where or "arguments"
    expected = schema.get("type")
    if isinstance(expected, str) and not _matches_type(value, expected):
        raise ToolError(
            f"{label} must be {_article(expected)} {expected}, got {json_type_name(value)}",
            code=INVALID_ARGUMENT,
        )
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(repr(v) for v in schema["enum"])
        raise ToolError(f"{label} must be one of {allowed}; got {value!r}", code=INVALID_ARGUMENT)
    if isinstance(value, int | float) and not isinstance(value, bool):
        _check_range(value, schema, label)
    if isinstance(value, dict):
        _validate_object(value, schema, where)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            validate_args(item, schema["items"], f"{label}[{i}]")


def _validate_object(value: dict[str, Any], schema: dict[str, Any], where: str) -> None:
    properties: dict[str, Any] = schema.get("properties", {})
    prefix = f"{where}." if where else ""
    for key in schema.get("required", ()):
        if key not in value:
            raise ToolError(f"missing required argument {prefix + key!r}", code=INVALID_ARGUMENT)
    extra = schema.get("additionalProperties", "properties" not in schema)
    unknown = [key for key in value if key not in properties]
    if unknown and extra is False:
        known = ", ".join(properties) or "none"
        raise ToolError(
            f"unknown argument {prefix + unknown[0]!r} (accepted: {known})", code=INVALID_ARGUMENT
        )
    for key, item in value.items():
        item_schema = properties.get(key, extra)
        if isinstance(item_schema, dict):
            validate_args(item, item_schema, f"{prefix}{key}")


def _check_range(value: float, schema: dict[str, Any], label: str) -> None:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and value < low:
        raise ToolError(f"{label} must be at least {low}, got {value}", code=INVALID_ARGUMENT)
    if high is not None and value > high:
        raise ToolError(f"{label} must be at most {high}, got {value}", code=INVALID_ARGUMENT)


def _article(type_name: str) -> str:
    return "an" if type_name[0] in "aeiou" else "a"


def drop_null_optionals(args: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Treat ``"key": null`` for an optional key as the key being absent (models often send it)."""
    required = set(schema.get("required", ()))
    return {k: v for k, v in args.items() if v is not None or k in required}


def int_arg(
    args: dict[str, Any],
    key: str,
    default: int,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int:
    """An optional integer argument with its default and bounds checked."""
    value = args.get(key, default)
    if value is None:
        value = default
    validate_args(value, {"type": "integer", "minimum": minimum, "maximum": maximum}, key)
    return int(value)


def str_arg(args: dict[str, Any], key: str, default: str | None = None) -> str:
    """A string argument; required unless a default is given."""
    value = args.get(key, default)
    if value is None:
        raise ToolError(f"missing required argument {key!r}", code=INVALID_ARGUMENT)
    validate_args(value, {"type": "string"}, key)
    return str(value)
