// kiln_parallel_for's thread pool: fixed workers that wait for a job, take chunk
// numbers from an atomic counter, and report completion; the calling thread takes
// chunks too. One job at a time: a call that finds the pool busy runs inline.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "compiler/runtime/kiln_runtime.h"

namespace {

class ThreadPool {
 public:
  explicit ThreadPool(int threads) { start(threads); }
  ~ThreadPool() { stop(); }

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  void resize(int threads) {
    std::lock_guard<std::mutex> busy(run_mutex_);
    stop();
    start(threads);
  }

  void parallel_for(int64_t n, int64_t grain, kiln_loop_body body, void* ctx) {
    grain = std::max<int64_t>(grain, 1);
    const int64_t chunks = std::min<int64_t>(threads(), (n + grain - 1) / grain);
    std::unique_lock<std::mutex> busy(run_mutex_, std::try_to_lock);
    if (chunks <= 1 || !busy.owns_lock()) {
      if (n > 0) body(ctx, 0, n);
      return;
    }
    {
      // Workers still leaving the previous job must not see this one's counter.
      std::unique_lock<std::mutex> lock(mutex_);
      finished_.wait(lock, [&] { return active_ == 0; });
      job_ = Job{n, chunks, body, ctx};
      next_chunk_.store(0);
      done_chunks_ = 0;
      ++generation_;
    }
    wake_.notify_all();
    run_chunks();
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] { return done_chunks_ == job_.chunks && active_ == 0; });
  }

 private:
  struct Job {
    int64_t n = 0, chunks = 0;
    kiln_loop_body body = nullptr;
    void* ctx = nullptr;
  };

  void start(int threads) {
    quit_ = false;
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker(); });
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      quit_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
  }

  void worker() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return quit_ || generation_ != seen; });
        if (quit_) return;
        seen = generation_;
        ++active_;
      }
      run_chunks();
      std::lock_guard<std::mutex> lock(mutex_);
      --active_;
      finished_.notify_all();
    }
  }

  // Chunk c covers [c*n/chunks, (c+1)*n/chunks).
  void run_chunks() {
    int64_t done = 0;
    for (int64_t c; (c = next_chunk_.fetch_add(1)) < job_.chunks; ++done) {
      const int64_t begin = c * job_.n / job_.chunks, end = (c + 1) * job_.n / job_.chunks;
      job_.body(job_.ctx, begin, end);
    }
    if (done == 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    done_chunks_ += done;
  }

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // held by the one running job
  std::mutex mutex_;      // guards the fields below
  std::condition_variable wake_, finished_;
  Job job_;
  std::atomic<int64_t> next_chunk_{0};
  int64_t done_chunks_ = 0;
  int active_ = 0;  // workers inside run_chunks()
  uint64_t generation_ = 0;
  bool quit_ = false;
};

int all_cores() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

ThreadPool& pool() {
  static ThreadPool p(all_cores());
  return p;
}

}  // namespace

extern "C" {

void kiln_parallel_for(int64_t n, int64_t grain, kiln_loop_body body, void* ctx) {
  pool().parallel_for(n, grain, body, ctx);
}

void kiln_set_num_threads(int32_t n) { pool().resize(n <= 0 ? all_cores() : n); }

int32_t kiln_num_threads(void) { return pool().threads(); }

const char* kiln_error_message(int32_t code) {
  switch (code) {
    case KILN_OK: return "no error";
    case KILN_ERROR_INTEGER_DIVISION_BY_ZERO: return "div: integer division by zero";
    case KILN_ERROR_INDEX_OUT_OF_RANGE:
      return "index out of range (a gather or scatter_add index, or a cross_entropy label)";
  }
  return "unknown run-time error";
}

}  // extern "C"
