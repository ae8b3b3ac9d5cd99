#include "compiler/runtime/mpi_collectives.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "engine/ir/error.h"
#include "engine/tensor/collectives.h"

namespace kiln::compiler {
namespace {

void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw Error(std::string("MPI: ") + call + " failed: " + std::string(text, static_cast<size_t>(length)));
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::f32: return MPI_FLOAT;
    case DType::i32: return MPI_INT32_T;
    case DType::boolean:
    case DType::bf16: break;
  }
  throw Error("MPI: allreduce sums f32 or i32, not " + std::string(dtype_name(t)));
}

// MPI counts are ints: larger buffers go in pieces of at most INT_MAX elements.
template <class F>
void in_pieces(void* data, int64_t count, size_t element_bytes, F&& piece) {
  auto* bytes = static_cast<char*>(data);
  for (int64_t done = 0; done < count;) {
    const int n = static_cast<int>(std::min<int64_t>(count - done, INT_MAX));
    piece(bytes + static_cast<size_t>(done) * element_bytes, n);
    done += n;
  }
}

// Tests `r` until it completes, sleeping a millisecond between tests once it
// has not completed within a few: Open MPI's own waits spin.
void wait_asleep(MPI_Request& r) {
  for (int tests = 0;; ++tests) {
    int done = 0;
    check(MPI_Test(&r, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return;
    if (tests > 100) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

class MpiCollectives final : public Collectives {
 public:
  static constexpr int64_t kNothing = -1;  // the handle of a sum of no elements

  MpiCollectives() {
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }
  ~MpiCollectives() override {
    MPI_Comm_free(&comm_);
    MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void allreduce(void* data, int64_t count, DType dtype) override {
    in_pieces(data, count, dtype_size(dtype), [&](void* p, int n) {
      check(MPI_Allreduce(MPI_IN_PLACE, p, n, mpi_type(dtype), MPI_SUM, comm_), "MPI_Allreduce");
    });
  }

  int64_t start_allreduce(void* data, int64_t count, DType dtype) override {
    if (count == 0) return kNothing;
    std::vector<MPI_Request> requests;
    in_pieces(data, count, dtype_size(dtype), [&](void* p, int n) {
      requests.emplace_back();
      check(MPI_Iallreduce(MPI_IN_PLACE, p, n, mpi_type(dtype), MPI_SUM, comm_, &requests.back()), "MPI_Iallreduce");
    });
    const auto free_slot = std::find_if(pending_.begin(), pending_.end(), [](const auto& r) { return r.empty(); });
    if (free_slot != pending_.end()) {
      *free_slot = std::move(requests);
      return free_slot - pending_.begin();
    }
    pending_.push_back(std::move(requests));
    return static_cast<int64_t>(pending_.size()) - 1;
  }

  // Requests that completed are MPI_REQUEST_NULL, which MPI_Testall and
  // MPI_Waitall take as done.
  bool test(int64_t handle) override {
    if (handle == kNothing) return true;
    std::vector<MPI_Request>& r = pending_.at(static_cast<size_t>(handle));
    int done = 1;
    if (!r.empty()) check(MPI_Testall(static_cast<int>(r.size()), r.data(), &done, MPI_STATUSES_IGNORE), "MPI_Testall");
    return done != 0;
  }

  void wait(int64_t handle) override {
    if (handle == kNothing) return;
    std::vector<MPI_Request>& r = pending_.at(static_cast<size_t>(handle));
    if (!r.empty()) check(MPI_Waitall(static_cast<int>(r.size()), r.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    r.clear();
  }

  void broadcast(void* data, int64_t bytes) override {
    in_pieces(data, bytes, 1, [&](void* p, int n) {
      MPI_Request r = MPI_REQUEST_NULL;
      check(MPI_Ibcast(p, n, MPI_BYTE, 0, comm_, &r), "MPI_Ibcast");
      wait_asleep(r);
    });
  }

  void barrier() override {
    MPI_Request r = MPI_REQUEST_NULL;
    check(MPI_Ibarrier(comm_, &r), "MPI_Ibarrier");
    wait_asleep(r);
  }

  std::vector<std::string> allgather(const std::string& bytes) override {
    if (bytes.size() > INT_MAX / static_cast<size_t>(size_)) throw Error("MPI: allgather of " + std::to_string(bytes.size()) + " bytes per rank is too large");
    const int mine = static_cast<int>(bytes.size());
    std::vector<int> lengths(static_cast<size_t>(size_)), offsets(static_cast<size_t>(size_));
    check(MPI_Allgather(&mine, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm_), "MPI_Allgather");
    int total = 0;
    for (int r = 0; r < size_; ++r) {
      offsets[static_cast<size_t>(r)] = total;
      total += lengths[static_cast<size_t>(r)];
    }
    std::string all(static_cast<size_t>(total), '\0');
    check(MPI_Allgatherv(bytes.data(), mine, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, comm_),
          "MPI_Allgatherv");
    std::vector<std::string> out;
    for (int r = 0; r < size_; ++r)
      out.push_back(all.substr(static_cast<size_t>(offsets[static_cast<size_t>(r)]),
                               static_cast<size_t>(lengths[static_cast<size_t>(r)])));
    return out;
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::vector<std::vector<MPI_Request>> pending_;  // by handle; empty: free or waited for
};

}  // namespace

void install_mpi_collectives() {
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  if (provided < MPI_THREAD_SERIALIZED)
    throw Error("MPI: this Open MPI cannot be called from more than one thread (MPI_THREAD_SERIALIZED)");
  set_collectives(std::make_unique<MpiCollectives>());
}

void abort_with_mpi(int exit_code) {
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

}  // namespace kiln::compiler
