"""What a new message names comes back from the outlined outputs that held it, through the
gateway: a line number only with its file, and a value as a whole word. A bare `line 9` in
run 6's log brought lines of run 2's log (another file) into run 6's tool result, audited as
restored; `line 3` matched `line 30` to `line 39` as well."""

from __future__ import annotations

import json
import re

import pytest
from gateway_stack import fresh_stack

from ctxlayer.core.prepare.recall import HEADER

TOOLS = [{"type": "function", "function": {"name": "run", "description": "run a command",
                                           "parameters": {"type": "object", "properties": {
                                               "cmd": {"type": "string"}}}}}]


def _log(k: int) -> str:
    """Run ``k``'s log, 60 lines; run 2's numbers every tenth line (`line 450`)."""
    step = 10 if k == 2 else 1
    return "\n".join([*(f"line {j * step} of run {k}: step ok value={j * k} path src/mod_{k}.py"
                        for j in range(60)), f"ERROR in run {k}: Traceback boom"])


def _runs(stack, turns: int) -> list[dict]:
    """An agent's chat of ``turns`` runs, each log its own file's; every request's tool
    results checked as they went upstream: none holds another run's lines."""
    client = stack.openai()
    msgs: list[dict] = [{"role": "system", "content": "agent"},
                        {"role": "user", "content": "run things"}]
    for k in range(turns):
        raw = client.chat.completions.with_raw_response.create(
            model="gpt-4o", max_tokens=1000, tools=TOOLS, messages=msgs,
            extra_headers={"x-ctxlayer-conversation": "runs"})
        assert raw.parse().choices
        for m in stack.model_requests()[-1]["body"]["messages"]:
            if m["role"] == "tool":
                own = int(m["tool_call_id"][1:])
                runs = {int(r) for r in re.findall(r"of run (\d+):", m["content"])}
                assert runs <= {own}, (k, m["tool_call_id"], sorted(runs))
        msgs.append({"role": "assistant", "content": None, "tool_calls": [{
            "id": f"c{k}", "type": "function",
            "function": {"name": "run", "arguments": json.dumps({"cmd": f"make {k}"})}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{k}", "content": _log(k)})
    return msgs


def _ask(stack, msgs: list[dict], question: str) -> str:
    """The question as it went upstream (with what was recalled for it)."""
    stack.openai().chat.completions.create(
        model="gpt-4o", max_tokens=1000, tools=TOOLS,
        messages=[*msgs, {"role": "user", "content": question}],
        extra_headers={"x-ctxlayer-conversation": "runs"})
    return stack.model_requests()[-1]["body"]["messages"][-1]["content"]


def test_a_line_number_alone_brings_back_no_other_files_lines(tmp_path):
    with fresh_stack(tmp_path, {"gpt-4o": 9000}) as stack:
        _runs(stack, 9)


@pytest.mark.parametrize(("line", "back"), [(450, {440, 450, 460}), (45, set())])
def test_a_line_of_a_named_file_comes_back_and_only_that_line(tmp_path, line, back):
    """`line 450` of run 2's log comes back with the lines around it; `line 45`, which it
    never said (only as a part of `line 450`), brings nothing."""
    with fresh_stack(tmp_path, {"gpt-4o": 9000}) as stack:
        msgs = _runs(stack, 9)
        outlined = stack.model_requests()[-1]["body"]["messages"]
        shown = next(m["content"] for m in outlined if m.get("tool_call_id") == "c2")
        assert "line 450 of run 2:" not in shown  # outlined away: a recall must bring it
        sent = _ask(stack, msgs, f"Why did line {line} of src/mod_2.py take so long?")
    recalled = sent.split(HEADER, 1)[1] if HEADER in sent else ""
    assert {int(n) for n in re.findall(r"line (\d+) of run", recalled)} == back


def test_recalled_lines_say_which_output_they_are_from_as_the_model_saw_it(tmp_path):
    """The note names the call whose output held the lines (its tool, arguments and id, all
    in the request), not the id the codec made for the message: the model read
    "from oa6.3f0c... (450)" of an id in no message it was sent."""
    with fresh_stack(tmp_path, {"gpt-4o": 9000}) as stack:
        msgs = _runs(stack, 9)
        sent = _ask(stack, msgs, "Why did line 450 of src/mod_2.py take so long?")
    recalled = sent.split(HEADER, 1)[1]
    assert "from the output of run(make 2) (call c2) (" in recalled, recalled
    assert not re.search(r"\boa\d+\.[0-9a-f]{12}\b", recalled), recalled
