"""The trajectory viewer's page: one Jinja template with its CSS and JS inline, so a page is a single file.

The page is rendered whole on the server; the script only reads the DOM. It registers one handler, on the
document, for keys, clicks and the search box (no listener per event), so a 500-event page stays light.
"""

from __future__ import annotations

from markupsafe import Markup

CSS = Markup("""
:root{--bg:#f7f7f5;--card:#fff;--ink:#1d1f21;--mute:#6b7075;--line:#e2e2de;--dev:#2f6fdf;--mentor:#d08a00;
--nav:#8a8f95;--ver:#7b4fd0;--bad:#c62828;--good:#2e7d32;--stuck:#e0527a;--dir:#00897b;--hint:#ffefb0}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,
sans-serif}
pre,code,kbd,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;font-size:12.5px}
header{position:sticky;top:0;z-index:5;background:#202428;color:#eef;padding:10px 18px 8px;
box-shadow:0 2px 6px rgba(0,0,0,.25)}
header h1{display:inline;font-size:16px;font-weight:500;margin:0 10px 0 0}
header h1 b{font-weight:700}
.chip{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;font-weight:600;margin-right:6px;
vertical-align:1px}
.st-pass{background:#2e7d32;color:#fff}.st-fail,.st-error{background:#c62828;color:#fff}
.st-stuck{background:#e0527a;color:#fff}.st-other{background:#78909c;color:#fff}
.synth{background:#ffb300;color:#222}
dl.summary{display:flex;flex-wrap:wrap;gap:4px 20px;margin:6px 0}
dl.summary div{display:flex;gap:6px}dl.summary dt{color:#9aa3ad}dl.summary dd{margin:0;font-weight:600}
.tools{display:flex;align-items:center;gap:12px;flex-wrap:wrap}
#q{width:320px;padding:4px 8px;border-radius:4px;border:1px solid #555;background:#111;color:#fff;font-size:13px}
#qcount{color:#ffd54f;font-size:12px;min-width:90px}
.keys{color:#9aa3ad;font-size:12px}
kbd{background:#3a4047;border:1px solid #555;border-radius:3px;padding:0 4px;color:#fff}
#marks{margin:10px 18px;font-size:13px}
#marks summary{cursor:pointer;color:var(--mute)}
#marks ul{margin:4px 0 0;padding-left:20px;columns:2;column-gap:30px}
#marks a{color:inherit}
#events{list-style:none;margin:0;padding:8px 18px 60vh}
#events>li{background:var(--card);border:1px solid var(--line);border-left:5px solid var(--nav);border-radius:4px;
margin:6px 0;padding:6px 10px;scroll-margin-top:150px}
#events>li.r-dev{border-left-color:var(--dev)}#events>li.r-mentor{border-left-color:var(--mentor)}
#events>li.r-verifier{border-left-color:var(--ver)}
#events>li.fail{background:#fff6f6}
#events>li.match{border-color:#f9a825}
#events>li.hint{background:var(--hint);border:2px solid var(--mentor);border-left-width:8px}
#events>li.stuck{box-shadow:inset 4px 0 0 var(--stuck)}
#events>li.stuck-start{border-top:3px solid var(--stuck)}#events>li.stuck-end{border-bottom:3px solid var(--stuck)}
#events>li.direction-change{outline:2px dashed var(--dir);outline-offset:-2px}
#events>li.current{outline:3px solid #1565c0;outline-offset:1px}
#events>li.hidden{display:none}
.eh{display:flex;align-items:baseline;gap:8px;flex-wrap:wrap;font-size:12.5px;color:var(--mute)}
.eh .seq{font-weight:700;color:var(--ink);text-decoration:none;min-width:36px}
.eh .kind{font-weight:700;color:var(--ink)}
.eh .when{margin-left:auto}
.b{border-radius:3px;padding:0 6px;font-size:11.5px;font-weight:600;color:#fff;background:#78909c}
.b.bad{background:var(--bad)}.b.good{background:var(--good)}.b.stuck{background:var(--stuck)}
.b.dir{background:var(--dir)}.b.hint{background:var(--mentor)}.b.warn{background:#ef6c00}
.blk{margin:4px 0 0}
.lbl{font-size:11.5px;color:var(--mute);text-transform:uppercase;letter-spacing:.04em}
pre{margin:2px 0 0;padding:6px 8px;background:#f3f3f0;border-radius:3px;white-space:pre-wrap;word-break:break-word;
max-height:none}
.text{white-space:pre-wrap;word-break:break-word}
.reasoning{color:#444;font-style:italic}
.hinttext{font-size:14px;font-weight:500}
details.fold>summary{cursor:pointer;color:var(--mute);font-size:12.5px}
details.fold>summary .pv{color:var(--ink);font-family:ui-monospace,monospace}
ul.calls{margin:2px 0 0;padding-left:18px}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:1px 12px;margin:4px 0 0;font-size:12.5px}
dl.facts dt{color:var(--mute)}dl.facts dd{margin:0}
.note{font-size:12px;color:#ef6c00}
::highlight(q){background:#ffe066;color:#000}
""")

