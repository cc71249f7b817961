"use strict";
// attn's interactive page: the data is the JSON in #data, written by attn_cli/io/page.py; nothing is
// fetched from anywhere. Hover (or tap) a token on the left to see where its attention goes.
//
// The weights come deflated (D.w.layers: per layer, the gaps between kept cells and their values in
// thousandths, LEB128), and a layer is inflated only when it is shown; the model view's thumbnails come
// as one deflated block of pixels (D.thumbs). Long texts draw only what is asked: the hovered token's
// lines and row, and the heatmap as one picture.

const D = JSON.parse(document.getElementById("data").textContent);
const n = D.tokens.length;
const SVG = "http://www.w3.org/2000/svg";
const HUES = ["#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#42d4f4", "#f032e6", "#bfef45",
  "#fabed4", "#469990", "#dcbeff", "#9a6324", "#fffac8", "#800000", "#aaffc3", "#808000"];
const VIRIDIS = [[68, 1, 84], [71, 44, 122], [59, 81, 139], [44, 113, 142], [33, 144, 141], [39, 173, 129],
  [92, 200, 99], [170, 220, 50], [253, 231, 37]];  // viridis at 0, 1/8, ..., 1, as in the terminal
const MASKED = [17, 17, 17];  // a masked cell in a picture: the causal mask's, or a sliding window's
const NUMBERS = 24;  // up to this many tokens the weights are a grid of numbers; beyond, a heatmap to hover
const WHOLE_ROW = 40;  // up to this many tokens a query's row shows every key; beyond, its TOP keys
const TOP = 12;
const ALL_LINES = 64;  // up to this many tokens every query's lines are drawn before a hover
const state = { layer: 0, head: 0, all: false, hovered: null, pinned: null };
const layers = new Map();  // layer -> Uint16Array [H * n * n] of thousandths, the last few layers shown
let thumbs = null;  // Uint8Array [L * H * side * side]: 0-254 of the colour scale, 255 masked

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

// --- the weights, inflated -----------------------------------------------------------------------
async function inflate(b64) {
  const text = atob(b64), bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}
function leb128(bytes, at, count) {  // -> [values, next position]
  const out = new Float64Array(count);  // gaps may pass 2^32
  let p = at;
  for (let k = 0; k < count; k++) {
    let x = 0, scale = 1, b;
    do { b = bytes[p++]; x += (b & 127) * scale; scale *= 128; } while (b & 128);
    out[k] = x;
  }
  return [out, p];
}
async function load(l) {
  if (layers.has(l)) return layers.get(l);
  const bytes = await inflate(D.w.layers[l]);
  const count = D.w.entries[l];
  const [gaps, end] = leb128(bytes, 0, count);
  const [values] = leb128(bytes, end, count);
  const dense = new Uint16Array(D.heads * n * n);
  const lower = D.w.cells === "lower";  // key by key; under a causal mask a key's column starts at its own query
  let h = 0, j = 0, i = 0;  // the (head, key, query) of the last cell reached; the first cell is (0, 0, 0) either way
  for (let k = 0; k < count; k++) {
    let step = gaps[k] + (k > 0 ? 1 : 0);  // from the last kept cell to this one
    while (i + step >= n) {  // past this key's column
      step -= n - i;
      if (++j === n) { j = 0; h++; }
      i = lower ? j : 0;
    }
    i += step;
    dense[(h * n + i) * n + j] = values[k];
  }
  layers.set(l, dense);
  if (layers.size > 3) layers.delete(layers.keys().next().value);  // keep the last three layers shown
  return dense;
}
function kept(l, h, i, j) { return layers.get(l)[(h * n + i) * n + j]; }  // thousandths; the layer is loaded
function weight(l, h, i, j) { return kept(l, h, i, j) / D.w.scale; }
function visible(l, i, j) {
  if (D.allowed === "causal" ? j > i : D.allowed !== null && D.allowed[i * n + j] !== "1") return false;
  return D.from[l] === null || j >= D.from[l][i];
}
function sink(l, h) { return D.sink && D.sink[l + "." + h] ? D.sink[l + "." + h] : null; }
function name(l, h) { return D.names[l][h]; }
function label(l, h) { return D.layers > 1 ? "h" + name(l, h) : name(l, h); }  // a checkpoint's heads are numbers
function dropped(k) { return k === 0 && D.w.smallest > 1; }  // under the smallest weight kept: not in the file
function shown(k) { return dropped(k) ? "<" + (D.w.smallest / D.w.scale).toFixed(3) : (k / D.w.scale).toFixed(3); }
function short(k) {  // ".564": the three decimals the page has
  if (k >= D.w.scale) return "1.00";
  return dropped(k) ? "<" + (D.w.smallest / D.w.scale).toFixed(3).slice(1) : (k / D.w.scale).toFixed(3).slice(1);
}
function keyLabel(k) { return /[\p{L}\p{N}]/u.test(k) ? k : "“" + k + "”"; }  // "," reads as a key, not a separator

