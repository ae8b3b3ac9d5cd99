// The memory plan as a chart: each arena buffer a bar over the program steps it
// lives (x) at the bytes it takes (y), named by the scope of the node that makes
// it; the planned peak (the arena's size) and the step where most bytes live.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";

function svgEl(tag, attrs, text) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function scopeColor(scope) {
  let h = 0;
  for (const c of scope) h = (h * 31 + c.charCodeAt(0)) % 360;
  return "hsl(" + h + ", 55%, 68%)";
}

// The node of the last stage that makes a buffer's value, and its scope.
function bufferMaker(graph, name) {
  const last = graph.stages.length - 1;
  const stage = stageData(graph, last);
  const k = makersOf(stage).get(name);
  if (k === undefined) return { k: undefined, scope: "" };
  const scopes = nodeScopes(stage.nodes[k]);
  return { k, scope: scopes.length ? commonScope(scopes) : "" };
}

function renderMemory() {
  const graph = state.graph;
  const view = document.getElementById("view");
  const p = programOrSay(graph, view);
  if (!p) return;
  const steps = p.step_calls.length;
  const bars = p.buffers.filter((b) => b.offset >= 0 && b.first >= 0 && b.bytes > 0);
  const live = new Array(steps + 1).fill(0);
  for (const b of bars) for (let s = b.first; s <= Math.min(b.last, steps); s++) live[s] += b.bytes;
  let peakStep = 0;
  live.forEach((v, s) => { if (v > live[peakStep]) peakStep = s; });
  const W = Math.max(600, view.clientWidth - 20), H = 460, left = 70, top = 20, bottom = 30;
  const arena = Math.max(p.arena_bytes, 1);
  const x = (s) => left + (s / (steps + 1)) * (W - left - 10);
  const y = (off) => top + (off / arena) * (H - top - bottom);
  const svg = svgEl("svg", { id: "memory-chart", width: W, height: H, viewBox: "0 0 " + W + " " + H });
  for (const b of bars) {
    const maker = bufferMaker(graph, b.name);
    const rect = svgEl("rect", {
      class: "bar", x: x(b.first), y: y(b.offset), width: Math.max(x(b.last + 1) - x(b.first), 1),
      height: Math.max(y(b.offset + b.bytes) - y(b.offset), 0.5), fill: scopeColor(maker.scope || b.name),
      "data-buffer": b.name,
    });
    rect.append(svgEl("title", {}, "%" + b.name + (maker.scope ? " (" + maker.scope + ")" : "") + ": " + bytesText(b.bytes) +
      ", steps " + b.first + "-" + b.last + ", offset " + b.offset));
    rect.addEventListener("click", () => showBuffer(b));
    svg.append(rect);
    const w = x(b.last + 1) - x(b.first), h = y(b.offset + b.bytes) - y(b.offset);
    if (w > 60 && h > 11) svg.append(svgEl("text", { x: x(b.first) + 2, y: y(b.offset) + 10 }, maker.scope || "%" + b.name));
  }
  svg.append(svgEl("line", { x1: left, x2: W - 10, y1: y(arena), y2: y(arena), stroke: "#c92a2a", "stroke-dasharray": "4 3" }));
  svg.append(svgEl("text", { x: left + 4, y: y(arena) + 12, fill: "#c92a2a" }, "arena (planned peak) " + bytesText(p.arena_bytes)));
  svg.append(svgEl("line", { x1: x(peakStep + 0.5), x2: x(peakStep + 0.5), y1: top, y2: H - bottom, stroke: "#c92a2a" }));
  const call = p.step_calls[peakStep];
  const peakText = "most live at step " + peakStep + (call >= 0 ? " (call " + call + ", k" + p.calls[call].kernel + " " + p.kernels[p.calls[call].kernel].label + ")" : "") + ": " + bytesText(live[peakStep]);
  const rightHalf = x(peakStep) > W / 2;
  svg.append(svgEl("text", { x: x(peakStep) + (rightHalf ? -4 : 4), y: top - 6, fill: "#c92a2a", "text-anchor": rightHalf ? "end" : "start" }, peakText));
  svg.append(svgEl("text", { x: left, y: H - 8 }, "program step →"));
  svg.append(svgEl("text", { x: 4, y: top + 10 }, "offset 0"));
  const biggest = [...bars].sort((a, b) => b.bytes - a.bytes).slice(0, 20);
  const table = el("table", {}, el("tr", {}, el("th", { text: "buffer" }), el("th", { text: "scope" }), el("th", { class: "num", text: "bytes" }), el("th", { text: "steps" })));
  for (const b of biggest) {
    const maker = bufferMaker(graph, b.name);
    table.append(el("tr", { class: "link", onclick: () => showBuffer(b) }, el("td", { text: "%" + b.name }), el("td", { text: maker.scope }),
      el("td", { class: "num", text: bytesText(b.bytes) }), el("td", { text: b.first + "-" + b.last })));
  }
  view.replaceChildren(
    el("div", { class: "toolbar" }, "naive " + bytesText(p.naive_bytes) + " → planned " + bytesText(p.arena_bytes) + ", " +
      p.in_place_reuses + " in-place reuses; " + bars.length + " arena buffers over " + steps + " steps"),
    svg, el("h3", { text: "The largest buffers" }), table);
}

function showBuffer(b) {
  const graph = state.graph;
  const maker = bufferMaker(graph, b.name);
  const last = graph.stages.length - 1;
  details(el("h2", { text: "buffer %" + b.name }),
    el("p", { text: b.kind + ", " + bytesText(b.bytes) + " at arena offset " + b.offset + ", live over steps " + b.first + "-" + b.last }),
    maker.scope ? scopesList([maker.scope], "") : null,
    maker.k !== undefined ? el("p", {}, el("a", { class: "ref", text: "the node that makes it", onclick: () => selectNode(last, maker.k, true) })) : null);
}
