#include "compiler/report/dump_page.h"

#include <algorithm>
#include <filesystem>
#include <mutex>

#include "compiler/dump_dir.h"
#include "compiler/report/dump_data.h"
#include "compiler/report/page_assets.h"
#include "engine/ir/error.h"

namespace kiln::compiler {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDataScript = "page-data.js";
constexpr const char* kKernelDir = "page-kernels";

// JSON as a script's literal: invalid UTF-8 (a kernel's string constant) replaced.
std::string literal(const nlohmann::json& data) {
  const std::string text = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // Inside index.html's <script>, "</" could end it early: "<\/" in a string is the same.
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == '<' && i + 1 < text.size() && text[i + 1] == '/') out += '\\';
  }
  return out;
}

void replace_marker(std::string& html, std::string_view marker, std::string_view content) {
  const size_t at = html.find(marker);
  if (at == std::string::npos) throw Error("the dump page's index.html lacks its marker " + std::string(marker));
  html.replace(at, marker.size(), content);
}

// The graphs dumped under `root`, by directory name: those with a page script.
nlohmann::json graph_list(const fs::path& root) {
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(root))
    if (e.is_directory() && fs::exists(e.path() / kDataScript)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

void write_index(const fs::path& root) {
  static std::mutex mutex;  // graphs compiled at once all rewrite it
  std::lock_guard<std::mutex> lock(mutex);
  const PageAssets& assets = page_assets();
  std::string html(assets.html);
  replace_marker(html, "/*KILN_CSS*/", assets.css);
  replace_marker(html, "/*KILN_GRAPHS*/", literal(graph_list(root)));
  replace_marker(html, "/*KILN_GRAPHVIZ*/", assets.graphviz);
  replace_marker(html, "/*KILN_JS*/", assets.js);
  write_dump(root.string(), "index.html", html);
}

}  // namespace

void write_dump_page(const std::string& graph_dir) {
  const fs::path dir = fs::path(graph_dir);
  const std::string name = dir.filename().string();
  write_dump(graph_dir, kDataScript, "kilnPage.addGraph(" + literal(graph_dump_data(graph_dir)) + ");\n");
  const nlohmann::json kernels = kernel_files_data(graph_dir);
  for (const auto& [number, files] : kernels.items())
    write_dump(graph_dir, std::string(kKernelDir) + "/k" + number + ".js",
               "kilnPage.addKernel(" + literal(name) + ", " + number + ", " + literal(files) + ");\n");
  write_index(dir.parent_path());
}

}  // namespace kiln::compiler
