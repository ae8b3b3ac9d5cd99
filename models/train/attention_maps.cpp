#include "models/train/attention_maps.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/atomic_file.h"
#include "engine/interpreter.h"
#include "engine/ir/error.h"
#include "engine/npy.h"
#include "engine/param_init.h"
#include "models/train/attention_page.h"
#include "models/transformer/attention.h"
#include "models/transformer/transformer.h"

namespace kiln::models {
namespace {

// How an axis names a token: its text, <s>, </s>, <pad> for the special ones, or
// its id when it decodes to nothing.
std::string piece(const Task& task, int32_t id) {
  if (id == task.bos_id()) return "<s>";
  if (id == task.eos_id()) return "</s>";
  if (id == task.pad_id()) return "<pad>";
  std::string text = task.decode({id});
  if (text.empty()) text = std::to_string(id);  // a piece that decodes to nothing: its id
  return text;
}

std::vector<std::string> pieces(const Task& task, const std::vector<int32_t>& ids) {
  std::vector<std::string> out;
  for (int32_t id : ids) out.push_back(piece(task, id));
  return out;
}

Tensor token_row(const std::vector<int32_t>& ids) {
  auto t = Tensor::I32::from_shape({1, ids.size()});
  for (size_t i = 0; i < ids.size(); ++i) t(0, i) = ids[i];
  return Tensor(std::move(t));
}

// f32[1, H, Q, K] -> f32[H, Q, K]
Tensor without_batch(const Tensor& t) {
  const Tensor::F32& a = t.f32();
  auto out = Tensor::F32::from_shape({a.shape()[1], a.shape()[2], a.shape()[3]});
  std::copy(a.begin(), a.end(), out.begin());
  return Tensor(std::move(out));
}

std::string sentence_dir(size_t index) {
  char name[24];  // any size_t: 20 digits
  std::snprintf(name, sizeof name, "%04zu", index + 1);
  return name;
}

}  // namespace

SentenceAttention sentence_attention(TrainedModel& m, const std::string& source_text,
                                     const std::vector<int32_t>& source, const std::vector<int32_t>& tokens) {
  const TransformerConfig& cfg = m.checkpoint.config;
  const Task& task = *m.task;
  SentenceAttention out;
  out.source_text = source_text;
  out.output_text = task.decode(tokens);
  // Position t reads the start token and tokens[0..t) and predicts tokens[t].
  std::vector<int32_t> input{task.bos_id()};
  if (!tokens.empty()) input.insert(input.end(), tokens.begin(), tokens.end() - 1);
  out.source_ids = source;
  out.input_ids = input;
  out.output_ids = tokens;
  out.source_pieces = pieces(task, source);
  out.input_pieces = pieces(task, input);
  out.output_pieces = pieces(task, tokens);
  if (tokens.empty()) return out;  // nothing decoded: no decoder position to show

  Interpreter exe(build_attention_graph(cfg, static_cast<int64_t>(source.size()), static_cast<int64_t>(input.size())));
  const Graph& g = exe.graph();
  for (Value v : g.declarations()) {
    const ValueInfo& info = g.value(v);
    if (info.kind == ValueKind::input) continue;
    const auto it = m.checkpoint.tensors.find(info.name);
    if (it != m.checkpoint.tensors.end())
      exe.bind(info.name, it->second);
    else if (info.kind == ValueKind::state)
      exe.bind(info.name, initial_value(info, 0));  // the positional encodings: constant
    else
      throw Error("attention: the checkpoint has no param %" + info.name);
  }
  exe.bind("src", token_row(source));
  exe.bind("tgt_in", token_row(input));
  exe.run();
  const std::string suffix = attention_weights_name("");
  for (Value v : g.outputs()) {
    const std::string& name = g.name_of(v);
    if (!name.ends_with(suffix)) continue;
    out.maps.push_back({name.substr(0, name.size() - suffix.size()), without_batch(exe.output(name))});
  }
  return out;
}

std::vector<SentenceAttention> translated_attention(TrainedModel& m, const std::vector<std::string>& lines,
                                                    const std::vector<TranslatedLine>& translated) {
  std::vector<SentenceAttention> out;
  for (size_t i = 0; i < lines.size(); ++i)
    if (!translated[i].tokens.empty())
      out.push_back(sentence_attention(m, lines[i], translated[i].source, translated[i].tokens[0]));
  return out;
}

void write_attention(const std::string& dir, const std::vector<SentenceAttention>& sentences) {
  const auto make_dir = [](const std::string& path) {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) throw Error("--attention: cannot create the directory " + path + ": " + ec.message());
  };
  make_dir(dir);
  for (size_t i = 0; i < sentences.size(); ++i) {
    const SentenceAttention& s = sentences[i];
    const std::string sub = (std::filesystem::path(dir) / sentence_dir(i)).string();
    make_dir(sub);
    for (const AttentionMap& map : s.maps) save_npy(sub + "/" + map.name + ".npy", map.weights);
    const nlohmann::json axes = {{"source", s.source_text},
                                 {"output", s.output_text},
                                 {"source_pieces", s.source_pieces},
                                 {"input_pieces", s.input_pieces},
                                 {"output_pieces", s.output_pieces},
                                 {"source_ids", s.source_ids},
                                 {"input_ids", s.input_ids},
                                 {"output_ids", s.output_ids}};
    write_file_atomically(sub + "/pieces.json", axes.dump(2) + "\n");
  }
  write_file_atomically((std::filesystem::path(dir) / "index.html").string(), attention_page(sentences));
}

}  // namespace kiln::models
