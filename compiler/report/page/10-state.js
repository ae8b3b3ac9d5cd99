// The page's state and data: the graphs the dump holds (window.kilnGraphs), each
// loaded from NAME/page-data.js when first shown, a kernel's code from
// NAME/page-kernels/kN.js when it is first opened. Scripts, not fetch(): the
// page is opened from the file system.
"use strict";

const kilnPage = {
  graphs: {},      // name -> the data of dump_data.h
  kernels: {},     // "NAME/N" -> {"ll", "opt.ll", "s"}
  addGraph(data) { this.graphs[data.name] = data; },
  addKernel(name, n, files) { this.kernels[name + "/" + n] = files; },
};

const state = {
  graph: null,         // the shown graph's data
  stage: 0,            // index into graph.stages
  tab: "graph",
  depth: 2,            // scope components a collapsed box keeps
  expanded: new Set(), // group keys shown node by node
  selected: null,      // {stage, node} or {kernel} or {buffer}
};

function loadScript(src) {
  return new Promise((resolve, reject) => {
    const script = document.createElement("script");
    script.src = src;
    script.onload = resolve;
    script.onerror = () => reject(new Error("cannot load " + src + " (is it beside index.html?)"));
    document.body.appendChild(script);
  });
}

async function loadGraph(name) {
  if (!kilnPage.graphs[name]) await loadScript(encodeURIComponent(name) + "/page-data.js");
  return kilnPage.graphs[name];
}

async function loadKernel(name, n) {
  const key = name + "/" + n;
  if (!kilnPage.kernels[key]) await loadScript(encodeURIComponent(name) + "/page-kernels/k" + n + ".js");
  return kilnPage.kernels[key];
}

// A stage's own data (a stage that repeats an earlier one's text points at it).
function stageData(graph, i) {
  let s = graph.stages[i];
  while (s.same !== undefined) s = graph.stages[s.same];
  return s;
}

function stageName(stage) {
  return stage.pass || "input";
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "onclick") e.addEventListener("click", v);
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

function bytesText(b) {
  if (b < 1024) return b + " B";
  const units = ["KiB", "MiB", "GiB"];
  let v = b / 1024, u = 0;
  while (v >= 1024 && u < 2) { v /= 1024; u++; }
  return v.toFixed(1) + " " + units[u];
}

function msText(ms) { return ms >= 10 ? ms.toFixed(1) + " ms" : ms.toFixed(3) + " ms"; }

function setStatus(text) { document.getElementById("status").textContent = text; }

// The graph's program, or null after saying in `view` that the dump has none.
function programOrSay(graph, view) {
  if (graph.program) return graph.program;
  view.replaceChildren(el("p", { class: "missing", text: "No program in this dump (kiln opt stops after the passes)." }));
  return null;
}

// Facts of the program shared by the views: which calls run each value's node,
// each call's and kernel's time, each buffer's producing node.
function programIndex(graph) {
  if (graph._program) return graph._program;
  const p = graph.program;
  const index = { callsByValue: new Map(), kernelMs: [], kernelCalls: [], callMs: null };
  if (p) {
    const callMs = graph.profile ? graph.profile.call_ms : null;
    index.callMs = callMs;
    p.kernels.forEach(() => { index.kernelMs.push(0); index.kernelCalls.push([]); });
    p.calls.forEach((call, c) => {
      // Its node's first result, and its result buffers (an update written in
      // place is its target's buffer).
      for (const name of new Set([call.node, ...call.results])) {
        if (!index.callsByValue.has(name)) index.callsByValue.set(name, []);
        index.callsByValue.get(name).push(c);
      }
      index.kernelCalls[call.kernel].push(c);
      if (callMs) index.kernelMs[call.kernel] += callMs[c];
    });
  }
  graph._program = index;
  return index;
}

// "matmul %q", "fusion (loop) %12", "assign %w": what a list or a title calls a node.
function nodeTitle(node) {
  const op = node.body ? "fusion (" + node.kind + ")" : node.op;
  if (node.outs.length) return op + " %" + node.outs[0][0];
  return node.ins.length ? op + " %" + node.ins[0][1] : op;
}

// The names a node makes: its results and its fusion body's.
function nodeNames(node) {
  const names = node.outs.map((o) => o[0]);
  for (const b of node.body || []) for (const o of b.outs) names.push(o[0]);
  return names;
}

// A node's scopes; a fusion records its ops' (its constants', which CSE may have
// shared between parts, aside), so its body's count only where it has none.
function nodeScopes(node) {
  if (node.scopes && node.scopes.length) return node.scopes;
  const scopes = new Set();
  for (const b of node.body || []) for (const s of b.scopes || []) scopes.add(s);
  return [...scopes].sort();
}

// The calls that run a node (its results are the calls' results).
function callsOfNode(graph, node) {
  const index = programIndex(graph);
  const calls = new Set();
  for (const o of node.outs) for (const c of index.callsByValue.get(o[0]) || []) calls.add(c);
  return [...calls];
}

// Where each value is made in a stage: name -> top-level node index.
function makersOf(stage) {
  if (stage._makers) return stage._makers;
  const makers = new Map();
  stage.nodes.forEach((n, i) => { for (const name of nodeNames(n)) makers.set(name, i); });
  stage._makers = makers;
  return makers;
}

// The remarks that name any of `names` (as %NAME).
function remarksNaming(graph, names) {
  if (!graph._remarkIndex) {
    const index = new Map();
    graph.remarks.forEach((r, i) => {
      for (const m of r.text.matchAll(/%([A-Za-z0-9_.]+)/g)) {
        const name = m[1].replace(/\.+$/, "");  // a sentence's full stop
        if (!index.has(name)) index.set(name, new Set());
        index.get(name).add(i);
      }
    });
    graph._remarkIndex = index;
  }
  const found = new Set();
  for (const n of names) for (const i of graph._remarkIndex.get(n) || []) found.add(i);
  return [...found].sort((a, b) => a - b).map((i) => graph.remarks[i]);
}
