"""The VS Code extension leaves out the files the daemon would (secrets): it reads the files a
question attaches from the window's other folders itself, with the daemon's lists, generated
from workspace/selected.py (stale fails here). Its e2e test (test/e2e/secrets.test.ts)
compares its verdicts with read_attachments' on real files."""

from __future__ import annotations

from ctxlayer import editor_secrets
from ctxlayer.editor_secrets import OUTPUT, REGENERATE, render
from ctxlayer.workspace.selected import SECRET_FOLDERS, SECRET_NAMES, SECRET_SUFFIXES, SECRETS


def test_the_extensions_secret_rule_is_up_to_date():
    assert OUTPUT.read_text() == render(), (
        f"{OUTPUT.name} is stale: run `{REGENERATE}` to regenerate it")


def test_it_names_every_secret_of_the_daemon():
    text = OUTPUT.read_text()
    for value in [*SECRET_NAMES, *SECRET_FOLDERS, *SECRET_SUFFIXES]:
        assert f'  "{value}",\n' in text
    assert f'export const SECRETS = "{SECRETS}";' in text


def test_a_name_added_to_the_daemons_rule_makes_the_file_stale(monkeypatch):
    monkeypatch.setattr(editor_secrets, "SECRET_NAMES", SECRET_NAMES | {".vault-token"})
    changed = render()
    assert '  ".vault-token",\n' in changed
    assert OUTPUT.read_text() != changed
