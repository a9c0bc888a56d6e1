"""Renders `InspectorData` as one self-contained HTML page (inline CSS and script, a CSP that
forbids every network load). Safe to show in a VS Code webview (nonce-based script) and to
open from disk in a browser. Pure: returns a string, touches nothing.
"""

from __future__ import annotations

import json
import secrets
from html import escape

import msgspec

from ctxlayer.inspector.assets import CSS, JS
from ctxlayer.inspector.data import (
    PRIORITY_CLASSES,
    VERDICTS,
    InspectorData,
    InspectorMessage,
    sent_tokens,
)

#: a step's letter back to the word the rows carry in data-would
WOULD = {letter: ("shortened" if state == "truncated" else state)
         for state, letter in VERDICTS.items()}


#: the line between the rows where the provider's cached prefix ends
BOUNDARY = ('<li class="boundary" id="cache-boundary">cache boundary: '
            "the provider's cached prefix ends above</li>")


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.3f}%" if whole > 0 else "0%"


def _window_bar(d: InspectorData) -> str:
    segs = "".join(
        f'<div class="seg {escape(layer.name)}" style="width:{_pct(layer.tokens, d.window)}" '
        f'title="{escape(layer.name)}: {layer.tokens:,} tokens"></div>'
        for layer in d.layers
        if layer.tokens > 0
    )
    left = _pct(min(d.budget, d.window), d.window)
    markers = [
        f'<div class="marker" id="budget-marker" style="left:{left}"><span>budget {d.budget:,}'
        + "</span></div>"
    ]
    if d.cache_boundary is not None:
        before = d.cache_tokens if d.cache_tokens is not None else sum(
            sent_tokens(m) for m in d.messages[: d.cache_boundary] if m.state != "dropped")
        markers.append(
            f'<div class="marker cache" id="cache-marker" style="left:{_pct(before, d.window)}">'
            f"cache boundary ({before:,})</div>"
        )
    if d.compaction_at:
        markers.append(
            f'<div class="marker compaction" style="left:{_pct(d.compaction_at, d.window)}">'
            f"compaction at {d.compaction_at:,}</div>"
        )
    legend = "".join(
        f'<li><i style="background:var(--{escape(layer.name)})"></i>{escape(layer.name)} '
        f"{layer.tokens:,}</li>"
        for layer in d.layers
    )
    return (
        f'<div class="stack" id="stack" aria-label="layers against the window">{segs}'
        f'{"".join(markers)}</div><ul class="legend">{legend}'
        f"<li>window {d.window:,}</li></ul>"
    )


def _current_step(d: InspectorData):
    return next((s for s in d.steps if s.budget == d.budget), None)


def _tokens_label(m: InspectorMessage) -> str:
    """A row's tokens: a shortened message's before and after, as the audit table says."""
    if m.tokens_after is None:
        return f"{m.tokens:,}"
    return f"{m.tokens:,} → {m.tokens_after:,}"


def _message_rows(d: InspectorData) -> str:
    biggest = max((m.tokens for m in d.messages), default=1) or 1
    step = _current_step(d)
    letters = step.verdicts if step is not None and not step.error else ""
    out = []
    for m in d.messages:
        would = WOULD.get(letters[m.index:m.index + 1], "kept")
        if d.cache_boundary is not None and m.index == d.cache_boundary:
            out.append(BOUNDARY)
        reason = f'<span class="reason">{escape(m.state)}: {escape(m.reason)}</span>' if m.reason else ""
        pinned = '<span class="badge">pinned</span>' if m.pinned else ""
        out.append(
            f'<li class="msg" data-index="{m.index}" data-class="{m.priority_class}" '
            f'data-layer="{escape(m.layer)}" data-tokens="{m.tokens}" '
            f'data-state="{escape(m.state)}" data-would="{would}">'
            f'<span class="role">{escape(m.role)}{pinned}'
            f'<span class="badge would">would drop</span>'
            f'<span class="badge shorten">would shorten</span></span>'
            f'<span class="bar" style="width:{_pct(m.tokens, biggest)}"></span>'
            f'<span class="tokens">{_tokens_label(m)}</span>'
            f'<span class="summary" title="{escape(m.summary)}">'
            f'<span class="cls">P{m.priority_class}</span> {escape(m.summary)}</span>'
            f"{reason}</li>"
        )
    if d.cache_boundary is not None and d.cache_boundary >= len(d.messages) > 0:
        out.append(BOUNDARY)  # the whole request was cached: a request sent again
    return "".join(out)


