"""A session's provider messages written in another format (core/formats/stored.py): what the
target's writer does not carry is named, part by part and key by key, in the audit; what it
carries, or what says nothing (a null refusal, empty annotations), is not.

Driven as the session service drives it: the source request decoded by its real codec, its
`raws` kept beside each message, `rebuild` into the target and the target's own encoder."""

from __future__ import annotations

import pytest

from ctxlayer.core.formats import decode, encode
from ctxlayer.core.formats.stored import Stored, raws, rebuild
from ctxlayer.core.tokens import WordTokenizer

WORDS = WordTokenizer()


def across(src: str, turns: list[dict], dst: str) -> tuple[list[dict], dict[str, str]]:
    """`turns` appended in `src` and written as `dst`: the messages sent and, by the index
    of each message in the session, the reason of its "not carried" entry."""
    where = "input" if src == "responses" else "messages"
    decoded = decode(src, {"model": "m", where: turns}, WORDS)  # type: ignore[arg-type]
    kept: list[Stored | None] = []
    for k, (m, raw) in enumerate(zip(decoded.messages, raws(decoded), strict=True)):
        if raw is None:
            kept.append(None)
            continue
        first = k - raw["piece"][0] if "piece" in raw else None
        group = kept[first].raw if first is not None and first != k else None  # type: ignore
        kept.append(Stored(message=m, raw=raw, group=group, group_key=first))
    rebuilt, messages, _, lost = rebuild(dst, decoded.messages, kept, WORDS)
    out = encode(rebuilt, messages).payload
    sent = out.get("input" if dst == "responses" else "messages")
    named = {e.index: e.reason for e in lost if "not carried" in e.reason}
    return sent, named


CITED = [{"type": "char_location", "cited_text": "Pay in 30 days.", "document_index": 0,
          "start_char_index": 0, "end_char_index": 15}]
URL_CITED = [{"type": "url_citation", "url": "https://cite.example", "start_index": 0,
              "end_index": 5, "title": "A"}]
EPHEMERAL = {"type": "ephemeral"}

#: (source, turns, target, the index of the message that loses it, what is named)
LOST = [
    ("openai", [{"role": "user", "name": "alice", "content": "I am alice"},
                {"role": "assistant", "content": "hi"}], "anthropic", 0, "name field"),
    ("openai", [{"role": "user", "name": "alice", "content": "I am alice"}], "responses", 0,
     "name field"),
    ("openai", [{"role": "user", "content": [{"type": "text", "text": "the spec",
                                              "cache_control": EPHEMERAL}]}], "anthropic", 0,
     "text cache_control"),
    ("anthropic", [{"role": "user", "content": "when?"},
                   {"role": "assistant", "content": [{"type": "text", "text": "30 days",
                                                      "citations": CITED}]}], "openai", 1,
     "text citations"),
    ("anthropic", [{"role": "user", "content": "go"},
                   {"role": "assistant", "content": [{"type": "tool_use", "id": "t1",
                                                      "name": "run", "input": {}}]},
                   {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                                 "is_error": True, "content": "boom"}]}],
     "openai", 2, "tool_result is_error"),
    ("anthropic", [{"role": "user", "content": [{"type": "text", "text": "the spec",
                                                 "cache_control": EPHEMERAL}]}], "openai", 0,
     "text cache_control"),
    # a system message between turns, its block marked for the cache
    ("anthropic", [{"role": "user", "content": "hi"},
                   {"role": "system", "content": [{"type": "text", "text": "Be terse.",
                                                   "cache_control": EPHEMERAL}]}],
     "openai", 1, "text cache_control"),
    ("responses", [{"role": "user", "content": "q"},
                   {"type": "message", "role": "assistant", "content": [
                       {"type": "output_text", "text": "see A", "annotations": URL_CITED}]}],
     "openai", 1, "output_text annotations"),
    # an image only its provider can read goes nowhere, also beside one that goes along
    ("responses", [{"role": "user", "content": [
        {"type": "input_text", "text": "compare"},
        {"type": "input_image", "image_url": "https://ex.com/a.png", "detail": "auto"},
        {"type": "input_image", "file_id": "file-1"}]}], "anthropic", 0, "input_image"),
]


@pytest.mark.parametrize(("src", "turns", "dst", "k", "name"), LOST,
                         ids=[f"{c[0]}-{c[2]}-{c[4]}" for c in LOST])
def test_what_the_target_does_not_carry_is_named(src, turns, dst, k, name):
    sent, named = across(src, turns, dst)
    assert name in named.get(k, ""), (sent, named)
    assert f"written as {dst}" in named[k]


def test_what_the_target_carries_or_what_says_nothing_is_not_named():
    # a tool result's name is the tool's, which its call carries; an assistant message as
    # the API echoes it back holds a null refusal and empty annotations
    turns = [{"role": "user", "content": "read it"},
             {"role": "assistant", "content": None, "refusal": None, "annotations": [],
              "tool_calls": [{"id": "c1", "type": "function", "function": {
                  "name": "read", "arguments": "{}"}}]},
             {"role": "tool", "tool_call_id": "c1", "name": "read", "content": "R1"}]
    for dst in ("anthropic", "responses"):
        assert across("openai", turns, dst)[1] == {}, dst
    turns = [{"role": "user", "content": "q"},
             {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
              "content": [{"type": "output_text", "text": "a", "annotations": []}]}]
    assert across("responses", turns, "openai")[1] == {}
    turns = [{"role": "user", "content": "go"},
             {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "run",
                                                "input": {}}]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                           "is_error": False, "content": "ok"}]}]
    assert across("anthropic", turns, "openai")[1] == {}


