// AOT: `kiln compile --emit obj --header`, linked into C programs built with the
// system `cc` as C11 against kiln's tiny C runtime and libm only (the link line
// names nothing else, and `cc` adds no C++ runtime), run, and checked against
// the interpreter on the same inputs.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "cli/run_kiln.h"
#include "engine/interpreter.h"
#include "engine/ir/parser.h"
#include "text_and_files.h"

namespace {

// Runs a shell command; its exit status and stdout (stderr joins stdout).
KilnResult run_merged(const std::string& cmd) {
  KilnResult r;
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) r.out.append(buf, n);
  const int wstatus = pclose(pipe);
  r.status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  return r;
}

// Builds `sources` (C files and objects) into `exe` with the system cc, strict C11,
// the tiny runtime and -lm -lpthread; sanitized like the test itself when it is.
void build_c_program(const TempDir& dir, const std::vector<std::string>& sources, const std::string& exe) {
  std::vector<std::string> args = {"-std=c11", "-O2", "-Wall", "-Wextra", "-Werror"};
#if defined(__SANITIZE_ADDRESS__)
  args.insert(args.end(), {"-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"});
#endif
  args.insert(args.end(), {"-I", dir.path().string(), "-I", source_path("compiler/runtime")});
  args.insert(args.end(), sources.begin(), sources.end());
  args.insert(args.end(), {source_path("compiler/runtime/kiln_runtime_aot.c"), "-lm", "-lpthread", "-o", exe});
  std::string cmd = "cc";
  for (const std::string& a : args) {
    cmd += ' ';
    cmd += shell_quote(a);
  }
  const KilnResult r = run_merged(cmd);
  INFO(cmd);
  INFO(r.out);
  REQUIRE(r.status == 0);
}

// "NAME[I] = VALUE" or "NAME = VALUE" lines, keyed by what precedes " = ".
std::map<std::string, double> parse_printed(const std::string& out) {
  std::map<std::string, double> values;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const size_t eq = line.find(" = ");
    REQUIRE(eq != std::string::npos);
    values[line.substr(0, eq)] = std::stod(line.substr(eq + 3));
  }
  return values;
}

// The C example's fill(): values in [-0.25, 0.25], exact in float.
kiln::Tensor pattern(const kiln::Shape& shape, int64_t salt) {
  kiln::Tensor t = kiln::Tensor::zeros({kiln::DType::f32, shape});
  auto* data = static_cast<float*>(t.data());
  for (int64_t i = 0; i < t.numel(); ++i)
    data[i] = static_cast<float>((i * 7919 + salt * 104729) % 2001 - 1000) / 4000.0f;
  return t;
}

// JIT-compiled code and the interpreter agree to float rounding, summed over a
// few dependent steps: |aot - interp| <= 2e-5 * (1 + |interp|).
void check_close(double aot, double interp, const std::string& what) {
  INFO(what << ": aot " << aot << ", interpreter " << interp);
  CHECK(std::fabs(aot - interp) <= 2e-5 * (1 + std::fabs(interp)));
}

}  // namespace

