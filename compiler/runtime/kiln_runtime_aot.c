/* kiln's tiny C runtime for programs that link AOT objects (`kiln compile
 * --header`): kiln_runtime.h's functions in C11 with POSIX threads, so such a
 * program needs nothing beyond libc, libm and libpthread (no C++ runtime). It
 * behaves as thread_pool.cpp, which the JIT uses: fixed workers wait for a job,
 * take chunk numbers from an atomic counter and report completion; the calling
 * thread takes chunks too; one job at a time, a call finding the pool busy runs
 * inline. Chunk c of n indices in `chunks` chunks covers [c*n/chunks,
 * (c+1)*n/chunks), so results never depend on the thread count.
 *
 *   cc -std=c11 -c kiln_runtime_aot.c   (link with -lpthread)
 */
#define _DEFAULT_SOURCE /* madvise's MADV_HUGEPAGE */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kiln_runtime.h"

enum { MAX_THREADS = 256 };

static struct {
  pthread_once_t once;
  pthread_mutex_t run_mutex; /* held by the one running job */
  pthread_mutex_t mutex;     /* guards the fields below it */
  pthread_cond_t wake, finished;
  int64_t n, chunks;
  kiln_loop_body body;
  void* ctx;
  int64_t done_chunks;
  int active; /* workers inside run_chunks() */
  uint64_t generation;
  int quit;
  atomic_int threads; /* workers + the caller; changed only with run_mutex held */
  pthread_t workers[MAX_THREADS];
  atomic_int_fast64_t next_chunk;
} pool = {.once = PTHREAD_ONCE_INIT,
          .run_mutex = PTHREAD_MUTEX_INITIALIZER,
          .mutex = PTHREAD_MUTEX_INITIALIZER,
          .wake = PTHREAD_COND_INITIALIZER,
          .finished = PTHREAD_COND_INITIALIZER};

static void run_chunks(void) {
  int64_t done = 0;
  for (int64_t c; (c = atomic_fetch_add(&pool.next_chunk, 1)) < pool.chunks; ++done)
    pool.body(pool.ctx, c * pool.n / pool.chunks, (c + 1) * pool.n / pool.chunks);
  if (done == 0) return;
  pthread_mutex_lock(&pool.mutex);
  pool.done_chunks += done;
  pthread_mutex_unlock(&pool.mutex);
}

static void* worker(void* arg) {
  (void)arg;
  pthread_mutex_lock(&pool.mutex);
  uint64_t seen = pool.generation; /* only jobs posted from now on */
  for (;;) {
    while (!pool.quit && pool.generation == seen) pthread_cond_wait(&pool.wake, &pool.mutex);
    if (pool.quit) break;
    seen = pool.generation;
    ++pool.active;
    pthread_mutex_unlock(&pool.mutex);
    run_chunks();
    pthread_mutex_lock(&pool.mutex);
    --pool.active;
    pthread_cond_broadcast(&pool.finished);
  }
  pthread_mutex_unlock(&pool.mutex);
  return NULL;
}

static int all_cores(void) {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

/* kiln_set_num_threads waits for the running job, so it must not be called from
 * inside a loop body (nor can thread_pool.cpp's). */

/* Starts `threads` - 1 workers (fewer if the system refuses more); run_mutex held. */
static void start(int threads) {
  pool.quit = 0;
  pool.threads = 1;
  if (threads > MAX_THREADS) threads = MAX_THREADS;
  for (int i = 1; i < threads; ++i) {
    if (pthread_create(&pool.workers[i - 1], NULL, worker, NULL) != 0) break;
    ++pool.threads;
  }
}

/* Stops and joins the workers; run_mutex held. */
static void stop(void) {
  pthread_mutex_lock(&pool.mutex);
  pool.quit = 1;
  pthread_cond_broadcast(&pool.wake);
  pthread_mutex_unlock(&pool.mutex);
  for (int i = 0; i < pool.threads - 1; ++i) pthread_join(pool.workers[i], NULL);
  pool.threads = 1;
}

static void start_all_cores(void) { start(all_cores()); }

void kiln_parallel_for(int64_t n, int64_t grain, kiln_loop_body body, void* ctx) {
  pthread_once(&pool.once, start_all_cores);
  if (grain < 1) grain = 1;
  const int64_t wanted = n <= 0 ? 0 : (n - 1) / grain + 1;
  if (wanted <= 1 || pthread_mutex_trylock(&pool.run_mutex) != 0) {
    if (n > 0) body(ctx, 0, n);
    return;
  }
  const int64_t chunks = wanted < pool.threads ? wanted : pool.threads;
  if (chunks <= 1) {
    pthread_mutex_unlock(&pool.run_mutex);
    body(ctx, 0, n);
    return;
  }
  pthread_mutex_lock(&pool.mutex);
  /* Workers still leaving the previous job must not see this one's counter. */
  while (pool.active != 0) pthread_cond_wait(&pool.finished, &pool.mutex);
  pool.n = n;
  pool.chunks = chunks;
  pool.body = body;
  pool.ctx = ctx;
  atomic_store(&pool.next_chunk, 0);
  pool.done_chunks = 0;
  ++pool.generation;
  pthread_cond_broadcast(&pool.wake);
  pthread_mutex_unlock(&pool.mutex);
  run_chunks();
  pthread_mutex_lock(&pool.mutex);
  while (pool.done_chunks != pool.chunks || pool.active != 0) pthread_cond_wait(&pool.finished, &pool.mutex);
  pthread_mutex_unlock(&pool.mutex);
  pthread_mutex_unlock(&pool.run_mutex);
}

void kiln_set_num_threads(int32_t n) {
  pthread_once(&pool.once, start_all_cores);
  pthread_mutex_lock(&pool.run_mutex);
  stop();
  start(n <= 0 ? all_cores() : n);
  pthread_mutex_unlock(&pool.run_mutex);
}

int32_t kiln_num_threads(void) {
  pthread_once(&pool.once, start_all_cores);
  return pool.threads;
}

static _Thread_local struct {
  void* data;
  int64_t bytes;
} scratch;

static void free_scratch(void* data) { free(data); }
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static void make_scratch_key(void) { pthread_key_create(&scratch_key, free_scratch); }

/* As large_memory.cpp's allocate_large: 2 MiB buffers and up on transparent huge pages. */
void* kiln_scratch(int64_t bytes) {
  if (bytes > scratch.bytes) {
    const int64_t huge = (int64_t)2 << 20;
    const int64_t align = bytes < huge ? 64 : huge;
    const int64_t rounded = (bytes + align - 1) / align * align;
    pthread_once(&scratch_once, make_scratch_key);
    free(scratch.data);
    scratch.data = aligned_alloc((size_t)align, (size_t)rounded);
    if (scratch.data && align == huge) madvise(scratch.data, (size_t)rounded, MADV_HUGEPAGE);
    scratch.bytes = scratch.data ? rounded : 0;
    pthread_setspecific(scratch_key, scratch.data); /* freed when the thread ends */
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
