"""ctx/prepare outlines an old assistant message whose size is in its tool calls' arguments (an
agent that wrote a file through a call) instead of summarizing it and everything before it;
each provider format then sends the outlined arguments it counted, and the request is one the
official SDK's request types and the strict stand-in's rules accept."""

from __future__ import annotations

import json

import msgspec
from providers.rules import anthropic_problems, openai_problems
from providers.sdk import anthropic_sdk_accepts, openai_sdk_accepts
from providers.standin_responses import encrypted, problems
from test_formats_responses import SDK_INPUT
from test_prepare import CountingWords

from ctxlayer.core.formats import decode, encode
from ctxlayer.core.prepare import persist, prepare_turn, resuming
from ctxlayer.core.prepare.fit import question_caps
from ctxlayer.core.prepare.model import DEFAULT_POLICY, apply_shown, shown_of
from ctxlayer.core.tokens import WordTokenizer, conversation_tokens
from ctxlayer.core.trim.fit import MIN_QUESTION
from ctxlayer.protocol import Message, ToolCall

WORDS = WordTokenizer()
BUDGET = 1000


def module_text(lines: int) -> str:
    out = [f"def step_{k}(queue):  # moves batch {k} along" for k in range(lines)]
    out[lines // 2] = "    raise KeyError('a missing batch')"
    return "\n".join(out)


def write_arguments() -> str:
    """About 1,100 words of arguments: a file written through the editor tool."""
    return json.dumps({"command": "create", "path": "src/pipeline/steps.py",
                       "file_text": module_text(160)})


def exchanges() -> list[tuple[str, str, str]]:
    """(call id, command, output) of the short calls after the file was written."""
    return [(f"call_{k}", f"pytest tests/test_steps.py -k case_{k}",
             " ".join(f"case_{k} check {j} passed in {j}ms" for j in range(10)))
            for k in range(5)]


def engine_messages() -> list[Message]:
    out = [Message(role="system", id="sys", content="You are a careful coding agent."),
           Message(role="user", id="task", content="Write the steps module and test it."),
           Message(role="assistant", id="write", content="Writing the module.", tool_calls=[
               ToolCall(id="call_w", name="str_replace_editor", arguments=write_arguments())]),
           Message(role="tool", id="written", tool_call_id="call_w",
                   content="File created successfully at src/pipeline/steps.py")]
    for cid, cmd, output in exchanges():
        out += [Message(role="assistant", id=f"a_{cid}", content="", tool_calls=[
                    ToolCall(id=cid, name="bash", arguments=json.dumps({"command": cmd}))]),
                Message(role="tool", id=f"t_{cid}", tool_call_id=cid, content=output)]
    return out


def test_an_old_message_long_by_its_arguments_is_outlined_not_summarized():
    msgs = engine_messages()
    assert conversation_tokens(msgs, WORDS) > BUDGET
    turn = prepare_turn(None, msgs, BUDGET, WORDS)
    assert not turn.compacted and turn.state.chunks == ()  # nothing summarized
    assert [m.id for m in turn.messages] == [m.id for m in msgs]  # every message kept
    assert turn.tokens == conversation_tokens(turn.messages, WORDS) <= BUDGET
    assert turn.tokens >= 0.7 * BUDGET  # the room the outline leaves is used
    written = turn.messages[2]
    value = json.loads(written.tool_calls[0].arguments)
    assert value["path"] == "src/pipeline/steps.py" and value["command"] == "create"
    assert value["file_text"].startswith("def step_0(queue):")
    assert "[cut from this message: KeyError]" in value["file_text"]
    assert [e.message_id for e in turn.truncated] == ["write"]
    # the next turn appends: the outline stays as it was, so the provider's prefix holds
    more = [*msgs, Message(role="assistant", id="done", content="All cases pass.")]
    nxt = prepare_turn(turn.state, more, BUDGET, WORDS)
    assert nxt.messages[:len(turn.messages)] == turn.messages
    assert nxt.cache_reuse_tokens == sum(turn.state.out_tokens)


def test_the_newest_call_long_by_its_arguments_is_outlined_not_dropped_with_its_result():
    """In a budget the newest exchange passes by its call's arguments alone (an agent wrote a
    file through the call), the arguments are outlined: the call and its result are kept, and
    the audit says so. The trim engine cuts no call, so the exchange used to be dropped whole
    and the model saw only the system prompt and the task."""
    msgs = engine_messages()[:4]  # the task, the call writing the file, its result
    budget = 300
    assert WORDS.count(msgs[2].tool_calls[0].arguments) > budget
    turn = prepare_turn(None, msgs, budget, WORDS)
    assert turn.tokens == conversation_tokens(turn.messages, WORDS) <= budget
    assert [m.id for m in turn.messages] == ["sys", "task", "write", "written"]
    value = json.loads(turn.messages[2].tool_calls[0].arguments)
    assert value["path"] == "src/pipeline/steps.py"
    assert value["file_text"].startswith("def step_0(queue):")
    assert [e.message_id for e in turn.truncated] == ["write"]
    assert "arguments outlined" in turn.truncated[0].reason
    # the next turn keeps the same outline: the prefix holds
    more = [*msgs, Message(role="assistant", id="done", content="Written.")]
    nxt = prepare_turn(turn.state, more, budget, WORDS)
    assert nxt.messages[:4] == turn.messages


def checking(task_words: int, parts: int) -> list[Message]:
    """An agent's chat: the system prompt, a task of ``task_words`` words, then ``parts`` test
    runs, each a call and its result."""
    history = [Message(role="system", id="sys", content="You are a careful coding agent."),
               Message(role="user", id="task",
                       content=" ".join(f"need{k}" for k in range(task_words)))]
    for k in range(parts):
        history += [Message(role="assistant", id=f"a{k}", content=f"Checking part {k}.",
                            tool_calls=[ToolCall(id=f"c{k}", name="bash", arguments=json.dumps(
                                {"command": f"pytest tests/test_part_{k}.py"}))]),
                    Message(role="tool", id=f"t{k}", tool_call_id=f"c{k}", content=" ".join(
                        f"tests/test_part_{k}.py::case_{j} passed" for j in range(12)))]
    return history


def writing(words: int) -> list[Message]:
    """The newest exchange: a file of ``words`` words written through a heredoc, and its
    result."""
    return [Message(role="assistant", id="write", content="", tool_calls=[ToolCall(
                id="call_w", name="bash", arguments=json.dumps(
                    {"command": "cat > f.py << EOF\n" + " ".join(["x=1"] * words)}))]),
            Message(role="tool", id="written", tool_call_id="call_w", content="done")]


def test_the_newest_call_is_kept_beside_the_summaries_whatever_its_size():
    """The last resort shortens the question to a sixteenth of the budget at the least. A
    newest call was judged against a question of MIN_QUESTION tokens, so a call that fitted
    only that way was left whole; it did not fit beside the question the attempts made and
    the summaries, and the trim engine dropped it with its result: the request ended with the
    summaries (a mini-swe-agent chat writing a 2.3k-token file through a heredoc, at a tenth of
    its tokens). At every size the call and its result are now kept, the call outlined when
    it must be."""
    budget = 1600
    assert question_caps(budget, DEFAULT_POLICY)[-1] > MIN_QUESTION
    history = checking(task_words=300, parts=20)
    first = prepare_turn(None, history, budget, WORDS)
    lost, summarized = [], 0
    for words in range(1380, 1600, 4):  # around the budget: the sizes that were dropped
        turn = prepare_turn(first.state, [*history, *writing(words)], budget, WORDS)
        assert turn.tokens == conversation_tokens(turn.messages, WORDS) <= budget
        summarized += any(m.kind == "summary" for m in turn.messages)
        if [m.id for m in turn.messages][-2:] != ["write", "written"]:
            lost.append(words)
    assert summarized > 0  # the summaries were there to crowd the call out
    assert lost == []


def test_a_snapshot_keeps_outlined_arguments_and_an_older_one_still_reads():
    msgs = engine_messages()
    turn = prepare_turn(None, msgs, BUDGET, WORDS)
    snap = persist.decode(persist.encode(persist.snapshot(turn.state)))
    assert snap is not None
    state = resuming.resume(snap, msgs, WORDS, DEFAULT_POLICY)
    assert state is not None and state.rewrites == turn.state.rewrites
    assert state.out_keys == turn.state.out_keys  # keys as the engine makes them: tuples
    more = [*msgs, Message(role="assistant", id="done", content="All cases pass.")]
    again = prepare_turn(state, more, BUDGET, WORDS)
    assert again.messages == prepare_turn(turn.state, more, BUDGET, WORDS).messages
    assert again.cache_reuse_tokens == sum(turn.state.out_tokens)
    # a snapshot from before arguments were outlined: a rewrite is the text alone
    old = json.loads(persist.encode(persist.snapshot(turn.state)))
    (i, rw), = old["rewrites"].items()
    old["rewrites"] = {i: ["Writing the module.", 9, rw[2]]}
    old["out_keys"] = [k if not isinstance(k, list) else [k[0], "Writing the module."]
                       for k in old["out_keys"]]
    snap = persist.decode(json.dumps(old).encode())
    assert snap is not None and snap.rewrites[int(i)][0] == "Writing the module."
    state = resuming.resume(snap, msgs, WORDS, DEFAULT_POLICY)
    assert state is not None and state.rewrites[int(i)][0] == "Writing the module."


def test_a_rewrite_shows_the_text_and_the_arguments_it_names():
    m = engine_messages()[2]
    short = apply_shown(m, ("Writing.", ('{"path":"a.py"}',)))
    assert short.content == "Writing." and short.tool_calls[0].arguments == '{"path":"a.py"}'
    assert short.tool_calls[0].id == "call_w" and shown_of(m, short) == (
        "Writing.", ('{"path":"a.py"}',))
    assert shown_of(m, apply_shown(m, "Writing.")) == "Writing."  # calls unchanged: the text


# --- each provider format sends what was counted ---------------------------------------------


def openai_request() -> dict:
    msgs: list[dict] = [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": "Write the steps module and test it."},
        {"role": "assistant", "content": "Writing the module.", "tool_calls": [
            {"id": "call_w", "type": "function", "function": {
                "name": "str_replace_editor", "arguments": write_arguments()}}]},
        {"role": "tool", "tool_call_id": "call_w",
         "content": "File created successfully at src/pipeline/steps.py"}]
    for cid, cmd, output in exchanges():
        msgs += [{"role": "assistant", "content": None, "tool_calls": [
                    {"id": cid, "type": "function", "function": {
                        "name": "bash", "arguments": json.dumps({"command": cmd})}}]},
                 {"role": "tool", "tool_call_id": cid, "content": output}]
    return {"model": "gpt-4o", "temperature": 0.2, "messages": msgs}


def anthropic_request() -> dict:
    msgs: list[dict] = [
        {"role": "user", "content": "Write the steps module and test it."},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "I write the module first.", "signature": "sig-1"},
            {"type": "text", "text": "Writing the module."},
            {"type": "tool_use", "id": "call_w", "name": "str_replace_editor",
             "input": json.loads(write_arguments())}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_w",
                                      "content": "File created successfully"}]}]
    for cid, cmd, output in exchanges():
        msgs += [{"role": "assistant", "content": [
                    {"type": "tool_use", "id": cid, "name": "bash", "input": {"command": cmd}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid,
                                               "content": output}]}]
    return {"model": "claude-sonnet-4-5", "max_tokens": 1024,
            "system": "You are a careful coding agent.", "messages": msgs}