TEST_CASE("the AOT C example trains the mlp as the interpreter does") {
  TempDir dir;
  const std::string kir = dir.file("mlp_train.kir");
  REQUIRE(run_kiln({"train-graph", source_path("examples/mlp.kir"), "--loss", "loss", "--optimizer", "sgd", "--lr",
                    "0.1", "-o", kir})
              .status == 0);
  const KilnResult compiled =
      run_kiln({"compile", kir, "--emit", "obj", "-o", dir.file("mlp.o"), "--header", dir.file("mlp.h")});
  INFO(compiled.err);
  REQUIRE(compiled.status == 0);
  const std::string header = read_file(dir.file("mlp.h"));
  CHECK(contains(header, "int32_t mlp_run(const struct mlp_args* args, void* workspace);"));
  CHECK(contains(header, "const float* x;"));
  CHECK(contains(header, "float* new_w1;"));
  CHECK(contains(header, "#define MLP_W1_NUMEL 512"));
  const std::string exe = dir.file("mlp_train");
  build_c_program(dir, {source_path("examples/aot/mlp_train_main.c"), dir.file("mlp.o")}, exe);

  constexpr int kSteps = 3;
  const KilnResult two_threads = run_merged(shell_quote(exe) + " " + std::to_string(kSteps) + " 2");
  INFO(two_threads.out);
  REQUIRE(two_threads.status == 0);
  const KilnResult one_thread = run_merged(shell_quote(exe) + " " + std::to_string(kSteps) + " 1");
  CHECK(one_thread.out == two_threads.out);  // splitting work never changes a result
  const std::map<std::string, double> aot = parse_printed(two_threads.out);

  kiln::Interpreter interp(kiln::parse_kir_file(kir));
  interp.bind("x", pattern({8, 16}, 1));
  interp.bind("w1", pattern({16, 32}, 2));
  interp.bind("b1", pattern({32}, 3));
  interp.bind("w2", pattern({32, 4}, 4));
  interp.bind("b2", pattern({4}, 5));
  interp.bind("labels", kiln::Tensor(kiln::Tensor::I32({0, 1, 2, 3, 0, 1, 2, 3})));
  interp.bind("step", kiln::Tensor::zeros({kiln::DType::i32, {}}));
  REQUIRE(aot.size() == kSteps + 32);
  for (int s = 0; s < kSteps; ++s) {
    interp.run();
    const std::string name = "loss[" + std::to_string(s) + "]";
    check_close(aot.at(name), interp.output("loss").f32()(), name);
  }
  const kiln::Tensor::F32& logits = interp.output("logits").f32();
  for (size_t i = 0; i < logits.size(); ++i) {
    const std::string name = "logits[" + std::to_string(i) + "]";
    check_close(aot.at(name), logits.flat(i), name);
  }
}

TEST_CASE("the tiny C runtime runs every index once whatever the threads and nesting") {
  TempDir dir;
  write_file(dir.file("runtime_check.c"), R"(#include <stdatomic.h>
#include <stdio.h>
#include <pthread.h>
#include "kiln_runtime.h"
enum { N = 100000 };
static atomic_int hits[N];
static atomic_int bad;
struct job { int64_t n; int nest; };
static void body(void* ctx, int64_t begin, int64_t end) {
  const struct job* j = ctx;
  if (begin < 0 || end > j->n || begin >= end) atomic_store(&bad, 1);
  for (int64_t i = begin; i < end; ++i) atomic_fetch_add(&hits[i], 1);
  if (j->nest) { struct job inner = {0, 0}; kiln_parallel_for(0, 1, body, &inner); }
}
static int check(int64_t n, int64_t grain, int nest) {
  for (int64_t i = 0; i < N; ++i) atomic_store(&hits[i], 0);
  struct job j = {n, nest};
  kiln_parallel_for(n, grain, body, &j);
  for (int64_t i = 0; i < n; ++i) if (atomic_load(&hits[i]) != 1) return 0;
  return !atomic_load(&bad);
}
static void* concurrent(void* arg) {
  (void)arg;
  for (int k = 0; k < 50; ++k) {
    struct job j = {1000, 0};
    kiln_parallel_for(1000, 10, body, &j);
  }
  return NULL;
}
int main(void) {
  const int threads[] = {1, 2, 3, 8, 0};
  const int64_t sizes[][2] = {{0, 1}, {1, 1}, {7, 3}, {1000, 1}, {N, 37}, {N, 0}, {5, 100}};
  for (int t = 0; t < 5; ++t) {
    kiln_set_num_threads(threads[t]);
    if (kiln_num_threads() < 1 || (threads[t] > 0 && kiln_num_threads() != threads[t])) { puts("thread count"); return 1; }
    for (int s = 0; s < 7; ++s)
      for (int nest = 0; nest < 2; ++nest)
        if (!check(sizes[s][0], sizes[s][1], nest)) { printf("threads %d n %lld\n", threads[t], (long long)sizes[s][0]); return 1; }
  }
  kiln_set_num_threads(2);
  for (int64_t i = 0; i < N; ++i) atomic_store(&hits[i], 0);
  pthread_t a, b;
  pthread_create(&a, NULL, concurrent, NULL);
  pthread_create(&b, NULL, concurrent, NULL);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  for (int64_t i = 0; i < 1000; ++i) if (atomic_load(&hits[i]) != 100) { puts("concurrent"); return 1; }
  puts(kiln_error_message(KILN_ERROR_INTEGER_DIVISION_BY_ZERO));
  return 0;
}
)");
  const std::string exe = dir.file("runtime_check");
  build_c_program(dir, {dir.file("runtime_check.c")}, exe);
  const KilnResult r = run_merged(shell_quote(exe));
  INFO(r.out);
  CHECK(r.status == 0);
  CHECK(r.out == "div: integer division by zero\n");
}