function viridis(x) {
  const t = Math.min(Math.max(x, 0), 1) * (VIRIDIS.length - 1);
  const i = Math.min(Math.floor(t), VIRIDIS.length - 2), f = t - i;
  return VIRIDIS[i].map((a, k) => Math.round(a + (VIRIDIS[i + 1][k] - a) * f));
}
const SCALE = [...Array(255).keys()].map(k => viridis(k / 254));  // a thumbnail's pixel values
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
  for (let l = 0; l < D.layers; l++) layer.appendChild(el("option", { value: l }, "layer " + l + (D.window[l] !== null ? " (local)" : "")));
  head.appendChild(el("option", { value: "all" }, "all heads"));
  for (let h = 0; h < D.heads; h++) head.appendChild(el("option", { value: h }, "head " + name(0, h)));
  layer.value = state.layer;
  head.value = state.head;
  $("layer-box").hidden = D.layers < 2;
  layer.addEventListener("change", () => choose(+layer.value));
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
async function choose(l, h) {  // show layer l (inflated first; the page is not ready meanwhile), and head h if given
  document.body.setAttribute("data-ready", "0");
  await load(l);
  state.layer = l;
  if (h !== undefined) state.head = h;
  $("layer").value = l; relabel();
  draw();
  document.body.setAttribute("data-ready", "1");
}
function legend() {  // why a local layer's far keys look masked
  const box = $("legend"), w = D.window[state.layer];
  box.hidden = w === null;
  if (w === null) return;
  box.textContent = "layer " + state.layer + " is a local layer: a token sees only itself and the " + (w - 1) +
    " tokens before it (a sliding window of " + w + "), so keys further back are masked (· and dark), as the causal mask " +
    "hides the keys after a token. The window is " + (D.windowSource === "the model" ? "the model's" :
    "read from the weights: every head of this layer gives exactly 0 to every key " + w + " or more tokens back") + ".";
}

