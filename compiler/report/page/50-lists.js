// The kernels table, the remarks list and search.
"use strict";

function renderKernels() {
  const graph = state.graph;
  const view = document.getElementById("view");
  const p = programOrSay(graph, view);
  if (!p) return;
  const index = programIndex(graph);
  const order = p.kernels.map((k, i) => i);
  if (index.callMs) order.sort((a, b) => index.kernelMs[b] - index.kernelMs[a]);
  const last = stageData(graph, graph.stages.length - 1);
  const makers = makersOf(last);
  const table = el("table", { id: "kernel-table" }, el("tr", {}, el("th", { text: "kernel" }), el("th", { text: "label" }), el("th", { text: "kind" }),
    el("th", { class: "num", text: "calls" }), el("th", { class: "num", text: index.callMs ? "ms per run" : "" }), el("th", { text: "scopes" })));
  for (const kernel of order) {
    const k = p.kernels[kernel];
    const scopes = new Set();
    for (const c of index.kernelCalls[kernel]) {
      const node = last.nodes[makers.get(p.calls[c].node)];
      if (node) for (const s of nodeScopes(node)) scopes.add(s);
    }
    const scopeText = [...scopes].slice(0, 3).join(", ") + (scopes.size > 3 ? ", +" + (scopes.size - 3) : "");
    table.append(el("tr", { class: "link", "data-kernel": kernel, onclick: () => showKernelDetails(kernel) },
      el("td", { text: "k" + kernel }), el("td", { text: k.label }),
      el("td", {}, el("span", { style: "background:" + (KIND_COLORS[k.kind] || "#eee") + ";padding:0 4px", text: k.kind })),
      el("td", { class: "num", text: index.kernelCalls[kernel].length }),
      el("td", { class: "num", text: index.callMs ? msText(index.kernelMs[kernel]) : "" }), el("td", { text: scopeText })));
  }
  view.replaceChildren(el("div", { class: "toolbar" }, p.kernels.length + " distinct kernels, " + p.calls.length + " calls" +
    (index.callMs ? "; times from kiln profile, " + graph.profile.runs + " runs" : "; no profile (kiln profile FILE --dump-dir DIR records one)")), table);
}

// A remark's node: the first %NAME it names that a node of its stage makes.
function remarkTarget(graph, r) {
  const makers = makersOf(stageData(graph, r.stage));
  for (const m of r.text.matchAll(/%([A-Za-z0-9_.]+)/g)) {
    const k = makers.get(m[1].replace(/\.+$/, ""));
    if (k !== undefined) return k;
  }
  return undefined;
}

function remarkLink(graph, r) {
  const k = remarkTarget(graph, r);
  const item = remarkItem(graph, r);
  if (k !== undefined) {
    item.classList.add("link");
    item.addEventListener("click", () => selectNode(r.stage, k, true));
  }
  return item;
}

function renderRemarks() {
  const graph = state.graph;
  const view = document.getElementById("view");
  const filter = el("input", { type: "search", id: "remark-filter", placeholder: "filter remarks", size: 40 });
  const list = el("ul", { class: "remarks", id: "remark-list" });
  const fill = () => {
    const f = filter.value.toLowerCase();
    list.replaceChildren(...graph.remarks.filter((r) => !f || r.text.toLowerCase().includes(f) ||
      stageName(graph.stages[r.stage]).includes(f)).slice(0, 2000).map((r) => remarkLink(graph, r)));
  };
  filter.addEventListener("input", fill);
  const passes = new Map();
  for (const r of graph.remarks) {
    const name = stageName(graph.stages[r.stage]);
    passes.set(name, (passes.get(name) || 0) + 1);
  }
  view.replaceChildren(el("div", { class: "toolbar" }, filter, " " + [...passes].map(([p, n]) => p + ": " + n).join(", ")), list);
  fill();
}

// Search by name: nodes of the shown stage (value names, ops, scopes), kernels, remarks.
function search(text) {
  const graph = state.graph;
  const term = text.trim().toLowerCase().replace(/^%/, "");
  if (!term) return;
  const stage = stageData(graph, state.stage);
  const nodes = [];
  stage.nodes.forEach((n, k) => {
    if (nodes.length < 200 && (nodeNames(n).some((x) => x.toLowerCase().includes(term)) || n.op.includes(term) ||
        nodeScopes(n).some((s) => s.toLowerCase().includes(term)))) nodes.push(k);
  });
  const kernels = graph.program ? graph.program.kernels.map((k, i) => i).filter((i) => "k" + i === term ||
    graph.program.kernels[i].label.includes(term)) : [];
  const remarks = graph.remarks.filter((r) => r.text.toLowerCase().includes(term)).slice(0, 200);
  details(el("h2", { text: "Search: " + text }),
    el("h3", { text: "Nodes of " + graph.stages[state.stage].file + " (" + nodes.length + (nodes.length === 200 ? "+" : "") + ")" }),
    el("ul", { id: "search-nodes" }, ...nodes.map((k) => {
      const n = stage.nodes[k];
      const scopes = nodeScopes(n);
      return el("li", { class: "link", onclick: () => selectNode(state.stage, k, true) },
        nodeTitle(n) + (scopes.length ? " — " + scopes.join(", ") : ""));
    })),
    el("h3", { text: "Kernels (" + kernels.length + ")" }),
    el("ul", {}, ...kernels.map((i) => el("li", { class: "link", text: "k" + i + " " + graph.program.kernels[i].label, onclick: () => showKernelDetails(i) }))),
    el("h3", { text: "Remarks (" + remarks.length + ")" }),
    el("ul", { class: "remarks" }, ...remarks.map((r) => remarkLink(graph, r))));
}
