"""A stand-in for the Anthropic Messages API on 127.0.0.1, scripted, so that the real Claude
Code CLI (pointed at it with ANTHROPIC_BASE_URL) runs whole turns without a model.

What Claude Code 2.1 asks of it, with CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1: only
POST /v1/messages?beta=true, streamed (server-sent events: message_start, each content block
with its delta, message_delta, message_stop). A JSON message for a request that does not
stream, POST /v1/messages/count_tokens and GET /v1/models are answered too, for other versions
and settings; anything else gets a 404. Every request is recorded.

What Claude Code sends back: a Stop hook's reason as a user message (a system-reminder holding
"Stop hook feedback:" and the reason) and also in a message of role "system"; a hook's
additionalContext in a "system" message ("UserPromptSubmit hook additional context: ...").

The script (`TurnScript`) plays a model that works: for each prompt of the user it calls two
tools (Bash `echo`), one at a time, then answers. When the last user message carries the
Stop hook's reason, it stores one memory naming the turn with memnest's memory_store, then
ends. Requests that do not offer Bash (side requests, such as a title or a topic) get a short
text."""
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

MODEL = "claude-sonnet-4-5-20250929"
STORE_TOOL = "mcp__memnest__memory_store"
# the start of memnest's Stop hook reason (shims/cli/hook.py, _stop)
STOP_REASON_MARK = "Before you finish"


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any  # the JSON body, or the raw text when it is not JSON
    at: float = field(default_factory=time.monotonic)
    turn: int = 0  # what the script made of it (TurnScript.reply); 0: not the agent's
    step: str = ""

    @property
    def messages(self) -> list[dict]:
        body = self.body if isinstance(self.body, dict) else {}
        return body.get("messages") or []

    @property
    def tool_names(self) -> list[str]:
        body = self.body if isinstance(self.body, dict) else {}
        return [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)]

    def text(self) -> str:
        """Everything the request says, as one string (to look for a text in it)."""
        return json.dumps(self.body, ensure_ascii=False)


def blocks(content: Any) -> list[dict]:
    """A message's content as a list of blocks (a plain string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def texts(message: dict) -> str:
    """The text blocks of a message, joined (tool results not included)."""
    return "\n".join(str(b.get("text", "")) for b in blocks(message.get("content"))
                     if b.get("type") == "text")


def last_assistant_tools(messages: list[dict]) -> list[dict]:
    """The tool_use blocks of the last assistant message."""
    for m in reversed(messages):
        if m.get("role") == "assistant":
            return [b for b in blocks(m.get("content")) if b.get("type") == "tool_use"]
    return []


class TurnScript:
    """Per prompt: Bash `echo ...step-1`, then Bash `echo ...step-2`, then an answer. On the
    Stop hook's reason: memory_store of a memory naming the turn, then "Stored." Claude Code
    defers MCP tools (only their names are listed) until ToolSearch loads their schema, so the
    first store of a conversation loads it first. Turns are counted as prompts arrive: a
    request whose latest user message is neither tool results nor the hook's reason.

    Each request is labelled with its turn and what it brought (`STEPS`, in order: the
    prompt, the results of the two steps, the hook's reason, the result of ToolSearch, the
    result of the store), which the server writes on the recorded request."""

    STEPS = ("prompt", "step-1", "step-2", "reason", "tool-search", "store")

    def __init__(self, memory_text: Callable[[int], str] = lambda turn: f"Turn {turn}.") -> None:
        self.memory_text = memory_text
        self.turn = 0
        self.store_results: dict[int, str] = {}  # turn -> what memory_store answered
        self._lock = threading.Lock()

    def reply(self, body: dict) -> tuple[int, str, list[dict]]:
        """(turn, what the request brought, the content blocks the model answers with); turn
        0 and "side" for a request that is not the agent's."""
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        offered = {str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)}
        users = [m for m in messages if m.get("role") == "user"]
        if "Bash" not in offered or not users:
            return 0, "side", [text_block("ok")]
        last = users[-1]
        with self._lock:
            results = [b for b in blocks(last.get("content")) if b.get("type") == "tool_result"]
            if results:
                return self._after_tools(last_assistant_tools(messages), results)
            if STOP_REASON_MARK in texts(last):
                if STORE_TOOL in offered and _searched(messages):
                    return self.turn, "reason", [self._store()]
                return self.turn, "reason", [
                    tool_block("ToolSearch", {"query": f"select:{STORE_TOOL}"})]
            self.turn += 1
            return self.turn, "prompt", [text_block("Let me look."), bash_block(self.turn, 1)]

    def _store(self) -> dict:
        return tool_block(STORE_TOOL, {"content": self.memory_text(self.turn),
                                       "category": "learning",
                                       "tags": [f"turn-{self.turn:02d}"]})

    def _after_tools(self, used: list[dict], results: list[dict]) -> tuple[int, str, list[dict]]:
        names = [str(b.get("name")) for b in used]
        if STORE_TOOL in names:
            self.store_results[self.turn] = json.dumps(results[-1].get("content"))
            return self.turn, "store", [text_block("Stored.")]
        if "ToolSearch" in names:
            return self.turn, "tool-search", [self._store()]
        command = str((used[-1].get("input") or {}).get("command", "")) if used else ""
        if command.endswith("step-1"):
            return self.turn, "step-1", [bash_block(self.turn, 2)]
        return self.turn, "step-2", [text_block(f"Turn {self.turn} is done: both steps ran.")]


