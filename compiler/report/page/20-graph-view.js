// A stage's graph as Graphviz lays it out: nodes grouped by model scope, each
// group one box until it is expanded; fusions as clusters coloured by kind;
// what the stage's pass changed outlined against the stage before.
"use strict";

const KIND_COLORS = {
  loop: "#d0ebff", input: "#ffe8cc", row: "#d3f9d8", epilogue: "#fff3bf", horizontal: "#ffdeeb",
};
const DECL_STYLES = {
  input: 'shape=invhouse, fillcolor="#cfe2ff"',
  param: 'shape=box, fillcolor="#d4edda"',
  state: 'shape=cylinder, fillcolor="#fff3cd"',
};
const CHANGED_COLOR = "#d9480f";
const BIG_GRAPH = 250;    // nodes: a larger stage opens with every group collapsed
const UNSCOPED_RUN = 50;  // nodes without a scope are grouped in runs of this many
const BODY_DRAWN = 40;
const LIMITED_LAYOUT = 80;  // boxes: a larger drawing gets Graphviz's faster, rougher layout    // ops: a larger fusion (an optimizer's horizontal one) is one box

// "encoder.0.self_attn (backward)" at depth 2: "encoder.0 (backward)".
function scopeAt(scope, depth) {
  const m = scope.match(/^(.*?)( \(.*\))?$/);
  return m[1].split(".").slice(0, depth).join(".") + (m[2] || "");
}

// The model part a node of several scopes belongs to (a fusion's, say): their
// longest common dotted prefix, backward when all of them are; else the first.
function commonScope(scopes) {
  const backward = scopes.every((s) => s.endsWith(" (backward)"));
  let common = null;
  for (const s of scopes) {
    const parts = s.replace(/ \(backward\)$/, "").split(".");
    if (common === null) { common = parts; continue; }
    let k = 0;
    while (k < common.length && k < parts.length && common[k] === parts[k]) k++;
    common = common.slice(0, k);
  }
  return common.length ? common.join(".") + (backward ? " (backward)" : "") : scopes[0];
}

// Each node's and declaration's group in a stage, at the current depth.
function grouping(stage) {
  const byNode = stage.nodes.map((n, i) => {
    const scopes = nodeScopes(n);
    if (scopes.length) return scopeAt(commonScope(scopes), state.depth);
    const from = Math.floor(i / UNSCOPED_RUN) * UNSCOPED_RUN;
    return "nodes " + from + "-" + (Math.min(from + UNSCOPED_RUN, stage.nodes.length) - 1);
  });
  // A declaration belongs with its first reader.
  const byDecl = new Map();
  stage.nodes.forEach((n, i) => {
    const read = (ins) => { for (const [ref] of ins) if (ref.startsWith("d:") && !byDecl.has(ref)) byDecl.set(ref, byNode[i]); };
    read(n.ins);
    for (const b of n.body || []) read(b.ins);
  });
  for (const d of stage.decls) if (!byDecl.has("d:" + d.name)) byDecl.set("d:" + d.name, "declarations");
  return { byNode, byDecl };
}

// Whether a fusion is drawn as a cluster of its body's ops.
function drawsBody(n) {
  return state.showBodies && n.body !== undefined && n.body.length <= BODY_DRAWN;
}

function isExpanded(key) {
  return state.expandAll ? !state.collapsed.has(key) : state.expanded.has(key);
}

// The nodes of stage i whose .kir text the stage before lacks.
function changedNodes(graph, i) {
  graph._changed = graph._changed || {};
  if (graph._changed[i]) return graph._changed[i];
  const changed = new Set();
  if (i > 0 && graph.stages[i].same === undefined) {
    const before = new Set(stageData(graph, i - 1).nodes.map((n) => n.text));
    stageData(graph, i).nodes.forEach((n, k) => { if (!before.has(n.text)) changed.add(k); });
  }
  graph._changed[i] = changed;
  return changed;
}

function removedCount(graph, i) {
  if (i === 0 || graph.stages[i].same !== undefined) return 0;
  const after = new Set(stageData(graph, i).nodes.map((n) => n.text));
  return stageData(graph, i - 1).nodes.filter((n) => !after.has(n.text)).length;
}

