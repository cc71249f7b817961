"use strict";
// attn's interactive page: the data is the JSON in #data, written by attn_cli/io/page.py; nothing is
// fetched from anywhere. Hover (or tap) a token on the left to see where its attention goes.

const D = JSON.parse(document.getElementById("data").textContent);
const n = D.tokens.length;
const SVG = "http://www.w3.org/2000/svg";
const HUES = ["#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#bfef45",
  "#fabed4", "#469990", "#dcbeff", "#9a6324", "#fffac8", "#800000", "#aaffc3", "#808000"];
const VIRIDIS = [[68, 1, 84], [71, 44, 122], [59, 81, 139], [44, 113, 142], [33, 144, 141], [39, 173, 129],
  [92, 200, 99], [170, 220, 50], [253, 231, 37]];  // viridis at 0, 1/8, ..., 1, as in the terminal
const state = { layer: 0, head: 0, all: false, hovered: null, pinned: null };

function $(id) { return document.getElementById(id); }
function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}
function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  return e;
}
function weight(l, h, i, j) { return D.w[l][h][i * n + j] / 1000; }
function visible(i, j) { return D.allowed === null || D.allowed[i * n + j] === "1"; }
function sink(l, h) { return D.sink && D.sink[l + "." + h] ? D.sink[l + "." + h] : null; }
function name(l, h) { return D.names[l][h]; }
function label(l, h) { return D.layers > 1 ? "h" + name(l, h) : name(l, h); }  // a checkpoint's heads are numbers
function shown(x) { return x.toFixed(3); }
function short(x) { return x >= 0.9995 ? "1.00" : x.toFixed(3).slice(1); }  // ".564": the three decimals the page has
function keyLabel(k) { return /[\p{L}\p{N}]/u.test(k) ? k : "“" + k + "”"; }  // "," reads as a key, not a separator

function viridis(x) {
  const t = Math.min(Math.max(x, 0), 1) * (VIRIDIS.length - 1);
  const i = Math.min(Math.floor(t), VIRIDIS.length - 2), f = t - i;
  return VIRIDIS[i].map((a, k) => Math.round(a + (VIRIDIS[i + 1][k] - a) * f));
}
function luminance(rgb) {
  const lin = rgb.map(c => { c /= 255; return c <= 0.04045 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); });
  return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
}
function textOn(rgb) {  // black or white, whichever contrasts more (WCAG), as in the terminal
  const y = luminance(rgb);
  return (y + 0.05) / 0.05 >= 1.05 / (y + 0.05) ? "#000" : "#fff";
}
function css(rgb) { return "rgb(" + rgb.join(",") + ")"; }
function query() { return state.pinned !== null ? state.pinned : state.hovered; }
function heads() { return state.all ? [...Array(D.heads).keys()] : [state.head]; }

// --- controls ---------------------------------------------------------------------------------
function controls() {
  const layer = $("layer"), head = $("head");
  for (let l = 0; l < D.layers; l++) layer.appendChild(el("option", { value: l }, "layer " + l));
  head.appendChild(el("option", { value: "all" }, "all heads"));
  for (let h = 0; h < D.heads; h++) head.appendChild(el("option", { value: h }, "head " + name(0, h)));
  layer.value = state.layer;
  head.value = state.head;
  $("layer-box").hidden = D.layers < 2;
  layer.addEventListener("change", () => { state.layer = +layer.value; relabel(); draw(); });
  head.addEventListener("change", () => {
    state.all = head.value === "all";
    if (!state.all) state.head = +head.value;
    draw();
  });
}
function relabel() {
  const head = $("head");
  for (let h = 0; h < D.heads; h++) head.options[h + 1].textContent = "head " + name(state.layer, h);
}

