"""The pure parts of "which conversation": the client's hints and how far two chains agree."""

from __future__ import annotations

from ctxlayer.state import identity
from ctxlayer.state.identity import best_match, client_hint, shared

U1 = {"role": "user", "content": [{"type": "text", "text": "one"}]}
A1 = {"role": "assistant", "content": "ok"}
U2 = {"role": "user", "content": [{"type": "text", "text": "two"}]}
U2_MARKED = {"role": "user", "content": [{"type": "text", "text": "two",
                                          "cache_control": {"type": "ephemeral"}}]}


def test_hints_in_their_order():
    assert client_hint("anthropic", {"metadata": {"user_id": "u_s1"}}, None) == "u_s1"
    assert client_hint("anthropic", {"metadata": {"user_id": "u_s1"}}, "hdr") == "hdr"
    assert client_hint("openai", {"prompt_cache_key": "k", "user": "u"}, None) == "k"
    assert client_hint("openai", {"user": "u"}, None) == "u"
    assert client_hint("openai", {"user": ""}, None) is None
    assert client_hint("anthropic", {"metadata": "x"}, None) is None


def test_a_moved_cache_marker_is_the_same_message():
    assert shared([U1, A1, U2], [U1, A1, U2_MARKED, A1]) == 3
    assert shared([U1, A1, U2], [U1, A1, U1]) == 2
    assert shared([], [U1]) == 0


def test_a_text_as_a_string_or_as_one_text_block_is_the_same_message():
    """Claude Code sends a system message between turns as a marked block, then as a
    string: not an edit (each was one, and left a fork of the chat in the listing)."""
    note = "The user hasn't heard from you in a while."
    marked = {"role": "system", "content": [{"type": "text", "text": note,
                                             "cache_control": {"type": "ephemeral"}}]}
    assert shared([U1, marked, A1], [U1, {"role": "system", "content": note}, A1, U2]) == 3
    assert shared([U1, A1, U2], [U1, {"role": "assistant", "content": [
        {"type": "text", "text": "ok"}]}, {"role": "user", "content": "two"}]) == 3
    # two blocks are not one string, nor is another text
    two = {"role": "assistant", "content": [{"type": "text", "text": "o"},
                                            {"type": "text", "text": "k"}]}
    assert shared([U1, A1], [U1, two]) == 1
    assert shared([U1, A1], [U1, {"role": "assistant", "content": "OK"}]) == 1


def test_a_responses_message_item_under_a_new_id_is_the_same_message():
    """Codex's compaction sends the messages it keeps (its instructions, the task) as items
    with new ids: they are the messages the chat sent, so its history is an edit of the chat,
    not a chat sharing its system prompt alone (a new one)."""
    def item(role: str, text: str, ident: str) -> dict:
        return {"type": "message", "id": ident, "role": role,
                "content": [{"type": "input_text", "text": text}]}
    before = [item("developer", "You are Codex.", "m1"), item("user", "Check it.", "m2"),
              {"type": "function_call", "call_id": "c1", "name": "run", "arguments": "{}"}]
    now = [item("developer", "You are Codex.", "m7"), item("user", "Check it.", "m8"),
           item("user", "Another language model started to solve this problem", "m9")]
    assert shared(before, now) == 2
    assert best_match([("x", before)], now) == ("x", False)


def test_extending_wins_over_editing_and_the_furthest_edit_wins():
    chains = [("short", [U1]), ("long", [U1, A1, U2])]
    assert best_match(chains, [U1, A1, U2, A1]) == ("long", True)
    assert best_match(chains, [U1, A1, U1]) == ("short", True)  # it extends [U1]
    assert best_match([("short", [U1, U2]), *chains[1:]], [U1, A1, U1]) == ("long", False)
    assert best_match([("x", [U1, A1])], [U2]) is None
    # a system prompt alone (Chat Completions' first message) makes no edit: a new chat
    system = {"role": "system", "content": "You are terse."}
    assert best_match([("x", [system, U1, A1])], [system, U2]) is None
    assert best_match([("x", [system, U1, A1])], [system, U1, A1, U2]) == ("x", True)
    assert best_match([("x", [system, U1, A1, U2])], [system, U1, A1, U1]) == ("x", False)


