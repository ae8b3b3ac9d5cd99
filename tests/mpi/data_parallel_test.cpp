// Data-parallel training over Open MPI, end to end through the kiln command:
// the allreduce op's sums, 2 ranks against one process with the doubled batch
// and against --update-freq 2, shared memory and TCP, a resume on another rank
// count, a rank killed mid-run, and ranks that disagree.
#include <doctest/doctest.h>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <xtensor/xmath.hpp>

#include "engine/npy.h"
#include "models/checkpoint.h"
#include "models/train/trainer_state.h"
#include "mpi/mpirun.h"

using namespace kiln;
namespace fs = std::filesystem;

extern char** environ;

namespace {

// A tiny model on the copy task, 5 steps from seed 3 with `extra` flags.
std::vector<std::string> train_args(const std::string& ckpt, std::vector<std::string> extra) {
  std::vector<std::string> args = {"train", "--task", "copy", "--d-model", "16", "--heads", "2", "--d-ff", "32",
                                   "--layers", "1", "--steps", "5", "--seed", "3", "--eval-sentences", "4",
                                   "--checkpoint", ckpt};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// The largest difference between two checkpoints' params and Adam moments,
// relative to each tensor's largest value; and between their train losses.
// The attention key biases (*.bk) are left out: softmax is blind to a shift of
// a query's scores, so their gradient is 0 in exact arithmetic and rounding
// noise in floats, which Adam turns into full steps of either sign (a batch
// summed in another order moves them by 100% of their size).
struct Difference {
  double tensors = 0, loss = 0;
};

Difference difference(const std::string& a, const std::string& b) {
  const models::Checkpoint x = models::load_checkpoint(a), y = models::load_checkpoint(b);
  Difference d;
  for (const auto& [name, t] : y.tensors)  // --update-freq's accumulators are zero between updates
    if (!x.tensors.count(name)) CHECK(name.ends_with(".grad_acc"));
  for (const auto& [name, t] : x.tensors) {
    if (!y.tensors.count(name)) {
      CHECK(name.ends_with(".grad_acc"));
      continue;
    }
    if (name.find(".bk") != std::string::npos) continue;
    if (t.dtype() != DType::f32) {
      CHECK(t.i32() == y.tensors.at(name).i32());  // the step counter
      continue;
    }
    const float scale = std::max(xt::amax(xt::abs(t.f32()))(), 1e-6f);
    d.tensors = std::max(d.tensors, static_cast<double>(xt::amax(xt::abs(t.f32() - y.tensors.at(name).f32()))()) / scale);
  }
  const auto lx = models::trainer_state_from_json(x.trainer_state).train_losses;
  const auto ly = models::trainer_state_from_json(y.trainer_state).train_losses;
  REQUIRE(lx.size() == ly.size());
  for (size_t i = 0; i < lx.size(); ++i) d.loss = std::max(d.loss, std::abs(lx[i].loss - ly[i].loss));
  return d;
}

void require_ok(const KilnResult& r) {
  INFO("stderr: ", r.err);
  REQUIRE(r.status == 0);
}

struct Child {
  pid_t pid;
  std::string comm;  // its command name, "(mpirun)"
  fs::path proc;     // /proc/PID
};

// The processes whose parent is `parent`.
std::vector<Child> children_of(pid_t parent) {
  std::vector<Child> out;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string pid, comm, state;
    pid_t ppid = -1;
    stat >> pid >> comm >> state >> ppid;
    if (ppid == parent) out.push_back({static_cast<pid_t>(std::stol(name)), comm, entry.path()});
  }
  return out;
}

// The child of `parent` whose environment says OMPI_COMM_WORLD_RANK=rank, or -1.
pid_t rank_pid(pid_t parent, int rank) {
  const std::string want = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank);
  for (const Child& c : children_of(parent)) {
    std::ifstream env(c.proc / "environ");
    for (std::string var; std::getline(env, var, '\0');)
      if (var == want) return c.pid;
  }
  return -1;
}

}  // namespace

