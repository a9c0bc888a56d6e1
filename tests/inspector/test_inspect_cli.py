"""`ctxlayer inspect PATH --html`: the page for a real workspace, with a chat, from the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys


def run(*args, cwd):
    env = {**os.environ, "HOME": str(cwd), "XDG_CONFIG_HOME": str(cwd / "config"),
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    return subprocess.run([sys.executable, "-m", "ctxlayer", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_inspect_html_writes_the_page(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# Demo project\n\nSome words about it.\n")
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "hello <there>"},
                                {"role": "assistant", "content": "hi"}]))
    out = tmp_path / "page.html"
    done = run("inspect", str(ws), "--html", "--chat", str(chat), "--budget", "20k",
               "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    html = out.read_text()
    assert html.startswith("<!doctype html>")
    assert "hello &lt;there&gt;" in html
    data = json.loads(html.split('id="ctx-data">', 1)[1].split("</script>", 1)[0])
    layers = {layer["name"]: layer["tokens"] for layer in data["layers"]}
    assert layers["workspace"] > 0 and layers["system"] > 0  # README is in the segment
    assert html.count('<li class="msg"') >= 3
    assert "budget 20,000" in html
    assert "workspace " in html and 'class="seg workspace"' in html


def test_inspect_html_says_what_to_fix(tmp_path):
    done = run("inspect", str(tmp_path), "--html", "--chat", str(tmp_path / "missing.json"),
               cwd=tmp_path)
    assert done.returncode == 2
    assert "missing.json: no such file" in done.stderr
    assert "Traceback" not in done.stderr