def _searched(messages: list[dict]) -> bool:
    """Whether ToolSearch already loaded the store tool in this conversation."""
    return any(b.get("type") == "tool_use" and b.get("name") == "ToolSearch"
               and STORE_TOOL in json.dumps(b.get("input"))
               for m in messages if m.get("role") == "assistant"
               for b in blocks(m.get("content")))


_ids = iter(range(1, 1 << 62))
_id_lock = threading.Lock()


def _next_id(prefix: str) -> str:
    with _id_lock:
        return f"{prefix}_fake{next(_ids):08d}"


def text_block(text: str) -> dict:
    return {"type": "text", "text": text}


def tool_block(name: str, arguments: dict) -> dict:
    return {"type": "tool_use", "id": _next_id("toolu"), "name": name, "input": arguments}


def bash_block(turn: int, step: int) -> dict:
    return tool_block("Bash", {"command": f"echo turn-{turn}-step-{step}",
                               "description": f"Step {step} of turn {turn}"})


def message(content: list[dict], model: str) -> dict:
    stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
    return {"id": _next_id("msg"), "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 10}}


def sse_events(reply: dict) -> list[tuple[str, dict]]:
    """A message as the stream of events the Messages API sends for it."""
    start = {**reply, "content": [], "stop_reason": None,
             "usage": {"input_tokens": 10, "output_tokens": 1}}
    events: list[tuple[str, dict]] = [("message_start", {"type": "message_start",
                                                         "message": start})]
    for index, block in enumerate(reply["content"]):
        if block["type"] == "text":
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"],
                       "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [("content_block_start", {"type": "content_block_start", "index": index,
                                            "content_block": opening}),
                   ("content_block_delta", {"type": "content_block_delta", "index": index,
                                            "delta": delta}),
                   ("content_block_stop", {"type": "content_block_stop", "index": index})]
    events += [("message_delta", {"type": "message_delta",
                                  "delta": {"stop_reason": reply["stop_reason"],
                                            "stop_sequence": None},
                                  "usage": {"output_tokens": 10}}),
               ("message_stop", {"type": "message_stop"})]
    return events


class FakeMessagesAPI(ThreadingHTTPServer):
    """`with FakeMessagesAPI(TurnScript()) as api:` serves on api.url until the block ends."""

    daemon_threads = True

    def __init__(self, script: TurnScript) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = script
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> "FakeMessagesAPI":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.shutdown()
        self.server_close()

    def record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def agent_requests(self) -> list[Recorded]:
        """The main agent's model calls, in the order they came."""
        with self._lock:
            return [r for r in self.requests if r.turn]

    def steps(self) -> dict[int, list[str]]:
        """turn -> what the agent's requests of that turn brought (TurnScript.STEPS)."""
        out: dict[int, list[str]] = {}
        for r in self.agent_requests():
            out.setdefault(r.turn, []).append(r.step)
        return out


class _Handler(BaseHTTPRequestHandler):
    server: FakeMessagesAPI
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args) -> None:  # quiet: the record is the log
        pass

    def _body(self) -> Any:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _record(self, body: Any) -> Recorded:
        request = Recorded(self.command, self.path, dict(self.headers.items()), body)
        self.server.record(request)
        return request

    def _json(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._record(None)
        if self.path.split("?")[0] == "/v1/models":
            self._json(200, {"data": [{"type": "model", "id": MODEL, "display_name": MODEL,
                                       "created_at": "2025-09-29T00:00:00Z"}],
                             "has_more": False, "first_id": MODEL, "last_id": MODEL})
            return
        self._json(404, {"type": "error", "error": {"type": "not_found_error",
                                                    "message": "not served by the fake"}})

    def do_POST(self) -> None:
        body = self._body()
        request = self._record(body)
        path = self.path.split("?")[0]
        if path == "/v1/messages/count_tokens":
            self._json(200, {"input_tokens": 100})
            return
        if path != "/v1/messages" or not isinstance(body, dict):
            self._json(404, {"type": "error", "error": {"type": "not_found_error",
                                                        "message": "not served by the fake"}})
            return
        request.turn, request.step, content = self.server.script.reply(body)
        reply = message(content, str(body.get("model") or MODEL))
        if not body.get("stream"):
            self._json(200, reply)
            return
        self._stream(reply)

    def _stream(self, reply: dict) -> None:
        data = b"".join(f"event: {name}\ndata: {json.dumps(event)}\n\n".encode()
                        for name, event in sse_events(reply))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