TEST_CASE("mpirun -np 2 kiln run: allreduce sums over the ranks exactly, interpreter and JIT, shared memory and TCP") {
  if (!mpi_ready()) return;
  TempDir dir;
  {
    std::ofstream kir(dir.file("sum.kir"));
    kir << "graph @sum {\n  input %x : f32[5]\n  input %n : i32[3]\n  %sx = allreduce(%x) : f32[5]\n"
           "  %sn = allreduce(%n) : i32[3]\n  %t = exp(%x) : f32[5]\n  %st = allreduce(%t) : f32[5]\n"
           "  output %sx\n  output %sn\n  output %st\n}\n";
  }
  const Tensor x(Tensor::F32{0.5f, -1.25f, 3.0f, 1e-3f, -7.0f});
  const Tensor n(Tensor::I32{1, -2, 40000});
  save_npy(dir.file("x.npy"), x);
  save_npy(dir.file("n.npy"), n);
  for (const Transport t : {Transport::shared_memory, Transport::tcp})
    for (const std::string backend : {"interp", "jit"}) {
      CAPTURE(backend);
      CAPTURE(t == Transport::tcp);
      const std::string out = dir.file(backend + (t == Transport::tcp ? "_tcp" : "_shm"));
      const KilnResult r = mpirun_kiln(2, {"run", dir.file("sum.kir"), "-i", "x=" + dir.file("x.npy"), "-i",
                                           "n=" + dir.file("n.npy"), "-o", out, "--backend", backend}, t);
      require_ok(r);
      CHECK(load_npy(out + "/sx.npy").f32() == x.f32() * 2.0f);
      CHECK(load_npy(out + "/sn.npy").i32() == n.i32() * 2);
      const Tensor st = load_npy(out + "/st.npy");
      CHECK(xt::amax(xt::abs(st.f32() - 2.0f * xt::exp(x.f32())))() <= 1e-5f * 2.0f * std::exp(3.0f));
      CHECK(r.out.find("%sx") != std::string::npos);  // rank 0 prints, once
      CHECK(r.out.find("%sx") == r.out.rfind("%sx"));
    }
}

TEST_CASE("2 ranks train as one process on the doubled batch and as --update-freq 2, dropout off and on") {
  if (!mpi_ready()) return;
  TempDir dir;
  for (const std::string dropout : {"0", "0.2"}) {
    CAPTURE(dropout);
    const std::string ranks2 = dir.file("ranks2_" + dropout), one = dir.file("one_" + dropout),
                      freq2 = dir.file("freq2_" + dropout), tcp = dir.file("tcp_" + dropout);
    require_ok(mpirun_kiln(2, train_args(ranks2, {"--batch-tokens", "96", "--dropout", dropout})));
    require_ok(run_kiln(train_args(one, {"--batch-tokens", "192", "--dropout", dropout})));
    require_ok(run_kiln(train_args(freq2, {"--batch-tokens", "96", "--update-freq", "2", "--dropout", dropout})));
    require_ok(mpirun_kiln(2, train_args(tcp, {"--batch-tokens", "96", "--dropout", dropout}), Transport::tcp));
    // The doubled batch sums its gradient in another order (one matmul over both halves).
    const Difference vs_one = difference(ranks2, one);
    CHECK(vs_one.tensors <= 1e-4);
    CHECK(vs_one.loss <= 1e-5);
    // --update-freq 2 adds the same two weighted halves as the allreduce does.
    const Difference vs_freq = difference(ranks2, freq2);
    CHECK(vs_freq.tensors <= 1e-5);
    CHECK(vs_freq.loss <= 1e-6);
    const Difference vs_tcp = difference(ranks2, tcp);
    CHECK(vs_tcp.tensors == 0);
    CHECK(vs_tcp.loss == 0);
    MESSAGE("dropout ", dropout, ": 2 ranks against the doubled batch ", vs_one.tensors, " (params, relative), ",
            vs_one.loss, " (loss); against --update-freq 2 ", vs_freq.tensors, ", ", vs_freq.loss);
  }
}

TEST_CASE("a resume on another rank count continues the same trajectory, or says why it cannot") {
  if (!mpi_ready()) return;
  TempDir dir;
  const std::string straight = dir.file("straight"), split = dir.file("split");
  require_ok(mpirun_kiln(2, train_args(straight, {"--batch-tokens", "96"})));
  std::vector<std::string> first = train_args(split, {"--batch-tokens", "96"});
  first[std::find(first.begin(), first.end(), "--steps") - first.begin() + 1] = "3";
  require_ok(mpirun_kiln(2, first));
  std::vector<std::string> rest = train_args(split, {"--resume"});
  rest[std::find(rest.begin(), rest.end(), "--steps") - rest.begin() + 1] = "2";
  const KilnResult refused = run_kiln([&] {
    std::vector<std::string> a = rest;
    a.insert(a.end(), {"--update-freq", "3"});
    return a;
  }());
  CHECK(refused.status != 0);
  CHECK(refused.err.find("--update-freq 3 on 1 rank(s) makes updates of 3 parts; the checkpoint's were 2 parts of 96 "
                         "tokens (2 rank(s) x --update-freq 1)") != std::string::npos);
  require_ok(run_kiln(rest));  // one process, --update-freq 2 from the checkpoint's 2 parts
  const Difference d = difference(straight, split);
  CHECK(d.tensors <= 1e-5);
  CHECK(d.loss <= 1e-6);
}

