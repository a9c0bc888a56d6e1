"""The held-out transcripts' shapes (heldout/, see heldout/SOURCE.md) as ctxlayer messages.

Owns three conversions, each keeping every message's text as the agent's model saw it:
- a chat in OpenAI or Anthropic shape (`from_chat`): OpenAI assistant `tool_calls` and `tool`
  results, or Anthropic content blocks, where an assistant's `tool_use` blocks become its tool
  calls and a user turn's `tool_result` blocks become `tool` messages answering them;
- OpenHands' event history (`from_openhands_events`): the assistant turns are the model's own
  responses that the events carry, the tool results are the observations answering them.
Content given as a list of parts keeps the text of its parts, joined by newlines.

Must not read files, choose which transcripts exist or touch the benchmark's scoring: load.py
does the first two, bench.py and needed.py the rest.
"""

from __future__ import annotations

import json

from ctxlayer.protocol import Message, ToolCall


def text_of(content) -> str:
    """The text of a message's content: a string, or the text parts of a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
    return "\n".join(texts)


def _openai_calls(calls) -> list[ToolCall] | None:
    out = [ToolCall(id=c["id"], name=c["function"]["name"],
                    arguments=c["function"].get("arguments") or "") for c in calls or ()]
    return out or None


def _blocks(content, kind: str) -> list[dict]:
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == kind]


def _other_parts(content) -> list:
    """The parts of an Anthropic content list that are neither tool calls nor results."""
    if not isinstance(content, list):
        return content
    return [b for b in content
            if not (isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result"))]


def from_chat(system: str | None, messages: list[dict], stem: str) -> list[Message]:
    """A chat in OpenAI or Anthropic shape; ``system`` is Anthropic's separate system prompt."""
    out: list[Message] = []
    if system:
        out.append(Message(role="system", content=system, id=f"{stem}:system"))
    for k, m in enumerate(messages):
        mid, role, content = f"{stem}:{k}", m["role"], m.get("content")
        if role == "system":
            out.append(Message(role="system", content=text_of(content), id=mid))
        elif role == "tool":
            out.append(Message(role="tool", content=text_of(content), id=mid,
                               tool_call_id=m.get("tool_call_id")))
        elif role == "assistant":
            calls = _openai_calls(m.get("tool_calls")) or []
            calls += [ToolCall(id=b["id"], name=b["name"], arguments=json.dumps(b.get("input")))
                      for b in _blocks(content, "tool_use")]
            out.append(Message(role="assistant", content=text_of(_other_parts(content)), id=mid,
                               tool_calls=calls or None))
        else:
            # Anthropic puts tool results first in a user turn; any text after them is the
            # user's own words and stays a user message
            results = _blocks(content, "tool_result")
            for j, b in enumerate(results):
                out.append(Message(role="tool", content=text_of(b.get("content")),
                                   id=f"{mid}.{j}", tool_call_id=b["tool_use_id"]))
            rest = _other_parts(content)
            if not results or text_of(rest):
                out.append(Message(role="user", content=text_of(rest), id=mid))
    return out


def _observed(event: dict) -> str:
    """An observation as the model read it: a command's output comes between the prefix and
    the suffix OpenHands adds (the exit code, the working directory), kept in its metadata."""
    content = event.get("content") or ""
    meta = (event.get("extras") or {}).get("metadata")
    if isinstance(meta, dict):
        content = f"{meta.get('prefix') or ''}{content}{meta.get('suffix') or ''}"
    return content


def from_openhands_events(history: list[dict], stem: str) -> list[Message]:
    """OpenHands' events: the system prompt, the user's task, then each model response (an
    action's ``tool_call_metadata.model_response``, once per response however many actions it
    made) and the observations answering its calls (a command's output with the exit code
    OpenHands adds to it). Events the model's chat does not hold as
    such (recall of workspace context, state changes) are left out."""
    out: list[Message] = []
    responses: set[str] = set()
    for event in history:
        mid = f"{stem}:{event.get('id')}"
        meta = event.get("tool_call_metadata")
        if event.get("action") == "system":
            out.append(Message(role="system", id=mid,
                               content=(event.get("args") or {}).get("content")
                               or event.get("message") or ""))
        elif event.get("action") == "message" and not meta:
            role = "user" if event.get("source") == "user" else "assistant"
            out.append(Message(role=role, id=mid,
                               content=(event.get("args") or {}).get("content")
                               or event.get("message") or ""))
        elif meta and "action" in event:
            response = meta["model_response"]
            if response["id"] in responses:
                continue
            responses.add(response["id"])
            said = response["choices"][0]["message"]
            out.append(Message(role="assistant", content=text_of(said.get("content")), id=mid,
                               tool_calls=_openai_calls(said.get("tool_calls"))))
        elif meta and "observation" in event:
            out.append(Message(role="tool", content=_observed(event), id=mid,
                               tool_call_id=meta["tool_call_id"]))
    return out