def responses_request() -> dict:
    items: list[dict] = [
        {"role": "user", "content": "Write the steps module and test it."},
        {"type": "reasoning", "id": "rs_1", "summary": [
            {"type": "summary_text", "text": "I write the module first."}],
         "encrypted_content": encrypted("write")},
        {"type": "function_call", "id": "fc_w", "call_id": "call_w",
         "name": "str_replace_editor", "arguments": write_arguments()},
        {"type": "function_call_output", "call_id": "call_w",
         "output": "File created successfully at src/pipeline/steps.py"}]
    for cid, cmd, output in exchanges():
        items += [{"type": "function_call", "id": f"fc_{cid}", "call_id": cid, "name": "bash",
                   "arguments": json.dumps({"command": cmd})},
                  {"type": "function_call_output", "call_id": cid, "output": output}]
    return {"model": "gpt-5", "instructions": "You are a careful coding agent.", "store": False,
            "input": items}


def fitted(fmt: str, body: dict):
    """(the turn, the request sent, the outlined arguments): the request prepared and written
    back, then read again to check it costs what the turn counted."""
    d = decode(fmt, body, WORDS)
    turn = prepare_turn(None, d.messages, BUDGET, WORDS)
    assert not turn.compacted and len(turn.truncated) == 1
    out = encode(d, turn.messages).payload
    again = decode(fmt, out, WORDS)
    assert conversation_tokens(again.messages, WORDS) == turn.tokens <= BUDGET
    args = next(c.arguments for m in turn.messages for c in m.tool_calls or ()
                if c.id == "call_w")
    assert args != write_arguments()
    return turn, out, args


