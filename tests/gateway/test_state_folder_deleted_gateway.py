"""The state folder deleted while the gateway runs: its chats go on, and every turn's
`x-ctxlayer-warning` says that nothing of them is kept and what to do. Before, nine more turns
answered 200 with no warning, their windows and audit written into the deleted file and lost.
Real gateway, the strict stand-in."""

from __future__ import annotations

import shutil
from pathlib import Path

from gateway_stack import prose, small_stack

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}


def test_a_chat_goes_on_after_its_state_folder_went_and_each_turn_says_so(
        tmp_path: Path) -> None:
    messages: list[dict] = []
    warnings: list[str] = []
    with small_stack(tmp_path) as stack:
        for k in range(10):
            if k == 3:
                shutil.rmtree(tmp_path / "state")
            messages.append({"role": "user", "content": prose(f"u{k}", 180)})
            raw = stack.openai().chat.completions.with_raw_response.create(
                model="standin-small", max_tokens=128, messages=[SYSTEM, *messages])
            raw.parse()
            assert raw.http_response.status_code == 200
            warnings.append(raw.headers.get("x-ctxlayer-warning") or "")
            messages.append({"role": "assistant", "content": prose(f"a{k}", 120)})
        assert "u9: " in str(stack.model_requests()[-1]["body"]["messages"][-1])
    assert not any("deleted or moved" in w for w in warnings[:3]), warnings[:3]
    assert all("deleted or moved" in w for w in warnings[3:]), warnings[3:]
