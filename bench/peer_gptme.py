"""Driver run by bench/peers.py inside bench/.peers-venv: gptme 0.35.1's reduce_log + limit_log.

Reads a request (JSON on stdin: model, encoding, window, runs, messages as plain dicts), turns the
messages into gptme `Message`s the way gptme stores them (tool calls in its `@tool(call_id): {..}`
format inside the assistant's content, tool results as system messages with `call_id`), and
times `limit_log(list(reduce_log(log)))` with gptme's own defaults (reduce to 0.9 x the window,
then limit to the window) from a cleared token cache. Writes the result as JSON on stdout.
Never imported by ctxlayer; the rank files come from TIKTOKEN_CACHE_DIR, seeded by peers.py.
"""

from __future__ import annotations

import json
import sys
import threading
import time


def to_gptme(m: dict, message_cls):
    calls = "".join(f"\n\n@{c['name']}({c['id']}): {c['arguments']}"
                    for c in m.get("tool_calls") or ())
    role = "system" if m["role"] == "tool" else m["role"]
    return message_cls(role=role, content=m["content"] + calls, call_id=m.get("tool_call_id"),
                       pinned=m.get("pinned", False), ephemeral_ttl=m.get("ephemeral_ttl"),
                       metadata={"id": m["id"], "calls": calls})


def from_gptme(m) -> dict:
    """Id and content as sent, without the tool-call text to_gptme appended."""
    meta = m.metadata or {}
    calls, content = meta.get("calls", ""), m.content
    if calls and content.endswith(calls):
        content = content[: -len(calls)]
    return {"id": meta.get("id"), "content": content}


def main() -> None:
    req = json.load(sys.stdin)
    out = sys.stdout
    sys.stdout = sys.stderr  # gptme's console prints progress on stdout
    from gptme.llm.models import set_default_model
    from gptme.llm.models.types import ModelMeta
    from gptme.message import Message
    from gptme.util import tokens
    from gptme.util.reduce import limit_log, reduce_log

    meta = ModelMeta(provider="openai", model=req["model"], context=req["window"])
    set_default_model(meta)
    enc = tokens.get_tokenizer(meta.model)
    if enc is None or enc.name != req["encoding"]:
        raise SystemExit(f"gptme did not load {req['encoding']} offline (got {enc})")
    log = [to_gptme(m, Message) for m in req["messages"]]

    def floor() -> float:
        t = time.perf_counter()
        for m in log:
            enc.encode_ordinary(m.content)
        return (time.perf_counter() - t) * 1000

    res: dict = {"peer": "gptme 0.35.1", "floor_ms": [], "runs_ms": [], "error": None}
    result: list = []

    def run() -> tuple[list, float]:
        set_default_model(meta)  # a context variable: a new thread starts without it
        tokens._token_cache.clear()  # cold: nothing counted yet
        t = time.perf_counter()
        reduced = list(reduce_log(log))
        result = limit_log(reduced)
        elapsed = (time.perf_counter() - t) * 1000
        res["after_reduce_tokens"] = tokens.len_tokens(reduced, meta.model)  # gptme's count
        res["reduce_limit"] = 0.9 * meta.context  # reduce_log's default limit for OpenAI
        res["reduce_truncated"] = sum(a is not b for a, b in zip(log, reduced, strict=True))
        return result, elapsed

    for _ in range(req["runs"]):
        res["floor_ms"].append(floor())
        t = time.perf_counter()
        try:
            result, elapsed = run()
        except RecursionError as exc:
            res["error"] = (f"RecursionError after {(time.perf_counter() - t) * 1000:,.0f} ms "
                            f"at the default recursion limit {sys.getrecursionlimit()}: {exc}")
            break
        res["runs_ms"].append(elapsed)
    if res["error"]:  # measure it once more with room to recurse, in a thread with a big stack
        box: dict = {}
        sys.setrecursionlimit(1_000_000)
        threading.stack_size(1 << 29)
        thread = threading.Thread(target=lambda: box.update(result_ms=run()))
        thread.start()
        thread.join()
        if "result_ms" in box:
            result, res["raised_limit_ms"] = box["result_ms"]
    res["messages"] = [from_gptme(m) for m in result]
    out.write(json.dumps(res))


if __name__ == "__main__":
    main()