JS = Markup("""
(() => {
  "use strict";
  const evs = Array.from(document.getElementById("events").children);
  const box = document.getElementById("q");
  const counter = document.getElementById("qcount");
  const MARK = ".nav-mark";
  let cur = -1, texts = null, timer = 0, opened = [];

  function go(i, scroll = true) {
    if (i < 0 || i >= evs.length) return;
    if (cur >= 0) evs[cur].classList.remove("current");
    cur = i;
    evs[i].classList.add("current");
    if (scroll) evs[i].scrollIntoView({block: "nearest"});
  }
  function step(dir, sel) {
    const from = cur < 0 && dir < 0 ? evs.length : cur;
    for (let i = from + dir; i >= 0 && i < evs.length; i += dir) {
      const e = evs[i];
      if (!e.classList.contains("hidden") && (!sel || e.matches(sel))) return go(i);
    }
  }
  function paint(q) {  // highlight the matches without touching the DOM (CSS Custom Highlight API)
    if (!window.CSS || !CSS.highlights || typeof Highlight !== "function") return;
    CSS.highlights.delete("q");
    if (!q) return;
    const ranges = [];
    for (const e of evs) {
      if (e.classList.contains("hidden")) continue;
      const walk = document.createTreeWalker(e, NodeFilter.SHOW_TEXT);
      for (let t = walk.nextNode(); t && ranges.length < 5000; t = walk.nextNode()) {
        const s = t.data.toLowerCase();
        for (let k = s.indexOf(q); k >= 0 && ranges.length < 5000; k = s.indexOf(q, k + q.length)) {
          try { const r = new Range(); r.setStart(t, k); r.setEnd(t, k + q.length); ranges.push(r); } catch (_) {}
        }
      }
    }
    CSS.highlights.set("q", new Highlight(...ranges));
  }
  function filter(raw, fromUrl) {
    const q = raw.trim().toLowerCase();
    texts = texts || evs.map((e) => e.textContent.toLowerCase());
    for (const d of opened) d.open = false;
    opened = [];
    let n = 0;
    for (let i = 0; i < evs.length; i++) {
      const e = evs[i], hit = !q || texts[i].includes(q);
      e.classList.toggle("hidden", !hit);
      e.classList.toggle("match", hit && !!q);
      if (!hit || !q) continue;
      n++;
      for (const d of e.querySelectorAll("details:not([open])"))
        if (d.textContent.toLowerCase().includes(q)) { d.open = true; opened.push(d); }
    }
    document.body.classList.toggle("searching", !!q);
    counter.textContent = q ? n + " of " + evs.length + " events" : "";
    paint(q);
    if (!fromUrl) {
      const url = q ? "#q=" + encodeURIComponent(raw.trim()) : location.pathname + location.search;
      try { history.replaceState(null, "", url); } catch (_) {}
    }
  }
  function handle(ev) {  // the page's one listener: keys, clicks and the search box, delegated from the document
    if (ev.type === "input") {
      if (ev.target !== box) return;
      clearTimeout(timer);
      timer = setTimeout(() => filter(box.value), 120);
      return;
    }
    if (ev.type === "click") {
      const li = ev.target.closest && ev.target.closest("#events > li");
      if (li) go(evs.indexOf(li), false);
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.target === box) {
      if (ev.key === "Escape") { box.value = ""; filter(""); box.blur(); }
      else if (ev.key === "Enter") { clearTimeout(timer); filter(box.value); box.blur(); cur = -1; step(1); }
      return;
    }
    if (ev.target.closest && ev.target.closest("input, textarea, select")) return;
    const k = ev.key;
    if (k === "j" || k === "ArrowDown") step(1);
    else if (k === "k" || k === "ArrowUp") step(-1);
    else if (k === "n") step(1, MARK);
    else if (k === "N") step(-1, MARK);
    else if (k === "o" && cur >= 0) { for (const d of evs[cur].querySelectorAll("details")) d.open = !d.open; }
    else if (k === "/") { box.focus(); box.select(); }
    else if (k === "Escape" && box.value) { box.value = ""; filter(""); }
    else return;
    ev.preventDefault();
  }
  for (const type of ["keydown", "input", "click"]) document.addEventListener(type, handle);

  // Links from the report: #q=<text> (or ?q=) prefills the search, #e<seq> selects an event.
  const params = new URLSearchParams(location.hash.slice(1) || location.search.slice(1));
  const q0 = params.get("q");
  if (q0) { box.value = q0; filter(q0, true); }
  const at = /^#e(\\d+)$/.exec(location.hash);
  if (at) go(evs.indexOf(document.getElementById("e" + at[1])));
  document.documentElement.dataset.viewer = "ready";
})();
""")

