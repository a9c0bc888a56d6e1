"""`ctxlayer inspect PATH --html`: the page for a real workspace, with a chat, from the CLI."""

from __future__ import annotations

import base64
import json
import os
import struct
import subprocess
import sys
import zlib


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


def png(width: int, height: int) -> str:
    """A PNG's header, enough for its size to be read, base64."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = struct.pack(">I", 13) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    return base64.b64encode(b"\x89PNG\r\n\x1a\n" + chunk + b"\0" * 64).decode()


def test_rows_of_images_and_documents_name_their_parts(tmp_path):
    """The reported bug: a message of an image, a tool result of one and a document read
    "(empty)" (their text is), where the audit table's lines name each part and its cost."""
    ws = tmp_path / "ws"
    ws.mkdir()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": png(800, 600)}}
    body = {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [
        {"role": "user", "content": [image]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read",
                                           "input": {"path": "shot.png"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": [image]}]},
        {"role": "user", "content": [{"type": "document", "title": "Release notes",
                                      "source": {"type": "text", "media_type": "text/plain",
                                                 "data": "Version 2 ships on Monday."}}]}]}
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(body))
    out = tmp_path / "page.html"
    done = run("inspect", str(ws), "--html", "--chat", str(chat), "--out", str(out),
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    html = out.read_text()
    data = json.loads(html.split('id="ctx-data">', 1)[1].split("</script>", 1)[0])
    rows = [m["summary"] for m in data["messages"] if m["role"] != "system"]
    assert not [r for r in rows if "(empty)" in r], rows
    image_rows = [r for r in rows if "image 800x600 (" in r and " tokens)" in r]
    assert len(image_rows) == 2, rows  # the user's picture and the tool's
    assert any("read(shot.png)" in r for r in rows), rows
    assert any("document Release notes (" in r for r in rows), rows