// --- the head view: tokens left (queries) and right (keys), a line per weight ------------------
const ROW = 22, LEFT = 8, GAP = 150;
function headView() {
  const box = $("lines");
  box.textContent = "";
  const width = 2 * 120 + GAP, height = n * ROW + 8;
  const s = svg("svg", { viewBox: "0 0 " + width + " " + height, width: "100%", role: "img" });
  const q = query();
  const lines = svg("g", {});
  for (const h of heads()) {
    const colour = state.all ? HUES[h % HUES.length] : "#f5c542";
    for (let i = 0; i < n; i++) {
      if (q !== null && i !== q) continue;
      for (let j = 0; j < n; j++) {
        const w = visible(i, j) ? weight(state.layer, h, i, j) : 0;
        if (w < 0.01) continue;
        lines.appendChild(svg("line", {
          x1: 120, y1: i * ROW + ROW / 2 + 4, x2: 120 + GAP, y2: j * ROW + ROW / 2 + 4, stroke: colour,
          "stroke-width": q === null ? 1.5 : 3, "stroke-opacity": (q === null ? 0.6 : 1) * w,
          "data-query": i, "data-key": j, "data-head": h, "data-weight": w.toFixed(3),
        }));
      }
    }
  }
  s.appendChild(lines);
  for (let i = 0; i < n; i++) {
    for (const side of ["query", "key"]) {
      const x = side === "query" ? 120 - LEFT : 120 + GAP + LEFT;
      const t = svg("text", { x: x, y: i * ROW + ROW / 2 + 8, "text-anchor": side === "query" ? "end" : "start",
        class: "token " + side + (i === q ? " on" : "") + (D.special && D.special[i] ? " special" : ""), "data-index": i });
      t.textContent = D.tokens[i];
      s.appendChild(t);
      if (side === "query") {
        const hit = svg("rect", { x: 0, y: i * ROW + 4, width: 120, height: ROW, class: "hit", "data-index": i, fill: "transparent" });
        hit.addEventListener("mouseenter", () => { state.hovered = i; draw(); });
        hit.addEventListener("mouseleave", () => { state.hovered = null; draw(); });
        hit.addEventListener("click", () => { state.pinned = state.pinned === i ? null : i; draw(); });
        s.appendChild(hit);
      }
    }
  }
  box.appendChild(s);
}

// --- the hovered query's weights as a row, one per head shown ----------------------------------
function row() {
  const box = $("row");
  box.textContent = "";
  const q = query();
  if (q === null) {
    box.appendChild(el("p", { class: "hint" }, "Hover or tap a token on the left: its weights on every key appear here."));
    return;
  }
  box.appendChild(el("p", { class: "what" }, "“" + D.tokens[q] + "” (#" + q + ") attends to, layer " + state.layer + ":"));
  for (const h of heads()) {
    const line = el("div", { class: "weights", "data-head": h });
    const title = el("span", { class: "head" }, label(state.layer, h));
    if (state.all) title.style.color = HUES[h % HUES.length];
    line.appendChild(title);
    const extra = sink(state.layer, h);
    for (let j = 0; j < n + (extra ? 1 : 0); j++) {
      const own = j < n;
      const masked = own && !visible(q, j);
      const w = own ? weight(state.layer, h, q, j) : extra[q] / 1000;
      const cell = el("span", { class: "cell" + (masked ? " masked" : ""), "data-key": j, "data-weight": masked ? "" : shown(w) });
      cell.appendChild(el("span", { class: "key" }, own ? D.tokens[j] : D.sinkLabel));
      const number = el("span", { class: "number" }, masked ? "·" : shown(w));
      if (!masked) { const rgb = viridis(w); number.style.background = css(rgb); number.style.color = textOn(rgb); }
      cell.appendChild(number);
      line.appendChild(cell);
    }
    box.appendChild(line);
  }
}

// --- the weights of one head as a grid of numbers ----------------------------------------------
function grid(l, h, into, numbers) {
  into.textContent = "";
  const table = el("table", { class: "grid" });
  const top = el("tr");
  top.appendChild(el("th", { class: "corner" }, "query ↓ key →"));
  const extra = sink(l, h);
  for (let j = 0; j < n; j++) top.appendChild(el("th", { class: "col" }, D.tokens[j]));
  if (extra) top.appendChild(el("th", { class: "col" }, D.sinkLabel));
  table.appendChild(top);
  for (let i = 0; i < n; i++) {
    const tr = el("tr", { class: i === query() ? "on" : "" });
    tr.appendChild(el("th", { class: "rowhead" }, D.tokens[i]));
    for (let j = 0; j < n + (extra ? 1 : 0); j++) {
      const masked = j < n && !visible(i, j);
      const w = j < n ? weight(l, h, i, j) : extra[i] / 1000;
      const td = el("td", {}, masked ? "·" : numbers ? short(w) : "");
      if (!masked) { const rgb = viridis(w); td.style.background = css(rgb); td.style.color = textOn(rgb); }
      td.title = D.tokens[i] + " → " + (j < n ? D.tokens[j] : D.sinkLabel) + ": " + (masked ? "masked" : shown(w));
      tr.appendChild(td);
    }
    table.appendChild(tr);
  }
  into.appendChild(table);
}
function weights() {
  const box = $("grid");
  if (state.all) { box.textContent = ""; box.appendChild(el("p", { class: "hint" }, "Pick one head to see its weights as numbers.")); return; }
  $("grid-title").textContent = "weights of head " + name(state.layer, state.head) + " (layer " + state.layer + "): each row sums to 1";
  grid(state.layer, state.head, box, true);
}