TEMPLATE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ milestone_id }} · {{ run_id }} · {{ repo }} — {{ summary.status }}</title>
<style>{{ css }}</style>
</head>
<body>
<header>
<div><h1>{{ repo }} / {{ run_id }} / <b>{{ milestone_id }}</b></h1>
<span class="chip st-{{ status_class }}">{{ summary.status }}</span>
{% if summary.synthetic %}<span class="chip synth" \
title="produced by a scripted agent, not a model: label, never train">synthetic</span>{% endif %}
</div>
<dl class="summary">
{% for label, value in facts %}<div><dt>{{ label }}</dt><dd>{{ value }}</dd></div>
{% endfor %}
</dl>
<div class="tools">
<input id="q" type="search" placeholder="search events  ( / )" autocomplete="off" spellcheck="false" \
aria-label="search events">
<span id="qcount"></span>
<span class="keys"><kbd>j</kbd>/<kbd>k</kbd> or <kbd>↓</kbd>/<kbd>↑</kbd> next/previous event ·
<kbd>n</kbd>/<kbd>N</kbd> next/previous hint or stuck mark · <kbd>o</kbd> fold/unfold ·
<kbd>/</kbd> search · <kbd>Esc</kbd> clear</span>
</div>
</header>
{% if marks %}
<nav id="marks"><details open><summary>{{ marks|length }} marks: hints, stuck stretches, direction changes</summary>
<ul>{% for mark in marks %}<li><a href="#e{{ mark.seq }}">#{{ mark.seq }}</a> \
<span class="b {{ mark.cls }}">{{ mark.badge }}</span> {{ mark.text }}</li>{% endfor %}</ul></details></nav>
{% endif %}
{% if not analytics %}<p class="note" style="margin:8px 18px">{{ analytics_note }}</p>{% endif %}
<ol id="events">
{% for event in events %}
<li id="e{{ event.seq }}" class="{{ event.cls }}" data-seq="{{ event.seq }}"\
{% if event.stuck %} data-stuck="{{ event.stuck }}"{% endif %}>
<div class="eh"><a class="seq" href="#e{{ event.seq }}">#{{ event.seq }}</a>\
<span>turn {{ event.turn }}</span><span>{{ event.role }}</span><span class="kind">{{ event.kind }}</span>
{% for cls, text, title in event.badges %}
<span class="b {{ cls }}"{% if title %} title="{{ title }}"{% endif %}>{{ text }}</span>
{% endfor %}
<span class="when">{{ event.when }}</span></div>
{% for block in event.blocks %}
{% if block.type == "text" %}
<div class="blk text {{ block.cls }}">{{ block.text }}</div>
{% elif block.type == "pre" and block.fold %}
<details class="fold blk {{ block.cls }}"><summary>{{ block.label }} · {{ block.lines }} lines, \
{{ block.chars }} chars <span class="pv">{{ block.preview }}</span></summary><pre>{{ block.text }}</pre></details>
{% elif block.type == "pre" %}
<div class="blk {{ block.cls }}"><span class="lbl">{{ block.label }}</span><pre>{{ block.text }}</pre></div>
{% elif block.type == "calls" %}
<div class="blk"><span class="lbl">tool calls</span><ul class="calls">
{% for call in block.calls %}
<li><code>{{ call.name }}</code>{% if call.seq is not none %} → \
<a href="#e{{ call.seq }}">#{{ call.seq }}</a>{% endif %}
{% if call.error %} <span class="b bad">{{ call.error }}</span>{% endif %}
{% if call.args %}<pre>{{ call.args }}</pre>{% endif %}
</li>
{% endfor %}
</ul></div>
{% elif block.type == "facts" %}
<dl class="facts blk">{% for label, value in block.facts %}<dt>{{ label }}</dt><dd>{{ value }}</dd>{% endfor %}</dl>
{% endif %}
{% if block.note is defined and block.note %}<div class="note">{{ block.note }}</div>{% endif %}
{% endfor %}
</li>
{% endfor %}
</ol>
<script>{{ js }}</script>
</body>
</html>
"""
