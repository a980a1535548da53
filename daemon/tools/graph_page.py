"""The self-contained HTML page memory_graph_html writes: inline CSS and JS, no fetch of any kind.

User text reaches the page only as JSON inside <script type="application/json">, with `<`, `>`,
`&` and U+2028/U+2029 written as \\u escapes, so no memory can close the script element or
open a tag; the page's code puts text into the DOM with textContent only. A Content Security
Policy (scripts and styles only with the page's nonce, no connections, no images but data:)
backs that up: even markup that got through could neither run nor load anything.
"""
import json
import secrets

SIGNATURE = b"<!DOCTYPE html>\n<!-- memnest graph view -->"


def script_json(value) -> str:
    """JSON that is safe verbatim inside a <script> element."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def render(data: dict) -> bytes:
    nonce = secrets.token_urlsafe(18)
    head, tail = _TEMPLATE.split("__DATA__")
    page = head.replace("__NONCE__", nonce) + script_json(data) + tail.replace("__NONCE__", nonce)
    out = page.encode("utf-8")
    assert out.startswith(SIGNATURE)
    return out


_TEMPLATE = """<!DOCTYPE html>
<!-- memnest graph view -->
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'nonce-__NONCE__'; style-src 'nonce-__NONCE__'; img-src data:; base-uri 'none'; form-action 'none'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>memnest graph</title>
<style nonce="__NONCE__">
  * { box-sizing: border-box; }
  html, body { margin: 0; height: 100%; font: 13px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif;
               color: #1d2330; background: #f6f7f9; }
  #app { display: flex; height: 100%; }
  #stage { position: relative; flex: 1; min-width: 0; }
  canvas { display: block; width: 100%; height: 100%; cursor: grab; }
  canvas.dragging { cursor: grabbing; }
  #bar { position: absolute; top: 8px; left: 8px; right: 8px; display: flex; gap: 8px;
         align-items: center; flex-wrap: wrap; pointer-events: none; }
  #bar > * { pointer-events: auto; }
  #counts { background: #fff; border: 1px solid #d5d9e0; border-radius: 6px; padding: 4px 8px;
            font-weight: 600; }
  #filter { border: 1px solid #d5d9e0; border-radius: 6px; padding: 4px 8px; width: 220px;
            font: inherit; }
  #legend { background: rgba(255,255,255,.9); border: 1px solid #d5d9e0; border-radius: 6px;
            padding: 4px 8px; display: flex; gap: 10px; flex-wrap: wrap; }
  .key { display: inline-flex; align-items: center; gap: 4px; }
  .swatch { display: inline-block; width: 10px; height: 10px; border-radius: 50%; }
  .line { display: inline-block; width: 16px; height: 0; border-top: 2px solid; }
  #panel { width: 360px; max-width: 45%; border-left: 1px solid #d5d9e0; background: #fff;
           overflow: auto; padding: 12px 14px; }
  #panel h2 { font-size: 15px; margin: 0 0 8px; }
  #panel .meta { color: #5b6475; margin: 2px 0; }
  #panel .content { white-space: pre-wrap; word-wrap: break-word; background: #f6f7f9;
                    border-radius: 6px; padding: 8px; margin: 8px 0; }
  #panel .tag { display: inline-block; background: #eef1f6; border-radius: 10px;
                padding: 1px 8px; margin: 2px 4px 2px 0; }
  #panel button { font: inherit; border: 1px solid #d5d9e0; background: #fff; border-radius: 6px;
                  padding: 2px 6px; margin: 2px 0; cursor: pointer; text-align: left;
                  max-width: 100%; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
  #panel ul { list-style: none; padding: 0; margin: 4px 0; }
  #hint { color: #5b6475; }
</style>
</head>
<body>
<div id="app">
  <div id="stage">
    <canvas id="graph" aria-label="memory graph"></canvas>
    <div id="bar">
      <span id="counts" data-nodes="0" data-edges="0">…</span>
      <input id="filter" type="search" placeholder="Highlight memories containing…" aria-label="highlight">
      <span id="legend"></span>
    </div>
  </div>
  <aside id="panel"><p id="hint">Click a memory or a topic to see it here. Drag to move
    the view, scroll to zoom, drag a node to pin it.</p></aside>
