"""How a tool result is written for the model: compact JSON (the default), or TOON
(MEMORY_RESPONSE_FORMAT=toon in the MCP server's environment; memnest-mcp passes it on when
its session starts).

JSON is the default because it is the cheaper of the two for memnest's results (bench/
response_tokens.py measures both; bench/RESULTS.md#response-format): memnest's records are
not tabular (tags are lists, optional keys come and go), so TOON writes them as indented
key: value blocks, and its savings are against indented JSON, which the shim never sends.
TOON is cheaper only for flat rows, such as a memory_query of scalar columns."""
import json
import logging

from memnest_proto.contract import RESPONSE_FORMATS as FORMATS

log = logging.getLogger(__name__)
DEFAULT = FORMATS[0]


def response_format(value: str | None) -> str:
    """The format MEMORY_RESPONSE_FORMAT=`value` asks for."""
    chosen = (value or "").strip().lower()[:40] or DEFAULT
    if chosen not in FORMATS:
        log.warning("MEMORY_RESPONSE_FORMAT=%r is not one of %s; using %s", chosen,
                    ", ".join(FORMATS), DEFAULT)
        return DEFAULT
    return chosen


def render(result, fmt: str) -> str:
    if fmt == "toon":
        import toon_format  # small and pure Python; imported only when asked for

        return toon_format.encode(result)
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"), default=str)
