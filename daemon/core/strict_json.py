"""JSON read from untrusted files (exports, teammates' shared memories): a key given twice
in one object or NaN/Infinity is an error, not silently the last value or a float."""
import json
from typing import NoReturn


def _reject_duplicate_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} appears twice in one object")
        out[key] = value
    return out


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def loads(text: str) -> object:  # whatever the JSON holds: the caller checks its shape
    """json.loads, strictly: raises ValueError (or RecursionError when nested too deeply)."""
    return json.loads(text, object_pairs_hook=_reject_duplicate_keys,
                      parse_constant=_reject_constant)
