"""`ctxlayer count` and `ctxlayer trim` of a text holding a run of a million blanks: counted
(tiktoken's regex failed on it: a traceback, exit 1), and anything tiktoken still fails on is
one line and exit 2."""

from __future__ import annotations

import json

from test_cli import run

from ctxlayer import cli
from ctxlayer import tokenizers as tokenizers_module
from ctxlayer.tokenizers import counter_for

BLANKS = " " * 1_000_000 + "word"


def test_a_million_blanks_are_counted_and_trimmed():
    p = run("count", "--model", "gpt-4o", "--json", stdin=BLANKS)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["total"] == counter_for("gpt-4o").count(BLANKS)
    chat = json.dumps([{"role": "user", "content": "x" + "\t" * 1_000_000 + "y"}])
    p = run("trim", "-q", stdin=chat)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr


def test_a_text_tiktoken_fails_on_is_one_line_and_exit_2(monkeypatch, capsys, tmp_path):
    def failing(*_args):
        raise ValueError("Regex error while tokenizing: Max stack size exceeded")

    monkeypatch.setattr(tokenizers_module, "counted_around_blanks", failing)
    text = tmp_path / "tabs.txt"
    text.write_text("\t" * 200_000 + "x")
    assert cli.main(["count", "--model", "gpt-4o", str(text)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "tiktoken cannot count" in err, err
