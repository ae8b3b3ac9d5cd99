// Start: the graph list, the pipeline strip, the tabs and search.
"use strict";

function renderStrip() {
  const graph = state.graph;
  const strip = document.getElementById("strip");
  strip.replaceChildren(...graph.stages.map((s, i) => {
    const data = stageData(graph, i);
    let facts = data.nodes.length + " nodes";
    if (s.pass) {
      const changed = changedNodes(graph, i).size, removed = removedCount(graph, i);
      facts = s.nodes_before + "→" + s.nodes_after + " nodes, " + msText(s.ms) +
        (s.changed ? (changed || removed ? ", +" + changed + " −" + removed : ", renamed") : ", no change");
    }
    const cls = "stage" + (i === state.stage ? " active" : "") + (s.pass ? (s.changed ? " changed" : " unchanged") : "");
    return el("div", { class: cls, "data-stage": i, title: s.file, onclick: () => showStage(i) },
      String(i).padStart(2, "0") + " " + stageName(s), el("small", { text: facts }));
  }));
}

function showStage(i) {
  state.stage = i;
  renderStrip();
  showTab("graph");
  showStageDetails(i);
}

// What a pass did: its facts, its remarks, and the statements it added and
// removed against the stage before (a diff of the .kir, statement by statement).
function showStageDetails(i) {
  const graph = state.graph;
  const s = graph.stages[i];
  const parts = [el("h2", { text: s.file })];
  if (s.pass) parts.push(el("p", { text: s.pass + ": " + s.nodes_before + " → " + s.nodes_after + " nodes in " + msText(s.ms) + (s.changed ? "" : ", no change") }));
  const remarks = graph.remarks.filter((r) => r.stage === i);
  if (remarks.length) parts.push(el("h3", { text: "Remarks (" + remarks.length + ")" }), el("ul", { class: "remarks" }, ...remarks.slice(0, 200).map((r) => remarkLink(graph, r))));
  if (i > 0 && s.same === undefined) {
    const stage = stageData(graph, i);
    const before = stageData(graph, i - 1);
    const added = [...changedNodes(graph, i)];
    const now = new Set(stage.nodes.map((n) => n.text));
    const removed = before.nodes.filter((n) => !now.has(n.text));
    parts.push(el("h3", { text: "Added (" + added.length + ")" }),
      el("ul", { id: "stage-added" }, ...added.slice(0, 200).map((k) => el("li", { class: "link", onclick: () => selectNode(i, k, true) },
        el("pre", { class: "kir", text: graph.texts[stage.nodes[k].text] })))),
      el("h3", { text: "Removed (" + removed.length + ")" }),
      el("ul", {}, ...removed.slice(0, 200).map((n) => el("li", {}, el("pre", { class: "kir", text: graph.texts[n.text] })))));
  }
  details(...parts);
}

function showTab(tab) {
  state.tab = tab;
  for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.tab === tab);
  document.getElementById("view").scrollTo(0, 0);
  if (tab === "graph") renderGraph();
  else if (tab === "kernels") renderKernels();
  else if (tab === "memory") renderMemory();
  else renderRemarks();
}

async function showGraph(name) {
  setStatus("loading " + name + "...");
  let graph;
  try {
    graph = await loadGraph(name);
  } catch (err) {
    document.getElementById("view").replaceChildren(el("p", { class: "missing", text: String(err) }));
    return;
  }
  state.graph = graph;
  state.stage = graph.stages.length - 1;
  const largest = Math.max(...graph.stages.map((s, i) => stageData(graph, i).nodes.length));
  state.expandAll = largest <= BIG_GRAPH;
  state.expanded = new Set();
  state.collapsed = new Set();
  state.showBodies = state.expandAll;  // a big graph's clusters of fusion bodies take Graphviz seconds
  state.zoom = 1;
  state.selected = null;
  document.querySelector('#tabs button[data-tab="remarks"]').textContent = "Remarks (" + graph.remarks.length + ")";
  renderStrip();
  showTab(state.tab);
  showSummary(graph);
}

// The graph at a glance, until something is clicked.
function showSummary(graph) {
  const passes = graph.stages.filter((s) => s.pass);
  const lines = [graph.stages.length - 1 + " passes in " + msText(passes.reduce((sum, s) => sum + s.ms, 0)) + ": " +
    stageData(graph, 0).nodes.length + " nodes to " + stageData(graph, graph.stages.length - 1).nodes.length];
  const p = graph.program;
  if (p) lines.push(p.calls.length + " kernel calls of " + p.kernels.length + " distinct kernels; arena " +
    bytesText(p.arena_bytes) + " (one buffer per value: " + bytesText(p.naive_bytes) + ")");
  if (graph.profile) lines.push(msText(graph.profile.call_ms.reduce((sum, ms) => sum + ms, 0)) + " of kernels per run (kiln profile, " + graph.profile.runs + " runs)");
  lines.push(graph.remarks.length + " remarks");
  details(el("h2", { text: "@" + graph.name }), el("ul", {}, ...lines.map((t) => el("li", { text: t }))),
    el("p", { class: "hint", text: "Click a stage, a node, a kernel, a buffer or a remark; Enter in the search box searches." }));
}

function start() {
  const select = document.getElementById("graph-select");
  for (const name of window.kilnGraphs) select.append(el("option", { value: name, text: name }));
  select.addEventListener("change", () => showGraph(select.value));
  for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));
  const box = document.getElementById("search");
  box.addEventListener("keydown", (e) => { if (e.key === "Enter") search(box.value); });
  if (window.kilnGraphs.length) showGraph(window.kilnGraphs[0]);
  else document.getElementById("view").replaceChildren(el("p", { class: "missing", text: "No graph dumped here yet." }));
}

start();