// A graph big enough for the kernels to call kiln_parallel_for, with the corners
// of the interface: a dotted name, a bool output, an output that is an input
// (out_x, a copy), and a state assigned from an input (new_count, a copy).
TEST_CASE("an AOT object of a wide graph runs its parallel kernels on the tiny runtime") {
  TempDir dir;
  write_file(dir.file("wide.kir"), R"(graph @wide.net {
  input %x : f32[256,512]
  input %start : i32[]
  param %w.scale : f32[512]
  state %count : i32[]
  %h = tanh(%x) : f32[256,512]
  %y = mul(%h, %w.scale) : f32[256,512]
  %s = sum(%y) {axes=[1]} : f32[256]
  %zero = fill() {shape=[]} : f32[]
  %pos = greater(%s, %zero) : bool[256]
  assign(%count, %start)
  output %y
  output %s
  output %pos
  output %x
}
)");
  const KilnResult compiled = run_kiln(
      {"compile", dir.file("wide.kir"), "--emit", "obj", "-o", dir.file("wide.o"), "--header", dir.file("wide_net.h")});
  INFO(compiled.err);
  REQUIRE(compiled.status == 0);
  const std::string header = read_file(dir.file("wide_net.h"));
  CHECK(contains(header, "const float* w_scale;"));
  CHECK(contains(header, "uint8_t* pos;"));
  CHECK(contains(header, "float* out_x;"));
  CHECK(contains(header, "int32_t* new_count;"));
  CHECK(contains(run_merged("nm -u " + shell_quote(dir.file("wide.o"))).out, "kiln_parallel_for"));

  write_file(dir.file("wide_main.c"), R"(#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kiln_runtime.h"
#include "wide_net.h"
static void fill(float* a, int64_t n, int64_t salt) {
  for (int64_t i = 0; i < n; ++i) a[i] = (float)((i * 7919 + salt * 104729) % 2001 - 1000) / 4000.0f;
}
int main(void) {
  float* x = malloc(sizeof(float) * WIDE_NET_X_NUMEL);
  float* y = malloc(sizeof(float) * WIDE_NET_Y_NUMEL);
  float* out_x = malloc(sizeof(float) * WIDE_NET_OUT_X_NUMEL);
  static float scale[WIDE_NET_W_SCALE_NUMEL], s[WIDE_NET_S_NUMEL];
  static uint8_t pos[WIDE_NET_POS_NUMEL];
  int32_t start = 41, count = 0, new_count = 0;
  void* workspace = aligned_alloc(WIDE_NET_WORKSPACE_ALIGN, WIDE_NET_WORKSPACE_BYTES + WIDE_NET_WORKSPACE_ALIGN);
  fill(x, WIDE_NET_X_NUMEL, 1);
  fill(scale, WIDE_NET_W_SCALE_NUMEL, 2);
  kiln_set_num_threads(2);
  const struct wide_net_args args = {.x = x, .start = &start, .w_scale = scale, .count = &count, .y = y,
                                     .s = s, .pos = pos, .out_x = out_x, .new_count = &new_count};
  const int32_t status = wide_net_run(&args, workspace);
  if (status != KILN_OK) { printf("%s\n", kiln_error_message(status)); return 1; }
  double y_sum = 0;
  for (int64_t i = 0; i < WIDE_NET_Y_NUMEL; ++i) y_sum += y[i];
  printf("y_sum = %.17g\n", y_sum);
  for (int i = 0; i < WIDE_NET_S_NUMEL; ++i) printf("s[%d] = %.9g\npos[%d] = %d\n", i, s[i], i, pos[i]);
  printf("out_x_equal = %d\nnew_count = %d\n", memcmp(x, out_x, sizeof(float) * WIDE_NET_X_NUMEL) == 0, new_count);
  free(x); free(y); free(out_x); free(workspace);
  return 0;
}
)");
  const std::string exe = dir.file("wide");
  build_c_program(dir, {dir.file("wide_main.c"), dir.file("wide.o")}, exe);
  const KilnResult r = run_merged(shell_quote(exe));
  INFO(r.out);
  REQUIRE(r.status == 0);
  const std::map<std::string, double> aot = parse_printed(r.out);

  kiln::Interpreter interp(kiln::parse_kir_file(dir.file("wide.kir")));
  interp.bind("x", pattern({256, 512}, 1));
  interp.bind("w.scale", pattern({512}, 2));
  interp.bind("start", kiln::Tensor(kiln::Tensor::I32(41)));
  interp.bind("count", kiln::Tensor::zeros({kiln::DType::i32, {}}));
  interp.run();
  double y_sum = 0;
  for (float v : interp.output("y").f32()) y_sum += v;
  check_close(aot.at("y_sum"), y_sum, "y_sum");
  const kiln::Tensor::F32& s = interp.output("s").f32();
  for (size_t i = 0; i < s.size(); ++i) {
    const std::string name = "s[" + std::to_string(i) + "]";
    check_close(aot.at(name), s(i), name);
    if (std::fabs(s(i)) > 1e-4) CHECK(aot.at("pos[" + std::to_string(i) + "]") == (s(i) > 0 ? 1 : 0));
  }
  CHECK(aot.at("out_x_equal") == 1);
  CHECK(aot.at("new_count") == 41);
  CHECK(interp.binding("count").i32()() == 41);
}

