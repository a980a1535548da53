"""Messages too deeply nested to parse get an error reply instead of silence.

The SDK parses each line the editor sends; a JSON-RPC request nested a few hundred levels
deep exceeds the parser's recursion limit, and the SDK then drops the line without
answering, so the caller waits forever. Lines are measured before the SDK sees them (one
pass, no recursion); one nested deeper than MAX_DEPTH is answered with a JSON-RPC "invalid
request" error carrying its id, and not passed on.
"""
import json
import re

MAX_DEPTH = 100  # far beyond any request memnest's tools accept (their arguments: 32)
INVALID_REQUEST = -32600
_ID_VALUE = re.compile(r'\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


def depth_and_id(line: str) -> tuple[int, int | str | None]:
    """How deep the JSON text nests, and the value of its top-level "id" if one was seen
    before the nesting got too deep."""
    depth = deepest = 0
    found_id: int | str | None = None
    in_string = escaped = False
    key_start = -1
    for i, char in enumerate(line):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                if depth == 1 and line[key_start:i] == "id" and found_id is None:
                    match = _ID_VALUE.match(line, i + 1)
                    if match:
                        found_id = json.loads(match.group(1))
            continue
        if char == '"':
            in_string, key_start = True, i + 1
        elif char in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_DEPTH:
                    return deepest, found_id
        elif char in "]}":
            depth -= 1
    return deepest, found_id


class DepthGuardedLines:
    """Wraps an async iterator of lines; lines nested too deeply are answered through
    `refuse(id, message)` and left out."""

    def __init__(self, lines, refuse):
        self._lines = lines
        self._refuse = refuse

    def __aiter__(self):
        return self._guarded()

    async def _guarded(self):
        async for line in self._lines:
            deepest, request_id = depth_and_id(line)
            if deepest > MAX_DEPTH:
                await self._refuse(request_id, f"the message nests more than {MAX_DEPTH} "
                                               "levels deep; send a flatter message")
                continue
            yield line