function q(s) { return '"' + String(s).replace(/\\/g, "\\\\").replace(/"/g, '\\"') + '"'; }

function typeLine(outs) {
  if (!outs.length) return "";  // an assign
  const first = "%" + outs[0][0] + " : " + outs[0][1];
  return outs.length > 1 ? first + " (+" + (outs.length - 1) + ")" : first;
}

function bodyOps(node) {
  const counts = new Map();
  for (const b of node.body) counts.set(b.op, (counts.get(b.op) || 0) + 1);
  return [...counts].map(([op, n]) => (n > 1 ? op + " x" + n : op)).join(", ");
}

// The Graphviz source of stage i, and how many boxes it draws.
function stageDot(graph, i) {
  const stage = stageData(graph, i);
  const changed = changedNodes(graph, i);
  const { byNode, byDecl } = grouping(stage);
  const index = programIndex(graph);
  const members = new Map();  // group -> {nodes, decls}
  const member = (key) => {
    if (!members.has(key)) members.set(key, { nodes: [], decls: [] });
    return members.get(key);
  };
  stage.nodes.forEach((n, k) => member(byNode[k]).nodes.push(k));
  for (const d of stage.decls) member(byDecl.get("d:" + d.name)).decls.push(d);

  // Where an edge ends: a collapsed group's box, a node, a fusion body's node.
  const visible = (ref) => {
    if (ref.startsWith("d:")) {
      const key = byDecl.get(ref);
      return isExpanded(key) ? ref : "g:" + key;
    }
    const [top] = ref.slice(1).split(".");
    const key = byNode[Number(top)];
    if (!isExpanded(key)) return "g:" + key;
    return drawsBody(stage.nodes[Number(top)]) ? ref : "n" + top;
  };
  const lines = [
    "digraph stage {",
    '  rankdir=TB; nodesep=0.25; ranksep=0.35; fontname="Helvetica"; fontsize=11;',
    '  node [shape=box, style="rounded,filled", fillcolor="#ffffff", fontname="Helvetica", fontsize=10, height=0.3];',
    '  edge [color="#868e96", arrowsize=0.6];',
  ];
  let boxes = 0;
  const nodeLine = (id, label, extra) => { boxes++; lines.push("    " + q(id) + " [label=" + q(label) + (extra ? ", " + extra : "") + "];"); };
  const changedStyle = (k) => (changed.has(k) ? 'color="' + CHANGED_COLOR + '", penwidth=2.5' : "");
  const attrs = (...parts) => parts.filter((x) => x).join(", ");
  for (const [key, m] of members) {
    if (!isExpanded(key)) {
      const nChanged = m.nodes.filter((k) => changed.has(k)).length;
      let label = key + "\n" + m.nodes.length + " nodes";
      if (nChanged) label += ", " + nChanged + " changed";
      if (index.callMs && i === graph.stages.length - 1) {
        let ms = 0;
        for (const k of m.nodes) for (const c of callsOfNode(graph, stage.nodes[k])) ms += index.callMs[c];
        if (ms > 0) label += "\n" + msText(ms);
      }
      nodeLine("g:" + key, label, 'shape=box3d, style=filled, fillcolor="#e9ecef"' +
        (nChanged ? ', color="' + CHANGED_COLOR + '", penwidth=2' : ""));
      continue;
    }
    lines.push("  subgraph " + q("cluster_g:" + key) + " {");
    lines.push("    label=" + q(key) + '; style="dashed,rounded"; color="#adb5bd"; fontcolor="#495057";');
    for (const d of m.decls) nodeLine("d:" + d.name, "%" + d.name + " : " + d.type, DECL_STYLES[d.kind] || "");
    for (const k of m.nodes) {
      const n = stage.nodes[k];
      const kernelNote = index.callsByValue.size && i === graph.stages.length - 1 ? kernelOfNodeText(graph, n) : "";
      if (drawsBody(n)) {
        lines.push("    subgraph " + q("cluster_n" + k) + " {");
        lines.push("      label=" + q("fusion " + n.kind + kernelNote) + '; style="filled,rounded"; fillcolor=' +
          q(KIND_COLORS[n.kind] || "#f1f3f5") + (changed.has(k) ? "; color=" + q(CHANGED_COLOR) + "; penwidth=2.5" : '; color="#868e96"') + ";");
        n.body.forEach((b, j) => nodeLine("n" + k + "." + j, b.op + "\n" + typeLine(b.outs)));
        lines.push("    }");
      } else if (n.body) {
        nodeLine("n" + k, "fusion " + n.kind + kernelNote + "\n" + bodyOps(n) + "\n" + typeLine(n.outs),
          attrs("fillcolor=" + q(KIND_COLORS[n.kind] || "#f1f3f5"), changedStyle(k)));
      } else {
        const what = n.outs.length ? typeLine(n.outs) : n.ins.length ? "→ %" + n.ins[0][1] : "";  // an assign: its target
        nodeLine("n" + k, n.op + kernelNote + "\n" + what, changedStyle(k));
      }
    }
    lines.push("  }");
  }
  for (const [ref, name] of stage.outputs) {
    const from = visible(ref);
    if (from.startsWith("g:")) continue;
    nodeLine("o:" + name, "output %" + name, 'shape=house, fillcolor="#f8f9fa"');
    lines.push("  " + q(from) + " -> " + q("o:" + name) + ";");
  }
  const edges = new Map();
  const addEdges = (ins, to) => {
    for (const [ref] of ins) {
      const from = visible(ref);
      if (from === to) continue;
      const e = q(from) + " -> " + q(to);
      edges.set(e, (edges.get(e) || 0) + 1);
    }
  };
  stage.nodes.forEach((n, k) => {
    if (drawsBody(n) && isExpanded(byNode[k])) n.body.forEach((b, j) => addEdges(b.ins, "n" + k + "." + j));
    else addEdges(n.ins, visible("n" + k));
  });
  for (const [e, count] of edges) lines.push("  " + e + (count > 1 && e.includes('"g:') ? " [penwidth=" + Math.min(1 + Math.log2(count), 5).toFixed(1) + "]" : "") + ";");
  // Dot's crossing minimization and network simplex grow fast with a dense
  // graph: limited, 117 boxes of the base step lay out in 1.5 s instead of 6.3.
  if (boxes > LIMITED_LAYOUT) lines.splice(1, 0, "  mclimit=0.2; nslimit=1; nslimit1=1;");
  lines.push("}");
  return { dot: lines.join("\n"), boxes };
}

// " k3" in the final stage: the kernel that runs a node.
function kernelOfNodeText(graph, node) {
  const calls = callsOfNode(graph, node);
  return calls.length ? " k" + graph.program.calls[calls[0]].kernel : "";
}

let graphvizLoading = null;
function graphviz() {
  const wasm = globalThis["@hpcc-js/wasm"];
  if (!wasm || !wasm.Graphviz) return null;
  if (!graphvizLoading) graphvizLoading = wasm.Graphviz.load();
  return graphvizLoading;
}

function stageText(graph, i) {
  const s = stageData(graph, i);
  const t = graph.texts;
  return s.decls.map((d) => t[d.text]).concat(s.nodes.map((n) => t[n.text]), s.outputs.map((o) => "output %" + o[1])).join("\n");
}

function graphToolbar(graph) {
  const depth = el("select", { id: "depth" });
  for (const [v, label] of [[1, "scope depth 1"], [2, "scope depth 2"], [3, "scope depth 3"], [99, "whole scopes"]]) {
    const o = el("option", { value: v, text: label });
    if (v === state.depth) o.selected = true;
    depth.append(o);
  }
  depth.addEventListener("change", () => { state.depth = Number(depth.value); state.expanded.clear(); state.collapsed.clear(); renderGraph(); });
  const bodies = el("input", { type: "checkbox", id: "bodies" });
  bodies.checked = state.showBodies;
  bodies.addEventListener("change", () => { state.showBodies = bodies.checked; renderGraph(); });
  const legend = el("span", { class: "legend" });
  for (const [kind, color] of Object.entries(KIND_COLORS)) legend.append(el("span", { style: "background:" + color, text: kind }));
  legend.append(el("span", { style: "border:2px solid " + CHANGED_COLOR, text: "changed by this pass" }));
  const zoom = (f) => () => { state.zoom = f === 0 ? fitZoom() : state.zoom * f; applyZoom(); };
  return el("div", { class: "toolbar" },
    depth,
    el("button", { id: "expand-all", text: "expand all", onclick: () => { state.expandAll = true; state.collapsed.clear(); renderGraph(); } }),
    el("button", { id: "collapse-all", text: "collapse all", onclick: () => { state.expandAll = false; state.expanded.clear(); renderGraph(); } }),
    el("label", {}, bodies, " fusion bodies"),
    el("button", { text: "−", onclick: zoom(1 / 1.25) }), el("button", { text: "+", onclick: zoom(1.25) }),
    el("button", { text: "fit", onclick: zoom(0) }),
    legend);
}

function fitZoom() {
  const svg = document.querySelector("#graph svg");
  if (!svg) return 1;
  const width = document.getElementById("view").clientWidth - 20;
  return Math.min(1, width / svg.viewBox.baseVal.width);
}

function applyZoom() {
  const svg = document.querySelector("#graph svg");
  if (!svg) return;
  svg.style.width = svg.viewBox.baseVal.width * state.zoom + "px";
  svg.style.height = svg.viewBox.baseVal.height * state.zoom + "px";
}

async function renderGraph() {
  const graph = state.graph;
  const view = document.getElementById("view");
  view.replaceChildren(graphToolbar(graph));
  const box = el("div", { id: "graph" });
  view.append(box);
  const loading = graphviz();
  if (!loading) {
    view.append(el("div", { class: "missing", text: "This kiln was built without Graphviz for the page (npm's @hpcc-js/wasm: tools/install_deps.sh runs npm ci in compiler/report/page, then rebuild kiln). The stage as text:" }),
      el("pre", { class: "kir", style: "max-height:none", text: stageText(graph, state.stage) }));
    return;
  }
  const start = performance.now();
  const { dot, boxes } = stageDot(graph, state.stage);
  const gv = await loading;
  try {
    box.innerHTML = gv.layout(dot, "svg", "dot");
  } catch (err) {
    console.error("Graphviz: " + err.message);
    box.replaceChildren(el("div", { class: "missing", text: "Graphviz could not lay this stage out: " + err.message }));
    return;
  }
  const svg = box.querySelector("svg");
  svg.removeAttribute("width");
  svg.removeAttribute("height");
  applyZoom();
  setStatus(boxes + " boxes laid out in " + Math.round(performance.now() - start) + " ms");
  box.addEventListener("click", onGraphClick);
  markSelected();
}

// The SVG element of a node, cluster or box by its Graphviz name.
function svgElement(name) {
  for (const g of document.querySelectorAll("#graph g.node, #graph g.cluster"))
    if (g.querySelector("title").textContent === name) return g;
  return null;
}

function markSelected() {
  for (const g of document.querySelectorAll("#graph g.selected")) g.classList.remove("selected");
  const sel = state.selected;
  if (!sel || sel.node === undefined || sel.stage !== state.stage) return;
  const stage = stageData(state.graph, state.stage);
  const n = stage.nodes[sel.node];
  const key = grouping(stage).byNode[sel.node];
  const name = !isExpanded(key) ? "g:" + key : drawsBody(n) ? "cluster_n" + sel.node : "n" + sel.node;
  const g = svgElement(name);
  if (g) {
    g.classList.add("selected");
    g.scrollIntoView({ block: "center", inline: "center" });
  }
}

function onGraphClick(e) {
  const g = e.target.closest("g.node, g.cluster");
  if (!g) return;
  const name = g.querySelector("title").textContent;
  if (name.startsWith("g:")) {
    const key = name.slice(2);
    if (state.expandAll) state.collapsed.delete(key); else state.expanded.add(key);
    renderGraph().then(() => {
      const opened = svgElement("cluster_g:" + key);
      if (opened) opened.scrollIntoView({ block: "center", inline: "center" });
    });
  } else if (name.startsWith("cluster_g:")) {
    const key = name.slice("cluster_g:".length);
    if (state.expandAll) state.collapsed.add(key); else state.expanded.delete(key);
    renderGraph();
  } else if (name.startsWith("cluster_n") || name.startsWith("n")) {
    const k = Number(name.replace(/^(cluster_)?n/, "").split(".")[0]);
    selectNode(state.stage, k, false);
  } else if (name.startsWith("d:")) {
    showDeclaration(name.slice(2));
  } else if (name.startsWith("o:")) {
    const maker = makersOf(stageData(state.graph, state.stage)).get(name.slice(2));
    if (maker !== undefined) selectNode(state.stage, maker, false);
  }
}

// Shows node k of stage i: its group expanded, drawn, selected, its details.
async function selectNode(i, k, reveal) {
  state.selected = { stage: i, node: k };
  if (reveal) {
    const key = grouping(stageData(state.graph, i)).byNode[k];
    if (state.expandAll) state.collapsed.delete(key); else state.expanded.add(key);
    state.stage = i;
    showTab("graph");
    renderStrip();
    await renderGraph();
  } else {
    markSelected();
  }
  showNodeDetails(i, k);
}