def test_a_history_a_client_compaction_wrote_is_known_by_its_opening():
    summary = "This session is being continued from a previous conversation that ran out of x"
    assert identity.compacted([{"role": "user", "content": summary}])
    assert identity.compacted([{"role": "user", "content": [{"type": "text", "text": summary}]},
                               {"role": "assistant", "content": "ok"}])
    assert not identity.compacted([{"role": "tool", "content": summary}])
    assert not identity.compacted([{"role": "user", "content": "Summarize: " + summary}])
    assert not identity.compacted([])


def test_qwen_codes_opencodes_and_cns_compacted_histories_are_known_after_the_system_prompt():
    system = {"role": "system", "content": "You are Qwen Code."}
    resume = ("the build passed\n\nResume the prior task using the summary above. Continue "
              "from the last in-flight step.")
    # Qwen Code merges its reminder into the summary's message on the turns after
    merged = {"role": "user", "content": [{"type": "text", "text": "<system-reminder>x"},
                                          {"type": "text", "text": resume}]}
    assert identity.compacted([system, merged])
    assert identity.compacted([{"role": "user", "content": "<state_snapshot>a</state_snapshot>"}])
    assert not identity.compacted([system, {"role": "user", "content": "Resume the prior task"
                                            " using the summary above."}])  # the user's own
    asked = {"role": "user", "content": [{"type": "input_text",
                                          "text": "What did we do so far?"}]}
    answer = {"role": "assistant", "content": "We read the log."}
    assert identity.compacted([{"role": "developer", "content": "x"}, asked, answer])
    assert not identity.compacted([asked])  # a chat's first question, no answer yet
    assert identity.compacted([system, answer, asked])  # cn's: the assistant's summary first



def test_aiders_restored_history_with_its_summary_after_the_repo_map_is_compacted():
    system = {"role": "system", "content": "Act as an expert software developer."}
    repo_map = [{"role": "user", "content": "Here are summaries of some files present in my "
                 "git repository."}, {"role": "assistant", "content": "Ok, I won't try."}]
    summary = [{"role": "user", "content": "I spoke to you previously about a number of "
                "things.\nThe user asked for g1."}, {"role": "assistant", "content": "Ok."}]
    question = {"role": "user", "content": "Which files did you add?"}
    assert identity.compacted([system, *repo_map, *summary, question])
    assert not identity.compacted([system, *repo_map, question])
    turns = [{"role": r, "content": f"turn {i}"} for i in range(8)
             for r in ("user", "assistant")]
    # a user who writes those words late in a chat did not compact it
    assert not identity.compacted([system, *repo_map, *turns, *summary, question])

def test_claude_codes_summary_after_its_reminders_is_a_compacted_history():
    """In its terminal Claude Code sends its reminders first, the summary in a block of the
    same message after them; the summary's words inside another block's text are not one."""
    reminder = {"type": "text", "text": "<system-reminder>git status</system-reminder>"}
    summary = {"type": "text", "text": "This session is being continued from a previous "
               "conversation that ran out of context."}
    assert identity.compacted([{"role": "user", "content": [reminder, summary]}])
    quoted = {"type": "text", "text": "Why did it say: " + summary["text"]}
    assert not identity.compacted([{"role": "user", "content": [reminder, quoted]}])


def test_claude_codes_billing_header_is_no_part_of_the_system_prompt_compared():
    def request(suffix: str, prompt: str = "You are Claude Code.") -> dict:
        return {"system": [{"type": "text", "text": "x-anthropic-billing-header: "
                            f"cc_version=2.1.332.{suffix}; cc_entrypoint=cli;"},
                           {"type": "text", "text": prompt}], "messages": []}
    assert identity.system_of(request("8d3")) == identity.system_of(request("cf6"))
    assert identity.system_of(request("8d3")) != identity.system_of(request("8d3", "Title."))