def _audit_table(d: InspectorData) -> str:
    entries = [*d.dropped, *d.truncated]
    if not entries:
        return '<p class="hint" id="no-drops">Nothing was dropped or shortened at this budget.</p>'
    rows = "".join(
        f"<tr><td>{escape(e.action)}</td><td>{escape(e.summary)}</td><td>{escape(e.reason)}</td>"
        f'<td class="num">{e.tokens_before:,} → {e.tokens_after:,}</td></tr>'
        for e in entries
    )
    return (
        '<table id="audit"><thead><tr><th>action</th><th>item</th><th>reason</th>'
        f'<th class="num">tokens</th></tr></thead><tbody>{rows}</tbody></table>'
    )


def _slider(d: InspectorData) -> str:
    """The budget slider: it runs over the budgets the engine was run at, nothing between."""
    budgets = [s.budget for s in d.steps] or [d.budget]
    only = len(budgets) < 2
    hint = ('<p class="hint" id="steps-hint">The engine\'s outcome is computed at this budget '
            "only: a session's page previews one assembly and changes nothing; inspect it "
            "with another budget to see that one.</p>" if only else
            f'<p class="hint" id="steps-hint">The daemon ran its engine at {len(budgets)} '
            "budgets; the slider shows the outcome at the nearest one. "
            f"{escape(PRIORITY_CLASSES[0])}: never dropped.</p>")
    return (
        "<div><h2>What if the budget were…</h2>"
        f'<label for="budget-slider">Budget: <output id="budget-value">{d.budget:,}</output>'
        " tokens</label>"
        f'<input type="range" id="budget-slider" min="{budgets[0]}" max="{budgets[-1]}" '
        f'step="1" value="{d.budget}"{" disabled" if only else ""}>'
        f'<p class="hint" id="slider-summary"></p>{hint}'
        '<button id="reset">Reset</button></div>'
    )


def render_inspector(data: InspectorData, *, nonce: str | None = None) -> str:
    """The whole page. `nonce` is the script nonce (a fresh random one when not given)."""
    nonce = nonce or secrets.token_urlsafe(16)
    d = data
    payload = json.dumps(msgspec.to_builtins(d), separators=(",", ":"))
    # keep the JSON inert inside <script>: no "</script>" or "<!--" can end or open anything
    payload = payload.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    percent = 100.0 * d.used / d.budget if d.budget else 0.0
    session = f" · session {escape(d.session_id)}" if d.session_id else ""
    csp = (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src 'nonce-{nonce}'"
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(d.title)}</title>
<style>{CSS}</style></head>
<body>
<header><h1>{escape(d.title)}</h1>
<p class="meta" id="summary">{escape(d.model)} · {d.used:,} / {d.budget:,} tokens
({percent:.0f}%) · window {d.window:,}{session}</p></header>
<section id="window"><h2>Layers against the window</h2>{_window_bar(d)}</section>
<section class="controls">{_slider(d)}</section>
<section id="messages-section"><h2>Messages ({len(d.messages)})</h2>
<ol class="messages">{_message_rows(d)}</ol></section>
<section id="dropped-section"><h2>Dropped and shortened by the daemon</h2>{_audit_table(d)}</section>
<script type="application/json" id="ctx-data">{payload}</script>
<script nonce="{nonce}">{JS}</script>
</body></html>
"""
