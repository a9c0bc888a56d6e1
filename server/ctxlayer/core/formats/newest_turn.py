"""The client's newest turn is checked as it came, never repaired.

Writing a fitted request back repairs what the fit split: a tool result whose call was dropped
goes, a call left without its result goes, an empty message goes. Applied to the newest turn
of a request the client sent broken (a result answering no call of the message before it, an
empty newest user message), those repairs answered another request than the one sent: the
results left out, the call removed with them, the model asked the first question again, with a
200. The provider refuses such a request, so the request is refused here, naming the field.
Not a session's append (decoded `whole`): its messages go on from those the session holds, so
an agent that stores each step appends a tool's result alone, after its call's append; a result
answering no call there is dropped at assembly, said in the audit (trim's orphan stage).
"""

from __future__ import annotations

from ctxlayer.core.formats.common import bad


def check_openai(raw: list) -> None:
    """The trailing run of tool messages answers calls of the assistant message before it.
    Read after the messages were checked one by one (each a dict)."""
    start = len(raw)
    while start > 0 and raw[start - 1].get("role") == "tool":
        start -= 1
    if start == len(raw):
        return
    before = raw[start - 1] if start > 0 else {}
    calls = before.get("tool_calls") if before.get("role") == "assistant" else None
    ids = {c.get("id") for c in calls or () if isinstance(c, dict)}
    for k in range(start, len(raw)):
        cid = raw[k].get("tool_call_id")
        if cid not in ids:
            raise bad(f"messages[{k}].tool_call_id", f"{cid!r} answers no tool call of "
                      f"messages[{start - 1}], the message before the tool results" if start
                      else f"{cid!r} answers no tool call: no assistant message is before it")


def check_anthropic(raw: list) -> None:
    """The newest message, a user message, is not empty, and its tool_result blocks answer
    tool_use blocks of the assistant message before it. Read after the messages were checked
    one by one."""
    if not raw or raw[-1].get("role") != "user":
        return
    n, content = len(raw) - 1, raw[-1].get("content")
    if content == "" or content == []:
        raise bad(f"messages[{n}].content", "the newest user message is empty: the provider "
                  "refuses an empty message (only a final assistant message may be)")
    if not isinstance(content, list):
        return
    before = raw[n - 1] if n > 0 else {}
    uses = before.get("content") if before.get("role") == "assistant" else None
    ids = {b.get("id") for b in uses if isinstance(b, dict) and b.get("type") == "tool_use"} \
        if isinstance(uses, list) else set()
    for k, block in enumerate(content):
        if block.get("type") == "tool_result" and block.get("tool_use_id") not in ids:
            raise bad(f"messages[{n}].content[{k}].tool_use_id",
                      f"{block.get('tool_use_id')!r} answers no tool_use block of "
                      f"messages[{n - 1}], the message before it" if n else
                      f"{block.get('tool_use_id')!r} answers no tool_use block: the first "
                      "message has none before it")
