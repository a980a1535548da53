"""The JSON Schema validator for what callers and files send: JSON Schema counts 2.0 as an
integer, but memnest slices and counts with these values, so only real integers pass (and
booleans, which Python treats as ints, do not)."""
from jsonschema import validators

_TYPES = validators.Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool))
StrictValidator = validators.extend(validators.Draft202012Validator, type_checker=_TYPES)
