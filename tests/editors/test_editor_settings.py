"""The editors' settings that mirror the daemon's are the daemon's: VS Code's manifest is
generated from them (stale fails here), and Neovim's options defer to the announcement. And
Neovim asks for the protocol of protocol.py (VS Code's list is typechecked against it)."""

from __future__ import annotations

import json
import subprocess

import msgspec
from test_nvim import _nvim, _require

from ctxlayer.config import GatewayConfig
from ctxlayer.core.zones.modes import DEFAULT_MODE, DEFAULT_MODES
from ctxlayer.editor_settings import MANIFEST, REGENERATE, render_manifest
from ctxlayer.protocol import PROTOCOL_VERSION, REQUESTS, InitializationOptions
from ctxlayer.tokenizers.models import DEFAULT_MODEL

REPO = MANIFEST.parents[2]


def _properties(text: str) -> dict:
    return json.loads(text)["contributes"]["configuration"]["properties"]


def test_the_vscode_manifest_is_up_to_date():
    text = MANIFEST.read_text()
    assert render_manifest(text) == text, (
        f"editors/vscode/package.json is stale: run `{REGENERATE}` to regenerate it")


def test_the_manifest_carries_the_daemons_values():
    props = _properties(MANIFEST.read_text())
    assert props["ctxlayer.model"]["default"] == DEFAULT_MODEL
    assert props["ctxlayer.mode"]["enum"] == [None, *DEFAULT_MODES]
    # unset, the workspace's session.default_mode decides (the daemon's default names it)
    assert props["ctxlayer.mode"]["default"] is None
    assert DEFAULT_MODE in props["ctxlayer.mode"]["enumDescriptions"][0]
    assert props["ctxlayer.gateway.enabled"]["default"] is GatewayConfig().enabled
    assert props["ctxlayer.gateway.port"]["default"] == GatewayConfig().port


def test_a_stale_default_is_found_and_put_right():
    text = MANIFEST.read_text()
    stale = json.loads(text)
    stale_props = stale["contributes"]["configuration"]["properties"]
    stale_props["ctxlayer.model"]["default"] = "gpt-3.5-turbo"
    stale_props["ctxlayer.mode"]["enum"] = [None, "short", "deep"]
    stale_text = json.dumps(stale, indent=2, ensure_ascii=False) + "\n"
    assert stale_text != text
    # what the staleness test compares: the stale copy does not survive a render
    assert render_manifest(stale_text) != stale_text
    assert render_manifest(stale_text) == text


def test_the_extensions_own_settings_and_layout_are_kept():
    manifest = json.loads(MANIFEST.read_text())
    props = manifest["contributes"]["configuration"]["properties"]
    props["ctxlayer.serverCommand"]["default"] = ["/opt/ctxlayer", "serve"]
    props["ctxlayer.budget"]["minimum"] = 100
    edited = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    rendered = _properties(render_manifest(edited))
    assert rendered["ctxlayer.serverCommand"]["default"] == ["/opt/ctxlayer", "serve"]
    assert rendered["ctxlayer.budget"]["minimum"] == 100
    assert list(rendered) == list(props)


def _lua(expression: str) -> object:
    """`expression` evaluated in a headless Neovim with the plugin on its runtimepath, as JSON."""
    nvim = _require("Neovim >= 0.10", _nvim())
    script = f"vim.opt.rtp:prepend(arg[1]); io.stdout:write(vim.json.encode({expression}))"
    out = subprocess.run([nvim, "--headless", "-u", "NONE", "-l", "-", str(REPO / "editors" / "nvim")],
                         input=script, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_neovim_asks_for_the_protocol_of_protocol_py():
    """The plugin refuses a daemon of another protocol, or one lacking a request: it must name
    this protocol and all its requests."""
    client = "require('ctxlayer.client')"
    assert _lua(f"{client}.PROTOCOL_VERSION") == PROTOCOL_VERSION
    assert _lua(f"{client}.REQUESTS") == list(REQUESTS)


def test_neovims_options_naming_a_daemon_setting_default_to_the_daemons():
    """nil means "the daemon's" (its initialize announcement): a value here would drift."""
    defaults = "(function() local set = {} for k in pairs(require('ctxlayer.config').defaults) " \
        "do table.insert(set, k) end return set end)()"
    with_a_default = set(_lua(defaults))
    daemon_settings = {f.name for f in msgspec.structs.fields(InitializationOptions)} | {"budget"}
    assert "model" in daemon_settings and "mode" in daemon_settings
    assert with_a_default & daemon_settings == set()
    # the plugin's own options do have defaults (the listing above is not empty by accident)
    assert {"autostart", "session", "timeout_ms"} <= with_a_default
