"""The HTML page of ``hlodump.report``: markup, style and the script that builds the module
table and, on demand, one module's charts (plotly.js) and tables.

Placeholders: ``%%TITLE%%`` (HTML-escaped), ``%%PLOTLY%%`` (plotly.min.js), ``%%INDEX%%`` (the
module table, JSON escaped for a script block), ``%%DETAILS%%`` (one ``<script
type="application/json" id="m-ID">`` per module, parsed only when that module is opened).

Everything from the dump is inserted with ``textContent`` or as plotly data (numbers; the few
strings plotly shows pass through ``esc``, since plotly reads a little HTML in labels).
"""

PAGE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; font-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%%TITLE%%</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#222;background:#fafafa}
header{padding:10px 18px;background:#263238;color:#eceff1}
header h1{font-size:18px;margin:0 0 4px 0}
header .sub{font-size:12px;color:#b0bec5}
main{padding:10px 18px}
#controls{display:flex;gap:12px;align-items:center;margin:6px 0}
#search{width:340px;padding:4px 6px;font-size:13px}
#count{font-size:12px;color:#555}
#tablewrap{max-height:34vh;overflow:auto;border:1px solid #ddd;background:#fff}
table{border-collapse:collapse;font-size:12px}
#modules{width:100%}
th{position:sticky;top:0;background:#eceff1;text-align:left;padding:3px 8px;cursor:pointer;white-space:nowrap;user-select:none}
th.num,td.num{text-align:right}
td{padding:2px 8px;border-bottom:1px solid #f0f0f0;white-space:nowrap;max-width:520px;overflow:hidden;text-overflow:ellipsis}
#detail td:not(.num){white-space:normal;overflow-wrap:break-word;max-width:420px;min-width:3em}
#detail td.long{overflow-wrap:anywhere;min-width:7em}
#detail td.word{white-space:nowrap;overflow-wrap:normal}
@media (max-width:1280px){#detail table{font-size:11px} #detail td,#detail th{padding:2px 4px} #detail td:not(.num){max-width:300px}}
#detail th{white-space:normal}
#modules tbody tr{cursor:pointer}
#modules tbody tr:hover{background:#fff3e0}
#modules tbody tr.sel{background:#ffe0b2}
th.sorted-asc::after{content:" \25B2"} th.sorted-desc::after{content:" \25BC"}
#detail{margin-top:12px}
#detail h2{font-size:16px;margin:6px 0 2px 0}
#detail h3{font-size:13px;margin:14px 0 4px 0;color:#37474f}
.facts{font-size:12px;color:#444;margin:2px 0}
.row{display:flex;gap:12px;align-items:flex-start;flex-wrap:wrap}
.chart{flex:1 1 520px;min-width:420px;height:380px;background:#fff;border:1px solid #ddd}
#hover{flex:0 0 400px;height:380px;overflow:auto;font:11px ui-monospace,monospace;white-space:pre-wrap;background:#fff;border:1px solid #ddd;padding:6px;box-sizing:border-box}
.tables{display:flex;gap:16px;flex-wrap:wrap}
.tables>div{background:#fff;border:1px solid #ddd;padding:4px 6px;overflow:auto;max-width:100%;box-sizing:border-box}
.note{font-size:12px;color:#6d4c41;margin:2px 0}
.advice{font-size:13px;margin:6px 0;padding:4px 8px;border-left:3px solid #2e7d32;background:#f1f8e9}
.advice ul{margin:2px 0 0 0;padding-left:18px}
.muted{color:#888}
.chart.spans{height:340px;flex:none}
#span-info{font:11px ui-monospace,monospace;white-space:pre-wrap;background:#fff;border:1px solid #ddd;padding:6px;margin:4px 0;min-height:3em}
#span-table tr.sel{background:#ffe0b2}
#span-table{max-height:320px}
#span-table tbody tr{cursor:pointer}
.gcontrols{display:flex;gap:10px;align-items:center;margin:4px 0}
#graph-focus{width:320px;padding:3px 6px;font-size:12px}
#graph{overflow:auto;background:#fff;border:1px solid #ddd;max-height:760px}
#graph svg{font-family:ui-monospace,monospace;display:block}
.gnode{cursor:pointer} .gnode:hover rect{stroke:#e65100;stroke-width:2}
.gnode .expand{cursor:pointer;fill:#1565c0;font-weight:700}
</style></head>
<body>
<header><h1 id="title"></h1><div class="sub" id="sub"></div><div class="sub" id="device"></div></header>
<main>
<div id="controls"><input id="search" type="search" placeholder="filter modules (name, key, dump)" aria-label="filter modules"><span id="count"></span></div>
<div id="tablewrap"><table id="modules"><thead></thead><tbody></tbody></table></div>
<section id="detail"></section>
</main>
<script>%%PLOTLY%%</script>
<script type="application/json" id="index">%%INDEX%%</script>
%%DETAILS%%
<script>
"use strict";
const IDX = JSON.parse(document.getElementById("index").textContent);
const COLORS = IDX.colors;
// the mirror of hlodump.units: bytes in IEC units as XLA prints them, FLOPs and rates in SI,
// times with their unit, any other figure to 4 significant digits; a missing value is a dash
const MISSING = "\u2014";
const DEVICE = IDX.device || {};
const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
function missing(v) { return v === null || v === undefined || (typeof v === "number" && Number.isNaN(v)); }
function fmtBytes(b) {
  if (missing(b)) return MISSING;
  if (typeof b !== "number") return String(b);
  if (!Number.isFinite(b)) return "unknown";
  let v = Math.abs(b), i = 0;
  if (v < 1024) return (b < 0 ? "-" : "") + Math.round(v) + "B";
  while (v >= 1024 && i < UNITS.length - 1) { v /= 1024; i++; }
  return (b < 0 ? "-" : "") + v.toFixed(i === 1 ? 1 : 2) + UNITS[i];
}
const SI = [["E", 1e18], ["P", 1e15], ["T", 1e12], ["G", 1e9], ["M", 1e6], ["k", 1e3]];
function fmtSI(v, unit) {
  unit = unit || "";
  if (missing(v)) return MISSING;
  if (typeof v !== "number") return String(v);
  if (!Number.isFinite(v)) return "unknown";
  for (const [p, scale] of SI) if (Math.abs(v) >= scale) return (v / scale).toFixed(2) + " " + p + unit;
  return ((Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(3)))) + " " + unit).trim();
}
function fmtSecs(v) {
  if (missing(v)) return MISSING;
  if (typeof v !== "number") return String(v);
  if (!Number.isFinite(v)) return "unknown";
  const a = Math.abs(v);
  if (a === 0) return "0 s";
  if (a >= 1) return v.toFixed(2) + " s";
  if (a >= 1e-3) return (v / 1e-3).toFixed(2) + " ms";
  if (a >= 1e-6) return (v / 1e-6).toFixed(2) + " \u00b5s";
  return (v / 1e-9).toFixed(1) + " ns";
}
// hlodump.units.format_number: an integer with separators, anything else as Python's "%.4g"
function fmtNum(v) {
  if (missing(v)) return MISSING;
  if (typeof v !== "number") return String(v);
  if (!Number.isFinite(v)) return "unknown";
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return v.toLocaleString("en-US");
  const [m, x] = v.toExponential(3).split("e"), e = Number(x);
  if (e < -4 || e >= 4) return m.replace(/\.?0+$/, "") + "e" + (e < 0 ? "-" : "+") + String(Math.abs(e)).padStart(2, "0");
  return String(Number(v.toPrecision(4)));
}
function fmtPct(v) { return missing(v) ? MISSING : (100 * v).toFixed(1) + "%"; }
// plotly reads a few HTML tags in labels: any dump text given to it goes through this
function esc(s) { return String(s === null || s === undefined ? "" : s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"); }
function el(tag, attrs, text) {
  const e = document.createElement(tag);
  if (attrs) for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}

// ------------------------------------------------------------------ the module table
const COLS = [
  {k: "name", t: "module"}, {k: "dump", t: "dump"}, {k: "module_id", t: "id", num: 1},
  {k: "peak", t: "peak in use", num: 1, b: 1}, {k: "xla_listed_peak", t: "XLA's listed peak", num: 1, b: 1},
  {k: "total", t: "allocated", num: 1, b: 1},
  {k: "argument", t: "argument", num: 1, b: 1}, {k: "output", t: "output", num: 1, b: 1},
  {k: "temp", t: "temp", num: 1, b: 1}, {k: "steps", t: "steps", num: 1},
  {k: "instructions", t: "instructions", num: 1},
  {k: "flops", t: "flops", num: 1, si: "FLOP"}, {k: "bytes_accessed", t: "bytes accessed", num: 1, b: 1},
  {k: "collective_bytes", t: "collective bytes", num: 1, b: 1},
  {k: "other_peak", t: "peak in use (compared)", num: 1, b: 1}, {k: "delta_peak", t: "\u0394 peak in use", num: 1, b: 1},
  {k: "errors", t: "errors", num: 1},
];
const ROWS = IDX.modules;
const SHOWN = COLS.filter(c => c.k === "name" || c.k === "errors" || ROWS.some(r => r[c.k] !== null && r[c.k] !== undefined));
let sortKey = null, sortDir = -1, selected = null;

function cell(r, c) {
  const v = r[c.k];
  if (c.k === "name") return (r.side === "b" ? "[compared] " : "") + v;
  if (c.b) return fmtBytes(v);
  if (c.si) return fmtSI(v, c.si);
  if (c.num) return fmtNum(v);
  return missing(v) ? MISSING : String(v);
}
function buildHead() {
  const tr = el("tr");
  for (const c of SHOWN) {
    const th = el("th", c.num ? {class: "num"} : null, c.t);
    th.dataset.k = c.k;
    th.addEventListener("click", () => { sortDir = sortKey === c.k ? -sortDir : (c.num ? -1 : 1); sortKey = c.k; buildBody(); });
    tr.appendChild(th);
  }
  document.querySelector("#modules thead").appendChild(tr);
}
function buildBody() {
  const q = document.getElementById("search").value.trim().toLowerCase();
  let rows = q ? ROWS.filter(r => (r.name + "\n" + r.key + "\n" + (r.dump || "")).toLowerCase().includes(q)) : ROWS.slice();
  if (sortKey) rows.sort((a, b) => {
    const x = a[sortKey], y = b[sortKey];
    if (x === y) return 0;
    if (x === null || x === undefined) return 1;
    if (y === null || y === undefined) return -1;
    return (x < y ? -1 : 1) * sortDir;
  });
  document.querySelectorAll("#modules th").forEach(th => {
    th.classList.toggle("sorted-asc", th.dataset.k === sortKey && sortDir > 0);
    th.classList.toggle("sorted-desc", th.dataset.k === sortKey && sortDir < 0);
  });
  const tb = document.querySelector("#modules tbody");
  const frag = document.createDocumentFragment();
  for (const r of rows) {
    const tr = el("tr", {"data-id": r.id, title: r.key});
    if (r.id === selected) tr.classList.add("sel");
    for (const c of SHOWN) tr.appendChild(el("td", c.num ? {class: "num"} : null, cell(r, c)));
    tr.addEventListener("click", () => openModule(r.id));
    frag.appendChild(tr);
  }
  tb.replaceChildren(frag);
  document.getElementById("count").textContent = rows.length + " of " + ROWS.length + " modules";
}

// ------------------------------------------------------------------ one module, on demand
const CACHE = new Map();
function detailOf(id) {
  if (!CACHE.has(id)) {
    const node = document.getElementById("m-" + id);
    CACHE.set(id, node ? JSON.parse(node.textContent) : null);
  }
  return CACHE.get(id);
}
function totals(t) {
  const n = t.x.length, out = new Array(n).fill(0);
  for (const [, ys] of t.cats) for (let i = 0; i < n; i++) out[i] += ys[i];
  return out;
}
function timelineFigure(d, ymax) {
  const t = d.timeline;
  const top = ymax || Math.max(1, ...totals(t));
  const data = t.cats.map(([cat, ys]) => ({
    type: "scatter", mode: "lines", x: t.x, y: ys, name: esc(cat), stackgroup: "one",
    line: {width: 0.6, shape: "hv", color: COLORS[cat] || "#999"}, fillcolor: COLORS[cat] || "#999",
    hovertemplate: "%{y:,} B<extra>" + esc(cat) + "</extra>",
  }));
  // labels inside the plot area, in a band above the highest step (the range leaves room):
  // never in the top margin, where plotly's toolbar sits
  const shapes = [], ann = [];
  const pk = d.peak, x0 = t.x.length ? t.x[0] : 0, x1 = t.x.length ? t.x[t.x.length - 1] : 0;
  const side = x => (x - x0 > (x1 - x0) / 2 ? "right" : "left");
  if (t.max_step !== undefined && t.max_step !== null) {
    ann.push({x: t.max_step, y: t.max_bytes, text: "peak in use " + fmtBytes(t.max_bytes) + " @ step " + t.max_step,
              showarrow: true, arrowhead: 2, ax: side(t.max_step) === "left" ? 40 : -40, ay: -24,
              xanchor: side(t.max_step) === "left" ? "left" : "right", font: {size: 10}, bgcolor: "rgba(255,255,255,0.85)"});
  }
  if (pk && pk.step !== null && pk.step !== undefined) {
    shapes.push({type: "line", x0: pk.step, x1: pk.step, yref: "paper", y0: 0, y1: 1, line: {color: "crimson", dash: "dash", width: 1.5}});
    ann.push({x: pk.step, yref: "paper", y: 1, xanchor: side(pk.step), yanchor: "top", xshift: side(pk.step) === "left" ? 3 : -3,
              text: "XLA's listed peak " + fmtBytes(pk.bytes) + " @ step " + pk.step, showarrow: false,
              font: {color: "crimson", size: 11}, bgcolor: "rgba(255,255,255,0.85)"});
  }
  const layout = {
    margin: {l: 70, r: 12, t: 28, b: 40}, hovermode: "x unified", showlegend: true,
    legend: {orientation: "h", y: -0.16, font: {size: 10}},
    xaxis: {title: {text: "schedule step" + (t.downsampled ? " (" + t.steps.toLocaleString("en-US") + " steps, " + t.x.length + " drawn: each bucket's highest and lowest)" : ""), font: {size: 11}}},
    yaxis: Object.assign({title: {text: "live bytes (each slice once)", font: {size: 11}}, range: [0, top * 1.3]}, binaryTicks(top)),
    shapes: shapes, annotations: ann,
  };
  return {data, layout};
}
// axis ticks at round KiB/MiB/GiB values (hlodump.units.binary_step), printed without zeros
function fmtTick(b) {
  if (!b) return "0";
  let v = Math.abs(b), i = 0;
  while (v >= 1024 && i < UNITS.length - 1) { v /= 1024; i++; }
  return (b < 0 ? "-" : "") + String(Number(v.toFixed(2))) + UNITS[i];
}
function binaryTicks(ymax) {
  let unit = 1;
  while (ymax / unit >= 1024 && unit < Math.pow(1024, 5)) unit *= 1024;
  const span = ymax / unit;
  const step = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000].find(s => span / s <= 6) || 1000;
  const vals = [];
  for (let v = 0; v <= span * 1.3; v += step) vals.push(v * unit);
  return {tickvals: vals, ticktext: vals.map(fmtTick)};
}
const CONFIG = {displaylogo: false, responsive: true};

function liveAt(d, step) {
  return (d.live || []).filter(b => b[3] <= step && step <= b[4]);
}
function showHover(d, idx) {
  const t = d.timeline, box = document.getElementById("hover");
  if (!t || idx === null || idx < 0 || idx >= t.x.length) return;
  const step = t.x[idx];
  let s = "step " + step + ": " + (t.ins[idx] === null ? "(end)" : t.ins[idx]) + "\n";
  let tot = 0;
  for (const [cat, ys] of t.cats) { tot += ys[idx]; if (ys[idx]) s += "  " + cat + ": " + fmtBytes(ys[idx]) + "\n"; }
  s += "  total: " + fmtBytes(tot) + "\n\n";
  const live = liveAt(d, step);
  s += "largest live buffers" + (d.live && d.live.length >= 150 ? " (of the module's 150 largest)" : "") + ":\n";
  for (const b of live.slice(0, 14)) {
    s += fmtBytes(b[2]).padStart(10) + "  " + b[0] + (b[1] && b[1] !== "{}" ? b[1] : "") + "  " + (b[5] || "") + "\n";
    const where = [b[7], b[8]].filter(Boolean).join("  @ ");
    if (where) s += "            " + where + "\n";
  }
  if (live.length > 14) s += "  \u2026 " + (live.length - 14) + " more\n";
  if (!live.length) s += "  (none known)\n";
  box.textContent = s;
}
function drawTimeline(div, d, ymax) {
  if (!d.timeline) { div.replaceChildren(el("p", {class: "muted"}, "no live ranges in this dump: no timeline (buffer assignment alone has no program order)")); return; }
  const f = timelineFigure(d, ymax);
  Plotly.newPlot(div, f.data, f.layout, CONFIG);
  div.on("plotly_hover", ev => { if (ev.points && ev.points.length) showHover(d, ev.points[0].pointIndex); });
  div.on("plotly_click", ev => { if (ev.points && ev.points.length) showHover(d, ev.points[0].pointIndex); });
}

function table(parent, title, columns, rows, fmt) {
  if (!rows || !rows.length) return null;
  const box = el("div");
  box.appendChild(el("h3", null, title));
  const t = el("table"), tr = el("tr");
  columns.forEach((c, i) => tr.appendChild(el("th", fmt && fmt[i] ? {class: "num"} : null, c)));
  const thead = el("thead"); thead.appendChild(tr); t.appendChild(thead);
  const tb = el("tbody");
  // a cell of one short word (a category, a kind, an opcode, a short name) never wraps inside it
  const word = v => typeof v === "string" && v.length <= 28 && /^[\w.\-]+$/.test(v);
  // shapes, op_names, paths and lists: long tokens without a break, broken anywhere; names elsewhere at - . _ only when they must
  const long = columns.map(c => /shape|op_name|source|detail|^key$|^buffer$|^producer$/.test(c));
  for (const r of rows) {
    const row = el("tr");
    r.forEach((v, i) => {
      const f = fmt && fmt[i];
      const text = fmtCell(v, f);
      const td = el("td", f && f !== "i" || (!f && typeof v === "number") ? {class: "num"} : (word(v) ? {class: "word"} : (long[i] ? {class: "long"} : null)), text);
      if (!f && text.length > 60) td.title = text;
      row.appendChild(td);
    });
    tb.appendChild(row);
  }
  t.appendChild(tb); box.appendChild(t); parent.appendChild(box);
  return box;
}
// one cell: b bytes, s seconds, f FLOPs, p share, n a number, i an integer as it is (a line, an
// index), "" text; numbers in a text column still go through fmtNum (never a raw float)
function fmtCell(v, f) {
  if (missing(v) || v === "") return MISSING;
  if (f === "b") return fmtBytes(v);
  if (f === "s") return fmtSecs(v);
  if (f === "f") return fmtSI(v, "FLOP");
  if (f === "p") return fmtPct(v);
  if (f === "i" || f === "r") return String(v);
  if (f === "n" || typeof v === "number") return fmtNum(v);
  return String(v);
}
function columnFormat(c, numeric) {
  if (/bytes/.test(c)) return "b";
  if (/^(seconds|time_s|estimated_time_s|time|estimated_time)$/.test(c)) return "s";
  if (/flops/.test(c)) return "f";
  if (/^(source_line|pass_index|line|step|rank)$/.test(c)) return "i";
  if (numeric.includes(c) || /intensity|size|count|instructions|added|removed|changed|index|groups|transcendentals/.test(c)) return "n";
  return "";
}
function labelled(parent, title, x, numeric) {
  if (!x || !x.rows || !x.rows.length) return;
  const fmt = x.columns.map(c => columnFormat(c, numeric));
  table(parent, title, x.columns, x.rows, fmt);
}

function facts(d, r) {
  const out = [];
  const pk = d.peaks || {};
  if (r && !(missing(r.peak) && missing(r.total) && missing(pk.xla_listed_peak))) {
    out.push("peak in use " + fmtBytes(r.peak));
    if (!missing(pk.xla_listed_peak)) out.push("XLA's listed peak " + fmtBytes(pk.xla_listed_peak));
    out.push("allocated " + fmtBytes(r.total));
  }
  // (the figure's name for the module's framework: TensorFlow and PyTorch/XLA modules are not jax's)
  if (!missing(pk.jax_peak_memory_in_bytes)) out.push((pk.jax_peak_memory_in_bytes_name || "jax's peak_memory_in_bytes") + " " + fmtBytes(pk.jax_peak_memory_in_bytes));
  if (d.device) out.push(d.device);
  const ma = d.memory_analysis;
  if (ma) out.push("argument " + fmtBytes(ma.argument_size_in_bytes), "output " + fmtBytes(ma.output_size_in_bytes),
                   "alias " + fmtBytes(ma.alias_size_in_bytes), "temp " + fmtBytes(ma.temp_size_in_bytes));
  if (d.timeline) out.push(d.timeline.steps.toLocaleString("en-US") + " steps");
  if (r && !missing(r.flops)) out.push(fmtSI(r.flops, "FLOP"));
  if (r && !missing(r.bytes_accessed)) out.push(fmtBytes(r.bytes_accessed) + " accessed");
  if (r && r.errors) out.push(r.errors + " parse errors");
  return out.join(" \u00b7 ");
}
// a peak above the module's allocation never stands without the sentence that explains it
function peakNote(d) {
  const pk = d.peaks || {};
  if (!pk.xla_listed_peak_above_allocated) return null;
  return "XLA's listed peak (" + fmtBytes(pk.xla_listed_peak) + ") is more than the module allocates (" +
    fmtBytes(pk.total_bytes) + "): " + (IDX.peak_note || "");
}
const ROW_OF = new Map(ROWS.map(r => [r.id, r]));

function openModule(id) {
  const d = detailOf(id);
  if (!d) return;
  selected = id;
  document.querySelectorAll("#modules tbody tr").forEach(tr => tr.classList.toggle("sel", tr.dataset.id === id));
  const box = document.getElementById("detail");
  box.querySelectorAll(".js-plotly-plot").forEach(p => Plotly.purge(p));
  box.replaceChildren();
  box.dataset.module = d.key;
  box.appendChild(el("h2", null, d.name));
  box.appendChild(el("div", {class: "facts"}, d.key));
  box.appendChild(el("div", {class: "facts"}, facts(d, ROW_OF.get(id))));
  const pn = peakNote(d);
  if (pn) box.appendChild(el("p", {class: "note", id: "peak-note"}, pn));
  if (d.advice && d.advice.length) {
    // what to do about the peak, cheapest first (hlodump.analysis.advice, as `hlodump summary` says it)
    const adv = el("div", {class: "advice", id: "advice"});
    adv.appendChild(el("b", null, "what to do, cheapest first:"));
    const ul = el("ul");
    for (const a of d.advice) ul.appendChild(el("li", null, a.text));
    adv.appendChild(ul);
    box.appendChild(adv);
  }
  const other = d.other ? detailOf(d.other) : null;
  const row = el("div", {class: "row"});
  const ca = el("div", {class: "chart", id: "timeline"});
  row.appendChild(ca);
  let cb = null;
  if (other) { cb = el("div", {class: "chart", id: "timeline-b"}); row.appendChild(cb); }
  const hover = el("div", {id: "hover"}, "hover or click a step: its instruction and the largest buffers live there");
  row.appendChild(hover);
  box.appendChild(row);
  let ymax = null;
  if (other && d.timeline && other.timeline) ymax = Math.max(...totals(d.timeline), ...totals(other.timeline));
  drawTimeline(ca, d, ymax);
  if (other) {
    const title = el("div", {class: "facts"}, "compared: " + other.key + " \u00b7 " + facts(other, ROW_OF.get(d.other)));
    box.insertBefore(title, row);
    drawTimeline(cb, other, ymax);
  }

  drawSpans(box, d);
  drawGraphView(box, d);
  const t1 = el("div", {class: "tables"});
  box.appendChild(t1);
  const atUse = d.top_buffers.length && d.top_buffers[0].at === "peak in use";
  // each buffer's producer and users from the memory viewer's spans (the main memory's, by name)
  const spanOf = new Map();
  if (d.spans) for (const r of d.spans.rows) { const o = spanObj(d.spans, r); if (!spanOf.has(o.buffer) || o.color === 0) spanOf.set(o.buffer, o); }
  const peakBox = table(t1, atUse ? "buffers at the peak in use" + (d.timeline_head ? " (" + d.timeline_head + ")" : "")
                  : "buffers at XLA's listed peak" + (d.peak ? " (step " + d.peak.step + ", " + (d.peak.instruction || MISSING) + ")" : ""),
        ["#", "buffer", "bytes", "shape", "category", "producer", "users", "op_name", "source"],
        d.top_buffers.map(b => { const o = spanOf.get(b.buffer);
          return [b.rank, b.buffer, b.bytes, b.shape, b.category, o ? o.instruction + (o.opcode ? " (" + o.opcode + ")" : "") : null,
                  o ? listText(o.users, 4) : null, b.op_name, b.source]; }),
        ["n", "", "b", "", "", "", "", "", ""]);
  if (peakBox) {
    peakBox.id = "peak-table";
    peakBox.querySelectorAll("tbody tr").forEach((tr, i) => { const o = spanOf.get(d.top_buffers[i].buffer);
      if (o) { tr.style.cursor = "pointer"; tr.addEventListener("click", () => selectSpan(o, d)); } });
  }
  table(t1, "memory spaces at their most live (fragmentation, padding)",
        ["color", "allocated", "most live", "at step", "free in allocations", "fragmentation", "padding", "logical"],
        d.spaces.map(s => [s.color, s.allocated_bytes, s.max_live_bytes, s.step, s.free_bytes, s.fragmentation, s.padding_bytes, s.logical_bytes]),
        ["n", "b", "b", "n", "b", "p", "b", "b"]);
  const t2 = el("div", {class: "tables"});
  box.appendChild(t2);
  table(t2, "XLA's listed peak by op_name", ["op_name", "bytes", "buffers", "share"], d.by_op_name, ["", "b", "n", "p"]);
  table(t2, "XLA's listed peak by source line", ["source", "bytes", "buffers", "share"], d.by_source, ["", "b", "n", "p"]);
  table(t2, "most padded values", ["instruction", "index", "shape", "allocated", "logical", "padding", "category", "op_name", "source"],
        d.padded, ["", "", "", "b", "b", "b", "", "", ""]);

  const t3 = el("div", {class: "tables"});
  box.appendChild(t3);
  labelled(t3, "top instructions by estimated time" + (DEVICE.name ? " (roofline on " + DEVICE.name + ")" : ""), d.cost_by_time, []);
  labelled(t3, "top instructions by flops", d.cost_by_flops, []);
  labelled(t3, "top instructions by bytes accessed", d.cost_by_bytes, []);
  labelled(t3, "source lines by flops", d.cost_by_source, []);
  if (d.intensity && d.intensity.length) {
    const div = el("div", {class: "chart", id: "roofline"});
    box.appendChild(el("h3", null, "arithmetic intensity (roofline): flops vs flops per byte accessed"));
    box.appendChild(div);
    const pts = d.intensity;
    Plotly.newPlot(div, [{type: "scatter", mode: "markers", x: pts.map(p => p[2] / p[3]), y: pts.map(p => p[2]),
      text: pts.map(p => esc(p[0]) + " (" + esc(p[1]) + ")"), hovertemplate: "%{text}<br>%{x:.3g} flops/B, %{y:.3g} flops<extra></extra>",
      marker: {size: 6, opacity: 0.7}}],
      {margin: {l: 70, r: 12, t: 10, b: 40}, xaxis: {type: "log", title: {text: "flops per byte accessed"}}, yaxis: {type: "log", title: {text: "flops"}}}, CONFIG);
  }
  labelled(t3, "collectives", d.collectives, []);
  if (d.passes && d.passes.rows.length) {
    const div = el("div", {class: "chart", id: "passes"});
    box.appendChild(el("h3", null, "instructions after each pass"));
    box.appendChild(div);
    const p = d.passes;
    Plotly.newPlot(div, [{type: "scatter", mode: "lines+markers", x: p.rows.map(r => r[0]), y: p.rows.map(r => r[p.columns.indexOf("instructions")]),
      text: p.rows.map(r => esc(r[1])), hovertemplate: "pass %{x}: %{text}<br>%{y} instructions<extra></extra>", line: {shape: "hv"}}],
      {margin: {l: 60, r: 12, t: 10, b: 40}, xaxis: {title: {text: "pass index"}}, yaxis: {title: {text: "instructions"}}}, CONFIG);
    const t4 = el("div", {class: "tables"}); box.appendChild(t4);
    labelled(t4, "passes", p, []);
  }
  if (d.why) {
    const w = d.why, t6 = el("div", {class: "tables"}); box.appendChild(t6);
    const pname = w.peak === "peak_in_use" || w.peak === "live_by_slice" ? "peak in use" : w.peak.replace(/_/g, " ");
    const head = w.peak_delta === null ? pname + " unknown: " + (w.note || "")
      : "why the " + pname + " changed: " + fmtBytes(w.peak_a) + " \u2192 " + fmtBytes(w.peak_b)
        + " (" + (w.peak_delta >= 0 ? "+" : "\u2212") + fmtBytes(Math.abs(w.peak_delta)) + ", vs " + w.module_b + ")";
    table(t6, head, w.columns, w.rows.length ? w.rows : [["", 0, "", "", w.folded ? "no cause with bytes" : "no change"]], ["", "b", "", "", ""]);
    if (w.folded) t6.lastChild.appendChild(el("p", {class: "note"}, w.folded));
  }
  if (d.changes && d.changes.length) {
    const t5 = el("div", {class: "tables"}); box.appendChild(t5);
    // before/after/delta: bytes, but for what is a count (instructions, fusions, custom calls, allocations)
    const counted = r => /^(instruction|fusion_kind|custom_call)$/.test(r[0]) || (r[0] === "allocation" && r[2] === "count");
    table(t5, "what changed (analysis.diff)", ["what", "change", "key", "before", "after", "delta", "detail"],
          d.changes.map(r => r.slice(0, 3).concat(r.slice(3, 6).map(v => missing(v) ? v : (counted(r) ? fmtNum(v) : fmtBytes(v))), r.slice(6))),
          ["", "", "", "r", "r", "r", ""]);
  }
  for (const n of d.notes || []) box.appendChild(el("p", {class: "note"}, "note: " + n));
  for (const n of d.section_problems || []) box.appendChild(el("p", {class: "note"}, "section not shown: " + n));
  if (location.hash !== "#" + id) history.replaceState(null, "", "#" + id);
}

// ------------------------------------------------------------------ memory viewer (buffer spans)
// one chart per memory space: every drawn buffer a bar from its first to its last live step
// (inclusive), at its address in the space (allocations end to end, then the slice offset);
// hover: the buffer, its producer, users, op_name, source; click: its row in the table below
function spanObj(sp, r) { const o = {}; sp.fields.forEach((f, i) => { o[f] = r[i]; }); return o; }
function listText(xs, n) {
  if (!xs || !xs.length) return MISSING;
  return xs.slice(0, n).join(", ") + (xs.length > n ? " \u2026 +" + (xs.length - n) : "");
}
function spanText(b) {
  return b.buffer + "  " + fmtBytes(b.size) + (b.shares_slice ? " (shares its slice)" : "") + "\n" +
    "shape: " + (b.shape || MISSING) + "\ncategory: " + b.category + "\n" +
    "live: steps " + b.first_step + "\u2013" + b.last_step + "\n" +
    "producer: " + b.instruction + (b.opcode ? " (" + b.opcode + ")" : "") + "\n" +
    "operands: " + listText(b.operands, 8) + "\nusers: " + listText(b.users, 8) + "\n" +
    "op_name: " + (b.op_name || MISSING) + "\nsource: " + (b.source || MISSING);
}
function foldNote(s) {
  return s.folded ? s.folded.toLocaleString("en-US") + " smaller buffers not drawn (" + fmtBytes(s.folded_bytes) +
    ", each at most " + fmtBytes(s.folded_max) + ")" : "every buffer drawn";
}
function drawSpans(box, d) {
  const sp = d.spans;
  if (!sp || !sp.rows.length) return;
  const sec = el("div", {id: "memviewer"});
  sec.appendChild(el("h3", null, "memory viewer: every buffer over program order, at its address"));
  box.appendChild(sec);
  const all = sp.rows.map(r => spanObj(sp, r));
  const info = el("div", {id: "span-info", class: "info"}, "hover a bar: its buffer, producer and users; click: its row");
  for (const s of sp.spaces) {
    const bufs = all.filter(b => b.color === s.color);
    if (!bufs.length) continue;
    sec.appendChild(el("div", {class: "facts"}, s.memory_space + ": " + s.buffers.toLocaleString("en-US") + " buffers with a live range; " +
      (s.folded ? "the " + bufs.length + " largest drawn, " : "") + foldNote(s) +
      (s.peak_step !== null && s.peak_step !== undefined ? "; peak in use " + fmtBytes(s.peak_bytes) + " @ step " + s.peak_step : "")));
    const div = el("div", {class: "chart spans", id: "spans-" + s.color, "data-color": String(s.color)});
    sec.appendChild(div);
    const byCat = new Map();
    for (const b of bufs) { if (!byCat.has(b.category)) byCat.set(b.category, []); byCat.get(b.category).push(b); }
    const data = [...byCat.entries()].map(([cat, bs]) => ({
      type: "bar", orientation: "v", name: esc(cat), x: bs.map(b => (b.first_step + b.last_step + 1) / 2),
      width: bs.map(b => b.last_step - b.first_step + 1), base: bs.map(b => b.address), y: bs.map(b => b.size),
      marker: {color: COLORS[cat] || "#999", line: {color: "rgba(0,0,0,0.35)", width: 0.5}}, opacity: 0.85,
      customdata: bs.map(b => all.indexOf(b)),
      hovertext: bs.map(b => esc(b.buffer + " " + fmtBytes(b.size) + " \u00b7 " + (b.shape || "") + " \u00b7 steps " + b.first_step + "\u2013" + b.last_step)),
      hovertemplate: "%{hovertext}<extra></extra>",
    }));
    const top = Math.max(1, s.extent);
    const shapes = [], ann = [];
    if (s.peak_step !== null && s.peak_step !== undefined) {
      shapes.push({type: "line", x0: s.peak_step + 0.5, x1: s.peak_step + 0.5, yref: "paper", y0: 0, y1: 1, line: {color: "#333", dash: "dot", width: 1.5}});
      // inside the plot area, beside the line on the side with room: never in the top margin (the toolbar)
      const last = Math.max(...bufs.map(b => b.last_step + 1)), left = s.peak_step > last / 2;
      ann.push({x: s.peak_step + 0.5, yref: "paper", y: 1, yanchor: "top", xanchor: left ? "right" : "left", xshift: left ? -3 : 3,
                showarrow: false, font: {size: 10}, bgcolor: "rgba(255,255,255,0.85)",
                text: "peak in use " + fmtBytes(s.peak_bytes) + " @ step " + s.peak_step});
    }
    Plotly.newPlot(div, data, {
      barmode: "overlay", bargap: 0, margin: {l: 70, r: 12, t: 34, b: 40}, hovermode: "closest", showlegend: true,
      legend: {orientation: "h", y: -0.18, font: {size: 10}}, shapes: shapes, annotations: ann,
      xaxis: {title: {text: "schedule step (a bar: first to last live step)", font: {size: 11}}},
      yaxis: Object.assign({title: {text: "address in " + s.memory_space, font: {size: 11}}, range: [0, top * 1.12]}, binaryTicks(top)),
    }, CONFIG);
    div.on("plotly_hover", ev => { if (ev.points && ev.points.length) info.textContent = spanText(all[ev.points[0].customdata]); });
    div.on("plotly_click", ev => { if (ev.points && ev.points.length) selectSpan(all[ev.points[0].customdata], d); });
  }
  sec.appendChild(info);
  const t = el("div", {class: "tables"}); sec.appendChild(t);
  const rows = all.slice().sort((a, b) => b.size - a.size);
  const tb = table(t, "the buffers drawn, largest first (click a bar to find its row)",
    ["buffer", "bytes", "space", "live steps", "shape", "category", "producer", "users", "op_name", "source"],
    rows.map(b => [b.buffer, b.size, (sp.spaces.find(s => s.color === b.color) || {}).memory_space || b.color, b.first_step + "\u2013" + b.last_step,
                   b.shape, b.category, b.instruction + (b.opcode ? " (" + b.opcode + ")" : ""), listText(b.users, 4), b.op_name, b.source]),
    ["", "b", "", "r", "", "", "", "", "", ""]);
  if (tb) {
    tb.id = "span-table";
    tb.querySelectorAll("tbody tr").forEach((tr, i) => { tr.dataset.buffer = rows[i].buffer; tr.dataset.color = String(rows[i].color);
      tr.addEventListener("click", () => selectSpan(rows[i], d)); });
  }
}
function selectSpan(b, d) {
  document.getElementById("span-info").textContent = spanText(b);
  document.querySelectorAll("#span-table tr.sel").forEach(tr => tr.classList.remove("sel"));
  const tr = [...document.querySelectorAll("#span-table tbody tr")].find(r => r.dataset.buffer === b.buffer && r.dataset.color === String(b.color));
  if (tr) { tr.classList.add("sel"); tr.scrollIntoView({block: "nearest"}); }
  if (d.graph && GRAPH.idx.has(b.instruction)) showGraph(d, b.instruction);
}

// ------------------------------------------------------------------ graph view (neighbourhood)
// the instruction in the middle, its operands hop by hop to the left, its users to the right;
// bytes (its shape's) and FLOPs on each node; click a node to centre it, + to list a fusion's members
const GRAPH = {d: null, idx: new Map(), ops: [], users: [], focus: null, hops: 2, open: new Set()};
const SVGNS = "http://www.w3.org/2000/svg";
function svg(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  if (attrs) for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}
function prepareGraph(d) {
  const g = d.graph, n = g.name.length;
  GRAPH.d = d; GRAPH.idx = new Map(g.name.map((nm, i) => [nm, i])); GRAPH.open = new Set();
  GRAPH.ops = Array.from({length: n}, () => []); GRAPH.users = Array.from({length: n}, () => []);
  for (let k = 0; k < g.edges.length; k += 2) { GRAPH.ops[g.edges[k + 1]].push(g.edges[k]); GRAPH.users[g.edges[k]].push(g.edges[k + 1]); }
}
// a node's bytes: its values' slices in buffer assignment where it has some (a tuple-shaped
// fusion's outputs, not its index table), else its shape's logical bytes
function nodeBytes(g, i) { return missing(g.alloc[i]) ? g.bytes[i] : g.alloc[i]; }
function nodeLines(g, i) {
  const flops = g.flops[i], b = nodeBytes(g, i);
  return [g.name[i], g.op[i] || MISSING,
          fmtBytes(b) + (flops ? " \u00b7 " + fmtSI(flops, "FLOP") : "")];
}
function nodeTitle(g, i) {
  return g.name[i] + " (" + (g.op[i] || "?") + ")\nshape: " + (g.shape[i] || MISSING) + "\nbytes (its shape): " + fmtBytes(g.bytes[i]) +
    "\nallocated (its values): " + fmtBytes(g.alloc[i]) + "\nFLOPs: " + fmtSI(g.flops[i], "FLOP") + "\nbytes accessed: " + fmtBytes(g.acc[i]) +
    "\ncomputation: " + g.comps[g.comp[i]] + (g.calls[i].length ? "\ncalls: " + g.calls[i].map(c => g.comps[c]).join(", ") : "") +
    "\nop_name: " + (g.op_name[i] || MISSING) + "\nsource: " + (g.source[i] || MISSING);
}
// layer of every node within GRAPH.hops: 0 the focus, -k operands, +k users (the nearer side wins)
function layers(f) {
  const L = new Map([[f, 0]]);
  for (const [adj, sign] of [[GRAPH.ops, -1], [GRAPH.users, 1]]) {
    let front = [f];
    for (let h = 1; h <= GRAPH.hops; h++) {
      const nxt = [];
      for (const v of front) for (const w of adj[v]) if (!L.has(w)) { L.set(w, sign * h); nxt.push(w); }
      front = nxt;
    }
  }
  return L;
}
const PER_LAYER = 12, NW = 176, NH = 46, GX = 44, GY = 10;
function showGraph(d, name) {
  if (!d.graph) return;
  if (GRAPH.d !== d) prepareGraph(d);
  const g = d.graph, f = GRAPH.idx.get(name);
  if (f === undefined) return;
  GRAPH.focus = f;
  const host = document.getElementById("graph");
  if (!host) return;
  document.getElementById("graph-focus").value = name;
  const L = layers(f), cols = new Map();
  for (const [v, l] of L) { if (!cols.has(l)) cols.set(l, []); cols.get(l).push(v); }
  const ls = [...cols.keys()].sort((a, b) => a - b), pos = new Map();
  let height = 0;
  const more = [];
  ls.forEach((l, ci) => {
    const vs = cols.get(l).sort((a, b) => (nodeBytes(g, b) || 0) - (nodeBytes(g, a) || 0));
    vs.slice(0, PER_LAYER).forEach((v, k) => pos.set(v, [ci * (NW + GX) + 4, k * (NH + GY) + 4]));
    if (vs.length > PER_LAYER) more.push([ci, PER_LAYER, vs.length - PER_LAYER]);
    height = Math.max(height, Math.min(vs.length, PER_LAYER + 1) * (NH + GY) + 8);
  });
  const width = ls.length * (NW + GX);
  const s = svg("svg", {width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img"});
  const edges = svg("g", {stroke: "#90a4ae", fill: "none"});
  for (const [v, [x, y]] of pos) for (const w of GRAPH.users[v]) {
    const p = pos.get(w);
    if (!p || L.get(w) <= L.get(v)) continue;
    edges.appendChild(svg("path", {d: "M" + (x + NW) + "," + (y + NH / 2) + " C" + (x + NW + GX / 2) + "," + (y + NH / 2) + " " + (p[0] - GX / 2) + "," + (p[1] + NH / 2) + " " + p[0] + "," + (p[1] + NH / 2)}));
  }
  s.appendChild(edges);
  for (const [v, [x, y]] of pos) {
    const node = svg("g", {class: "gnode" + (v === f ? " focus" : ""), transform: "translate(" + x + "," + y + ")", "data-name": g.name[v]});
    node.appendChild(svg("title", null, nodeTitle(g, v)));
    node.appendChild(svg("rect", {width: NW, height: NH, rx: 4, fill: v === f ? "#ffe0b2" : (g.calls[v].length ? "#e3f2fd" : "#fff"), stroke: v === f ? "#e65100" : "#607d8b"}));
    nodeLines(g, v).forEach((t, k) => {
      const txt = t.length > 27 ? t.slice(0, 26) + "\u2026" : t;
      node.appendChild(svg("text", {x: 6, y: 14 + k * 13, "font-size": k === 0 ? 11 : 10, "font-weight": k === 0 ? "600" : "400"}, txt));
    });
    if (g.calls[v].length) {
      const plus = svg("text", {x: NW - 14, y: 14, "font-size": 13, class: "expand", "data-name": g.name[v]}, GRAPH.open.has(v) ? "\u2212" : "+");
      plus.addEventListener("click", ev => { ev.stopPropagation(); GRAPH.open.has(v) ? GRAPH.open.delete(v) : GRAPH.open.add(v); showGraph(d, g.name[f]); });
      node.appendChild(plus);
    }
    node.addEventListener("click", () => showGraph(d, g.name[v]));
    s.appendChild(node);
  }
  for (const [ci, k, n] of more) s.appendChild(svg("text", {x: ci * (NW + GX) + 8, y: k * (NH + GY) + 24, "font-size": 11, fill: "#555"}, "\u2026 " + n + " more (smaller)"));
  host.replaceChildren(s);
  const mem = document.getElementById("graph-members");
  mem.replaceChildren();
  for (const v of GRAPH.open) {
    if (!pos.has(v)) continue;
    for (const c of g.calls[v]) {
      const members = g.comp.map((cc, i) => cc === c ? i : -1).filter(i => i >= 0);
      const tb = table(mem, "members of " + g.name[v] + " (" + g.comps[c] + ")", ["instruction", "opcode", "bytes", "FLOPs", "operands"],
        members.map(i => [g.name[i], g.op[i], g.bytes[i], g.flops[i], GRAPH.ops[i].map(o => g.name[o]).join(", ")]), ["", "", "b", "f", ""]);
      if (tb) tb.querySelectorAll("tbody tr").forEach((tr, k) => { tr.style.cursor = "pointer"; tr.addEventListener("click", () => showGraph(d, g.name[members[k]])); });
    }
  }
  document.getElementById("graph-head").textContent = g.name[f] + ": " + cols.get(0).length + " node, " +
    ls.filter(l => l < 0).reduce((a, l) => a + cols.get(l).length, 0) + " operands and " +
    ls.filter(l => l > 0).reduce((a, l) => a + cols.get(l).length, 0) + " users within " + GRAPH.hops + " hops";
}
function drawGraphView(box, d) {
  if (!d.graph || !d.graph.name.length) return;
  const sec = el("div", {id: "graphview"});
  sec.appendChild(el("h3", null, "graph: an instruction's operands (left) and users (right)"));
  const bar = el("div", {class: "gcontrols"});
  const input = el("input", {id: "graph-focus", type: "search", list: "graph-names", placeholder: "instruction", "aria-label": "instruction"});
  const dl = el("datalist", {id: "graph-names"});
  for (const nm of d.graph.name.slice(0, 5000)) dl.appendChild(el("option", {value: nm}));
  const hops = el("select", {id: "graph-hops", "aria-label": "hops"});
  for (const h of [1, 2, 3, 4, 6]) { const o = el("option", {value: String(h)}, h + " hops"); if (h === GRAPH.hops) o.selected = true; hops.appendChild(o); }
  bar.append(input, dl, hops, el("span", {id: "graph-head", class: "facts"}));
  sec.appendChild(bar);
  if (d.graph.note) sec.appendChild(el("p", {class: "note"}, d.graph.note));
  sec.appendChild(el("div", {id: "graph"}));
  sec.appendChild(el("div", {id: "graph-members", class: "tables"}));
  box.appendChild(sec);
  input.addEventListener("change", () => showGraph(d, input.value.trim().replace(/^%/, "")));
  hops.addEventListener("change", () => { GRAPH.hops = Number(hops.value); if (GRAPH.focus !== null) showGraph(d, d.graph.name[GRAPH.focus]); });
  GRAPH.d = null;
  const firstSpan = d.spans && d.spans.rows.length ? spanObj(d.spans, d.spans.rows[0]).instruction : null;
  const start = firstSpan && d.graph.name.includes(firstSpan) ? firstSpan
    : (d.peak && d.graph.name.includes(d.peak.instruction) ? d.peak.instruction : d.graph.name[d.graph.name.length - 1]);
  showGraph(d, start);
}

// ------------------------------------------------------------------ start
document.getElementById("title").textContent = IDX.title;
document.title = IDX.title;
const nErr = ROWS.reduce((s, r) => s + (r.errors || 0), 0);
document.getElementById("sub").textContent = ROWS.length + " modules \u00b7 " + (IDX.dumps.join(", ") || "") +
  (nErr ? " \u00b7 " + nErr + " parse errors" : "") + " \u00b7 hlodump " + IDX.version +
  " \u00b7 sections: " + IDX.sections.join(", ");
// the roofline's device, or why there is none
document.getElementById("device").textContent = DEVICE.name ? "device: " + DEVICE.name + " (" + DEVICE.chosen + ")"
  : (DEVICE.note || "no roofline: no device");
buildHead();
buildBody();
document.getElementById("search").addEventListener("input", buildBody);
const fromHash = decodeURIComponent(location.hash.slice(1));
const first = ROW_OF.has(fromHash) ? fromHash : IDX.open;
if (first) openModule(first);
</script>
</body></html>
"""
