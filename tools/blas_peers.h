#pragma once
// The sgemm of other libraries, loaded at run time (dlopen) so that kiln neither
// builds nor links against them: OpenBLAS (libopenblas0-pthread) and oneDNN
// (libdnnl-dev), for `kiln bench --op matmul` to compare with. Row-major C =
// op(A) op(B), like kiln's matmul.
#include <cstdint>
#include <optional>
#include <string>

namespace kiln::cli {

class BlasPeer {
 public:
  // "OpenBLAS" or "oneDNN"; nullopt (with `why` set) when the library is missing.
  // Their kernels are those of vectors of `lanes` f32s (16: the host's widest;
  // 8: AVX2, 4: SSE), as kiln's code for a --target-cpu of that width: the
  // environment variables each library reads when it loads or first runs.
  static std::optional<BlasPeer> openblas(int lanes, std::string& why);
  static std::optional<BlasPeer> onednn(int lanes, std::string& why);

  const std::string& name() const { return name_; }
  // Which of its kernel sets the library runs ("SkylakeX's kernels"), where it says.
  const std::string& kernels() const { return kernels_; }
  void set_threads(int threads) const;
  void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c) const;

 private:
  enum class Api { cblas, dnnl };  // the row-major sgemm's calling convention
  static std::optional<BlasPeer> load(Api api, const char* name, const char* file, const char* gemm,
                                      const char* set_threads, std::string& why);

  Api api_ = Api::cblas;
  std::string name_;
  std::string kernels_;
  void* gemm_ = nullptr;     // cblas_sgemm or dnnl_sgemm
  void* threads_ = nullptr;  // openblas_set_num_threads or omp_set_num_threads
};

}  // namespace kiln::cli