// --- the model view: every head as a thumbnail; a click enlarges it ----------------------------
function thumbnail(l, h, side) {
  const c = el("canvas", { width: side, height: side, class: "thumb", "data-layer": l, "data-head": h });
  const g = c.getContext("2d");
  const cell = side / n;
  for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) {
    g.fillStyle = visible(i, j) ? css(viridis(weight(l, h, i, j))) : "#111";
    g.fillRect(Math.floor(j * cell), Math.floor(i * cell), Math.ceil(cell), Math.ceil(cell));
  }
  c.title = "layer " + l + " · head " + name(l, h) + ": click to enlarge";
  c.addEventListener("click", () => enlarge(l, h));
  return c;
}
function modelView() {
  const box = $("thumbs");
  box.textContent = "";
  const table = el("div", { class: "thumbgrid" });
  table.style.gridTemplateColumns = "auto repeat(" + D.heads + ", auto)";
  table.appendChild(el("span", {}, ""));
  for (let h = 0; h < D.heads; h++) table.appendChild(el("span", { class: "label" }, D.layers > 1 ? "h" + h : name(0, h)));
  for (let l = 0; l < D.layers; l++) {
    table.appendChild(el("span", { class: "label" }, "L" + l));
    for (let h = 0; h < D.heads; h++) table.appendChild(thumbnail(l, h, Math.max(48, Math.min(4 * n, 160))));
  }
  box.appendChild(table);
}
function enlarge(l, h) {
  state.layer = l; state.head = h; state.all = false;
  $("layer").value = l; $("head").value = h; relabel();
  draw();
  $("big-title").textContent = "layer " + l + " · head " + name(l, h) + " (Esc or close to go back)";
  const picture = $("big-picture");
  picture.textContent = "";
  picture.appendChild(thumbnail(l, h, Math.min(480, Math.max(240, 24 * n))));
  grid(l, h, $("big-grid"), true);
  $("big").hidden = false;
}

// --- what the result has besides the weights: E′ neighbours, the sense meter ------------------
function neighbours() {
  const box = $("neighbours-box");
  if (!D.neighbors) { box.hidden = true; return; }
  const body = $("neighbours");
  body.textContent = "";
  for (let i = 0; i < n; i++) {
    const tr = el("tr", { class: i === query() ? "on" : "" });
    tr.appendChild(el("th", {}, D.tokens[i]));
    tr.appendChild(el("td", {}, D.neighbors.input[i].map(keyLabel).join(", ")));
    const after = el("td", {});
    D.neighbors.output[i].forEach((key, k) => {
      const span = el("span", { class: D.neighbors.input[i].includes(key) ? "" : "new" }, keyLabel(key));
      after.appendChild(span);
      if (k < D.neighbors.output[i].length - 1) after.appendChild(document.createTextNode(", "));
    });
    tr.appendChild(after);
    body.appendChild(tr);
  }
  if (D.note) { $("neighbours-note").textContent = D.note; $("neighbours-note").hidden = false; }
}
function senses() {
  const box = $("senses-box");
  if (!D.senses || !D.senses.length) { box.hidden = true; return; }
  const body = $("senses");
  body.textContent = "";
  for (const s of D.senses) {
    s.names.forEach((sense, k) => {
      const tr = el("tr", { class: s.index === query() ? "on" : "" });
      tr.appendChild(el("th", {}, k === 0 ? s.index + ":" + s.token : ""));
      tr.appendChild(el("td", {}, sense + (sense === s.nearest_after ? " ←" : "")));
      for (const x of [s.before[k], s.after[k]]) tr.appendChild(el("td", { class: "num" }, x.toFixed(3)));
      const change = el("td", { class: "num" }, (s.change[k] > 0 ? "+" : "") + s.change[k].toFixed(3));
      const bar = el("span", { class: "bar " + (s.change[k] > 0 ? "up" : "down") });
      bar.style.width = Math.min(Math.abs(s.change[k]) / 0.3, 1) * 6 + "em";
      change.appendChild(bar);
      tr.appendChild(change);
      body.appendChild(tr);
    });
  }
}

function draw() { headView(); row(); weights(); neighbours(); senses(); }

document.addEventListener("keydown", e => { if (e.key === "Escape") $("big").hidden = true; });
$("big-close").addEventListener("click", () => { $("big").hidden = true; });
controls();
modelView();
draw();
document.body.setAttribute("data-ready", "1");