</div>
<script type="application/json" id="memnest-data">__DATA__</script>
<script nonce="__NONCE__">
"use strict";
(function () {
  var data = JSON.parse(document.getElementById("memnest-data").textContent);
  var COLORS = { learning: "#2f7ed8", preference: "#8e44ad", decision: "#d35400",
                 pattern: "#16a085", general: "#5b6475" };
  var TOPIC = "#c9a227";
  var LINKS = { ABOUT: ["#c3c8d2", 1, false], RELATED_TO: ["#2f7ed8", 1.6, false],
                SUPERSEDES: ["#c0392b", 1.8, true], EXPLAINS: ["#27ae60", 1.6, true],
                SEPARATE: ["#e67e22", 1.4, false] };

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }

  // -- nodes and links --------------------------------------------------------------------
  var nodes = [], byKey = Object.create(null), links = [];
  data.memories.forEach(function (m) {
    var n = { key: "m" + m.id, kind: "memory", memory: m,
              label: m.content.length > 40 ? m.content.slice(0, 40) + "…" : m.content,
              r: 5 + 1.6 * (m.importance || 3), color: COLORS[m.category] || COLORS.general };
    nodes.push(n); byKey[n.key] = n;
  });
  data.topics.forEach(function (t) {
    var n = { key: "t" + t.name, kind: "topic", topic: t, label: "#" + t.name,
              r: 4 + Math.min(14, 2.5 * Math.sqrt(t.count)), color: TOPIC };
    nodes.push(n); byKey[n.key] = n;
  });
  function link(type, a, b) {
    var s = byKey[a], t = byKey[b];
    if (s && t && s !== t) links.push({ type: type, source: s, target: t });
  }
  if (data.topics.length) data.memories.forEach(function (m) {
    m.tags.forEach(function (tag) { link("ABOUT", "m" + m.id, "t" + tag); });
  });
  data.edges.forEach(function (e) { link(e.type, "m" + e.from, "m" + e.to); });
  data.separate.forEach(function (p) { link("SEPARATE", "m" + p[0], "m" + p[1]); });
  var degree = Object.create(null);
  links.forEach(function (l) {
    degree[l.source.key] = (degree[l.source.key] || 0) + 1;
    degree[l.target.key] = (degree[l.target.key] || 0) + 1;
  });

  // -- header: counts and legend ------------------------------------------------------------
  var counts = document.getElementById("counts");
  var relationCount = data.edges.length + data.separate.length;
  counts.textContent = nodes.length + " nodes: " + data.memories.length + " memories, " +
    data.topics.length + " topics · " + links.length + " links (" + relationCount +
    " between memories)";
  counts.setAttribute("data-nodes", String(nodes.length));
  counts.setAttribute("data-edges", String(links.length));
  if (data.workspace_name) document.title = "memnest graph: " + data.workspace_name;
  var legend = document.getElementById("legend");
  Object.keys(COLORS).forEach(function (c) {
    var k = el("span", null, "key"), s = el("span", null, "swatch");
    s.style.background = COLORS[c]; k.appendChild(s); k.appendChild(el("span", c));
    legend.appendChild(k);
  });
  var tk = el("span", null, "key"), ts = el("span", null, "swatch");
  ts.style.background = TOPIC; ts.style.borderRadius = "2px";
  tk.appendChild(ts); tk.appendChild(el("span", "topic")); legend.appendChild(tk);
  Object.keys(LINKS).forEach(function (type) {
    if (type === "ABOUT") return;
    var k = el("span", null, "key"), s = el("span", null, "line");
    s.style.borderTopColor = LINKS[type][0];
    if (type === "SEPARATE") s.style.borderTopStyle = "dashed";
    k.appendChild(s); k.appendChild(el("span", type === "SEPARATE" ? "keep separate" : type));
    legend.appendChild(k);
  });

  // -- layout: a force simulation with grid-bucketed repulsion ------------------------------
  var golden = Math.PI * (3 - Math.sqrt(5));
  nodes.forEach(function (n, i) {
    var radius = 12 * Math.sqrt(i + 0.5);
    n.x = radius * Math.cos(i * golden); n.y = radius * Math.sin(i * golden);
    n.vx = 0; n.vy = 0; n.fixed = false;
  });
  var alpha = 1, CELL = 90, REPULSE = 1800;
  function tick() {
    var grid = new Map(), i, j, n;
    for (i = 0; i < nodes.length; i++) {
      n = nodes[i];
      var key = Math.floor(n.x / CELL) + "," + Math.floor(n.y / CELL);
      var cell = grid.get(key);
      if (!cell) { cell = []; grid.set(key, cell); }
      cell.push(n);
    }
    for (i = 0; i < nodes.length; i++) {
      n = nodes[i];
      var cx = Math.floor(n.x / CELL), cy = Math.floor(n.y / CELL);
      for (var dx = -1; dx <= 1; dx++) for (var dy = -1; dy <= 1; dy++) {
        var near = grid.get((cx + dx) + "," + (cy + dy));
        if (!near) continue;
        for (j = 0; j < near.length; j++) {
          var o = near[j];
          if (o === n) continue;
          var ddx = n.x - o.x, ddy = n.y - o.y, d2 = ddx * ddx + ddy * ddy;
          if (d2 > CELL * CELL) continue;
          if (d2 < 0.01) { ddx = Math.random() - 0.5; ddy = Math.random() - 0.5; d2 = 0.5; }
          var f = REPULSE / d2 * alpha;
          n.vx += ddx * f / Math.sqrt(d2); n.vy += ddy * f / Math.sqrt(d2);
        }
      }
      n.vx -= n.x * 0.004 * alpha; n.vy -= n.y * 0.004 * alpha;
    }
    for (i = 0; i < links.length; i++) {
      var l = links[i], s = l.source, t = l.target;
      var lx = t.x - s.x, ly = t.y - s.y, dist = Math.sqrt(lx * lx + ly * ly) || 1;
      var rest = l.type === "ABOUT" ? 70 : 55;
      var k = (dist - rest) / dist * 0.05 * alpha /
              Math.max(1, Math.min(degree[s.key], degree[t.key]));
      s.vx += lx * k; s.vy += ly * k; t.vx -= lx * k; t.vy -= ly * k;
    }
    for (i = 0; i < nodes.length; i++) {
      n = nodes[i];
      if (n.fixed) { n.vx = n.vy = 0; continue; }
      n.vx *= 0.6; n.vy *= 0.6;
      var speed = Math.sqrt(n.vx * n.vx + n.vy * n.vy);
      if (speed > 30) { n.vx *= 30 / speed; n.vy *= 30 / speed; }
      n.x += n.vx; n.y += n.vy;
    }
    alpha *= 0.985;
  }

  // -- drawing --------------------------------------------------------------------------------
  var canvas = document.getElementById("graph"), ctx = canvas.getContext("2d");
  var view = { x: 0, y: 0, k: 1 }, width = 0, height = 0, ratio = 1;
  var selected = null, hovered = null, query = "", fitted = false;
  function resize() {
    var box = canvas.getBoundingClientRect();
    ratio = window.devicePixelRatio || 1;
    width = Math.max(1, box.width); height = Math.max(1, box.height);
    canvas.width = Math.round(width * ratio); canvas.height = Math.round(height * ratio);
    draw();
  }
  function fit() {
    if (!nodes.length) { view = { x: width / 2, y: height / 2, k: 1 }; return; }
    var minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
    nodes.forEach(function (n) {
      minX = Math.min(minX, n.x - n.r); maxX = Math.max(maxX, n.x + n.r);
      minY = Math.min(minY, n.y - n.r); maxY = Math.max(maxY, n.y + n.r);
    });
    // Keep clear of the header bar floating over the top of the canvas.
    var top = Math.min(height / 3, document.getElementById("bar").getBoundingClientRect().bottom -
                                   canvas.getBoundingClientRect().top + 4);
    var room = Math.max(1, height - top);
    var k = Math.min(2, 0.92 * Math.min(width / (maxX - minX + 1), room / (maxY - minY + 1)));
    view = { k: k, x: width / 2 - k * (minX + maxX) / 2,
             y: top + room / 2 - k * (minY + maxY) / 2 };
  }
  function matches(n) {
    if (!query) return true;
    var text = n.kind === "memory" ? n.memory.content + " " + n.memory.tags.join(" ") : n.topic.name;
    return text.toLowerCase().indexOf(query) >= 0;
  }
  function draw() {
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.setTransform(ratio * view.k, 0, 0, ratio * view.k, ratio * view.x, ratio * view.y);
    links.forEach(function (l) {
      var style = LINKS[l.type], s = l.source, t = l.target;
      var lit = selected && (s === selected || t === selected);
      ctx.globalAlpha = selected && !lit ? 0.25 : 1;
      ctx.strokeStyle = style[0]; ctx.lineWidth = (lit ? 2 : 1) * style[1] / view.k;
      ctx.setLineDash(l.type === "SEPARATE" ? [5 / view.k, 4 / view.k] : []);
      ctx.beginPath(); ctx.moveTo(s.x, s.y); ctx.lineTo(t.x, t.y); ctx.stroke();
      if (style[2]) {
        var dx = t.x - s.x, dy = t.y - s.y, d = Math.sqrt(dx * dx + dy * dy) || 1;
        var ux = dx / d, uy = dy / d, tipX = t.x - ux * t.r, tipY = t.y - uy * t.r;
        var size = 7 / Math.sqrt(view.k);
        ctx.setLineDash([]); ctx.fillStyle = style[0]; ctx.beginPath();
        ctx.moveTo(tipX, tipY);
        ctx.lineTo(tipX - ux * size - uy * size * 0.5, tipY - uy * size + ux * size * 0.5);
        ctx.lineTo(tipX - ux * size + uy * size * 0.5, tipY - uy * size - ux * size * 0.5);
        ctx.closePath(); ctx.fill();
      }
    });
    ctx.setLineDash([]);
    nodes.forEach(function (n) {
      var dim = (selected && n !== selected && !neighbour(n)) || !matches(n);
      ctx.globalAlpha = dim ? 0.3 : 1;
      ctx.fillStyle = n.color; ctx.beginPath();
      if (n.kind === "topic") ctx.rect(n.x - n.r, n.y - n.r, 2 * n.r, 2 * n.r);
      else ctx.arc(n.x, n.y, n.r, 0, 2 * Math.PI);
      ctx.fill();
      if (n === selected || n === hovered || (query && !dim)) {
        ctx.lineWidth = 2.5 / view.k; ctx.strokeStyle = "#1d2330"; ctx.stroke();
      }
      if (n.memory && n.memory.superseded) {
        ctx.lineWidth = 1.5 / view.k; ctx.strokeStyle = "#c0392b"; ctx.stroke();
      }
    });
    ctx.globalAlpha = 1;
    if (view.k > 0.7 || nodes.length < 60) {
      ctx.fillStyle = "#1d2330"; ctx.font = (11 / view.k) + "px system-ui, sans-serif";
      nodes.forEach(function (n) {
        if (n.kind === "topic" || n === selected || n === hovered || nodes.length < 60)
          ctx.fillText(n.label, n.x + n.r + 3 / view.k, n.y + 4 / view.k);
      });
    }
  }
  var neighbours = new Set();
  function neighbour(n) { return neighbours.has(n); }

  // -- the detail panel -----------------------------------------------------------------------
  var panel = document.getElementById("panel");
  function section(title) { panel.appendChild(el("h3", title)); }
  function jump(n, text) {
    var b = el("button", text);
    b.title = text;
    b.addEventListener("click", function () { select(n); });
    return b;
  }
  function select(n) {
    selected = n || null;
    neighbours = new Set();
    links.forEach(function (l) {
      if (l.source === n) neighbours.add(l.target);
      if (l.target === n) neighbours.add(l.source);
    });
    while (panel.firstChild) panel.removeChild(panel.firstChild);
    if (!n) { panel.appendChild(el("p", "Nothing selected.", "meta")); draw(); return; }
    if (n.kind === "memory") {
      var m = n.memory;
      panel.appendChild(el("h2", "Memory #" + m.id));
      panel.appendChild(el("p", "Category: " + m.category + " · importance " + m.importance +
                                " · accessed " + m.access_count + "×", "meta"));
      panel.appendChild(el("p", "Created " + m.created_at + " · updated " + m.updated_at, "meta"));
      if (m.superseded) panel.appendChild(el("p", "Superseded by a newer memory.", "meta"));
      var content = el("div", m.content, "content");
      content.id = "detail-content";
      panel.appendChild(content);
      if (m.tags.length) {
        var tags = el("div");
        m.tags.forEach(function (t) {
          var topic = byKey["t" + t];
          tags.appendChild(topic ? jump(topic, "#" + t) : el("span", "#" + t, "tag"));
          tags.appendChild(document.createTextNode(" "));
        });
        panel.appendChild(tags);
      }
      var related = links.filter(function (l) {
        return l.type !== "ABOUT" && (l.source === n || l.target === n);
      });
      if (related.length) {
        section("Links");
        var list = el("ul");
        related.forEach(function (l) {
          var other = l.source === n ? l.target : l.source;
          var how = l.type === "SEPARATE" ? "kept separate from"
            : l.type === "RELATED_TO" ? "related to"
            : l.source === n ? (l.type === "SUPERSEDES" ? "supersedes" : "explains")
            : (l.type === "SUPERSEDES" ? "superseded by" : "explained by");
          var item = el("li", how + " ");
          item.appendChild(jump(other, "#" + other.memory.id + " " + other.label));
          list.appendChild(item);
        });
        panel.appendChild(list);
      }
    } else {
      panel.appendChild(el("h2", "Topic #" + n.topic.name));
      panel.appendChild(el("p", n.topic.count + " memories", "meta"));
      var members = el("ul");
      links.forEach(function (l) {
        if (l.target === n && l.type === "ABOUT") {
          var li = el("li"); li.appendChild(jump(l.source, "#" + l.source.memory.id + " " +
                                                           l.source.label));
          members.appendChild(li);
        }
      });
      panel.appendChild(members);
    }
    draw();
  }

  // -- interaction ---------------------------------------------------------------------------
  function toWorld(px, py) { return { x: (px - view.x) / view.k, y: (py - view.y) / view.k }; }
  function nodeAt(px, py) {
    var p = toWorld(px, py), best = null, bestD = Infinity;
    for (var i = 0; i < nodes.length; i++) {
      var n = nodes[i], dx = n.x - p.x, dy = n.y - p.y, d = dx * dx + dy * dy;
      var reach = n.r + 3 / view.k;
      if (d <= reach * reach && d < bestD) { best = n; bestD = d; }
    }
    return best;
  }
  var drag = null;
  canvas.addEventListener("pointerdown", function (ev) {
    var box = canvas.getBoundingClientRect(), px = ev.clientX - box.left, py = ev.clientY - box.top;
    var n = nodeAt(px, py);
    drag = { node: n, px: px, py: py, vx: view.x, vy: view.y, moved: false };
    canvas.classList.add("dragging");
    if (canvas.setPointerCapture) try { canvas.setPointerCapture(ev.pointerId); } catch (e) {}
  });
  canvas.addEventListener("pointermove", function (ev) {
    var box = canvas.getBoundingClientRect(), px = ev.clientX - box.left, py = ev.clientY - box.top;
    if (!drag) {
      var h = nodeAt(px, py);
      if (h !== hovered) { hovered = h; canvas.title = h ? h.label : ""; draw(); }
      return;
    }
    if (Math.abs(px - drag.px) + Math.abs(py - drag.py) > 3) drag.moved = true;
    if (drag.node && drag.moved) {
      var p = toWorld(px, py);
      drag.node.x = p.x; drag.node.y = p.y; drag.node.fixed = true;
      alpha = Math.max(alpha, 0.1); wake();
    } else if (!drag.node) {
      view.x = drag.vx + px - drag.px; view.y = drag.vy + py - drag.py;
    }
    draw();
  });
  function release() {
    if (drag && !drag.moved) select(drag.node);
    drag = null; canvas.classList.remove("dragging");
  }
  canvas.addEventListener("pointerup", release);
  canvas.addEventListener("pointercancel", function () { drag = null; });
  canvas.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    var box = canvas.getBoundingClientRect(), px = ev.clientX - box.left, py = ev.clientY - box.top;
    var k = Math.max(0.05, Math.min(8, view.k * Math.exp(-ev.deltaY * 0.0015)));
    view.x = px - (px - view.x) * k / view.k; view.y = py - (py - view.y) * k / view.k;
    view.k = k; fitted = true; draw();
  }, { passive: false });
  document.getElementById("filter").addEventListener("input", function (ev) {
    query = ev.target.value.trim().toLowerCase(); draw();
  });
  window.addEventListener("resize", resize);

  // -- run ----------------------------------------------------------------------------------
  var running = false, started = Date.now();
  function frame() {
    var budget = Date.now() + 12;
    do { tick(); } while (Date.now() < budget && alpha > 0.02);
    if (!fitted && (alpha < 0.05 || Date.now() - started > 1500)) { fit(); fitted = true; }
    else if (!fitted) fit();
    draw();
    if (alpha > 0.02) requestAnimationFrame(frame); else running = false;
  }
  function wake() { if (!running) { running = true; requestAnimationFrame(frame); } }
  resize();
  // Settle most of the layout before the first paint, within a time budget.
  var until = Date.now() + 400;
  while (alpha > 0.05 && Date.now() < until) tick();
  fit();
  draw();
  wake();

  // A small hook for scripted checks (tests, automation): where a node is drawn, and select().
  window.memnestGraph = {
    nodeCount: nodes.length, linkCount: links.length,
    position: function (key) {
      var n = byKey[key]; if (!n) return null;
      var box = canvas.getBoundingClientRect();
      return { x: box.left + view.x + n.x * view.k, y: box.top + view.y + n.y * view.k };
    },
    settle: function () { while (alpha > 0.02) tick(); fitted = true; fit(); draw(); },
    select: function (key) { select(byKey[key] || null); }
  };
})();
</script>
</body>
</html>
"""
