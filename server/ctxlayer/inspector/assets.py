"""The inspector page's inline stylesheet and script (no network, no external files).

The script decides nothing: for the slider's value it looks up the nearest of the budgets the
daemon ran its engine at (`InspectorData.steps`) and shows that step's verdicts, so what it
says at the current budget is what the table says.
"""

CSS = r"""
:root {
  --bg: var(--vscode-editor-background, #ffffff);
  --fg: var(--vscode-editor-foreground, #1f2328);
  --muted: var(--vscode-descriptionForeground, #656d76);
  --line: var(--vscode-panel-border, #d0d7de);
  --system: #6e56cf; --workspace: #0a7ea4; --rules: #b35900; --working: #2f8132;
  --history: #8a8f98; --dropped: #cf222e; --cache: #d4a72c;
}
* { box-sizing: border-box; }
body { font: 13px/1.45 var(--vscode-font-family, system-ui, sans-serif); color: var(--fg);
  background: var(--bg); margin: 0; padding: 16px 20px; }
h1 { font-size: 18px; margin: 0 0 2px; } h2 { font-size: 14px; margin: 18px 0 6px; }
.meta, .hint { color: var(--muted); margin: 0; }
.stack { position: relative; display: flex; height: 28px; border: 1px solid var(--line);
  border-radius: 4px; overflow: visible; background: repeating-linear-gradient(45deg,
  transparent 0 6px, rgba(128,128,128,.08) 6px 12px); margin-top: 22px; }
.seg { height: 100%; min-width: 1px; }
.seg.system { background: var(--system); } .seg.workspace { background: var(--workspace); }
.seg.rules { background: var(--rules); } .seg.working { background: var(--working); }
.seg.history { background: var(--history); }
.marker { position: absolute; top: -20px; bottom: -4px; border-left: 2px solid var(--fg);
  font-size: 11px; padding-left: 3px; white-space: nowrap; pointer-events: none; }
.marker.cache { border-color: var(--cache); top: 28px; bottom: -22px; color: var(--cache);
  display: flex; align-items: flex-end; }
.marker.compaction { border-left-style: dashed; border-color: var(--muted); color: var(--muted);
  top: 28px; bottom: -36px; display: flex; align-items: flex-end; }
.legend { display: flex; flex-wrap: wrap; gap: 12px; margin: 40px 0 0; padding: 0;
  list-style: none; color: var(--muted); }
.legend i { display: inline-block; width: 10px; height: 10px; border-radius: 2px;
  margin-right: 4px; vertical-align: -1px; }
.controls { max-width: 640px; }
input[type=range] { width: 100%; }
input[type=range]:disabled { opacity: .4; }
button { font: inherit; color: inherit; background: transparent; border: 1px solid var(--line);
  border-radius: 3px; padding: 1px 7px; cursor: pointer; }
ol.messages { list-style: none; margin: 0; padding: 0; }
.msg { display: grid; grid-template-columns: 170px 180px 120px 1fr; gap: 8px; align-items: center;
  padding: 2px 0; border-bottom: 1px solid rgba(128,128,128,.12); }
.msg .role { font-weight: 600; white-space: nowrap; } .msg .cls { color: var(--muted); font-size: 11px; }
.msg .bar { height: 10px; background: var(--history); border-radius: 2px; min-width: 2px; }
.msg[data-layer="system"] .bar { background: var(--system); }
.msg[data-layer="workspace"] .bar { background: var(--workspace); }
.msg[data-layer="rules"] .bar { background: var(--rules); }
.msg[data-layer="working"] .bar { background: var(--working); }
.msg .tokens { text-align: right; font-variant-numeric: tabular-nums; }
.msg .summary { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.msg .reason { color: var(--dropped); font-size: 11px; grid-column: 2 / -1; }
.msg[data-state="truncated"] .reason { color: var(--rules); }
.msg[data-would="dropped"] { opacity: .45; }
.msg[data-would="dropped"] .summary { text-decoration: line-through; }
.msg[data-would="dropped"] .bar { background: var(--dropped); }
.badge { font-size: 10px; padding: 0 4px; border-radius: 3px; margin-left: 4px;
  border: 1px solid currentColor; }
.msg .badge.would { display: none; color: var(--dropped); }
.msg .badge.shorten { display: none; color: var(--rules); }
.msg[data-would="dropped"] .badge.would { display: inline; }
.msg[data-would="shortened"] .badge.shorten { display: inline; }
.boundary { color: var(--cache); font-size: 11px; border-top: 2px dashed var(--cache);
  padding: 1px 0 3px; list-style: none; }
table { border-collapse: collapse; width: 100%; }
td, th { text-align: left; padding: 3px 8px 3px 0; border-bottom: 1px solid var(--line);
  vertical-align: top; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
"""

JS = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("ctx-data").textContent);
  var slider = document.getElementById("budget-slider");
  var out = document.getElementById("budget-value");
  var summary = document.getElementById("slider-summary");
  var marker = document.getElementById("budget-marker");
  var rows = Array.prototype.slice.call(document.querySelectorAll("li.msg"));
  var WORD = { k: "kept", s: "shortened", d: "dropped" };
  var steps = data.steps || [];

  // the budget the daemon ran its engine at that is nearest to `value` (ties: the smaller)
  function nearest(value) {
    var best = steps[0];
    steps.forEach(function (s) {
      if (Math.abs(s.budget - value) < Math.abs(best.budget - value)) best = s;
    });
    return best;
  }

  function fmt(n) { return n.toLocaleString("en-US"); }

  function update() {
    var step = nearest(Number(slider.value));
    slider.value = String(step.budget);  // the slider stops only where the engine ran
    var counts = { kept: 0, shortened: 0, dropped: 0 }, shown = [];
    rows.forEach(function (row, i) {
      var would = step.error ? "kept" : WORD[step.verdicts.charAt(i)] || "kept";
      row.dataset.would = would;
      counts[would] += 1;
      if (would === "dropped") shown.push(row.dataset.index);
    });
    out.textContent = fmt(step.budget);
    marker.style.left = Math.min(100, 100 * step.budget / data.window) + "%";
    marker.firstChild.textContent = "budget " + fmt(step.budget);
    summary.textContent = step.error
      ? "At " + fmt(step.budget) + " tokens the engine cannot fit this chat: " + step.error
      : "At " + fmt(step.budget) + " tokens the engine keeps " + counts.kept + ", shortens " +
        counts.shortened + " and drops " + counts.dropped + " of " + rows.length +
        " messages; its result is " + fmt(step.tokens || 0) + " tokens.";
    document.body.dataset.wouldDrop = shown.join(",");
    document.body.dataset.step = String(step.budget);
  }

  slider.addEventListener("input", update);
  document.getElementById("reset").addEventListener("click", function () {
    slider.value = String(data.budget);
    update();
  });
  update();
})();
"""
