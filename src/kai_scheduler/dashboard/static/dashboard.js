// KAI scheduler dashboard: renders the server's document; live through server-sent events, or along a
// simulation's recorded frames with the slider. No framework, no network beyond this server.
"use strict";

const RES = ["GPU", "CPU", "memory"];
// Queue colours on the GPU map (red and yellow stay for over quota and stranded GPUs).
const PALETTE = ["#3b7ddd", "#1d9a5b", "#8e5bd6", "#16a2b8", "#e08a00", "#c2185b", "#5d7a1f", "#6d4c41",
  "#0d47a1", "#00897b", "#7e57c2", "#546e7a", "#7cb342", "#ad1457", "#26a69a", "#8d6e63"];
const IDLE = -1;
const GAP = 1, NODE_GAP = 5, HEADER_H = 18;
let CELL = 7, ROW_H = 10;  // larger for small clusters (renderMap)

const state = { doc: null, selected: null, frames: null, layout: [] };

function $(sel) { return document.querySelector(sel); }
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else if (k === "text") e.textContent = v; else e.setAttribute(k, v);
  }
  for (const kid of kids) e.append(kid);
  return e;
}
function fmt(x) {
  if (x === -1) return "∞";
  if (Math.abs(x) >= 100) return x.toFixed(0);
  return Number.isInteger(x) ? String(x) : x.toFixed(2).replace(/0+$/, "").replace(/\.$/, "");
}
function duration(s) {
  if (s < 60) return `${s.toFixed(0)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(Math.floor(s % 60)).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}
function when(t) {
  if (!t) return "";
  return new Date(t * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}
// A queue keeps its colour when others come and go: the colour follows its name, not its place in the list.
function hue(name) {
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return PALETTE[h % PALETTE.length];
}
// Each queue its own colour as far as the palette goes: in name order, a queue takes the colour its name
// hashes to, or the next one no other queue has taken.
function palette(doc) {
  if (state.colours && state.colours.doc === doc) return state.colours.list;
  const taken = new Map(), list = [];
  for (const q of doc.queues) {
    let i = PALETTE.indexOf(hue(q.name));
    for (let k = 0; k < PALETTE.length && taken.has(PALETTE[i]); k++) i = (i + 1) % PALETTE.length;
    taken.set(PALETTE[i], q.name);
    list.push(PALETTE[i]);
  }
  state.colours = { doc, list };
  return list;
}
function colour(q) { return q < 0 || !state.doc ? "#9aa3b2" : palette(state.doc)[q]; }

// ---- queue tree --------------------------------------------------------------------------------------
function queueOrder(queues) {
  const byParent = new Map();
  const names = new Set(queues.map(q => q.name));
  for (const q of queues) {
    const p = names.has(q.parent) ? q.parent : "";
    if (!byParent.has(p)) byParent.set(p, []);
    byParent.get(p).push(q);
  }
  const out = [];
  const walk = (parent, depth) => {
    for (const q of byParent.get(parent) || []) { out.push([q, depth]); walk(q.name, depth + 1); }
  };
  walk("", 0);
  return out;
}

function bar(q, r) {
  const alloc = q.allocated[r], req = q.requested[r], fair = q.fair[r], des = q.deserved[r], lim = q.limit[r];
  const scale = Math.max(alloc, req, fair, des > 0 ? des : 0, lim > 0 ? lim : 0, 1e-9);
  const pct = x => `${Math.min(100, (100 * x) / scale)}%`;
  const b = el("div", { class: "bar" });
  b.append(el("i", { class: "req", style: `left:0;width:${pct(req)}` }));
  const under = des >= 0 ? Math.min(alloc, des) : alloc;
  b.append(el("i", { class: "alloc", style: `left:0;width:${pct(under)}` }));
  if (des >= 0 && alloc > des + 1e-6) {
    b.append(el("i", { class: "over", style: `left:${pct(des)};width:${pct(alloc - des)}` }));
  }
  b.append(el("b", { class: "fair", style: `left:${pct(fair)}`, title: `fair share ${fmt(fair)}` }));
  if (des >= 0) b.append(el("b", { class: "des", style: `left:${pct(des)}`, title: `deserved ${fmt(des)}` }));
  if (lim >= 0) b.append(el("b", { class: "lim", style: `left:${pct(lim)}`, title: `limit ${fmt(lim)}` }));
  const nums = el("div", { class: "nums", text:
    `alloc ${fmt(alloc)} · fair ${fmt(fair)} · deserved ${fmt(des)} · req ${fmt(req)} · limit ${fmt(lim)}` });
  const cell = el("td", { "data-res": RES[r] }, b, nums);
  for (const [k, v] of [["allocated", alloc], ["fair", fair], ["deserved", des], ["requested", req], ["limit", lim]]) {
    cell.dataset[k] = String(v);
  }
  return cell;
}

function renderQueues(doc) {
  const body = $("#queues tbody");
  const rows = [];
  for (const [q, depth] of queueOrder(doc.queues)) {
    // The resources allocated above deserved, named: a queue given a GPU quota only (CPU and memory quota 0)
    // is over quota in CPU and memory as soon as it runs anything, which the tag should not pass off as GPUs.
    const overIn = RES.filter((_, r) => q.deserved[r] >= 0 && q.allocated[r] > q.deserved[r] + 1e-6);
    const over = overIn.length > 0;
    const name = el("td", { class: "name", style: `padding-left:${6 + depth * 16}px` },
      (depth ? "└ " : "") + (q.display || q.name));
    if (over) {
      name.append(el("span", { class: "over-tag", title: `allocated above deserved in ${overIn.join(", ")}`,
                               text: `over quota: ${overIn.join(", ")}` }));
    }
    const tr = el("tr", { "data-queue": q.name, class: q.name === state.selected ? "selected" : "" },
      name, bar(q, 0), bar(q, 1), bar(q, 2));
    if (over) tr.dataset.over = "1";
    tr.addEventListener("click", () => { state.selected = q.name; render(); });
    rows.push(tr);
  }
  body.replaceChildren(...rows);
}

// ---- jobs --------------------------------------------------------------------------------------------
const JOB_ROWS = 500;
function renderJobs(doc) {
  const body = $("#jobs tbody");
  if (state.selected === null) {  // until a click: the first queue with a job waiting
    const first = doc.jobs.find(j => j[3] === "pending" && j[0] >= 0);
    if (first) state.selected = doc.queues[first[0]].name;
  }
  if (state.selected === null) { body.replaceChildren(); return; }
  const names = doc.queues.map(q => q.name);
  const wanted = new Set([state.selected]);
  let grew = true;  // an inner queue shows its descendants' jobs
  while (grew) {
    grew = false;
    for (const q of doc.queues) if (wanted.has(q.parent) && !wanted.has(q.name)) { wanted.add(q.name); grew = true; }
  }
  const jobs = doc.jobs.filter(j => j[0] >= 0 && wanted.has(names[j[0]]));
  $("#jobs-queue").textContent = `in ${state.selected} (${jobs.length})`;
  $("#jobs-hint").hidden = true;
  const rows = jobs.slice(0, JOB_ROWS).map(j => {
    const [qi, ns, name, st, pos, on, pods, gpus, waited, reason] = j;
    const tr = el("tr", { class: st, "data-job": `${ns}/${name}`, "data-state": st },
      el("td", { text: pos ? String(pos) : "" }),
      el("td", { class: "job", text: wanted.size > 1 ? `${ns}/${name} (${names[qi]})` : `${ns}/${name}` }),
      el("td", { class: "state", text: st }),
      el("td", { text: `${on}/${pods}` }),
      el("td", { text: fmt(gpus) }),
      el("td", { text: pos ? duration(waited) : "" }),
      el("td", { class: "reason", text: reason }));
    return tr;
  });
  if (jobs.length > JOB_ROWS) rows.push(el("tr", {}, el("td", { colspan: "7", text: `… ${jobs.length - JOB_ROWS} more` })));
  body.replaceChildren(...rows);
}

// ---- GPU map (canvas) --------------------------------------------------------------------------------
function renderMap(doc) {
  const n = doc.nodes, canvas = $("#map"), wrap = $("#map-wrap");
  const width = Math.max(400, wrap.clientWidth - 20);  // room for the vertical scrollbar
  const big = n.name.length <= 300;
  CELL = big ? 16 : 7; ROW_H = big ? 20 : 10;
  const groups = new Map();
  let gpus = 0, idle = 0, stranded = 0;
  for (let i = 0; i < n.name.length; i++) {
    const cells = n.cells[i];
    if (!cells.length) continue;
    const key = `${n.pools[n.pool[i]] || "default pool"}${n.levels.length ? " · " + n.domains[n.domain[i]] : ""}`;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(i);
    gpus += cells.length;
    const free = cells.filter(c => c === IDLE).length;
    idle += free;
    if (n.flags[i] & 2) stranded += free;
  }
  $("#gpu-summary").textContent =
    `${gpus} GPUs on ${n.name.length} nodes · ${idle} idle · ${stranded} idle that no pending job can use`;
  // layout: per group a header line, then nodes left to right, each its GPUs as a row of cells
  const layout = [];
  let y = 0;
  const sorted = [...groups.entries()].sort((a, b) => a[0].localeCompare(b[0]));
  for (const [key, rows] of sorted) {
    layout.push({ header: `${key} (${rows.length} nodes)`, y });
    y += HEADER_H;
    let x = 0;
    for (const i of rows) {
      const w = n.cells[i].length * (CELL + GAP) + 2;
      if (x + w > width && x > 0) { x = 0; y += ROW_H + 4; }
      layout.push({ node: i, x, y, w });
      x += w + NODE_GAP;
    }
    y += ROW_H + 10;
  }
  const dpr = window.devicePixelRatio || 1;
  canvas.width = width * dpr; canvas.height = Math.max(1, y) * dpr;
  canvas.style.width = `${width}px`; canvas.style.height = `${y}px`;
  const ctx = canvas.getContext("2d");
  ctx.scale(dpr, dpr);
  ctx.font = "11px system-ui, sans-serif";
  ctx.textBaseline = "top";
  for (const item of layout) {
    if (item.header !== undefined) { ctx.fillStyle = "#6b7385"; ctx.fillText(item.header, 0, item.y + 3); continue; }
    const i = item.node, cells = n.cells[i];
    const strandedNode = n.flags[i] & 2, schedulable = n.flags[i] & 1;
    ctx.fillStyle = strandedNode ? "#ffcf33" : schedulable ? "#dde1e8" : "#9aa3b2";
    ctx.fillRect(item.x, item.y, item.w, ROW_H);
    for (let g = 0; g < cells.length; g++) {
      const cx = item.x + 1 + g * (CELL + GAP), cy = item.y + 1, c = cells[g];
      if (c === IDLE) { ctx.fillStyle = strandedNode ? "#fff3c4" : "#ffffff"; ctx.fillRect(cx, cy, CELL, ROW_H - 2); }
      else if (typeof c === "number") { ctx.fillStyle = colour(c); ctx.fillRect(cx, cy, CELL, ROW_H - 2); }
      else {  // shared GPU: [queue, fraction, ...] stacked bottom up; the rest of the device is free
        ctx.fillStyle = "#ffffff"; ctx.fillRect(cx, cy, CELL, ROW_H - 2);
        let used = 0;
        for (let k = 0; k < c.length; k += 2) {
          const h = (ROW_H - 2) * Math.min(1, c[k + 1]);
          ctx.fillStyle = colour(c[k]);
          ctx.fillRect(cx, cy + (ROW_H - 2) - used - h, CELL, h);
          used += h;
        }
        ctx.strokeStyle = "#1d2330"; ctx.setLineDash([1, 1]); ctx.strokeRect(cx + 0.5, cy + 0.5, CELL - 1, ROW_H - 3);
        ctx.setLineDash([]);
      }
    }
  }
  state.layout = layout;
  const legend = $("#queue-legend");
  const parents = new Set(doc.queues.map(q => q.parent));
  const spans = doc.queues.map((q, i) => [q, i]).filter(([q]) => !parents.has(q.name)).map(([q, i]) =>
    el("span", {}, el("i", { class: "sw", style: `background:${colour(i)}` }), q.display || q.name));
  spans.push(el("span", {}, el("i", { class: "sw", style: "background:#fff;outline:1px solid #dde1e8" }), "idle"));
  spans.push(el("span", {}, el("i", { class: "sw", style: "background:#ffcf33" }), "node with idle GPUs no pending job can use"));
  spans.push(el("span", {}, el("i", { class: "sw", style: "background:#fff;outline:1px dashed #1d2330" }),
    "shared GPU (held by a reservation pod), split by fraction"));
  legend.replaceChildren(...spans);
}

function mapTip(ev) {
  const doc = state.doc, tip = $("#tip");
  if (!doc) return;
  const rect = $("#map").getBoundingClientRect();
  const x = ev.clientX - rect.left, y = ev.clientY - rect.top;
  const hit = state.layout.find(it => it.node !== undefined && x >= it.x && x <= it.x + it.w && y >= it.y && y <= it.y + ROW_H);
  if (!hit) { tip.hidden = true; return; }
  const n = doc.nodes, i = hit.node, names = doc.queues.map(q => q.name);
  const qn = q => (q >= 0 ? names[q] : "another scheduler or no queue");
  const lines = [`${n.name[i]}  pool ${n.pools[n.pool[i]] || "(none)"}${n.levels.length ? "  " + n.domains[n.domain[i]] : ""}`];
  n.cells[i].forEach((c, g) => {
    if (c === IDLE) lines.push(`GPU ${g}: idle`);
    else if (typeof c === "number") lines.push(`GPU ${g}: ${qn(c)}`);
    else {
      const parts = [];
      for (let k = 0; k < c.length; k += 2) parts.push(`${qn(c[k])} ${fmt(c[k + 1])}`);
      lines.push(`GPU ${g}: shared (reservation pod) ${parts.join(", ")}`);
    }
  });
  if (n.flags[i] & 2) lines.push("idle GPUs here fit no pending job");
  if (!(n.flags[i] & 1)) lines.push("not schedulable (not ready or cordoned)");
  tip.textContent = lines.join("\n");
  tip.style.left = `${x + 12}px`; tip.style.top = `${y + 12}px`;
  tip.hidden = false;
}

// ---- decisions ---------------------------------------------------------------------------------------
function renderDecisions(doc) {
  const rows = doc.decisions.map(([t, reason, obj, message]) =>
    el("tr", { "data-reason": reason }, el("td", { text: when(t) }), el("td", { text: reason }),
      el("td", { text: obj }), el("td", { text: message })));
  $("#decisions tbody").replaceChildren(...rows);
}

// ---- the whole page ----------------------------------------------------------------------------------
function render() {
  const doc = state.doc;
  if (!doc) return;
  const started = performance.now();
  $("#source").textContent = doc.source;
  const notes = $("#notes");
  notes.textContent = (doc.notes || []).join(" · ");
  notes.hidden = !notes.textContent;
  $("#clock").textContent = when(doc.now);
  document.body.dataset.version = String(doc.version);
  renderJobs(doc);
  renderQueues(doc);
  renderMap(doc);
  renderDecisions(doc);
  // How long this render held the page, and when it ended (since navigation): read by tests and bench/.
  document.body.dataset.renderMs = (performance.now() - started).toFixed(1);
  document.body.dataset.renderedAt = performance.now().toFixed(1);
}

let pending = null;
function show(doc) {  // at most one render per animation frame, whatever the stream's pace
  state.doc = doc;
  if (pending === null) pending = requestAnimationFrame(() => { pending = null; render(); });
}

function live() {
  const badge = $("#live");
  const es = new EventSource("api/stream");
  es.addEventListener("state", ev => { badge.textContent = "live"; badge.className = "badge on"; show(JSON.parse(ev.data)); });
  es.addEventListener("problem", ev => { const p = $("#problem"); p.textContent = ev.data; p.hidden = !ev.data; });
  es.onerror = () => { badge.textContent = "reconnecting"; badge.className = "badge off"; };
}

async function timeline() {
  const res = await fetch("api/timeline");
  if (!res.ok || res.status === 204) return false;  // 204: a live dashboard, no simulation
  const frames = (await res.json()).frames;
  if (!frames.length) return false;
  state.frames = frames;
  const scrub = $("#scrub");
  scrub.max = String(frames.length - 1);
  $("#timeline").hidden = false;
  $("#live").textContent = "simulation"; $("#live").className = "badge";
  const pick = () => {
    const f = frames[Number(scrub.value)];
    const t = f.now - frames[0].now;
    $("#scrub-time").textContent = `t = ${duration(t)} (${Number(scrub.value) + 1}/${frames.length})`;
    show(f);
  };
  scrub.addEventListener("input", pick);
  pick();
  return true;
}

async function main() {
  $("#map").addEventListener("mousemove", mapTip);
  $("#map").addEventListener("mouseleave", () => { $("#tip").hidden = true; });
  window.addEventListener("resize", () => render());
  if (!(await timeline())) live();
}
main();