def test_openai_sends_the_outlined_arguments():
    body = openai_request()
    _, out, args = fitted("openai", body)
    assert openai_problems(out) == []
    openai_sdk_accepts(out)
    call = out["messages"][2]["tool_calls"][0]
    assert call == {**body["messages"][2]["tool_calls"][0],
                    "function": {"name": "str_replace_editor", "arguments": args}}
    assert out["messages"][2]["content"] == "Writing the module."
    assert out["messages"][3:] == body["messages"][3:] and out["temperature"] == 0.2


def test_anthropic_sends_the_outlined_arguments_as_the_input_object():
    body = anthropic_request()
    _, out, args = fitted("anthropic", body)
    assert anthropic_problems(out) == []
    anthropic_sdk_accepts(out)
    blocks = out["messages"][1]["content"]
    assert blocks[:2] == body["messages"][1]["content"][:2]  # thinking, signature, text
    assert blocks[2] == {**body["messages"][1]["content"][2], "input": json.loads(args)}
    assert isinstance(blocks[2]["input"], dict)
    assert out["messages"][2:] == body["messages"][2:]


def test_responses_sends_the_outlined_arguments():
    body = responses_request()
    _, out, args = fitted("responses", body)
    assert problems(out, []) == []
    SDK_INPUT.validate_python(out["input"])
    assert out["input"][1] == body["input"][1]  # the reasoning item, byte for byte
    assert out["input"][2] == {**body["input"][2], "arguments": args}
    assert out["input"][3:] == body["input"][3:]