TEST_CASE("a rank killed mid-run ends the job with a message naming it, and the last checkpoint loads") {
  if (!mpi_ready()) return;
  TempDir dir;
  const std::string ckpt = dir.file("ckpt"), err = dir.file("stderr");
  const std::string cmd = mpirun_prefix(2) + shell_quote(KILN_BINARY) +
                          " train --task copy --d-model 16 --heads 2 --d-ff 32 --layers 1 --steps 100000 "
                          "--save-every 2 --eval-sentences 4 --backend interp --checkpoint " +
                          shell_quote(ckpt) + " >/dev/null 2>" + shell_quote(err);
  std::vector<std::string> argv_storage = {"/bin/sh", "-c", "exec " + cmd};
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t shell = -1;
  REQUIRE(posix_spawn(&shell, "/bin/sh", nullptr, nullptr, argv.data(), environ) == 0);
  // `exec` makes the shell env, then timeout, whose child is mpirun, whose children are the ranks.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (!fs::exists(models::checkpoint_file(ckpt)) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(fs::exists(models::checkpoint_file(ckpt)));
  pid_t mpirun = -1;
  for (const Child& c : children_of(shell))
    if (c.comm.find("mpirun") != std::string::npos) mpirun = c.pid;
  REQUIRE(mpirun > 0);
  const pid_t victim = rank_pid(mpirun, 1);
  REQUIRE(victim > 0);
  REQUIRE(::kill(victim, SIGKILL) == 0);
  int status = 0;
  waitpid(shell, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) != 0);
  CHECK(WEXITSTATUS(status) != 124);  // ended by mpirun, not by the timeout
  std::ifstream text(err);
  const std::string message((std::istreambuf_iterator<char>(text)), std::istreambuf_iterator<char>());
  INFO("stderr: ", message);
  CHECK(message.find("rank 1") != std::string::npos);
  CHECK_NOTHROW(models::load_checkpoint(ckpt));
}

TEST_CASE("ranks that disagree (here, their seeds) are refused at start-up, naming what differs") {
  if (!mpi_ready()) return;
  TempDir dir;
  const std::string each_rank = shell_quote(KILN_BINARY) +
                                " train --task copy --steps 2 --d-model 16 --heads 2 --d-ff 32 --layers 1 "
                                "--checkpoint " + shell_quote(dir.file("ckpt")) + " --seed $OMPI_COMM_WORLD_RANK";
  const KilnResult r = run_shell(mpirun_prefix(2) + "sh -c " + shell_quote(each_rank));
  INFO("stderr: ", r.err);
  CHECK(r.status != 0);
  CHECK(r.status != 124);
  CHECK(r.err.find("the ranks disagree on the training settings") != std::string::npos);
  CHECK(r.err.find("kiln: rank ") != std::string::npos);  // whichever rank ended the job names itself
}

TEST_CASE("kiln.train from Python under mpirun trains the model `mpirun kiln train` does") {
  if (!mpi_ready()) return;
  const fs::path module_dir = fs::path(KILN_BINARY).parent_path() / "python";
  bool built = false;  // not in the sanitizer builds, which cannot load into a plain python
  if (fs::exists(module_dir))
    for (const auto& entry : fs::directory_iterator(module_dir)) built = built || entry.path().extension() == ".so";
  if (!built) return;
  TempDir dir;
  const std::string cli = dir.file("cli"), python = dir.file("python");
  require_ok(mpirun_kiln(2, train_args(cli, {"--batch-tokens", "96"})));
  const std::string script = "import kiln; r = kiln.train('copy', " + shell_quote(python) +
                             ", steps=5, d_model=16, heads=2, d_ff=32, layers=1, seed=3, eval_sentences=4, "
                             "batch_tokens=96); print('last step', r.last_step)";
  const KilnResult r = run_shell("PYTHONPATH=" + shell_quote(module_dir.string()) + " " + mpirun_prefix(2) +
                                 "/usr/bin/python3 -c " + shell_quote(script));
  INFO("stderr: ", r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("last step 5") != std::string::npos);
  const Difference d = difference(cli, python);
  CHECK(d.tensors == 0);
  CHECK(d.loss == 0);
}
