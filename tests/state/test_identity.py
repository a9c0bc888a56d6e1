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


def test_extending_wins_over_editing_and_the_furthest_edit_wins():
    chains = [("short", [U1]), ("long", [U1, A1, U2])]
    assert best_match(chains, [U1, A1, U2, A1]) == ("long", True)
    assert best_match(chains, [U1, A1, U1]) == ("short", True)  # it extends [U1]
    assert best_match([("short", [U1, U2]), *chains[1:]], [U1, A1, U1]) == ("long", False)
    assert best_match([("x", [U1, A1])], [U2]) is None


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