def test_the_summaries_stay_beside_a_newest_call_long_by_the_script_it_wrote():
    """A newest call whose arguments leave room for its result but not for the summaries
    beside it (a mini-swe-agent chat writing a 1,200-token test script through a heredoc, at
    8% of its tokens) was kept whole, and the summary of the hundred messages before it gave
    way: the request was the system prompt, the task and that exchange. The call's arguments
    are outlined to leave the summaries a quarter of the budget."""
    budget = 1600
    history = checking(task_words=120, parts=40)
    first = prepare_turn(None, history, budget, WORDS)
    assert any(m.kind == "summary" for m in first.messages)
    for words in range(1300, 1440, 20):  # leaves room for the result, not for the summaries
        turn = prepare_turn(first.state, [*history, *writing(words)], budget, WORDS)
        assert turn.tokens == conversation_tokens(turn.messages, WORDS) <= budget
        assert [m.id for m in turn.messages][-2:] == ["write", "written"], words
        assert any(m.kind == "summary" for m in turn.messages), words


def _counting(name: str = "words") -> CountingWords:
    """Word counts that remember what was counted, under a name of one's choosing."""
    counter = CountingWords()
    counter.name = name
    return counter


def test_a_snapshot_keeps_the_counts_so_the_first_turn_after_a_restart_counts_only_the_new():
    """A 5 MB Claude Code history was counted again in full on the first request after a
    restart (hundreds of milliseconds): the counts now come back with the window they made."""
    msgs = engine_messages()
    turn = prepare_turn(None, msgs, BUDGET, WORDS)
    more = [*msgs, Message(role="assistant", id="done", content="All cases pass today.")]
    expected = prepare_turn(turn.state, more, BUDGET, WORDS)

    kept = persist.decode(persist.encode(persist.snapshot(turn.state, WORDS.name)))
    assert kept is not None and kept.tokens == list(turn.state.tokens)
    counter = _counting()
    state = resuming.resume(kept, more, counter, DEFAULT_POLICY)
    again = prepare_turn(state, more, BUDGET, counter)
    assert again.messages == expected.messages and again.tokens == expected.tokens
    assert counter.seen == ["All cases pass today."], "only the new message is counted"

    # another counter (another encoding, or a new calibration) counts them all again, as does a
    # snapshot that was written without its counts
    unkept = persist.decode(persist.encode(persist.snapshot(turn.state)))
    assert unkept is not None and unkept.tokens == []
    for snap, counter in ((kept, _counting("other")), (unkept, _counting())):
        state = resuming.resume(snap, more, counter, DEFAULT_POLICY)
        assert state is not None and state.tokens == turn.state.tokens
        assert msgs[1].content in counter.seen


