"""Driver run by bench/peers.py inside bench/.peers-venv: langchain-core 1.8.3's trim_messages.

Reads a request (JSON on stdin: encoding, window, runs, messages as plain dicts), builds
LangChain messages (SystemMessage, HumanMessage, AIMessage with tool_calls, ToolMessage), and
times `trim_messages(strategy="last", include_system=True, max_tokens=window,
token_counter=<per-message tiktoken counter>)`, the counter LangChain's docs show (content tokens
plus tool-call name and arguments plus 3 per message). Writes the result as JSON on stdout.
Never imported by ctxlayer; the rank files come from TIKTOKEN_CACHE_DIR, seeded by peers.py.
"""

# No `from __future__ import annotations`: trim_messages spots a per-message counter by its
# parameter annotation being the BaseMessage class itself, not a string.
import json
import sys
import time

import tiktoken
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    trim_messages,
)


def to_langchain(m: dict) -> BaseMessage:
    if m["role"] == "system":
        return SystemMessage(m["content"], id=m["id"])
    if m["role"] == "user":
        return HumanMessage(m["content"], id=m["id"])
    if m["role"] == "tool":
        return ToolMessage(m["content"], tool_call_id=m["tool_call_id"], id=m["id"])
    calls = [{"id": c["id"], "name": c["name"], "args": json.loads(c["arguments"] or "{}")}
             for c in m.get("tool_calls") or ()]
    return AIMessage(m["content"], tool_calls=calls, id=m["id"])


def main() -> None:
    req = json.load(sys.stdin)
    enc = tiktoken.get_encoding(req["encoding"])
    msgs = [to_langchain(m) for m in req["messages"]]

    def count(message: BaseMessage) -> int:
        n = 3 + len(enc.encode(message.content, disallowed_special=()))
        for call in getattr(message, "tool_calls", None) or ():
            n += len(enc.encode(call["name"])) + len(enc.encode(json.dumps(call["args"])))
        return n

    def floor() -> float:
        t = time.perf_counter()
        for m in msgs:
            enc.encode_ordinary(m.content)
        return (time.perf_counter() - t) * 1000

    res: dict = {"peer": "langchain-core 1.8.3", "floor_ms": [], "runs_ms": [], "error": None}
    for _ in range(req["runs"]):
        res["floor_ms"].append(floor())
        t = time.perf_counter()
        result = trim_messages(msgs, max_tokens=req["window"], token_counter=count,
                               strategy="last", include_system=True)
        res["runs_ms"].append((time.perf_counter() - t) * 1000)
    res["messages"] = [{"id": m.id, "content": m.content} for m in result]
    json.dump(res, sys.stdout)


if __name__ == "__main__":
    main()