// --- the head view: tokens left (queries) and right (keys), a line per weight ------------------
const ROW = 22, LEFT = 8, GAP = 150;
function headView() {  // the tokens, once; lines() draws the weights
  const box = $("lines");
  const width = 2 * 120 + GAP, height = n * ROW + 8;
  const s = svg("svg", { viewBox: "0 0 " + width + " " + height, width: "100%", role: "img" });
  s.appendChild(svg("g", { id: "weight-lines" }));
  for (let i = 0; i < n; i++) {
    for (const side of ["query", "key"]) {
      const x = side === "query" ? 120 - LEFT : 120 + GAP + LEFT;
      const t = svg("text", { x: x, y: i * ROW + ROW / 2 + 8, "text-anchor": side === "query" ? "end" : "start",
        class: "token " + side + (D.special && D.special[i] ? " special" : ""), "data-index": i });
      t.textContent = D.tokens[i];
      s.appendChild(t);
      if (side === "query") {
        const hit = svg("rect", { x: 0, y: i * ROW + 4, width: 120, height: ROW, class: "hit", "data-index": i, fill: "transparent" });
        hit.addEventListener("mouseenter", () => { state.hovered = i; update(); });
        hit.addEventListener("mouseleave", () => { state.hovered = null; update(); });
        hit.addEventListener("click", () => { state.pinned = state.pinned === i ? null : i; update(); });
        s.appendChild(hit);
      }
    }
  }
  box.appendChild(s);
}
function lines() {
  const q = query(), group = $("weight-lines");
  group.textContent = "";
  for (const t of document.querySelectorAll("#lines .token.on")) t.classList.remove("on");
  if (q !== null) document.querySelector('#lines .token.query[data-index="' + q + '"]').classList.add("on");
  if (q === null && n > ALL_LINES) return;  // a long text: only the hovered token's lines
  const l = state.layer;
  for (const h of heads()) {
    const colour = state.all ? HUES[h % HUES.length] : "#f5c542";
    for (let i = q === null ? 0 : q; i < (q === null ? n : q + 1); i++) {
      for (let j = 0; j < n; j++) {
        const w = visible(l, i, j) ? weight(l, h, i, j) : 0;
        if (w < 0.01) continue;
        group.appendChild(svg("line", {
          x1: 120, y1: i * ROW + ROW / 2 + 4, x2: 120 + GAP, y2: j * ROW + ROW / 2 + 4, stroke: colour,
          "stroke-width": q === null ? 1.5 : 3, "stroke-opacity": (q === null ? 0.6 : 1) * w,
          "data-query": i, "data-key": j, "data-head": h, "data-weight": w.toFixed(3),
        }));
      }
    }
  }
}

// --- the hovered query's weights as a row, one per head shown ----------------------------------
function cell(key, k, masked, numbered) {  // numbered: the key's position too (the strongest keys are not in order)
  const c = el("span", { class: "cell" + (masked ? " masked" : ""), "data-key": key, "data-weight": masked ? "" : shown(k) });
  c.appendChild(el("span", { class: "key" }, (key < n ? D.tokens[key] : D.sinkLabel) + (numbered ? " #" + key : "")));
  const number = el("span", { class: "number" }, masked ? "·" : shown(k));
  if (!masked) { const rgb = viridis(k / D.w.scale); number.style.background = css(rgb); number.style.color = textOn(rgb); }
  c.appendChild(number);
  return c;
}
function row() {
  const box = $("row");
  box.textContent = "";
  const q = query(), l = state.layer;
  if (q === null) {
    box.appendChild(el("p", { class: "hint" }, "Hover or tap a token on the left: its weights on " +
      (n > WHOLE_ROW ? "its " + TOP + " strongest keys" : "every key") + " appear here."));
    return;
  }
  box.appendChild(el("p", { class: "what" }, "“" + D.tokens[q] + "” (#" + q + ") attends to, layer " + l + ":"));
  for (const h of heads()) {
    const line = el("div", { class: "weights", "data-head": h });
    const title = el("span", { class: "head" }, label(l, h));
    if (state.all) title.style.color = HUES[h % HUES.length];
    line.appendChild(title);
    const extra = sink(l, h);
    if (n <= WHOLE_ROW) {
      for (let j = 0; j < n; j++) line.appendChild(cell(j, kept(l, h, q, j), !visible(l, q, j)));
      if (extra) line.appendChild(cell(n, extra[q], false));
    } else {  // the strongest keys, strongest first, and how many others there are
      const keys = [];
      for (let j = 0; j < n; j++) if (visible(l, q, j)) keys.push(j);
      keys.sort((a, b) => kept(l, h, q, b) - kept(l, h, q, a) || a - b);
      for (const j of keys.slice(0, TOP)) line.appendChild(cell(j, kept(l, h, q, j), false, true));
      if (extra) line.appendChild(cell(n, extra[q], false));  // the sink, beside the strongest keys
      if (keys.length > TOP) {
        line.appendChild(el("span", { class: "more" }, "and " + (keys.length - TOP) + " more keys, each " +
          (dropped(kept(l, h, q, keys[TOP])) ? shown(0) : "≤ " + shown(kept(l, h, q, keys[TOP])))));
      }
    }
    box.appendChild(line);
  }
}