def test_a_message_hash_is_what_snapshots_written_before_kept():
    """message_hash hashes msgspec's bytes as they come; snapshots in state folders were
    written with content_hash of the same JSON as text, and must still resume."""
    from ctxlayer.core.text import content_hash

    for m in (Message(role="user", content="plain"),
              Message(role="assistant", content="naïve café — 東京 🚀\n\tdone", id="a1",
                      tool_calls=[ToolCall(id="c", name="run", arguments='{"x": "ü"}')])):
        assert persist.message_hash(m) == content_hash(msgspec.json.encode(m).decode())


def _writes(seed: int) -> tuple[list[dict], int]:
    """An agent's turns of calls long by their arguments (files written through a tool), and
    a budget under them: when even the newest exchange is over it, the trim engine fits the
    result and may outline those arguments too."""
    import random

    rng = random.Random(seed)
    n = rng.randint(1, 3)
    msgs: list[dict] = [{"role": "system", "content": "sys"},
                        {"role": "user", "content": "please write files " * rng.randint(1, 50)}]
    for t in range(rng.randint(1, 3)):
        calls = [{"id": f"c{t}_{j}", "type": "function", "function": {
            "name": "write", "arguments": json.dumps({"path": f"f{j}.py", "text": " ".join(
                f"w{rng.randint(0, 9999)}" for _ in range(rng.randint(10, 4000)))})}}
            for j in range(n)]
        msgs.append({"role": "assistant", "content": rng.choice([None, "writing"]),
                     "tool_calls": calls})
        msgs += [{"role": "tool", "tool_call_id": c["id"], "content": "ok " * rng.randint(1, 500)}
                 for c in calls]
    if rng.random() < 0.5:
        msgs.append({"role": "user", "content": "and now? " * rng.randint(1, 30)})
    return msgs, rng.randint(300, 6000)


def test_calls_the_last_resort_outlined_are_sent_as_counted() -> None:
    """The last resort took back the trim engine's text of each message but not its calls:
    once the engine outlined long arguments (7fa8336), a call it outlined was sent whole, the
    request over its budget (1,204 tokens of 1,064; 674 of 659; 1,803 of 1,582 for these
    three chats). The last resort now takes both back, and asks the engine for no call
    outlines (its window outlines a newest call's arguments itself): sent as counted, either
    way."""
    from ctxlayer.core.tokens import CountCache
    from ctxlayer.tokenizers import TiktokenCounter

    counter = CountCache(TiktokenCounter("o200k_base"))
    for seed in (95, 96, 244):
        msgs, budget = _writes(seed)
        decoded = decode("openai", {"model": "gpt-4o", "messages": msgs}, counter)
        turn = prepare_turn(None, decoded.messages, budget, counter)
        sent = encode(decoded, turn.messages).payload
        again = decode("openai", sent, counter)
        assert turn.tokens <= budget, (seed, turn.tokens, budget)
        assert conversation_tokens(again.messages, counter) == turn.tokens, seed
        assert openai_problems(sent) == [], seed
