"""The VS Code extension's settings that mirror the daemon's, generated from the daemon.

Owns: the four properties of `editors/vscode/package.json` whose defaults, choices, bounds or
meaning belong to the daemon (`ctxlayer.model`, `ctxlayer.mode`, `ctxlayer.gateway.enabled`,
`ctxlayer.gateway.port`), rendered from the one place each value is defined, and the rewrite of
the manifest that puts them in (every other key of the file stays as it is). A test fails when
the manifest is stale; `python -m ctxlayer.editor_settings` rewrites it (`ctxlayer.generated`).

The Neovim plugin needs nothing generated: its options that name a daemon setting default to
nil, which means "the daemon's" (the initialize announcement carries those values), and a
test keeps it so.
"""

from __future__ import annotations

import json
import sys
import typing
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from ctxlayer.config import CONFIG_FILE, GatewayConfig
from ctxlayer.core.zones.modes import DEFAULT_MODE, DEFAULT_MODES
from ctxlayer.generated import CHECKOUT, regenerate
from ctxlayer.tokenizers.models import DEFAULT_MODEL

MANIFEST = CHECKOUT / "editors" / "vscode" / "package.json"
REGENERATE = ".venv/bin/python -m ctxlayer.editor_settings"


def _gateway_field(name: str) -> tuple[Any, Meta]:
    """The default and the constraints of one `[gateway]` setting, as config.py declares them."""
    field = next(f for f in msgspec.structs.fields(GatewayConfig) if f.name == name)
    metas = [m for m in typing.get_args(field.type)[1:] if isinstance(m, Meta)]
    if typing.get_origin(field.type) is not Annotated or not metas:
        raise TypeError(f"[gateway] {name} has no Meta to take its bounds and meaning from")
    return field.default, metas[-1]


def _daemon_says(key: str, meta: Meta) -> str:
    """The daemon's own description of a setting, named by its ctxlayer.toml key."""
    return f"As `{key}` in {CONFIG_FILE}: {meta.description}"


def _mode_choice(name: str) -> str:
    spec = DEFAULT_MODES[name]
    return (f"Working memory up to {spec.working_share:.0%} of {spec.cap:,} tokens, less what "
            f"the rules take (rules are always shown whole; the daemon's defaults: "
            f"`[session.modes.{name}]` in {CONFIG_FILE} changes them).")


def vscode_properties() -> dict[str, dict[str, Any]]:
    """The manifest's daemon-owned properties, each in full (the keys in VS Code's order)."""
    enabled, enabled_meta = _gateway_field("enabled")
    port, port_meta = _gateway_field("port")
    return {
        "ctxlayer.model": {
            "type": "string",
            # cleared in the Settings UI, it is "": no model, which the daemon refuses
            "minLength": 1,
            "default": DEFAULT_MODEL,
            "description": "Model whose tokenizer and context window the budget uses.",
        },
        "ctxlayer.mode": {
            "type": ["string", "null"],
            "enum": [None, *DEFAULT_MODES],
            "enumDescriptions": [f"The workspace's `session.default_mode` in {CONFIG_FILE} "
                                 f"(the daemon's default: {DEFAULT_MODE}).",
                                 *(_mode_choice(name) for name in DEFAULT_MODES)],
            "default": None,
            "description": "Task mode of the workspace session when the workspace's default "
                           "(session.default_mode) is not what you want: how much of the "
                           "budget rules and working memory may take. Empty: that default.",
        },
        "ctxlayer.gateway.enabled": {
            "type": "boolean",
            "default": enabled,
            "description": "Run the daemon's HTTP gateway (OpenAI- and Anthropic-compatible, "
                           "loopback only): chat tools pointed at it show up here as the live "
                           f"chat. Off: {CONFIG_FILE} decides. "
                           + _daemon_says("[gateway] enabled", enabled_meta),
        },
        "ctxlayer.gateway.port": {
            "type": "integer",
            "default": port,
            "minimum": port_meta.ge,
            "maximum": port_meta.le,
            "description": "Port of the gateway when `ctxlayer.gateway.enabled` is on (shown "
                           "in the status bar's tooltip). "
                           + _daemon_says("[gateway] port", port_meta),
        },
    }


def render_manifest(text: str) -> str:
    """`text` (a package.json) with the daemon-owned properties replaced in place: the other
    properties, their order and the file's layout (two spaces, a final newline) are kept."""
    manifest = json.loads(text)
    properties = manifest["contributes"]["configuration"]["properties"]
    generated = vscode_properties()
    missing = [key for key in generated if key not in properties]
    if missing:
        raise ValueError(f"package.json lacks {missing}: add them where they should appear")
    for key, value in generated.items():
        properties[key] = value  # an existing key keeps its place in the dict
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Rewrite the manifest (see `regenerate` for --check and what an installed package is
    told)."""
    return regenerate(
        argv, module="ctxlayer.editor_settings",
        what="VS Code manifest with contributes.configuration.properties",
        description="Write the VS Code extension's settings that mirror the daemon's "
                    "(ctxlayer.model, ctxlayer.mode, ctxlayer.gateway.*) into its manifest, "
                    "editors/vscode/package.json of a checkout of the repository; the file's "
                    "other keys stay as they are.",
        path=MANIFEST, render=render_manifest)


if __name__ == "__main__":
    sys.exit(main())