// --- the weights of one head: a grid of numbers (short texts), a heatmap to hover (long ones) ---
function table(l, h, into) {
  into.textContent = "";
  const t = el("table", { class: "grid" });
  const top = el("tr");
  top.appendChild(el("th", { class: "corner" }, "query ↓ key →"));
  const extra = sink(l, h);
  for (let j = 0; j < n; j++) top.appendChild(el("th", { class: "col" }, D.tokens[j]));
  if (extra) top.appendChild(el("th", { class: "col" }, D.sinkLabel));
  t.appendChild(top);
  for (let i = 0; i < n; i++) {
    const tr = el("tr", { class: i === query() ? "on" : "", "data-query": i });
    tr.appendChild(el("th", { class: "rowhead" }, D.tokens[i]));
    for (let j = 0; j < n + (extra ? 1 : 0); j++) {
      const masked = j < n && !visible(l, i, j);
      const k = j < n ? kept(l, h, i, j) : extra[i];
      const td = el("td", {}, masked ? "·" : short(k));
      if (!masked) { const rgb = viridis(k / D.w.scale); td.style.background = css(rgb); td.style.color = textOn(rgb); }
      td.title = D.tokens[i] + " → " + (j < n ? D.tokens[j] : D.sinkLabel) + ": " + (masked ? "masked" : shown(k));
      tr.appendChild(td);
    }
    t.appendChild(tr);
  }
  into.appendChild(t);
}
function picture(l, h) {  // -> canvas [n x n]: one pixel a cell
  const c = el("canvas", { width: n, height: n, class: "heat", "data-layer": l, "data-head": h });
  const image = c.getContext("2d").createImageData(n, n);
  for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) {
    const rgb = visible(l, i, j) ? SCALE[Math.round(weight(l, h, i, j) * 254)] : MASKED;
    const p = 4 * (i * n + j);
    image.data[p] = rgb[0]; image.data[p + 1] = rgb[1]; image.data[p + 2] = rgb[2]; image.data[p + 3] = 255;
  }
  c.getContext("2d").putImageData(image, 0, 0);
  return c;
}
function heatmap(l, h, into, status, width) {  // the picture, scaled to fit `width` (at least a pixel a cell; beyond, it scrolls)
  into.textContent = "";
  const side = Math.max(n, Math.min(12 * n, Math.floor(width / n) * n));
  const frame = el("div", { class: "frame" });
  frame.style.width = side + "px"; frame.style.height = side + "px";
  const c = picture(l, h);
  c.style.width = side + "px"; c.style.height = side + "px";
  const bar = el("div", { class: "query-bar" });
  frame.appendChild(c); frame.appendChild(bar);
  into.appendChild(frame);
  const cellAt = e => {
    const r = c.getBoundingClientRect();
    return [Math.min(n - 1, Math.floor((e.clientY - r.top) / r.height * n)), Math.min(n - 1, Math.floor((e.clientX - r.left) / r.width * n))];
  };
  c.addEventListener("mousemove", e => {
    const [i, j] = cellAt(e), masked = !visible(l, i, j);
    status.textContent = "“" + D.tokens[i] + "” (#" + i + ") → “" + D.tokens[j] + "” (#" + j + "): " + (masked ? "masked" : shown(kept(l, h, i, j)));
    Object.assign(status.dataset, { query: i, key: j, weight: masked ? "" : shown(kept(l, h, i, j)) });
  });
  c.addEventListener("click", e => { const [i] = cellAt(e); state.pinned = state.pinned === i ? null : i; update(); });
  status.textContent = "query ↓ key →: point at a cell for its weight; click to pick its query";
  mark(frame);
}
function mark(frame) {  // the current query's row on a heatmap
  const bar = frame.querySelector(".query-bar"), q = query();
  bar.hidden = q === null;
  if (q !== null) { bar.style.top = (q / n * 100) + "%"; bar.style.height = Math.max(100 / n, 0.4) + "%"; }
}
function weights() {
  const box = $("grid");
  $("grid-cell").textContent = "";
  if (state.all) { box.textContent = ""; box.appendChild(el("p", { class: "hint" }, "Pick one head to see its weights.")); return; }
  $("grid-title").textContent = "weights of head " + name(state.layer, state.head) + " (layer " + state.layer + "): each row sums to 1";
  if (n <= NUMBERS) table(state.layer, state.head, box);
  else heatmap(state.layer, state.head, box, $("grid-cell"), box.clientWidth);
}
function follow() {  // the grid or heatmap follows the hovered query
  for (const tr of document.querySelectorAll("#grid tr[data-query]")) tr.className = +tr.dataset.query === query() ? "on" : "";
  for (const frame of document.querySelectorAll(".frame")) mark(frame);
}

