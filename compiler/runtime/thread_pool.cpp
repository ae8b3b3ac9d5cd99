// kiln_parallel_for's thread pool: fixed workers that wait for a job (spinning
// briefly, then sleeping), take chunk numbers from an atomic counter, and report
// completion; the calling thread takes chunks too. One job at a time: a call that
// finds the pool busy runs inline.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "compiler/runtime/chunk_trace.h"
#include "compiler/runtime/kiln_runtime.h"
#include "compiler/runtime/large_memory.h"
#include "compiler/runtime/thread_limit.h"
#include "engine/ir/error.h"

namespace {

// Chunk tracing (chunk_trace.h): one track per pool thread, each with its own
// lock, so the caller's track stays consistent if two callers run loops inline.
struct Track {
  std::mutex mutex;
  std::vector<kiln::compiler::ChunkSpan> spans;
};
constexpr int kMaxTracks = 256;
std::atomic<bool> tracing{false};
Track tracks[kMaxTracks];

// Runs body(ctx, begin, end) as `thread`, recording its span while tracing.
void run_traced(int thread, kiln_loop_body body, void* ctx, int64_t begin, int64_t end) {
  if (!tracing.load(std::memory_order_relaxed)) return body(ctx, begin, end);
  const int64_t start = kiln::compiler::trace_clock_ns();
  body(ctx, begin, end);
  Track& track = tracks[std::min(thread, kMaxTracks - 1)];
  std::lock_guard<std::mutex> lock(track.mutex);
  track.spans.push_back({thread, start, kiln::compiler::trace_clock_ns()});
}

class ThreadPool {
 public:
  // All cores by default, or as many of them as the system starts.
  explicit ThreadPool(int threads) { start(threads); }
  ~ThreadPool() { stop(); }

  int threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Empty if all `threads` started, else why the system refused one (the pool
  // keeps those that did).
  std::string resize(int threads) {
    std::lock_guard<std::mutex> busy(run_mutex_);
    stop();
    return start(threads);
  }

  void parallel_for(int64_t n, int64_t grain, kiln_loop_body body, void* ctx) {
    grain = std::max<int64_t>(grain, 1);
    const int64_t chunks = std::min<int64_t>(threads(), (n + grain - 1) / grain);
    std::unique_lock<std::mutex> busy(run_mutex_, std::try_to_lock);
    if (chunks <= 1 || !busy.owns_lock()) {
      if (n > 0) run_traced(0, body, ctx, 0, n);
      return;
    }
    {
      // Workers still leaving the previous job must not see this one's counter.
      std::unique_lock<std::mutex> lock(mutex_);
      wait_until([&] { return active_.load() == 0; });
      job_ = Job{n, chunks, body, ctx};
      for (int64_t c = 0; c < chunks; ++c) taken_[static_cast<size_t>(c)].store(false);
      done_chunks_.store(0);
      generation_.fetch_add(1);
    }
    wake_.notify_all();
    run_chunks(0);
    wait_until([&] { return done_chunks_.load() == job_.chunks && active_.load() == 0; });
  }

 private:
  struct Job {
    int64_t n = 0, chunks = 0;
    kiln_loop_body body = nullptr;
    void* ctx = nullptr;
  };

  // A step's kernels follow each other within microseconds: waiting threads spin
  // this long (pausing) before they sleep, so that most parallel loops start and
  // end without a system call.
  static constexpr auto kSpin = std::chrono::microseconds(200);

  template <class Ready>
  static void wait_until(Ready ready) {
    const auto until = std::chrono::steady_clock::now() + kSpin;
    while (!ready()) {
      if (std::chrono::steady_clock::now() < until)
        pause();
      else
        std::this_thread::yield();
    }
  }

  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  // Starts workers up to `threads` threads in all, stopping at the first the
  // system refuses (a process or address-space limit): resize() says why.
  std::string start(int threads) {
    quit_ = false;
    // Every chunk taken: a new worker finds no work in the last job.
    taken_ = std::vector<std::atomic<bool>>(static_cast<size_t>(threads));
    for (std::atomic<bool>& t : taken_) t.store(true);
    try {
      for (int i = 1; i < threads; ++i)
        workers_.emplace_back([this, i, seen = generation_.load()] { worker(i, seen); });
    } catch (const std::system_error& e) {
      return e.what();
    }
    return "";
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

  // `seen`: the last job published before this worker started.
  void worker(int self, uint64_t seen) {
    for (;;) {
      const auto until = std::chrono::steady_clock::now() + kSpin;
      while (generation_.load() == seen && !quit_.load() && std::chrono::steady_clock::now() < until) pause();
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return quit_.load() || generation_.load() != seen; });
        if (quit_) return;
        seen = generation_.load();
        active_.fetch_add(1);
      }
      run_chunks(self);
      active_.fetch_sub(1);
    }
  }