def kimi_chat(*ids: str) -> list[dict]:
    """An OpenAI chat whose calls carry the ids a Kimi model gives them."""
    calls = [{"id": i, "type": "function", "function": {"name": "read", "arguments": "{}"}}
             for i in ids]
    return [{"role": "user", "content": "read them"},
            {"role": "assistant", "content": None, "tool_calls": calls},
            *[{"role": "tool", "tool_call_id": i, "content": f"R{k}"} for k, i in enumerate(ids)],
            {"role": "user", "content": "ok?"}]


def call_ids(sent: list[dict]) -> tuple[list[str], list[str]]:
    """(the tool_use ids, the tool_result ids) of an Anthropic conversation, in order."""
    blocks = [b for m in sent if isinstance(m["content"], list) for b in m["content"]]
    return ([b["id"] for b in blocks if b["type"] == "tool_use"],
            [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"])


def test_call_ids_anthropic_refuses_are_written_as_ones_it_takes():
    """"functions.read:0" went into tool_use.id as it came, and the provider answers 400 to
    an id outside ^[a-zA-Z0-9_-]+$; now each such id is another, the same in the call and its
    result, the same every time, and two ids that differ only in the characters replaced
    stay two."""
    from providers.rules import anthropic_problems

    sent, _ = across("openai", kimi_chat("functions.read:0", "functions.read.0", "call_ok"),
                     "anthropic")
    uses, results = call_ids(sent)
    assert anthropic_problems({"model": "m", "max_tokens": 8, "messages": sent}) == []
    assert uses == results and len(set(uses)) == 3
    assert uses[2] == "call_ok"  # an id it takes goes as it came
    assert uses[0].startswith("functions_read_0_")
    assert across("openai", kimi_chat("functions.read:0", "functions.read.0", "call_ok"),
                  "anthropic")[0] == sent


def test_an_empty_call_id_is_written_as_one_anthropic_takes():
    """A call and its result with id "" went to Anthropic as "": a tool_use needs an id."""
    from providers.rules import anthropic_problems

    sent, _ = across("openai", kimi_chat(""), "anthropic")
    uses, results = call_ids(sent)
    assert uses == results and uses[0]
    assert anthropic_problems({"model": "m", "max_tokens": 8, "messages": sent}) == []


def test_a_made_call_id_is_never_another_call_s_own():
    """The id made for "functions.read:0" is already the conversation's: another is made."""
    first, _ = across("openai", kimi_chat("functions.read:0"), "anthropic")
    made = call_ids(first)[0][0]
    sent, _ = across("openai", kimi_chat("functions.read:0", made), "anthropic")
    uses, results = call_ids(sent)
    assert uses == results and uses[1] == made and uses[0] != made
    assert uses[0].startswith("functions_read_0_")


def test_a_legacy_function_call_goes_to_anthropic_with_an_id_it_takes():
    from providers.rules import anthropic_problems

    turns = [{"role": "user", "content": "q"},
             {"role": "assistant", "content": None,
              "function_call": {"name": "read", "arguments": "{}"}},
             {"role": "function", "name": "read", "content": "R"}]
    sent, named = across("openai", turns, "anthropic")
    assert anthropic_problems({"model": "m", "max_tokens": 8, "messages": sent}) == []
    assert named == {}  # the call went along: nothing is named lost


def test_an_image_goes_to_the_other_openai_format_at_the_detail_asked():
    """A "low" screenshot (85 tokens on OpenAI's rules) went to the other OpenAI format
    without its detail: "auto" there, or none, which costs the image in tiles."""
    url = "https://ex.com/shot.png"
    turns = [{"role": "user", "content": [{"type": "input_text", "text": "look"}, {
        "type": "input_image", "image_url": url, "detail": "low"}]}]
    (shot,), named = across("responses", turns, "openai")
    assert {"type": "image_url", "image_url": {"url": url, "detail": "low"}} in shot["content"]
    turns = [{"role": "user", "content": [{"type": "text", "text": "look"}, {
        "type": "image_url", "image_url": {"url": url, "detail": "high"}}]}]
    (shot,), named = across("openai", turns, "responses")
    assert {"type": "input_image", "image_url": url, "detail": "high"} in shot["content"]
    assert named == {}


PATCH = "*** Begin Patch\n*** End Patch"
CUSTOM_CHAT = [{"role": "user", "content": "fix it"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "c1", "type": "custom",
                    "custom": {"name": "apply_patch", "input": PATCH}}]},
               {"role": "tool", "tool_call_id": "c1", "content": "done"}]


def test_a_custom_tool_call_is_one_in_the_responses_format_and_back():
    # it went as a function_call whose arguments were the patch text (not JSON), unsaid
    sent, named = across("openai", CUSTOM_CHAT, "responses")
    assert sent[1:] == [
        {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": PATCH},
        {"type": "custom_tool_call_output", "call_id": "c1", "output": "done"}], sent
    assert named == {}
    back, named = across("responses", sent, "openai")
    assert back[1]["tool_calls"] == CUSTOM_CHAT[1]["tool_calls"] and named == {}, back


def test_a_custom_tool_call_written_as_anthropic_is_said():
    decoded = decode("openai", {"model": "m", "messages": CUSTOM_CHAT}, WORDS)
    rebuilt, messages, _, _ = rebuild("anthropic", decoded.messages,
                                      [None] * len(decoded.messages), WORDS)
    out = encode(rebuilt, messages)
    [use] = [b for m in out.payload["messages"] if isinstance(m["content"], list)
             for b in m["content"] if b["type"] == "tool_use"]
    assert use["input"] == {"input": PATCH}
    assert [e.summary for e in out.audit if "custom tool" in e.reason] == [
        "apply_patch(*** Begin Patch)"], out.audit
