"""The action log and the facts ledger read the real chat clients' shell outputs: Codex CLI's
header lines ("Chunk ID:", "Wall time:", "Process exited with code N") and Qwen Code's fields
("Command:", "Output:", "Error: (none)", "Exit Code:"), around a test run that fails among a
hundred passing tests (the shapes recorded by the probe of the clients through the gateway)."""

from __future__ import annotations

import json

from ctxlayer.core.assembly.actions import log_lines, outcome_of, render_actions
from ctxlayer.core.compress.ledger import add_messages, render_ledger
from ctxlayer.protocol import Message, ToolCall

FAILING = "tests/test_math.py::test_add_negative_numbers_QX17"
ERROR = "E   AssertionError: add(-2, -3) returned 1, expected -5 ZEBRA-ERR-4411"
RUN = ("".join(f"tests/test_bulk.py::test_case_{i} PASSED  [{i}%]\n" for i in range(1, 121))
       + f"FAILED {FAILING}\n{ERROR}\nsrc/adder/core.py:2: in add\n1 failed, 120 passed\n")


def codex(code: int, output: str) -> str:
    return (f"Chunk ID: e578a3\nWall time: 0.0002 seconds\nProcess exited with code {code}\n"
            f"Original token count: 1461\nOutput:\n{output}")


def qwen(command: str, code: int, output: str) -> str:
    return (f"Command: {command}\nDirectory: (root)\nOutput: {output}\nError: (none)\n"
            f"Exit Code: {code}\nSignal: (none)\nBackground PIDs: (none)\n"
            "Process Group PGID: (none)")


def session(result, commands: list[str]) -> list[Message]:
    """An agent's shell calls, each answered by ``result(command, k)``."""
    out: list[Message] = []
    for k, cmd in enumerate(commands):
        out.append(Message(role="assistant", content="", tool_calls=[
            ToolCall(id=f"c{k}", name="exec_command", arguments=json.dumps({"cmd": cmd}))]))
        out.append(Message(role="tool", tool_call_id=f"c{k}", content=result(cmd, k)))
    return out


COMMANDS = ["cat data0.txt", "cat data1.txt", "./run_tests.sh", "cat src/adder/core.py",
            "cat data2.txt", "cat data3.txt", "sed -i 's/abs(a)/a/' src/adder/core.py",
            "cat data4.txt", "cat data5.txt", "cat data6.txt", "cat data7.txt"]


def codex_result(cmd: str, k: int) -> str:
    return codex(1, RUN) if cmd == "./run_tests.sh" else codex(0, f"v{k}_42445 v{k}_19772\n")


def test_a_successful_codex_call_says_what_it_printed_not_its_chunk_id():
    assert outcome_of(codex(0, "def add(a, b):\n    return a + b\n")) == "exit 0; def add(a, b):"
    assert outcome_of(codex(0, "")) == "exit 0; (empty output)"
    # over Codex's cap, its own notice of the cut comes before the output
    cut = ("Warning: truncated output (original token count: 4609)\nTotal output lines: 116\n"
           "\nv7_22032 v7_30005\n")
    assert outcome_of(codex(0, cut)) == "exit 0; v7_22032 v7_30005"


def test_qwen_codes_empty_error_field_is_no_error():
    line = outcome_of(qwen("./run_tests.sh", 1, RUN))
    assert line.endswith(ERROR.replace("   ", " ")), line
    assert "(none)" not in line
    assert outcome_of(qwen("cat data0.txt", 0, "v0_1 v0_2")) == "exit 0; v0_1 v0_2"
    assert outcome_of("Error: \nok\nexit code 0") == "exit 0; ok"


def test_a_failed_run_keeps_its_line_when_newer_successful_calls_fill_the_log():
    lines = log_lines(session(codex_result, COMMANDS))
    shown = render_actions(lines, 600)
    assert FAILING in shown and "ZEBRA-ERR-4411" in shown, shown
    assert "cat data7.txt" in shown  # the newest still come first after it
    assert shown.index("cat data7.txt") < shown.index("./run_tests.sh")
    assert shown.endswith("other calls)")
    assert "Chunk ID" not in shown


def test_the_failing_test_outranks_a_hundred_passing_ones_in_the_ledger():
    ledger = add_messages(None, session(codex_result, COMMANDS))
    text = render_ledger(ledger, 600)
    tests = text.split("- tests: ")[1].split("\n")[0].split(", ")
    assert tests[0] == FAILING, text
    assert len(tests) <= 4  # the passing ids of one run are capped
    assert "test_case_50" not in text
