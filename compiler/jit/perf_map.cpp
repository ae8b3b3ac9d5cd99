#include "compiler/jit/perf_map.h"

#include <llvm/ExecutionEngine/JITLink/JITLink.h>
#include <llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>

namespace kiln::compiler {
namespace {

thread_local std::string current_label;

bool is_code(const llvm::jitlink::Symbol& s) {
  return (static_cast<unsigned>(s.getBlock().getSection().getMemProt()) &
          static_cast<unsigned>(llvm::orc::MemProt::Exec)) != 0;
}

llvm::Error keep_code_symbols(llvm::jitlink::LinkGraph& g) {
  for (llvm::jitlink::Symbol* s : g.defined_symbols())
    if (s->hasName() && s->getSize() > 0 && is_code(*s)) s->setLive(true);
  return llvm::Error::success();
}

class PerfMapPlugin : public llvm::orc::ObjectLinkingLayer::Plugin {
 public:
  explicit PerfMapPlugin(std::FILE* file) : file_(file) {}
  ~PerfMapPlugin() override { std::fclose(file_); }

  void modifyPassConfig(llvm::orc::MaterializationResponsibility&, llvm::jitlink::LinkGraph&,
                        llvm::jitlink::PassConfiguration& config) override {
    // Local functions (GEMM micro-kernels, packing, loop bodies) keep their
    // symbols through dead-stripping only if marked live; their code stays anyway.
    config.PrePrunePasses.emplace_back(keep_code_symbols);
    // After fixup the symbols have their final addresses.
    const std::string* label;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      label = &labels_.emplace_back(current_label);
    }
    config.PostFixupPasses.push_back([this, label](llvm::jitlink::LinkGraph& g) {
      std::lock_guard<std::mutex> lock(mutex_);
      for (llvm::jitlink::Symbol* s : g.defined_symbols())
        if (s->hasName() && s->getSize() > 0 && is_code(*s))
          std::fprintf(file_, "%llx %llx %s %s\n", static_cast<unsigned long long>(s->getAddress().getValue()),
                       static_cast<unsigned long long>(s->getSize()), label->c_str(), s->getName().str().c_str());
      std::fflush(file_);
      return llvm::Error::success();
    });
  }
  llvm::Error notifyFailed(llvm::orc::MaterializationResponsibility&) override { return llvm::Error::success(); }
  llvm::Error notifyRemovingResources(llvm::orc::JITDylib&, llvm::orc::ResourceKey) override {
    return llvm::Error::success();
  }
  void notifyTransferringResources(llvm::orc::JITDylib&, llvm::orc::ResourceKey, llvm::orc::ResourceKey) override {}

 private:
  std::FILE* file_;
  std::mutex mutex_;               // guards the file and the labels
  std::deque<std::string> labels_;  // stable addresses for the passes to refer to
};

}  // namespace

void enable_perf_map(llvm::orc::LLJIT& jit) {
  const char* flag = std::getenv("KILN_PERF_MAP");
  if (!flag || !*flag || std::string(flag) == "0") return;
  auto* layer = llvm::dyn_cast<llvm::orc::ObjectLinkingLayer>(&jit.getObjLinkingLayer());
  if (!layer) return;
  // perf reads this name, so it cannot be random: opened without following a
  // symlink someone planted there (appended to, as other JITs in the process may).
  const std::string path = "/tmp/perf-" + std::to_string(getpid()) + ".map";
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (std::FILE* file = ::fdopen(fd, "a")) layer->addPlugin(std::make_unique<PerfMapPlugin>(file));
  else ::close(fd);
}

void set_perf_map_label(std::string label) { current_label = std::move(label); }

}  // namespace kiln::compiler
