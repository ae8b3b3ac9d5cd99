#include "tools/blas_peers.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

namespace kiln::cli {
namespace {

void* open_library(const char* file, std::string& why) {
  void* lib = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (!lib) why = std::string(file) + " not found";
  return lib;
}

// CBLAS's enum values (cblas.h).
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                            int);
using DnnlSgemm = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                          float, float*, int64_t);
using SetThreads = void (*)(int);
using CoreName = const char* (*)();

// The core whose kernels a loaded OpenBLAS runs (openblas_get_corename), or "".
std::string core_name(void* lib) {
  auto corename = lib ? reinterpret_cast<CoreName>(dlsym(lib, "openblas_get_corename")) : nullptr;
  return corename ? corename() : "";
}

// The core whose kernels OpenBLAS picks by itself on this CPU (openblas_get_corename),
// asked of a forked child: it picks once, when it loads, so this process must know
// before it loads the library.
std::string openblas_own_core() {
  int fds[2];
  if (pipe(fds) != 0) return "";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    unsetenv("OPENBLAS_CORETYPE");
    const std::string name = core_name(dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL));
    _exit(write(fds[1], name.data(), name.size()) < 0 ? 1 : 0);
  }
  close(fds[1]);
  std::string name;
  char buf[64];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) name.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  if (pid > 0) waitpid(pid, nullptr, 0);
  return name;
}

// OpenBLAS's cores whose SGEMM kernels are AVX-512 (Cooperlake and
// SapphireRapids run SkylakeX's).
bool is_avx512_core(const std::string& core) {
  return core == "SkylakeX" || core == "Cooperlake" || core == "SapphireRapids";
}

}  // namespace

std::optional<BlasPeer> BlasPeer::load(Api api, const char* name, const char* file, const char* gemm,
                                       const char* set_threads, std::string& why) {
  void* lib = open_library(file, why);
  if (!lib) return std::nullopt;
  BlasPeer p;
  p.api_ = api;
  p.name_ = name;
  p.gemm_ = dlsym(lib, gemm);
  // The thread setter may live in a library loaded with this one (OpenMP).
  p.threads_ = dlsym(lib, set_threads);
  if (!p.threads_) p.threads_ = dlsym(RTLD_DEFAULT, set_threads);
  if (!p.gemm_ || !p.threads_) {
    why = std::string(file) + " lacks " + gemm + " or " + set_threads;
    return std::nullopt;
  }
  return p;
}

std::optional<BlasPeer> BlasPeer::openblas(int lanes, std::string& why) {
  // OPENBLAS_CORETYPE is read when the library loads: Haswell's kernels are
  // its AVX2 ones (Zen's too), Nehalem's its SSE ones. Else unset, as the
  // environment may pin an older core's kernels: it picks this CPU's, unless
  // it does not know this CPU's model (Debian's 0.3.21 gives Emerald Rapids,
  // model 0xCF, Prescott's SSE3 kernels): then SkylakeX's, its AVX-512 ones.
  if (lanes == 8) {
    setenv("OPENBLAS_CORETYPE", "Haswell", 1);
  } else if (lanes == 4) {
    setenv("OPENBLAS_CORETYPE", "Nehalem", 1);
  } else {
    unsetenv("OPENBLAS_CORETYPE");
    if (!is_avx512_core(openblas_own_core())) setenv("OPENBLAS_CORETYPE", "SkylakeX", 1);
  }
  std::optional<BlasPeer> p =
      load(Api::cblas, "OpenBLAS", "libopenblas.so.0", "cblas_sgemm", "openblas_set_num_threads", why);
  if (p) {
    const std::string core = core_name(dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD));
    if (!core.empty()) p->kernels_ = core + "'s kernels";
  }
  return p;
}

std::optional<BlasPeer> BlasPeer::onednn(int lanes, std::string& why) {
  // ONEDNN_MAX_CPU_ISA caps the kernels oneDNN picks when it first runs.
  if (lanes == 8)
    setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1);
  else if (lanes == 4)
    setenv("ONEDNN_MAX_CPU_ISA", "SSE41", 1);
  // Debian's oneDNN runs on OpenMP, which it loads with itself.
  return load(Api::dnnl, "oneDNN", "libdnnl.so.2", "dnnl_sgemm", "omp_set_num_threads", why);
}

void BlasPeer::set_threads(int threads) const { reinterpret_cast<SetThreads>(threads_)(threads); }

void BlasPeer::sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                     float* c) const {
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  if (api_ == Api::cblas)
    reinterpret_cast<CblasSgemm>(gemm_)(kRowMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans,
                                        static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f, a,
                                        static_cast<int>(lda), b, static_cast<int>(ldb), 0.0f, c,
                                        static_cast<int>(n));
  else
    reinterpret_cast<DnnlSgemm>(gemm_)(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, n);
}

}  // namespace kiln::cli