TEST_CASE("kiln compile rejects bad AOT requests and writes nothing") {
  TempDir dir;
  const std::string kir = source_path("examples/mlp.kir");
  const KilnResult llvm_header =
      run_kiln({"compile", kir, "--emit", "llvm", "-o", dir.file("m.ll"), "--header", dir.file("m.h")});
  CHECK(llvm_header.status == 2);
  CHECK(contains(llvm_header.err, "--header"));
  const KilnResult bad_entry =
      run_kiln({"compile", kir, "-o", dir.file("m.o"), "--header", dir.file("m.h"), "--entry", "2fast"});
  CHECK(bad_entry.status == 2);
  CHECK(contains(bad_entry.err, "'2fast' is not a C identifier"));

  // An unwritable object path (a flag error, before compiling): the header (which existed) is left as it was.
  write_file(dir.file("m.h"), "old");
  const KilnResult unwritable =
      run_kiln({"compile", kir, "-o", dir.file("no/such/dir/m.o"), "--header", dir.file("m.h")});
  CHECK(unwritable.status == 2);
  CHECK(contains(unwritable.err, "--output: cannot write " + dir.file("no/such/dir/m.o")));
  CHECK(read_file(dir.file("m.h")) == "old");

  write_file(dir.file("clash.kir"), R"(graph @clash {
  input %a.b : f32[2]
  input %a_b : f32[2]
  %c = add(%a.b, %a_b) : f32[2]
  output %c
}
)");
  const KilnResult clash =
      run_kiln({"compile", dir.file("clash.kir"), "-o", dir.file("c.o"), "--header", dir.file("c.h")});
  CHECK(clash.status == 1);
  CHECK(contains(clash.err, "input %a.b and input %a_b would both be field 'a_b' of struct clash_args"));

  size_t files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path())) ++files;
  CHECK(files == 2);  // m.h and clash.kir: no object, header or temporary file from the failures
}

TEST_CASE("an AOT run reports an out-of-range index through its status") {
  TempDir dir;
  write_file(dir.file("lookup.kir"), R"(graph @lookup {
  input %table : f32[4,3]
  input %ids : i32[2]
  %rows = gather(%table, %ids) {axis=0} : f32[2,3]
  output %rows
}
)");
  REQUIRE(run_kiln({"compile", dir.file("lookup.kir"), "-o", dir.file("lookup.o"), "--header", dir.file("lookup.h")})
              .status == 0);
  write_file(dir.file("lookup_main.c"), R"(#include <stdio.h>
#include "kiln_runtime.h"
#include "lookup.h"
int main(void) {
  float table[LOOKUP_TABLE_NUMEL] = {0}, rows[LOOKUP_ROWS_NUMEL];
  int32_t ids[LOOKUP_IDS_NUMEL] = {1, 3};
  struct lookup_args args = {.table = table, .ids = ids, .rows = rows};
  const int32_t ok = lookup_run(&args, NULL);
  ids[1] = 4;
  const int32_t bad = lookup_run(&args, NULL);
  printf("%d %d %s\n", ok, bad, kiln_error_message(bad));
  return 0;
}
)");
  const std::string exe = dir.file("lookup");
  build_c_program(dir, {dir.file("lookup_main.c"), dir.file("lookup.o")}, exe);
  const KilnResult r = run_merged(shell_quote(exe));
  CHECK(r.status == 0);
  CHECK(r.out == "0 2 index out of range (a gather or scatter_add index, or a cross_entropy label)\n");
}
