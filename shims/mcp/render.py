"""How a tool result is written for the model: compact JSON, or TOON (MEMORY_RESPONSE_FORMAT=toon),
which spends fewer tokens on lists of similar records."""
import json
import logging
import os

log = logging.getLogger("memnest-mcp")
FORMATS = ("json", "toon")


def response_format() -> str:
    chosen = os.environ.get("MEMORY_RESPONSE_FORMAT", "json").strip().lower() or "json"
    if chosen not in FORMATS:
        log.warning("MEMORY_RESPONSE_FORMAT=%r is not one of %s; using json", chosen,
                    ", ".join(FORMATS))
        return "json"
    return chosen


def render(result, fmt: str) -> str:
    if fmt == "toon":
        import toon_format  # small and pure Python; imported only when asked for

        return toon_format.encode(result)
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))