def test_the_system_prompt_is_read_where_each_format_keeps_it():
    chat = {"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "u"}]}
    assert identity.system_of(chat) == identity.system_of(
        {"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "v"}]})
    assert identity.system_of(chat) != identity.system_of(
        {"messages": [{"role": "system", "content": "T"}, {"role": "user", "content": "u"}]})
    marked = [{"type": "text", "text": "S", "cache_control": {"type": "ephemeral"}}]
    assert identity.system_of({"system": marked, "messages": []}) == identity.system_of(
        {"system": [{"type": "text", "text": "S"}], "messages": [{"role": "user"}]})
    assert identity.system_of({"instructions": "S", "input": []}) != identity.system_of(
        {"instructions": "T", "input": []})


def test_a_request_that_carries_a_chats_last_question_answered_goes_on_in_it():
    chain = [{"role": "system", "content": "S"}, {"role": "user", "content": "map v1"},
             {"role": "user", "content": "What does f1 do?"}]
    later = [{"role": "system", "content": "S"}, {"role": "user", "content": "map v2"},
             {"role": "user", "content": [{"type": "text", "text": "What does f1 do?"}]},
             {"role": "assistant", "content": "It adds one."},
             {"role": "user", "content": "And f2?"}]
    assert identity.goes_on(chain, later)
    assert not identity.goes_on(chain, later[:3])  # not answered
    assert not identity.goes_on(chain, [later[0], later[1], later[3], later[2]])
    assert not identity.goes_on([{"role": "system", "content": "S"}], later)


def test_a_request_asks_once_with_only_user_messages_after_its_system_prompt_and_no_tools():
    title = {"input": [{"role": "developer", "content": "You are a title generator."},
                       {"role": "user", "content": [{"type": "input_text", "text": "Title:"}]},
                       {"role": "user", "content": "\"What does it do?\""}]}
    assert identity.asks_once(title) == "Title:\n\"What does it do?\""
    assert identity.asks_once({"instructions": "S", "input": "one string"}) == "one string"
    assert identity.asks_once({"system": "S", "messages": [U1]}) == "one"
    tools = [{"type": "function", "name": "run"}]
    assert identity.asks_once({**title, "tools": tools}) is None
    assert identity.asks_once({"messages": [U1], "functions": [{"name": "f"}]}) is None
    assert identity.asks_once({"messages": [U1, A1, U2]}) is None  # an answer in it
    assert identity.asks_once({"messages": [{"role": "system", "content": "S"}]}) is None
    assert identity.asks_once({"input": [{"type": "function_call_output", "output": "x"}]}) is None


def test_a_quote_holds_one_of_the_chats_last_questions_and_more():
    question = {"role": "user", "content": "Say it multiplies too."}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                           "content": "done"}]}
    chain = [{"role": "system", "content": "S"}, question, A1, *[result, A1] * 6]
    commit = "Write a commit message.\nUSER: Say it multiplies too.\nASSISTANT: ok"
    assert identity.quotes(commit, chain)  # tool results are not what the chat asked
    assert not identity.quotes("Say it multiplies too.", chain)  # the same text: no quote
    assert not identity.quotes("Write a commit message.", chain)
    short = [{"role": "user", "content": "Fix it"}]  # a word or two could be anyone's
    assert not identity.quotes("Title for: Fix it", short)
    later = [question]
    for k in range(4):
        later += [A1, {"role": "user", "content": f"and then step {k}?"}]
    assert not identity.quotes(commit, later)  # only the last four questions are compared
    assert identity.quotes(commit, later[:-2])


def test_a_chain_edited_far_past_the_one_extended_wins():
    """A chat that asked only another's opening ([system, question]) is extended by that
    other chat going back to an earlier point of its own: the request is the other's, which
    shares far more with it (more than twice as many messages); a rewound chat whose next
    answer came out as before shares one more with the chain it left and stays in its own."""
    system = {"role": "system", "content": "You are terse."}
    long = [system, U1, A1, U2, A1, U2, A1, U1]
    opening = [system, U1]
    back = [*long[:6], U1]
    assert best_match([("x", long), ("y", opening)], back) == ("x", False)
    assert best_match([("y", opening), ("x", long)], [*opening, A1, U1]) == ("y", True)
    rewound = [system, U1, A1]
    assert best_match([("x", long), ("r", rewound)], [*rewound, U2, A1]) == ("r", True)
