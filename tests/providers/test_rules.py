"""The provider rules themselves: each refuses what the provider refuses and accepts the
ordinary shapes (the codec tests lean on both directions)."""

from __future__ import annotations

import typing

from anthropic.types import ContentBlockParam, ToolResultBlockParam
from anthropic.types.beta.beta_content_block_param import BetaContentBlockParam
from openai.types.chat import ChatCompletionContentPartParam
from openai.types.responses import ResponseInputItemParam
from providers import rules, standin_responses
from providers.rules import anthropic_problems, openai_problems

CALL = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}


def test_openai_accepts_a_tool_round_trip():
    body = {"model": "gpt-4o", "messages": [
        {"role": "developer", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "hi"},
                                     {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
        {"role": "assistant", "content": "one file"},
    ]}
    assert openai_problems(body) == []


def test_openai_refuses_orphans_missing_results_and_bad_parts():
    orphan = {"messages": [{"role": "user", "content": "x"},
                           {"role": "tool", "tool_call_id": "c1", "content": "r"}]}
    assert "answers no tool call" in openai_problems(orphan)[0]
    unanswered = {"messages": [{"role": "user", "content": "x"},
                               {"role": "assistant", "content": None, "tool_calls": [CALL]},
                               {"role": "user", "content": "y"}]}
    assert "without results" in openai_problems(unanswered)[0]
    image_in_system = {"messages": [{"role": "system", "content": [
        {"type": "image_url", "image_url": {"url": "u"}}]}]}
    assert "messages[0].content[0].type" in openai_problems(image_in_system)[0]
    assert openai_problems({"messages": []}) == ["messages: must be a non-empty list"]


def test_anthropic_accepts_tools_and_refuses_bad_shapes():
    use = {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}
    res = {"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}
    good = {"system": [{"type": "text", "text": "sys"}], "messages": [
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}, use]},
        {"role": "user", "content": [res, {"type": "text", "text": "and?"}]},
    ]}
    assert anthropic_problems(good) == []
    starts_with_assistant = {"messages": [{"role": "assistant", "content": "x"}]}
    assert "first message" in anthropic_problems(starts_with_assistant)[0]
    twice = {"messages": [{"role": "user", "content": "x"}, {"role": "user", "content": "y"}]}
    assert "alternate" in anthropic_problems(twice)[0]
    lost_result = {"messages": [{"role": "user", "content": "x"},
                                {"role": "assistant", "content": [use]},
                                {"role": "user", "content": "y"}]}
    assert "without a tool_result" in anthropic_problems(lost_result)[0]
    cc = {"type": "ephemeral"}
    many = {"system": [{"type": "text", "text": f"s{k}", "cache_control": cc} for k in range(5)],
            "messages": [{"role": "user", "content": "x"}]}
    assert "5 breakpoints" in anthropic_problems(many)[-1]
    empty = {"messages": [{"role": "user", "content": [{"type": "text", "text": " "}]}]}
    assert "non-whitespace" in anthropic_problems(empty)[0]


def _kinds(union: typing.Any) -> set[str]:
    """The `type` values of a union of an SDK's request TypedDicts (the beta union also takes
    the response's blocks as they came: those are the same kinds, left out here)."""
    out: set[str] = set()
    for member in typing.get_args(union):
        if typing.get_origin(member) is typing.Annotated:  # the response's blocks
            continue
        kind = typing.get_type_hints(member)["type"]
        while typing.get_origin(kind) is not typing.Literal:  # Required[Literal[...]]
            kind = typing.get_args(kind)[0]
        out.update(typing.get_args(kind))
    return out


def test_the_rules_take_every_block_and_part_the_pinned_sdks_name():
    """Strict, never stricter than the provider: a content kind the official SDK sends is one
    the stand-in takes in some role (a newer SDK adds kinds: bumping its pin runs this)."""
    anthropic_kinds = _kinds(ContentBlockParam) | _kinds(BetaContentBlockParam)
    assert {"tool_result", "server_tool_use", "compaction", "tool_addition"} <= anthropic_kinds
    assert anthropic_kinds - (rules._ANTHROPIC_USER_BLOCKS | rules._ANTHROPIC_ASSISTANT_BLOCKS
                              | rules._ANTHROPIC_SYSTEM_TURN_BLOCKS) == set()
    content = typing.get_type_hints(ToolResultBlockParam)["content"]  # str | Iterable[...]
    result_kinds = _kinds(next(typing.get_args(a)[0] for a in typing.get_args(content)
                               if typing.get_args(a)))
    assert {"text", "image"} <= result_kinds
    assert result_kinds - rules._ANTHROPIC_RESULT_PARTS == set()
    openai_kinds = _kinds(ChatCompletionContentPartParam)
    assert {"text", "image_url"} <= openai_kinds
    assert openai_kinds - set().union(*rules._OPENAI_PARTS.values()) == set()
    responses_kinds = _kinds(ResponseInputItemParam)
    assert {"function_call", "custom_tool_call_output", "compaction"} <= responses_kinds
    assert responses_kinds - set(standin_responses.ITEM_TYPES) == set()
