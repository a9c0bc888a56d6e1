"""The Responses API's other tool items in a chat's history, as Codex and the Agents SDK send
them: freeform custom tools (Codex's `apply_patch`), the local shell (its output named by `id`
as the API has it, or by `call_id` as the Agents SDK sends it), the shell and apply-patch tools,
computer use (a screenshot), MCP calls, and a compaction item. Fitted into a small window, every request is
one the provider takes: each call with its output, the calls and the provider's own items byte
for byte, an output shortened only in its text."""

from __future__ import annotations

import json

import pydantic
from openai.types.responses import ResponseInputItemParam
from test_images import SHOT

_SDK = pydantic.TypeAdapter(list[ResponseInputItemParam])

LOG = "\n".join(f"tests/test_mod{i}.py::test_case_{i} PASSED [{i}%]" for i in range(120))


def _custom(k: int) -> list[dict]:
    cid = f"call_patch_{k}"
    return [{"type": "custom_tool_call", "id": f"ctc_{k}", "call_id": cid, "name": "apply_patch",
             "input": f"*** Begin Patch\n*** Update File: a{k}.py\n@@\n-x = {k}\n+x = {k + 1}\n"
                      "*** End Patch\n"},
            {"type": "custom_tool_call_output", "call_id": cid,
             "output": f"Success. Updated the following files:\nM a{k}.py"}]


def _local_shell(k: int, by_id: bool) -> list[dict]:
    cid = f"call_ls_{k}"
    named = {"id": cid} if by_id else {"call_id": cid}
    return [{"type": "local_shell_call", "id": f"lsh_{k}", "call_id": cid, "status": "completed",
             "action": {"type": "exec", "command": ["pytest", "-q"], "env": {}}},
            {"type": "local_shell_call_output", **named, "output": LOG}]


def _shell(k: int) -> list[dict]:
    cid = f"call_sh_{k}"
    return [{"type": "shell_call", "call_id": cid, "status": "completed",
             "action": {"commands": ["pytest -q"], "timeout_ms": 60000}},
            {"type": "shell_call_output", "call_id": cid, "output": [
                {"stdout": LOG, "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]}]


def _apply_patch(k: int) -> list[dict]:
    cid = f"call_ap_{k}"
    return [{"type": "apply_patch_call", "call_id": cid, "status": "completed",
             "operation": {"type": "update_file", "path": f"b{k}.py",
                           "diff": f"@@\n-y = {k}\n+y = {k + 1}\n"}},
            {"type": "apply_patch_call_output", "call_id": cid, "status": "completed",
             "output": "patched"}]


def _computer(k: int) -> list[dict]:
    cid = f"call_cu_{k}"
    return [{"type": "computer_call", "id": f"cu_{k}", "call_id": cid, "status": "completed",
             "pending_safety_checks": [],
             "action": {"type": "click", "button": "left", "x": 10 * k, "y": 20}},
            {"type": "computer_call_output", "call_id": cid, "output": {
                "type": "computer_screenshot", "image_url": f"data:image/png;base64,{SHOT}"}}]


def _mcp(k: int) -> list[dict]:
    return [{"type": "mcp_call", "id": f"mcp_{k}", "server_label": "docs", "name": "search",
             "arguments": json.dumps({"q": f"retry {k}"}), "output": f"3 pages on retry {k}",
             "status": "completed"}]


TOOLS = [_custom, lambda k: _local_shell(k, True), lambda k: _local_shell(k, False), _shell,
         _apply_patch, _computer, _mcp]


def _history(turns: int) -> list[list[dict]]:
    """The items of each turn: the user's message, the model's tool items, its answer."""
    compaction = {"type": "compaction", "id": "cmp_0", "encrypted_content": "gAAAAB" + "x" * 400}
    out = [[compaction]]
    for k in range(turns):
        out.append([{"type": "message", "role": "user", "content": f"Step {k}: go on."},
                    *TOOLS[k % len(TOOLS)](k),
                    {"type": "message", "role": "assistant", "content": f"Done with step {k}."}])
    return out


def _kept_whole(item: dict) -> bool:
    return item["type"] != "message" and not item["type"].endswith("_output")


def test_codex_and_agents_sdk_tool_items_are_fitted_valid(small):
    client = small.openai()
    turns = _history(16)
    originals = {json.dumps(i, sort_keys=True) for turn in turns for i in turn}
    sent_items: list[dict] = []
    for k in range(1, len(turns)):
        items = [i for turn in turns[:k] for i in turn] + [turns[k][0]]
        # what a client could send: the SDK's types, but for the Agents SDK's own shape of a
        # local shell output (`call_id`, no `id`), which those types do not name
        _SDK.validate_python([i for i in items if not (
            i["type"] == "local_shell_call_output" and "id" not in i)])
        answer = client.responses.create(model="standin-small", input=items, store=False,
                                         max_output_tokens=200)
        assert answer.output_text
    sent = [r for r in small.standin.requests()
            if r["path"] == "/v1/responses"][-(len(turns) - 1):]
    assert len(sent) == len(turns) - 1
    assert all(r["status"] == 200 and r["problems"] == [] for r in sent), \
        [r["problems"] for r in sent if r["problems"]]
    for request in sent:
        sent_items = request["body"]["input"]
        for item in sent_items:
            if _kept_whole(item):
                assert json.dumps(item, sort_keys=True) in originals, item
            elif item["type"].endswith("_output"):  # its text may be shortened, its shape not
                same = [json.loads(o) for o in originals if f'"{item["type"]}"' in o]
                keys = {frozenset(o) for o in same}
                assert frozenset(item) in keys, item
                if item["type"] == "shell_call_output":
                    assert isinstance(item["output"], list) and "stdout" in item["output"][0]
    shortened = {i["type"] for r in sent for i in r["body"]["input"]
                 if i["type"].endswith("_output") and json.dumps(i, sort_keys=True) not in originals}
    assert {"local_shell_call_output", "shell_call_output"} <= shortened  # outlined, in place
    assert sent[-1]["body"]["input"][-1] == turns[-1][0]
    kinds = {i["type"] for r in sent for i in r["body"]["input"]}
    assert {"custom_tool_call", "local_shell_call_output", "shell_call_output",
            "apply_patch_call", "computer_call_output", "mcp_call"} <= kinds


def test_codex_compaction_stays_whole_and_its_trigger_last(small):
    """Codex's remote compaction (v2) is an ordinary request whose input ends with
    `{"type": "compaction_trigger"}`, and its answer a `compaction` item (the earlier history,
    encrypted) that starts the requests after it. Fitted into a small window with a summary,
    the compaction item stays first and whole (no summary of ours can read it: before, it was
    summarized away with the rest), the trigger last, after the newest user message."""
    items = [i for turn in _history(30) for i in turn]
    items.append({"type": "compaction_trigger"})
    _SDK.validate_python([i for i in items if not (
        i["type"] == "local_shell_call_output" and "id" not in i)])
    small.openai().responses.create(model="standin-small", input=items, store=False,
                                    max_output_tokens=200)
    (sent,) = [r for r in small.standin.requests() if r["path"] == "/v1/responses"][-1:]
    assert sent["status"] == 200 and sent["problems"] == []
    assert sent["body"]["input"][-1] == {"type": "compaction_trigger"}
    assert sent["body"]["input"][0] == items[0] and items[0]["type"] == "compaction"
    assert "[Summary of" in json.dumps(sent["body"]["input"][1:3])  # the rest was summarized
    assert {"type": "message", "role": "user", "content": "Step 29: go on."} in \
        sent["body"]["input"]
