"""Outlining a tool call's arguments (core/compress/shorten.py): an agent that writes a file
through a call (a heredoc, an edit's old and new strings) has its size in the arguments, and
they are shortened like a long tool output, staying a JSON object every provider reads."""

from __future__ import annotations

import json

import pytest

from ctxlayer.core.compress.shorten import shorten, shorten_arguments, shorten_message
from ctxlayer.core.tokens import WordTokenizer, message_tokens
from ctxlayer.protocol import Message, ToolCall

WORDS = WordTokenizer()


def module_text(lines: int, hidden: str) -> str:
    """A file an agent writes: numbered lines, one naming ``hidden`` in the middle."""
    out = [f"def step_{k}(queue):  # moves batch {k} along the pipeline" for k in range(lines)]
    out[lines // 2] = f"    raise KeyError('see {hidden}')  # ünïcode kept as it is"
    return "\n".join(out)


def write_call(lines: int = 120, hidden: str = "src/pipeline/deep_router.py") -> str:
    return json.dumps({"command": "create", "path": "src/pipeline/steps.py",
                       "file_text": module_text(lines, hidden),
                       "options": {"mode": "w", "note": module_text(lines // 2, "cfg/x.toml")}})


def test_long_values_are_outlined_and_the_rest_stays_a_json_object():
    args = write_call()
    out = shorten_arguments(args, 200, WORDS)
    assert out is not None
    value = json.loads(out)
    assert isinstance(value, dict) and list(value) == ["command", "path", "file_text", "options"]
    # short values as they were, long ones (at any depth) shortened
    assert value["command"] == "create" and value["path"] == "src/pipeline/steps.py"
    assert value["options"]["mode"] == "w"
    assert len(value["options"]["note"]) < len(json.loads(args)["options"]["note"])
    assert WORDS.count(out) <= 200 < WORDS.count(args)
    assert out == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_kept_lines_are_verbatim_and_the_cut_part_is_named():
    args = write_call(hidden="src/pipeline/deep_router.py")
    text = json.loads(shorten_arguments(args, 260, WORDS))["file_text"]
    original = json.loads(args)["file_text"].split("\n")
    lines = text.split("\n")
    assert lines[0] == original[0] and lines[1] == original[1]  # the head, verbatim
    assert original[-1] in lines  # the tail, verbatim
    assert "raise KeyError" not in text  # the middle line was cut ...
    assert "[cut from this message: KeyError" in text  # ... and the error it named is said


@pytest.mark.parametrize("lines", [120, 160, 400])
def test_a_single_cut_fact_is_named(lines):
    # the one error of a long file, cut with its middle, is named within the cap (the second
    # pass of `shorten` once sized its note a separator too short, and said nothing)
    text = module_text(lines, "nothing here")
    short = shorten(text, 250, WORDS)
    assert "raise KeyError" not in short.text and short.tokens_after <= 250
    assert short.text.endswith("[cut from this message: KeyError]")


def test_the_longer_value_gets_the_bigger_share():
    args = json.dumps({"old_str": module_text(40, "a.py"), "new_str": module_text(160, "b.py")})
    value = json.loads(shorten_arguments(args, 240, WORDS))
    assert WORDS.count(value["new_str"]) > WORDS.count(value["old_str"])


@pytest.mark.parametrize("args", [
    "cat > a.py << 'EOF'\n" + module_text(200, "x.py"),  # not JSON: a tool's own input
    json.dumps([module_text(200, "x.py")]),  # JSON, not an object
    '{"n": NaN, "text": "' + "word " * 500 + '"}',  # no JSON a provider reads
    json.dumps({"path": "a.py", "flags": ["-x"] * 10}),  # nothing long
    write_call(lines=10),  # already within the cap
])
def test_what_cannot_or_need_not_be_outlined_is_left_alone(args):
    assert shorten_arguments(args, 400, WORDS) is None


def test_a_message_long_by_its_calls_gets_them_outlined():
    calls = [ToolCall(id="call_1", name="str_replace_editor", arguments=write_call()),
             ToolCall(id="call_2", name="bash", arguments=json.dumps({"command": "ls"}))]
    m = Message(role="assistant", id="a1", content="Writing the steps module now.",
                tool_calls=calls)
    tokens = message_tokens(m, WORDS)
    got = shorten_message(m, tokens, 300, WORDS)
    assert got is not None
    short, after = got
    assert after == message_tokens(short, WORDS) and after <= 300 < tokens
    assert short.content == m.content  # short text: kept whole
    assert [(c.id, c.name) for c in short.tool_calls] == [("call_1", "str_replace_editor"),
                                                          ("call_2", "bash")]
    assert short.tool_calls[1] == calls[1]  # a short call as it was
    assert json.loads(short.tool_calls[0].arguments)["path"] == "src/pipeline/steps.py"


def test_a_message_long_by_its_text_is_shortened_as_before():
    m = Message(role="assistant", content=module_text(200, "x.py"),
                tool_calls=[ToolCall(id="c", name="bash", arguments=write_call(lines=20))])
    tokens = message_tokens(m, WORDS)
    short, after = shorten_message(m, tokens, 300, WORDS)
    assert short.tool_calls == m.tool_calls and len(short.content) < len(m.content)
    assert after < tokens


def test_calls_that_cannot_be_outlined_leave_the_message_as_it_is():
    m = Message(role="assistant", content="ok", tool_calls=[
        ToolCall(id="c", name="shell", arguments="cat > a.py << 'EOF'\n" + "x " * 900)])
    assert shorten_message(m, message_tokens(m, WORDS), 200, WORDS) is None
