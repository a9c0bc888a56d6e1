"""Numbers in the settings too large for what they feed were taken without a word, and the
gateway failed later: `[gateway] max_body_mb` of 2**43 made every compressed request a 500
(zlib cannot take the size), `[session] keep_days` of a million days logged a traceback at
start (no date lies that far back). Each is said once, naming its key, and its bound
used."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import httpx2 as httpx
from providers.standin import StandinThread
from test_command import gateway_process, hermetic


def test_numbers_past_their_bounds_are_said_and_the_bounds_serve(tmp_path: Path):
    env = hermetic(tmp_path)
    root = tmp_path / "project"
    root.mkdir()
    (root / "ctxlayer.toml").write_text(
        f"[gateway]\nmax_body_mb = {2 ** 43}\n[session]\nkeep_days = 1000000\n")
    with StandinThread() as standin:
        proc = gateway_process(root, env, "--port", "0", "--upstream-openai", standin.openai)
        try:
            line = json.loads(proc.stdout.readline())
            body = json.dumps({"model": "gpt-4o",
                               "messages": [{"role": "user", "content": "hello"}]}).encode()
            answer = httpx.post(line["openai"] + "/chat/completions",
                                content=gzip.compress(body), timeout=60,
                                headers={"content-type": "application/json",
                                         "content-encoding": "gzip",
                                         "authorization": "Bearer sk-test"})
            assert answer.status_code == 200, answer.text
            assert standin.requests()[-1]["body"]["messages"][-1]["content"] == "hello"
        finally:
            proc.terminate()
            _, stderr = proc.communicate(timeout=30)
    assert f"`gateway.max_body_mb`: at most 1024 (value {2 ** 43}); using 1024" in stderr
    assert "`session.keep_days`: at most 36500 (value 1000000); using 36500" in stderr
    assert "Traceback" not in stderr
