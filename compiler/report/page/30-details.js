// The details panel: a node's .kir text, types, origins, the decisions about it,
// the kernel that runs it (LLVM IR, optimized IR, assembly) and its time; a
// kernel's calls; a declaration.
"use strict";

function details(...children) {
  document.getElementById("details").replaceChildren(...children);
}

function scopesList(scopes, source) {
  const out = el("div", { class: "origins" });
  for (const s of scopes) out.append(el("span", { class: "scope", text: s }));
  if (source) out.append(el("div", { text: "source: " + source }));
  if (!scopes.length && !source) out.append(el("span", { class: "note", text: "none recorded (built in code, without a scope)" }));
  return out;
}

function typesTable(outs) {
  const t = el("table", {});
  for (const [name, type] of outs) {
    const m = type.match(/^(\w+)(\[.*\])$/);
    t.append(el("tr", {}, el("td", { text: "%" + name }), el("td", { text: m ? m[1] : type }), el("td", { text: m ? m[2] : "" })));
  }
  return t;
}

function remarkItem(graph, r) {
  const stage = graph.stages[r.stage];
  const pass = stageName(stage);
  return el("li", {}, r.text.startsWith(pass + ":") ? null : el("span", { class: "pass-tag", text: pass }), r.text);
}

// Why a node is or is not fused: the fusion it is, and the remarks naming it.
function decisionSection(graph, node) {
  const section = el("div", { class: "decision" });
  if (node.body)
    section.append(el("p", { text: "fused into one " + node.kind + " kernel of " + node.body.length + " ops (" + bodyOps(node) + "): their intermediates never go through memory" }));
  const remarks = remarksNaming(graph, nodeNames(node));
  if (remarks.length) section.append(el("ul", { class: "remarks" }, ...remarks.map((r) => remarkItem(graph, r))));
  else if (!node.body) section.append(el("p", { class: "note", text: "no pass remarked on it" }));
  return section;
}

function showNodeDetails(i, k) {
  const graph = state.graph;
  const stage = stageData(graph, i);
  const node = stage.nodes[k];
  const parts = [
    el("h2", { text: nodeTitle(node) }),
    el("div", { class: "note", text: "stage " + graph.stages[i].file + (changedNodes(graph, i).has(k) ? ", changed by this pass" : "") }),
    el("h3", { text: "Types" }), typesTable(node.outs),
    el("h3", { text: "Origins" }), scopesList(nodeScopes(node), node.source),
    el("h3", { text: "Fusion decision" }), decisionSection(graph, node),
    el("h3", { text: ".kir" }), el("pre", { class: "kir", text: graph.texts[node.text] }),
  ];
  const calls = callsOfNode(graph, node);
  if (calls.length) {
    parts.push(el("h3", { text: "Kernel" }));
    parts.push(kernelSection(graph, graph.program.calls[calls[0]].kernel, calls));
  } else if (graph.program) {
    parts.push(el("p", { class: "note", text: "No kernel call makes its results in the compiled program (a later pass rewrote or fused it; see the last stage)." }));
  }
  details(...parts);
}

function showDeclaration(name) {
  const graph = state.graph;
  const stage = stageData(graph, state.stage);
  const d = stage.decls.find((x) => x.name === name);
  const readers = stage.nodes.map((n, k) => [n, k]).filter(([n]) => n.ins.some(([ref]) => ref === "d:" + name) ||
    (n.body || []).some((b) => b.ins.some(([ref]) => ref === "d:" + name)));
  details(el("h2", { text: d.kind + " %" + name }), typesTable([[name, d.type]]),
    el("pre", { class: "kir", text: graph.texts[d.text] }),
    el("h3", { text: "Read by" }),
    el("ul", {}, ...readers.map(([n, k]) => el("li", { class: "link", text: nodeTitle(n), onclick: () => selectNode(state.stage, k, true) }))));
}

// A kernel: its kind, calls, time, and its code, loaded when first shown.
function kernelSection(graph, kernel, calls) {
  const p = graph.program;
  const k = p.kernels[kernel];
  const index = programIndex(graph);
  const allCalls = index.kernelCalls[kernel];
  const section = el("div", { class: "kernel" });
  let line = "k" + kernel + " " + k.label + " (" + k.kind + "), " + allCalls.length + " call" + (allCalls.length === 1 ? "" : "s") + " per run";
  if (index.callMs) {
    const mine = calls.reduce((sum, c) => sum + index.callMs[c], 0);
    line += "; this node " + msText(mine) + ", the kernel " + msText(index.kernelMs[kernel]) + " per run";
  }
  section.append(el("p", { text: line }));
  const code = el("pre", { class: "code", text: "loading..." });
  const tabs = el("div", { class: "code-tabs" });
  const show = async (kind, button) => {
    for (const b of tabs.children) b.classList.remove("active");
    button.classList.add("active");
    if (kind === "text") {
      code.textContent = k.text;
      return;
    }
    try {
      const f = await loadKernel(graph.name, kernel);
      code.textContent = f[kind] !== undefined ? f[kind] : "(no ." + kind + " file in the dump)";
    } catch (err) {
      code.textContent = String(err);
    }
  };
  for (const [kind, label] of [["s", "assembly"], ["opt.ll", "LLVM IR, optimized"], ["ll", "LLVM IR, as lowered"], ["text", "kernel graph"]]) {
    const b = el("button", { text: label, "data-code": kind });
    b.addEventListener("click", () => show(kind, b));
    tabs.append(b);
  }
  section.append(tabs, code);
  show("s", tabs.children[0]);
  return section;
}

function showKernelDetails(kernel) {
  const graph = state.graph;
  const index = programIndex(graph);
  const last = graph.stages.length - 1;
  const makers = makersOf(stageData(graph, last));
  const calls = index.kernelCalls[kernel];
  const list = el("ul", {});
  for (const c of calls) {
    const call = graph.program.calls[c];
    const k = makers.get(call.node);
    const node = k === undefined ? null : stageData(graph, last).nodes[k];
    const scopes = node ? nodeScopes(node).join(", ") : "";
    list.append(el("li", { class: "link", onclick: () => k !== undefined && selectNode(last, k, true) },
      "call " + c + ": %" + call.node + (scopes ? " — " + scopes : "") + (index.callMs ? " — " + msText(index.callMs[c]) : "")));
  }
  details(el("h2", { text: "kernel k" + kernel }), kernelSection(graph, kernel, calls), el("h3", { text: "Calls" }), list);
}
