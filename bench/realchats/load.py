"""Real coding-agent transcripts (data/, see data/SOURCE.md) as ctxlayer messages.

mini-swe-agent `.json` files (reduced to their `messages`) are already OpenAI chat messages.

SWE-agent `.traj` files hold the chat the agent's model saw (`history`). Two shapes occur:
- function calling: assistant messages carry `tool_calls` (a Python-literal list in the file)
  and `tool` messages answer them by `tool_call_ids`;
- text actions: the assistant's `thought` and `action` (a shell command of SWE-agent's
  interface); the next user message is that command's output.
Both become what an agent framework sends today: an assistant message whose content is the
thought and whose tool call is the command (`bash` with `{"command": ...}` for text actions),
then a `tool` result. The system prompt, the task and demonstrations stay as they are.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from ctxlayer.protocol import Message, ToolCall

DATA = Path(__file__).parent / "data"


def _literal(value):
    if isinstance(value, str):
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return None
    return value


def load_openai(path: Path) -> list[Message]:
    """A chat kept as OpenAI Chat Completions messages (mini-swe-agent's `messages`)."""
    out: list[Message] = []
    for k, m in enumerate(json.loads(path.read_text())["messages"]):
        mid = f"{path.stem}:{k}"
        calls = [ToolCall(id=c["id"], name=c["function"]["name"],
                          arguments=c["function"]["arguments"]) for c in m.get("tool_calls") or ()]
        role = m["role"] if m["role"] in ("system", "user", "assistant", "tool") else "user"
        out.append(Message(role=role, content=m.get("content") or "", id=mid,
                           tool_calls=calls or None, tool_call_id=m.get("tool_call_id")))
    return out


def load(path: Path) -> list[Message]:
    if path.suffix == ".json":
        return load_openai(path)
    history = json.loads(path.read_text())["history"]
    out: list[Message] = []
    pending: str | None = None  # the call id a text-action observation answers
    for k, m in enumerate(history):
        role, content = m["role"], m.get("content") or ""
        if not isinstance(content, str):  # content parts
            content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
        mid = f"{path.stem}:{k}"
        if role == "system":
            out.append(Message(role="system", content=content, id=mid))
        elif role == "assistant":
            calls = _literal(m.get("tool_calls"))
            if calls:
                tcs = [ToolCall(id=c["id"], name=c["function"]["name"],
                                arguments=c["function"]["arguments"]) for c in calls]
                out.append(Message(role="assistant", content=content, id=mid, tool_calls=tcs))
                pending = None
            elif m.get("action"):
                call_id = f"call-{k}"
                args = json.dumps({"command": m["action"].strip()})
                out.append(Message(role="assistant", content=(m.get("thought") or "").strip(),
                                   id=mid,
                                   tool_calls=[ToolCall(id=call_id, name="bash",
                                                        arguments=args)]))
                pending = call_id
            else:
                out.append(Message(role="assistant", content=content, id=mid))
                pending = None
        elif role == "tool":
            ids = _literal(m.get("tool_call_ids")) or [None]
            out.append(Message(role="tool", content=content, id=mid, tool_call_id=ids[0]))
        elif pending is not None:  # a text action's output
            out.append(Message(role="tool", content=content, id=mid, tool_call_id=pending))
            pending = None
        else:
            out.append(Message(role="user", content=content, id=mid))
    return out


def transcripts() -> list[tuple[str, list[Message]]]:
    paths = sorted([*DATA.glob("*.traj"), *DATA.glob("*.json")])
    return [(p.stem, load(p)) for p in paths]
