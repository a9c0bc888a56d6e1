"""Real coding-agent transcripts as ctxlayer messages, by set: ``dev`` (data/, see
data/SOURCE.md: the transcripts the engine is tuned on), ``heldout`` (heldout/, see
heldout/SOURCE.md: other agents' transcripts the engine was never tuned on) or ``all``.
The held-out shapes are converted in shapes.py.

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

from shapes import from_chat, from_openhands_events

from ctxlayer.protocol import Message, ToolCall

DATA = Path(__file__).parent / "data"
HELDOUT = Path(__file__).parent / "heldout"
SETS = {"dev": (DATA,), "heldout": (HELDOUT,), "all": (DATA, HELDOUT)}
#: the agent each transcript's file name starts with, for the benchmark's header
AGENTS = {"sweagent": "SWE-agent", "minisweagent": "mini-swe-agent", "openhands": "OpenHands",
          "moatless": "Moatless"}


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


def load_heldout(path: Path) -> list[Message]:
    """A held-out transcript: OpenHands events (``history``) or a chat (``messages``, with
    Anthropic's separate ``system`` prompt when it has one)."""
    data = json.loads(path.read_text())
    if "history" in data:
        return from_openhands_events(data["history"], path.stem)
    if "messages" not in data:
        raise ValueError(f"{path.name}: neither 'history' (OpenHands events) nor 'messages'")
    return from_chat(data.get("system"), data["messages"], path.stem)


def load(path: Path) -> list[Message]:
    if path.parent == HELDOUT:
        return load_heldout(path)
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


def paths(which: str = "dev") -> list[Path]:
    if which not in SETS:
        raise ValueError(f"set: {which!r} is not one of {', '.join(SETS)}")
    return sorted(p for folder in SETS[which] for p in [*folder.glob("*.traj"),
                                                        *folder.glob("*.json")])


def agents(which: str = "dev") -> list[str]:
    """The agents whose transcripts the set holds, named by their files' prefixes (a prefix
    not in AGENTS names itself)."""
    prefixes = (p.name.split("-", 1)[0] for p in paths(which))
    seen = dict.fromkeys(AGENTS.get(prefix, prefix) for prefix in prefixes)
    return list(seen)


def transcripts(which: str = "dev") -> list[tuple[str, list[Message]]]:
    return [(p.stem, load(p)) for p in paths(which)]
