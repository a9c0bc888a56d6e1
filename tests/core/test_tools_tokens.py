"""Tools cost what the provider bills: their definitions, and tool_choice (issue 19)."""

import pytest

from ctxlayer.core.tokens import WordTokenizer, anthropic_tool_prompt, tools_tokens

OPENAI_TOOLS = [{"type": "function", "function": {"name": "add", "parameters": {}}}]
ANTHROPIC_TOOLS = [{"name": "add", "input_schema": {"type": "object"}}]
W = WordTokenizer()


def test_openai_a_named_choice_costs_its_json_and_a_plain_one_nothing():
    bare = tools_tokens({"tools": OPENAI_TOOLS}, W, "openai")
    assert bare > 0
    for plain in ("auto", "none", "required"):
        assert tools_tokens({"tools": OPENAI_TOOLS, "tool_choice": plain}, W, "openai") == bare
    named = {"type": "function", "function": {"name": "add"}}
    assert tools_tokens({"tools": OPENAI_TOOLS, "tool_choice": named}, W, "openai") == (
        bare + W.count('{"type":"function","function":{"name":"add"}}'))


def test_responses_counts_a_named_choice_too():
    body = {"tools": [{"type": "function", "name": "add"}],
            "tool_choice": {"type": "function", "name": "add"}}
    assert tools_tokens(body, W, "responses") > tools_tokens({**body, "tool_choice": "auto"},
                                                             W, "responses")


def test_anthropic_adds_its_tool_use_system_prompt_by_choice():
    body = {"model": "claude-sonnet-4-5", "tools": ANTHROPIC_TOOLS}
    schema = W.count('[{"name":"add","input_schema":{"type":"object"}}]')
    assert tools_tokens(body, W, "anthropic") == schema + 346  # no choice: auto
    for kind, extra in (("auto", 346), ("none", 346), ("any", 313), ("tool", 313)):
        choice = {"type": kind, "name": "add"} if kind == "tool" else {"type": kind}
        assert tools_tokens({**body, "tool_choice": choice}, W, "anthropic") == schema + extra


def test_anthropic_claude_3_models_have_their_own_prompt_sizes():
    assert anthropic_tool_prompt("claude-3-opus-20240229", {"type": "auto"}) == 530
    assert anthropic_tool_prompt("claude-3-haiku-20240307", {"type": "any"}) == 340
    assert anthropic_tool_prompt("claude-3-5-haiku-latest", None) == 264
    assert anthropic_tool_prompt(None, None) == 346  # type: ignore[arg-type]


@pytest.mark.parametrize("model", [
    "us.anthropic.claude-3-5-haiku-20241022-v1:0",  # Bedrock, a region's inference profile
    "anthropic.claude-3-5-haiku-20241022-v1:0",
    "arn:aws:bedrock:us-east-1:123456789012:inference-profile/"
    "us.anthropic.claude-3-5-haiku-20241022-v1:0",
    "anthropic/claude-3.5-haiku",  # OpenRouter
    "Anthropic/Claude-3-5-Haiku-Latest",
    "claude-3-5-haiku@20241022",  # Vertex AI
])
def test_claude_3_prompt_sizes_whoever_names_the_model(model):
    """They fell back to the current models' 346 (and 313 forced) instead of 264 and 340."""
    assert anthropic_tool_prompt(model, None) == 264
    assert anthropic_tool_prompt(model, {"type": "any"}) == 340
    assert anthropic_tool_prompt("anthropic/claude-3-opus", None) == 530
    assert anthropic_tool_prompt("anthropic/claude-sonnet-4.5", None) == 346


def test_no_tools_no_tool_prompt():
    assert tools_tokens({"model": "claude-sonnet-4-5", "tool_choice": {"type": "any"}}, W,
                        "anthropic") == 0
    assert tools_tokens({"tools": []}, W, "openai") == 0


def test_openai_deprecated_functions_cost_as_tools_do():
    """`functions` and a named `function_call` (deprecated, still taken) are billed like
    `tools` and `tool_choice`: counted, not left out."""
    functions = [{"name": "add", "parameters": {}}]
    bare = tools_tokens({"functions": functions}, W, "openai")
    assert bare == W.count('[{"name":"add","parameters":{}}]')
    assert tools_tokens({"functions": functions, "function_call": "auto"}, W, "openai") == bare
    assert tools_tokens({"functions": functions, "function_call": {"name": "add"}}, W,
                        "openai") == bare + W.count('{"name":"add"}')


def test_claude_asked_in_chat_completions_shape_has_its_tool_use_prompt():
    """OpenRouter and LiteLLM send a Chat Completions request for a Claude model to Anthropic's
    API: Claude reads its tools with its tool-use system prompt. It was left out there (42
    tokens for a tool that cost 382 in Anthropic's shape)."""
    gpt = tools_tokens({"model": "gpt-4o", "tools": OPENAI_TOOLS}, W, "openai")
    body = {"model": "anthropic/claude-sonnet-4.5", "tools": OPENAI_TOOLS}
    assert tools_tokens(body, W, "openai") == gpt + 346
    assert tools_tokens({**body, "tool_choice": "required"}, W, "openai") == gpt + 313
    assert tools_tokens({**body, "model": "anthropic/claude-3-opus"}, W, "openai") == gpt + 530
    assert tools_tokens(body, W, "openai", "claude-3-5-haiku-latest") == gpt + 264
    assert tools_tokens({"model": body["model"]}, W, "openai") == 0  # no tools, no prompt
