#include "models/train/attention_page.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace kiln::models {
namespace {

// Weights rounded to 4 decimals: the page shows them, the .npy files keep them whole.
nlohmann::json rounded(const Tensor& weights) {
  const Tensor::F32& a = weights.f32();
  nlohmann::json values = nlohmann::json::array();
  for (float x : a) values.push_back(std::round(static_cast<double>(x) * 1e4) / 1e4);
  return {{"heads", a.shape()[0]}, {"rows", a.shape()[1]}, {"cols", a.shape()[2]}, {"values", std::move(values)}};
}

nlohmann::json page_data(const std::vector<SentenceAttention>& sentences) {
  nlohmann::json out = nlohmann::json::array();
  for (const SentenceAttention& s : sentences) {
    nlohmann::json maps = nlohmann::json::array();
    for (const AttentionMap& m : s.maps) {
      nlohmann::json map = rounded(m.weights);
      map["name"] = m.name;
      maps.push_back(std::move(map));
    }
    out.push_back({{"source", s.source_text},
                   {"output", s.output_text},
                   {"source_pieces", s.source_pieces},
                   {"input_pieces", s.input_pieces},
                   {"output_pieces", s.output_pieces},
                   {"maps", std::move(maps)}});
  }
  return out;
}

// JSON inside <script>: "</" written "<\/" so no piece of text can end the element.
std::string script_safe(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '/' && i > 0 && json[i - 1] == '<') out += '\\';
    out += json[i];
  }
  return out;
}

constexpr const char* kHead = R"html(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>kiln: attention</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 16px; color: #222; }
h1 { font-size: 18px; margin: 0 0 8px; }
h2 { font-size: 15px; margin: 18px 0 6px; }
#sentences { max-height: 160px; overflow: auto; border: 1px solid #ccc; padding: 4px; }
#sentences div { cursor: pointer; padding: 2px 4px; white-space: nowrap; }
#sentences div.on { background: #dde7ff; }
.grid { display: grid; gap: 6px; align-items: start; }
.cell { text-align: center; font-size: 11px; color: #555; cursor: pointer; }
.cell canvas { border: 1px solid #bbb; image-rendering: pixelated; }
#large { margin-top: 12px; }
#tip { position: fixed; background: #222; color: #fff; padding: 3px 6px; font-size: 12px; border-radius: 3px;
       pointer-events: none; display: none; }
</style></head><body>
<h1>Attention, layer by layer and head by head</h1>
<div id="sentences"></div>
<div id="views"></div>
<div id="large"></div>
<div id="tip"></div>
<script type="application/json" id="data">)html";