  // Chunk c covers [c*n/chunks, (c+1)*n/chunks). Thread `self` (the caller is 0)
  // runs chunk `self` first, so that consecutive loops split alike give a thread
  // the same rows (which are in its core's cache), then any chunk not yet taken.
  void run_chunks(int self) {
    int64_t done = 0;
    const auto run = [&](int64_t c) {
      if (c >= job_.chunks || taken_[static_cast<size_t>(c)].exchange(true)) return;
      run_traced(self, job_.body, job_.ctx, c * job_.n / job_.chunks, (c + 1) * job_.n / job_.chunks);
      ++done;
    };
    run(self);
    for (int64_t c = 0; c < job_.chunks; ++c) run(c);
    if (done > 0) done_chunks_.fetch_add(done);
  }

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // held by the one running job
  std::mutex mutex_;      // guards publishing a job (job_, the counters' reset) and sleeping
  std::condition_variable wake_;
  Job job_;
  std::vector<std::atomic<bool>> taken_;  // per chunk of the current job
  std::atomic<int64_t> done_chunks_{0};
  std::atomic<int> active_{0};  // workers that joined the current job and have not left it
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> quit_{false};
};

int all_cores() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

// More threads than this spin on a few cores and slow every loop down; the
// trace keeps as many tracks.
constexpr int kMostThreads = kMaxTracks;

ThreadPool& pool() {
  static ThreadPool p(all_cores());
  return p;
}

}  // namespace

namespace kiln::compiler {

ThreadLimit thread_limit() {
  ThreadLimit limit{std::max(kMostThreads, all_cores()),
                    "kiln's parallel loops run on at most " + std::to_string(kMostThreads) +
                        " threads, or one per core where there are more"};
  rlimit r{};
  if (getrlimit(RLIMIT_NPROC, &r) == 0 && r.rlim_cur != RLIM_INFINITY && r.rlim_cur < rlim_t(limit.threads))
    limit = {static_cast<int>(std::max<rlim_t>(r.rlim_cur, 1)),
             "the limit on this user's processes and threads, ulimit -u " + std::to_string(r.rlim_cur)};
  return limit;
}

void set_threads(int64_t n, std::string_view what) {
  const ThreadLimit limit = thread_limit();
  const std::string asked = std::string(what) + ": " + std::to_string(n);
  if (n < 0) throw Error(asked + " is negative (0: all cores)");
  if (n > limit.threads)
    throw Error(asked + " is more than the limit of " + std::to_string(limit.threads) + " (" + limit.what + ")");
  const std::string refused = pool().resize(n == 0 ? all_cores() : static_cast<int>(n));
  if (!refused.empty())
    throw Error(asked + " asked for, the system started only " + std::to_string(pool().threads()) + ": " + refused +
                " (each thread counts against ulimit -u, and its stack against the address space, ulimit -v)");
}

void trace_chunks(bool on) { tracing.store(on); }

std::vector<ChunkSpan> take_chunk_spans() {
  std::vector<ChunkSpan> out;
  for (Track& track : tracks) {
    std::lock_guard<std::mutex> lock(track.mutex);
    out.insert(out.end(), track.spans.begin(), track.spans.end());
    track.spans.clear();
  }
  return out;
}

int64_t trace_clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace kiln::compiler

extern "C" {

void kiln_parallel_for(int64_t n, int64_t grain, kiln_loop_body body, void* ctx) {
  pool().parallel_for(n, grain, body, ctx);
}

void kiln_set_num_threads(int32_t n) { kiln::compiler::set_threads(std::max(n, 0), "threads"); }

int32_t kiln_num_threads(void) { return pool().threads(); }

void* kiln_scratch(int64_t bytes) {
  struct Scratch {
    void* data = nullptr;
    int64_t bytes = 0;
    ~Scratch() { std::free(data); }
  };
  thread_local Scratch scratch;
  if (bytes > scratch.bytes) {
    std::free(scratch.data);
    scratch.data = kiln::compiler::allocate_large(static_cast<size_t>(bytes));
    scratch.bytes = scratch.data ? bytes : 0;
  }
  return scratch.data;
}

const char* kiln_error_message(int32_t code) {
  switch (code) {
    case KILN_OK: return "no error";
    case KILN_ERROR_INTEGER_DIVISION_BY_ZERO: return "div: integer division by zero";
    case KILN_ERROR_INDEX_OUT_OF_RANGE:
      return "index out of range (a gather or scatter_add index, or a cross_entropy label)";
    case KILN_ERROR_OUT_OF_MEMORY: return "out of memory for a kernel's scratch";
  }
  return "unknown run-time error";
}

}  // extern "C"
