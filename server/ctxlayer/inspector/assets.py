"""The inspector page's inline stylesheet and script (no network, no external files).

The script mirrors `data.would_drop` (keep class 0 and its groups; fill whole groups newest
first, skipping a group that does not fit; optionally class by class in the chosen order).
Change both together: a browser test compares them at many budgets.
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
.controls { display: grid; grid-template-columns: minmax(240px, 1fr) minmax(220px, 320px);
  gap: 16px 28px; align-items: start; }
input[type=range] { width: 100%; }
#priority-order { margin: 0; padding: 0; list-style: none; }
#priority-order li { display: flex; align-items: center; gap: 6px; padding: 3px 6px;
  border: 1px solid var(--line); border-radius: 4px; margin-bottom: 4px; }
#priority-order li span { flex: 1; }
button { font: inherit; color: inherit; background: transparent; border: 1px solid var(--line);
  border-radius: 3px; padding: 1px 7px; cursor: pointer; }
button:disabled { opacity: .35; cursor: default; }
ol.messages { list-style: none; margin: 0; padding: 0; }
.msg { display: grid; grid-template-columns: 170px 180px 60px 1fr; gap: 8px; align-items: center;
  padding: 2px 0; border-bottom: 1px solid rgba(128,128,128,.12); }
.msg .role { font-weight: 600; white-space: nowrap; } .msg .cls { color: var(--muted); font-size: 11px; }
.msg .bar { height: 10px; background: var(--history); border-radius: 2px; min-width: 2px; }
.msg[data-class="0"] .bar { background: var(--system); }
.msg[data-class="3"] .bar { background: var(--workspace); }
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
.msg[data-would="dropped"] .badge.would { display: inline; }
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
  var orderList = document.getElementById("priority-order");
  var rows = Array.prototype.slice.call(document.querySelectorAll("li.msg"));
  var byIndex = {};
  rows.forEach(function (row) { byIndex[row.dataset.index] = row; });

  function currentOrder() {
    return Array.prototype.map.call(orderList.querySelectorAll("li"), function (li) {
      return Number(li.dataset.class);
    });
  }

  // Mirror of ctxlayer.inspector.data.would_drop (order null: the pipeline's limit step).
  function wouldDrop(messages, budget, order, overhead) {
    var owner = {}, groups = {}, keys = [];
    messages.forEach(function (m) {
      var g = m.toolCallId && owner[m.toolCallId] !== undefined ? owner[m.toolCallId] : m.index;
      if (!groups[g]) { groups[g] = []; keys.push(g); }
      groups[g].push(m);
      (m.toolCallIds || []).forEach(function (id) { owner[id] = m.index; });
    });
    var sum = function (k) { return groups[k].reduce(function (t, m) { return t + m.tokens; }, 0); };
    var newest = function (k) { return Math.max.apply(null, groups[k].map(function (m) { return m.index; })); };
    var question = -1;  // the newest user message is never dropped
    messages.forEach(function (m) {
      if (m.role === "user" && m.kind !== "doc") question = Math.max(question, m.index);
    });
    var isFixed = function (k) {
      return groups[k].some(function (m) { return m.priorityClass === 0 || m.index === question; });
    };
    var room = budget - (overhead || 0);
    keys.filter(isFixed).forEach(function (k) { room -= sum(k); });
    var rest = keys.filter(function (k) { return !isFixed(k); })
      .map(function (k, pos) { return { k: k, newest: newest(k) }; })
      .sort(function (a, b) { return b.newest - a.newest; });
    if (order) {
      var rank = {};
      order.forEach(function (cls, r) { rank[cls] = r; });
      rest.forEach(function (e, pos) {
        e.pos = pos;
        e.rank = Math.min.apply(null, groups[e.k].map(function (m) {
          return rank[m.priorityClass] === undefined ? order.length : rank[m.priorityClass];
        }));
      });
      rest.sort(function (a, b) { return a.rank - b.rank || a.pos - b.pos; });
    }
    var dropped = [];
    rest.forEach(function (e) {
      var cost = sum(e.k);
      if (cost <= room) room -= cost;
      else groups[e.k].forEach(function (m) { dropped.push(m.index); });
    });
    return dropped.sort(function (a, b) { return a - b; });
  }

  function fmt(n) { return n.toLocaleString("en-US"); }

  function update() {
    var budget = Number(slider.value);
    var byClass = document.getElementById("fill-by-class").checked;
    var dropped = wouldDrop(data.messages, budget, byClass ? currentOrder() : null, data.overhead);
    var set = {}, keptTokens = 0;
    dropped.forEach(function (i) { set[i] = true; });
    data.messages.forEach(function (m) {
      byIndex[m.index].dataset.would = set[m.index] ? "dropped" : "kept";
      if (!set[m.index]) keptTokens += m.tokens;
    });
    out.textContent = fmt(budget);
    marker.style.left = Math.min(100, 100 * budget / data.window) + "%";
    marker.firstChild.textContent = "budget " + fmt(budget);
    summary.textContent = "At " + fmt(budget) + " tokens: " + dropped.length +
      " of " + data.messages.length + " messages dropped, " + fmt(keptTokens) + " tokens kept.";
    document.body.dataset.wouldDrop = dropped.join(",");
  }

  function move(li, delta) {
    var items = Array.prototype.slice.call(orderList.children);
    var i = items.indexOf(li), j = i + delta;
    if (j < 0 || j >= items.length) return;
    if (delta < 0) orderList.insertBefore(li, items[j]);
    else orderList.insertBefore(items[j], li);
    document.getElementById("fill-by-class").checked = true;
    refreshButtons();
    update();
  }

  function refreshButtons() {
    var items = orderList.children;
    for (var k = 0; k < items.length; k++) {
      items[k].querySelector("button.up").disabled = k === 0;
      items[k].querySelector("button.down").disabled = k === items.length - 1;
    }
  }

  orderList.addEventListener("click", function (ev) {
    var b = ev.target.closest("button");
    if (!b) return;
    move(b.closest("li"), b.classList.contains("up") ? -1 : 1);
  });
  slider.addEventListener("input", update);
  document.getElementById("fill-newest").addEventListener("change", update);
  document.getElementById("fill-by-class").addEventListener("change", update);
  document.getElementById("reset").addEventListener("click", function () {
    slider.value = String(data.budget);
    document.getElementById("fill-newest").checked = true;
    [1, 2, 3].forEach(function (cls) {
      orderList.appendChild(orderList.querySelector('li[data-class="' + cls + '"]'));
    });
    refreshButtons();
    update();
  });
  refreshButtons();
  update();
})();
"""