constexpr const char* kTail = R"html(</script>
<script>
"use strict";
const sentences = JSON.parse(document.getElementById("data").textContent);
const tip = document.getElementById("tip");
const kinds = [
  ["self_attn", "enc.", "Encoder self-attention", "source_pieces", "source_pieces"],
  ["self_attn", "dec.", "Decoder self-attention", "output_pieces", "input_pieces"],
  ["cross_attn", "dec.", "Cross-attention: decoder positions over the source", "output_pieces", "source_pieces"],
];
function weight(map, head, r, c) { return head < 0 ? mean(map, r, c) : map.values[(head * map.rows + r) * map.cols + c]; }
function mean(map, r, c) {
  let s = 0;
  for (let h = 0; h < map.heads; ++h) s += map.values[(h * map.rows + r) * map.cols + c];
  return s / map.heads;
}
function draw(canvas, map, head, cell) {
  canvas.width = map.cols * cell; canvas.height = map.rows * cell;
  const g = canvas.getContext("2d");
  for (let r = 0; r < map.rows; ++r)
    for (let c = 0; c < map.cols; ++c) {
      const v = weight(map, head, r, c);
      g.fillStyle = `rgb(${Math.round(255 - 220 * v)},${Math.round(255 - 180 * v)},255)`;
      g.fillRect(c * cell, r * cell, cell, cell);
    }
}
function large(s, map, head, rowsKey, colsKey) {
  const box = document.getElementById("large");
  box.innerHTML = "";
  const title = document.createElement("h2");
  title.textContent = map.name + (head < 0 ? ", mean of the heads" : ", head " + head);
  box.appendChild(title);
  const cell = Math.max(14, Math.min(28, Math.floor(640 / Math.max(map.rows, map.cols))));
  const rows = s[rowsKey], cols = s[colsKey];
  const left = 8 + 7 * Math.max(...rows.map(p => p.length)), top = 8 + 7 * Math.max(...cols.map(p => p.length));
  const wrap = document.createElement("div");
  wrap.style.position = "relative";
  wrap.style.height = (top + map.rows * cell + 8) + "px";
  const canvas = document.createElement("canvas");
  canvas.style.position = "absolute"; canvas.style.left = left + "px"; canvas.style.top = top + "px";
  draw(canvas, map, head, cell);
  wrap.appendChild(canvas);
  rows.forEach((p, r) => {
    const t = document.createElement("div");
    t.textContent = p; t.className = "row-label";
    t.style.cssText = `position:absolute;right:calc(100% - ${left - 4}px);top:${top + r * cell}px;` +
                      `line-height:${cell}px;font-size:12px;white-space:nowrap`;
    wrap.appendChild(t);
  });
  cols.forEach((p, c) => {
    const t = document.createElement("div");
    t.textContent = p; t.className = "col-label";
    t.style.cssText = `position:absolute;left:${left + c * cell}px;top:${top - 4}px;width:${cell}px;` +
                      `transform-origin:left top;transform:rotate(-90deg) translateX(0);font-size:12px;` +
                      `white-space:nowrap;line-height:${cell}px`;
    wrap.appendChild(t);
  });
  canvas.addEventListener("mousemove", e => {
    const c = Math.floor(e.offsetX / cell), r = Math.floor(e.offsetY / cell);
    if (r < 0 || c < 0 || r >= map.rows || c >= map.cols) return;
    tip.textContent = `${rows[r]} \u2192 ${cols[c]}: ${weight(map, head, r, c).toFixed(4)}`;
    tip.style.left = (e.clientX + 12) + "px"; tip.style.top = (e.clientY + 12) + "px"; tip.style.display = "block";
  });
  canvas.addEventListener("mouseleave", () => { tip.style.display = "none"; });
  box.appendChild(wrap);
}
function show(index) {
  document.querySelectorAll("#sentences div").forEach((d, i) => d.classList.toggle("on", i === index));
  const s = sentences[index], views = document.getElementById("views");
  views.innerHTML = "";
  document.getElementById("large").innerHTML = "";
  for (const [kind, side, title, rowsKey, colsKey] of kinds) {
    const maps = s.maps.filter(m => m.name.startsWith(side) && m.name.endsWith(kind));
    if (!maps.length) continue;
    const h = document.createElement("h2");
    h.textContent = title;
    views.appendChild(h);
    const grid = document.createElement("div");
    grid.className = "grid";
    grid.style.gridTemplateColumns = `repeat(${maps[0].heads + 1}, max-content)`;
    for (const map of maps)
      for (let head = 0; head <= map.heads; ++head) {
        const cell = document.createElement("div");
        cell.className = "cell";
        const canvas = document.createElement("canvas");
        const hd = head < map.heads ? head : -1;
        draw(canvas, map, hd, Math.max(2, Math.floor(120 / Math.max(map.rows, map.cols))));
        cell.appendChild(canvas);
        const label = document.createElement("div");
        label.textContent = map.name.split(".").slice(0, 2).join(".") + (hd < 0 ? " mean" : " head " + hd);
        cell.appendChild(label);
        cell.addEventListener("click", () => large(s, map, hd, rowsKey, colsKey));
        grid.appendChild(cell);
      }
    views.appendChild(grid);
  }
}
const list = document.getElementById("sentences");
sentences.forEach((s, i) => {
  const d = document.createElement("div");
  d.textContent = `${i + 1}. ${s.source}  \u2192  ${s.output}`;
  d.addEventListener("click", () => show(i));
  list.appendChild(d);
});
if (sentences.length) show(0);
</script></body></html>
)html";

}  // namespace

std::string attention_page(const std::vector<SentenceAttention>& sentences) {
  std::string page = kHead;
  page += script_safe(page_data(sentences).dump());
  page += kTail;
  return page;
}

}  // namespace kiln::models
