#include "compiler/report/dump_data.h"

#include <algorithm>
#include <filesystem>

#include "compiler/report/stage_json.h"
#include "engine/ir/error.h"
#include "engine/ir/read_file.h"

namespace kiln::compiler {
namespace {

namespace fs = std::filesystem;

// Far beyond any dump's file (a base model step's .kir is a few MiB).
constexpr size_t kDumpFileLimit = 1024 * kMiB;

std::string read_dump_file(const fs::path& path) { return read_file(path.string(), kDumpFileLimit, "a dump file"); }

nlohmann::json read_json(const fs::path& path) {
  try {
    return nlohmann::json::parse(read_dump_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error("--dump-dir: " + path.string() + ": " + e.what());
  }
}

// passes.json's stages: the input's file, then each pass's record. The
// directory may hold an earlier process's later stages; this list is this dump's.
nlohmann::json stage_records(const fs::path& dir) {
  if (!fs::exists(dir / "passes.json")) throw Error("--dump-dir: " + dir.string() + " has no passes.json");
  return read_json(dir / "passes.json").at("stages");
}

// Text lines, without empty ones.
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// passes.json's "sources" (the .kir places the printed stage leaves out) onto
// the stage's nodes.
void add_sources(nlohmann::json& stage) {
  if (!stage.contains("sources")) return;
  if (stage.contains("nodes")) {
    nlohmann::json& nodes = stage["nodes"];
    const nlohmann::json& sources = stage["sources"];
    for (size_t i = 0; i < nodes.size() && i < sources.size(); ++i)
      if (!sources[i].get_ref<const std::string&>().empty()) nodes[i]["source"] = sources[i];
  }
  stage.erase("sources");
}

}  // namespace

nlohmann::json graph_dump_data(const std::string& graph_dir) {
  const fs::path dir(graph_dir);
  TextTable texts;
  nlohmann::json stages = nlohmann::json::array();
  nlohmann::json remarks = nlohmann::json::array();
  std::string previous;
  for (nlohmann::json& stage : stage_records(dir)) {
    const std::string file = stage.at("file").get<std::string>();
    const std::string text = read_dump_file(dir / file);
    if (!stages.empty() && text == previous)
      stage["same"] = stages.size() - 1;
    else
      stage.update(stage_json(text, (dir / file).string(), texts));
    add_sources(stage);
    if (stage.contains("decisions"))
      for (const std::string& line : lines_of(read_dump_file(dir / stage.at("decisions").get<std::string>())))
        remarks.push_back({{"stage", stages.size()}, {"text", line}});
    stages.push_back(std::move(stage));
    previous = text;
  }
  if (stages.empty()) throw Error("--dump-dir: " + graph_dir + " holds no graph (NN-PASS.kir)");
  nlohmann::json out = {{"name", dir.filename().string()},
                        {"stages", std::move(stages)},
                        {"texts", texts.texts()},
                        {"remarks", std::move(remarks)}};
  for (const char* part : {"program", "profile"})
    if (fs::exists(dir / (std::string(part) + ".json"))) out[part] = read_json(dir / (std::string(part) + ".json"));
  return out;
}

nlohmann::json kernel_files_data(const std::string& graph_dir) {
  nlohmann::json out = nlohmann::json::object();
  const fs::path dir = fs::path(graph_dir) / "kernels";
  if (!fs::is_directory(dir)) return out;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    // kN-LABEL.ll, kN-LABEL.opt.ll, kN-LABEL.s
    const std::string name = e.path().filename().string();
    const size_t dash = name.find('-');
    if (name.size() < 2 || name[0] != 'k' || dash == std::string::npos) continue;
    const std::string number = name.substr(1, dash - 1);
    if (number.empty() || !std::all_of(number.begin(), number.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    const char* kind = name.ends_with(".opt.ll") ? "opt.ll" : name.ends_with(".ll") ? "ll" : name.ends_with(".s") ? "s"
                                                                                                                   : nullptr;
    if (kind) out[std::to_string(std::stoul(number))][kind] = read_dump_file(e.path());
  }
  return out;
}

}  // namespace kiln::compiler
