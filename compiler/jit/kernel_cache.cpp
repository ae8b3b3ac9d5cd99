#include "compiler/jit/kernel_cache.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>

#include "compiler/jit/kernel_cache_entry.h"
#include "engine/atomic_file.h"
#include "engine/ir/error.h"
#include "engine/ir/read_file.h"

namespace kiln::compiler {

namespace {

// Past any compiled kernel; a bigger file in the cache is not an entry.
constexpr size_t kEntryLimit = 64 * kMiB;

// The object holding `address` (the executable, or the shared object kiln's
// code is linked into: the Python module) and its GNU build-id, hex.
struct BuildIdSearch {
  uintptr_t address = 0;
  std::string id;
};

bool holds(const dl_phdr_info* info, uintptr_t address) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && address >= start && address < start + ph.p_memsz) return true;
  }
  return false;
}

int note_build_id(dl_phdr_info* info, size_t, void* data) {
  auto& search = *static_cast<BuildIdSearch*>(data);
  if (!holds(info, search.address)) return 0;  // another object: go on
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const char* desc = p + sizeof(ElfW(Nhdr)) + ((note->n_namesz + 3) & ~3u);
      if (note->n_type == NT_GNU_BUILD_ID && desc + note->n_descsz <= end) {
        static const char hex[] = "0123456789abcdef";
        for (uint32_t b = 0; b < note->n_descsz; ++b) {
          search.id += hex[static_cast<unsigned char>(desc[b]) >> 4];
          search.id += hex[static_cast<unsigned char>(desc[b]) & 15];
        }
        return 1;
      }
      p = desc + ((note->n_descsz + 3) & ~3u);
    }
  }
  return 1;  // the object, without a build-id
}

}  // namespace

const std::string& build_identity() {
  // The object this code is in, not the process's executable: loaded into
  // Python, the executable is python3, whose build-id stays when kiln changes.
  static const std::string id = [] {
    BuildIdSearch search;
    search.address = reinterpret_cast<uintptr_t>(&build_identity);
    dl_iterate_phdr(note_build_id, &search);
    if (!search.id.empty()) return "build-id " + search.id;
    Dl_info object{};
    struct stat st {};
    if (dladdr(reinterpret_cast<void*>(&build_identity), &object) != 0 && object.dli_fname &&
        stat(object.dli_fname, &st) == 0)
      return "file " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
             std::to_string(st.st_mtim.tv_nsec);
    return std::string("unknown build");
  }();
  return id;
}

KernelCache::KernelCache(std::string dir) : dir_(std::move(dir)) {}

namespace {

// True the first time this process stores into `dir`. The sweep for killed
// writers' temporaries reads the whole directory, which holds thousands of
// entries (100,000 after a few test runs), so it runs once per process, not
// once per compile: a process that compiles thousands of graphs (the op
// table's checks) spent 9 s per 2 s of work on it, 64 s under ASan.
bool first_store_in(const std::string& dir) {
  static std::mutex mutex;
  static std::set<std::string> swept;
  const std::lock_guard lock(mutex);
  return swept.insert(dir).second;
}

}  // namespace

std::string KernelCache::default_dir() {
  if (const char* d = std::getenv("KILN_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/kiln";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/kiln";
  return {};
}

std::string KernelCache::path_of(const std::string& symbol) const { return dir_ + "/" + symbol + ".o"; }

std::optional<std::string> KernelCache::load(const std::string& symbol, const std::string& key) const {
  if (!enabled()) return std::nullopt;
  try {
    return decode_cache_entry(read_regular_file(path_of(symbol), kEntryLimit, "a kernel cache entry"), key);
  } catch (const Error&) {  // missing, unreadable, oversized, or not a regular file (a link, a FIFO): a miss
    return std::nullopt;
  }
}

void KernelCache::store(const std::string& symbol, const std::string& key, std::string_view object) {
  if (!enabled()) return;
  try {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) throw Error(ec.message());
    if (first_store_in(dir_)) remove_stale_temporaries_in(dir_);
    write_file_atomically(path_of(symbol), encode_cache_entry(key, object), Durability::cache_entry);
  } catch (const Error& e) {
    std::fprintf(stderr, "kiln: warning: cannot write the kernel cache in %s (%s); compiling without it\n",
                 dir_.c_str(), e.what());
    dir_.clear();
  }
}

}  // namespace kiln::compiler