// --- the model view: every head as a thumbnail; a click enlarges it ----------------------------
function thumbnail(l, h) {
  const side = D.thumbs.side;
  const c = el("canvas", { width: side, height: side, class: "thumb", "data-layer": l, "data-head": h });
  const g = c.getContext("2d"), image = g.createImageData(side, side), start = (l * D.heads + h) * side * side;
  for (let p = 0; p < side * side; p++) {
    const v = thumbs[start + p], rgb = v === 255 ? MASKED : SCALE[v];
    image.data[4 * p] = rgb[0]; image.data[4 * p + 1] = rgb[1]; image.data[4 * p + 2] = rgb[2]; image.data[4 * p + 3] = 255;
  }
  g.putImageData(image, 0, 0);
  c.style.width = Math.max(48, Math.min(4 * n, 96)) + "px";
  c.title = "layer " + l + " · head " + name(l, h) + ": click to enlarge";
  c.addEventListener("click", () => enlarge(l, h));
  return c;
}
function modelView() {
  const box = $("thumbs");
  box.textContent = "";
  if (D.thumbs.block > 1) box.appendChild(el("p", { class: "dim" }, "each pixel: the largest weight in a block of " +
    D.thumbs.block + " × " + D.thumbs.block + " cells"));
  const grid = el("div", { class: "thumbgrid" });
  grid.style.gridTemplateColumns = "auto repeat(" + D.heads + ", auto)";
  grid.appendChild(el("span", {}, ""));
  for (let h = 0; h < D.heads; h++) grid.appendChild(el("span", { class: "label" }, D.layers > 1 ? "h" + h : name(0, h)));
  for (let l = 0; l < D.layers; l++) {
    grid.appendChild(el("span", { class: "label" }, "L" + l + (D.window[l] !== null ? " local" : "")));
    for (let h = 0; h < D.heads; h++) grid.appendChild(thumbnail(l, h));
  }
  box.appendChild(grid);
}
async function enlarge(l, h) {
  state.all = false;
  $("head").value = h;
  await choose(l, h);
  $("big-title").textContent = "layer " + l + " · head " + name(l, h) + " (Esc or close to go back)";
  const big = $("big-picture");
  big.textContent = "";
  $("big").hidden = false;
  if (n <= NUMBERS) {
    const c = picture(l, h);
    c.className = "thumb";
    c.style.width = Math.min(480, Math.max(240, 24 * n)) + "px";
    big.appendChild(c);
    table(l, h, $("big-grid"));
  } else {
    $("big-grid").textContent = "";
    const status = el("p", { class: "dim", id: "big-cell" });
    const room = el("div", { class: "scroll" });
    big.appendChild(room); big.appendChild(status);
    heatmap(l, h, room, status, Math.min(window.innerWidth - 48, 1200));
  }
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

function update() { lines(); row(); follow(); neighbours(); senses(); }  // a hover: what follows the query
function draw() { legend(); weights(); update(); }  // a layer or head picked

document.addEventListener("keydown", e => { if (e.key === "Escape") $("big").hidden = true; });
$("big-close").addEventListener("click", () => { $("big").hidden = true; });
(async () => {
  try {
    thumbs = await inflate(D.thumbs.pixels);
    await load(0);
  } catch (e) {
    $("status").textContent = "this browser cannot read the page's weights (it needs DecompressionStream): " + e;
    return;
  }
  $("status").hidden = true;  // the caption says what was kept
  controls();
  headView();
  modelView();
  draw();
  document.body.setAttribute("data-ready", "1");
})();
