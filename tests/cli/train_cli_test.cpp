// kiln train, translate and eval as a user runs them: bad flags, bad checkpoints,
// a missing data package and empty lines get clear errors, and no checkpoint is
// ever changed by a failing command. A small model on the interpreter keeps it fast.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "cli/run_kiln.h"
#include "engine/atomic_file.h"
#include "models/checkpoint.h"
#include "models/checkpoint_average.h"
#include "models/optimizer.h"
#include "models/train/recipe.h"
#include "models/train/trainer_state.h"
#include "text_and_files.h"

namespace fs = std::filesystem;

namespace {

// A model small enough to train a few steps on the interpreter in moments.
std::vector<std::string> small_model(const std::string& d_model = "32") {
  return {"--d-model", d_model, "--heads",   "2",      "--d-ff",           "64",
          "--layers",  "1",     "--backend", "interp", "--eval-sentences", "20"};
}

std::vector<std::string> train_args(const std::string& dir, std::vector<std::string> extra = {},
                                    const std::vector<std::string>& model = small_model()) {
  std::vector<std::string> args = {"train", "--task", "copy", "--steps", "3", "--checkpoint", dir};
  args.insert(args.end(), model.begin(), model.end());
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// kiln with the file `path` on stdin: the child popen starts inherits this process's fd 0.
KilnResult run_kiln_stdin_from(const std::vector<std::string>& args, const std::string& path) {
  const int saved = dup(0);
  const int fd = open(path.c_str(), O_RDONLY);
  REQUIRE((saved >= 0 && fd >= 0));
  dup2(fd, 0);
  close(fd);
  KilnResult r = run_kiln(args);
  dup2(saved, 0);
  close(saved);
  return r;
}

// kiln with `input` on stdin.
KilnResult run_kiln_stdin(const std::vector<std::string>& args, const std::string& input) {
  TempDir scratch;
  write_file(scratch.file("stdin"), input);
  return run_kiln_stdin_from(args, scratch.file("stdin"));
}

// One trained checkpoint shared by the cases that only read it.
const std::string& trained_checkpoint() {
  static TempDir dir;
  static const std::string path = [] {
    const std::string p = dir.file("ckpt");
    const KilnResult r = run_kiln(train_args(p));
    REQUIRE_MESSAGE(r.status == 0, r.err);
    return p;
  }();
  return path;
}

std::string checkpoint_file(const std::string& dir) { return dir + "/checkpoint.safetensors"; }

// The names of DIR/snapshots/*, by step.
std::vector<std::string> snapshot_names(const std::string& dir) {
  std::vector<std::string> names;
  for (const std::string& path : kiln::models::snapshots(dir)) names.push_back(fs::path(path).filename().string());
  return names;
}

}  // namespace

TEST_CASE("kiln train flag errors exit 2 naming the flag") {
  TempDir dir;
  const std::string ckpt = dir.file("ckpt");
  KilnResult r = run_kiln({"train", "--task", "copy", "--minutes", "1", "--steps", "5", "--checkpoint", ckpt});
  CHECK(r.status == 2);
  CHECK(r.err.find("--minutes") != std::string::npos);
  CHECK(r.err.find("--steps") != std::string::npos);
  r = run_kiln({"train", "--task", "copy", "--checkpoint", ckpt});
  CHECK(r.status == 2);
  CHECK(r.err.find("--minutes or --steps") != std::string::npos);
  r = run_kiln({"train", "--task", "reverse", "--steps", "5", "--checkpoint", ckpt});
  CHECK(r.status == 2);
  CHECK(r.err.find("--task") != std::string::npos);
  r = run_kiln({"translate", "--checkpoint", ckpt, "--beam", "0", "x"});
  CHECK(r.status == 2);
  CHECK(r.err.find("--beam") != std::string::npos);
  r = run_kiln({"eval", "--checkpoint", ckpt, "--split", "train"});
  CHECK(r.status == 2);
  CHECK(r.err.find("--split") != std::string::npos);
  CHECK(!fs::exists(ckpt));
}

TEST_CASE("kiln train writes a checkpoint and a loss curve, and run again on its directory continues the run") {
  const std::string& trained = trained_checkpoint();
  CHECK(read_file(checkpoint_file(trained)).size() > 1000);
  CHECK(read_file(trained + "/loss_curve.svg").find("<svg") != std::string::npos);
  TempDir dir;
  const std::string ckpt = dir.file("ckpt");
  fs::copy(trained, ckpt, fs::copy_options::recursive);
  // The same command again: 3 more steps from step 3, as fairseq and Marian continue.
  KilnResult r = run_kiln(train_args(ckpt));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.err.find("from step 3 on interp") != std::string::npos);
  CHECK(r.out.find("trained steps 4..6") != std::string::npos);
  // --resume alone: settings.toml gives the task, the budget (3 steps) and the rest.
  r = run_kiln({"train", "--checkpoint", ckpt, "--resume"});
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.out.find("trained steps 7..9") != std::string::npos);
  CHECK(r.err.find("on interp") != std::string::npos);  // settings.toml's backend
  // --resume without a run is an error naming the file, alone or with the flags a new run needs.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"train", "--checkpoint", dir.file("none"), "--resume"},
        std::vector<std::string>{"train", "--task", "copy", "--steps", "1", "--checkpoint", dir.file("none"),
                                 "--resume"}}) {
    r = run_kiln(args);
    CHECK(r.status == 1);
    CHECK(r.err.find("--resume: " + checkpoint_file(dir.file("none")) + " does not exist") != std::string::npos);
    CHECK(!fs::exists(dir.file("none")));
  }
}

TEST_CASE("a continued run refuses another value of a setting it keeps, naming the flag and both values") {
  TempDir dir;
  const std::string ckpt = dir.file("ckpt");
  fs::copy(trained_checkpoint(), ckpt, fs::copy_options::recursive);
  const std::string before = read_file(checkpoint_file(ckpt));
  const auto refused = [&](const std::vector<std::string>& extra, const std::string& message) {
    const KilnResult r = run_kiln(train_args(ckpt, extra));
    CHECK(r.status == 1);
    CHECK_MESSAGE(r.err.find(message + " in " + ckpt + ": a continued run keeps it") != std::string::npos, r.err);
    CHECK(read_file(checkpoint_file(ckpt)) == before);
  };
  refused({"--batch-tokens", "100"}, "--batch-tokens 100 differs from the run's 640");
  refused({"--seed", "5"}, "--seed 5 differs from the run's 0");
  refused({"--dropout", "0.3"}, "--dropout 0.3 differs from the run's 0.1");
  const KilnResult task = run_kiln({"train", "--task", "de-en", "--steps", "1", "--checkpoint", ckpt});
  CHECK(task.err.find("--task de-en differs from the run's copy") != std::string::npos);
  // Those that may change are listed in --help; a continued run takes them.
  const KilnResult help = run_kiln({"train", "--help"});
  CHECK(help.out.find("--minutes, --steps, --eval-every, --eval-minutes, --save-every") != std::string::npos);
  const KilnResult more = run_kiln(train_args(ckpt, {"--keep-best", "2", "--threads", "1", "--eval-every", "2"}));
  CHECK_MESSAGE(more.status == 0, more.err);
  CHECK(read_file(ckpt + "/settings.toml").find("keep-best = 2") != std::string::npos);
  // A setting given as 0 carries on too, not the default: no snapshots, continued.
  const std::string none = dir.file("none");
  REQUIRE(run_kiln(train_args(none, {"--keep-snapshots", "0"})).status == 0);
  REQUIRE(run_kiln({"train", "--checkpoint", none, "--resume"}).status == 0);
  CHECK(!fs::exists(none + "/snapshots"));
}

TEST_CASE("--config-file DIR/settings.toml --resume --steps N: the command line's --steps wins over the file's --minutes") {
  TempDir dir;
  const std::string ckpt = dir.file("ckpt");
  fs::copy(trained_checkpoint(), ckpt, fs::copy_options::recursive);
  std::string settings = read_file(ckpt + "/settings.toml");
  const size_t at = settings.find("steps = 3");
  REQUIRE(at != std::string::npos);
  write_file(ckpt + "/settings.toml", settings.replace(at, 9, "minutes = 30"));
  const KilnResult r = run_kiln({"train", "--config-file", ckpt + "/settings.toml", "--resume", "--steps", "2"});
  CHECK_MESSAGE(r.status == 0, r.err);
  CHECK(r.out.find("trained steps 4..5") != std::string::npos);
}

TEST_CASE("kiln train --profile prints the training step's kernel table and writes its Chrome trace") {
  TempDir tmp;
  std::vector<std::string> model = small_model();
  std::replace(model.begin(), model.end(), std::string("interp"), std::string("jit"));
  std::vector<std::string> args = {"train", "--task", "copy", "--steps", "12", "--checkpoint", tmp.file("ckpt"),
                                   "--profile", tmp.file("step.json")};
  args.insert(args.end(), model.begin(), model.end());
  const KilnResult r = run_kiln(args);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("profile of the training step [B=") != std::string::npos);
  CHECK(r.out.find("nearer limit") != std::string::npos);
  // Over all batch shapes, each weighted by the steps it trained: the 12 steps' shapes, then the kinds.
  CHECK(r.out.find("the step over its ") != std::string::npos);
  CHECK(r.out.find(" batch shapes, weighted by the steps each trained (12 steps):") != std::string::npos);
  CHECK(r.out.find("kernel kind") != std::string::npos);
  CHECK(r.out.find("all kernels") != std::string::npos);
  CHECK(r.out.find("matmul") != std::string::npos);
  CHECK(read_file(tmp.file("step.json")).find("\"thread 0 (the caller)\"") != std::string::npos);

  const KilnResult interp = run_kiln(train_args(tmp.file("ckpt2"), {"--profile", tmp.file("t.json")}));
  CHECK(interp.status == 1);
  CHECK(interp.err.find("--profile times the JIT's kernels") != std::string::npos);
  CHECK(!fs::exists(tmp.file("t.json")));
}

TEST_CASE("kiln train --resume with another config is an error naming the flag and both values") {
  TempDir dir;
  const std::string ckpt = dir.file("ckpt");
  fs::copy(trained_checkpoint(), ckpt, fs::copy_options::recursive);
  const std::string before = read_file(checkpoint_file(ckpt));
  const KilnResult r = run_kiln(train_args(ckpt, {"--resume"}, small_model("48")));
  CHECK(r.status == 1);
  CHECK(r.err.find("kiln: error: --d-model 48 differs from the run's 32") != std::string::npos);
  CHECK(read_file(checkpoint_file(ckpt)) == before);
}

TEST_CASE("kiln train de-en without the data package names the path and the package") {
  TempDir dir;
  const std::string ckpt = dir.file("ckpt");
  const KilnResult r = run_kiln(
      {"train", "--task", "de-en", "--steps", "1", "--checkpoint", ckpt, "--data-dir", dir.file("no-such-dictionary")});
  CHECK(r.status == 1);
  CHECK(r.err.find(dir.file("no-such-dictionary")) != std::string::npos);
  CHECK(r.err.find("trans-de-en") != std::string::npos);
  CHECK(!fs::exists(checkpoint_file(ckpt)));
}

TEST_CASE("kiln translate translates each argument and each stdin line") {
  const std::string& ckpt = trained_checkpoint();
  KilnResult r = run_kiln(
      {"translate", "--checkpoint", ckpt, "--backend", "interp", "1 2 3 4 5 6 7 8 9 10", "1 5 5 5 5 5 5 5 5 5"});
  REQUIRE_MESSAGE(r.status == 0, r.err);
  std::istringstream lines(r.out);
  int count = 0;
  for (std::string line; std::getline(lines, line); ++count) {
    std::istringstream tokens(line);
    std::vector<int> ids;
    for (int id; tokens >> id;) ids.push_back(id);
    CHECK(ids.size() == 10);  // the start token and the 9 generated ones
    CHECK(ids.at(0) == 1);
  }
  CHECK(count == 2);
  r = run_kiln_stdin({"translate", "--checkpoint", ckpt, "--beam", "3", "--backend", "interp"},
                     "1 2 3 4 5 6 7 8 9 10\n1 3 3 3 3 3 3 3 3 3\n");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 2);
}

TEST_CASE("kiln translate gives a blank line an empty output line, not an error") {
  const std::string& ckpt = trained_checkpoint();
  const KilnResult r = run_kiln_stdin({"translate", "--checkpoint", ckpt, "--backend", "interp"},
                                      "1 2 3 4 5 6 7 8 9 10\n\n1 4 4 4 4 4 4 4 4 4\n");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.err.empty());
  std::istringstream lines(r.out);
  std::vector<std::string> out;
  for (std::string line; std::getline(lines, line);) out.push_back(line);
  REQUIRE(out.size() == 3);
  CHECK(out[0].rfind("1 ", 0) == 0);
  CHECK(out[1].empty());
  CHECK(out[2].rfind("1 ", 0) == 0);
}

TEST_CASE("kiln translate refuses binary lines and endless input, and still translates the text lines") {
  const std::string& ckpt = trained_checkpoint();
  const std::vector<std::string> args = {"translate", "--checkpoint", ckpt, "--backend", "interp"};
  KilnResult r = run_kiln_stdin(args, std::string("1 2 3\0 4\n1 2 3 4 5\n\xff\xfe 1\n\x7f" "ELF\x02\x01\n", 31));
  CHECK(r.status == 1);
  CHECK(r.err.find("line 1: not text: control byte 0 at byte 6") != std::string::npos);
  CHECK(r.err.find("line 3: not text: malformed UTF-8 at byte 1") != std::string::npos);
  CHECK(r.err.find("line 4: not text: control byte 2 at byte 5") != std::string::npos);
  CHECK(r.err.find("3 of 4 lines were not translated (line 1, 3, 4)") != std::string::npos);
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 4);
  // An endless stream of zero bytes: refused at the line-length limit, at once.
  r = run_kiln_stdin_from(args, "/dev/zero");
  CHECK(r.status == 1);
  CHECK(r.err.find("stdin: line 1 is longer than 65536 bytes") != std::string::npos);
  // A sentence longer than the model's positions is refused by name, not a crash.
  std::string long_line = "1";
  for (int i = 0; i < 300; ++i) long_line += " 5";
  r = run_kiln(std::vector<std::string>{"translate", "--checkpoint", ckpt, "--backend", "interp", long_line});
  CHECK(r.status == 1);
  CHECK(r.err.find("exceeds the config's max_len") != std::string::npos);
}

TEST_CASE("kiln eval prints corpus BLEU and exact match") {
  const KilnResult r = run_kiln({"eval", "--checkpoint", trained_checkpoint(), "--split", "test", "--limit", "16",
                                 "--beam", "1", "--backend", "interp"});
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.out.find("copy test, 16 sentences, greedy") != std::string::npos);
  CHECK(r.out.find("BLEU = ") != std::string::npos);
  CHECK(r.out.find("BLEU signature nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:kiln") != std::string::npos);
  CHECK(r.out.find("exact match ") != std::string::npos);
}

TEST_CASE("kiln eval decodes as the paper by default (beam 4, length penalty 0.6) and --output writes what it scored") {
  TempDir dir;
  const std::string out = dir.file("scored");
  const KilnResult r = run_kiln({"eval", "--checkpoint", trained_checkpoint(), "--split", "test", "--limit", "6",
                                 "--output", out});
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.out.find("copy test, 6 sentences, beam 4, length penalty 0.6") != std::string::npos);
  for (const char* name : {"src.txt", "hyp.txt", "ref.txt"}) {
    const std::string text = read_file(out + "/" + name);
    CHECK_MESSAGE(std::count(text.begin(), text.end(), '\n') == 6, name);
  }
  // The copy task's references are its sources; a trained model copies them.
  CHECK(read_file(out + "/src.txt") == read_file(out + "/ref.txt"));
  // An --output that is a file: a clear error, and the file stays as it was.
  const std::string file = dir.file("taken");
  kiln::write_file_atomically(file, "mine\n");
  const KilnResult bad = run_kiln({"eval", "--checkpoint", trained_checkpoint(), "--limit", "2", "--output", file});
  CHECK(bad.status != 0);
  CHECK(bad.err.find("--output") != std::string::npos);
  CHECK(read_file(file) == "mine\n");
}

TEST_CASE("corrupt and truncated checkpoints fail clearly and stay as they were") {
  TempDir dir;
  const std::string good = read_file(checkpoint_file(trained_checkpoint()));
  // Bytes flipped in the JSON header, and the file cut in the middle of the data.
  std::string corrupt = good;
  for (size_t i = 12; i < 40; ++i) corrupt[i] = '#';
  for (const auto& [name, bytes] :
       {std::pair<std::string, std::string>{"corrupt", corrupt}, {"truncated", good.substr(0, good.size() / 2)}}) {
    CAPTURE(name);
    const std::string ckpt = dir.file(name);
    fs::copy(trained_checkpoint(), ckpt);
    write_file(checkpoint_file(ckpt), bytes);
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"translate", "--checkpoint", ckpt, "1 2 3 4 5 6 7 8 9 10"},
          std::vector<std::string>{"eval", "--checkpoint", ckpt, "--split", "dev"}, train_args(ckpt, {"--resume"})}) {
      CAPTURE(args[0]);
      const KilnResult r = run_kiln(args);
      CHECK(r.status == 1);
      CHECK(r.err.find("kiln: error:") != std::string::npos);
      CHECK(r.err.find(checkpoint_file(ckpt)) != std::string::npos);
      CHECK(read_file(checkpoint_file(ckpt)) == bytes);
    }
  }
}

TEST_CASE("kiln train --resume refuses a step counter that would wrap, or that its trainer state contradicts") {
  TempDir dir;
  const std::string ckpt = dir.file("ckpt");
  fs::copy(trained_checkpoint(), ckpt);
  const auto set_step = [&](int32_t counter, int64_t trainer_step) {
    kiln::models::Checkpoint c = kiln::models::load_checkpoint(ckpt);
    c.tensors.at(kiln::kStepState) = kiln::Tensor(kiln::Tensor::I32(counter));
    kiln::models::TrainerState state = kiln::models::trainer_state_from_json(c.trainer_state);
    state.step = trainer_step;
    c.trainer_state = kiln::models::trainer_state_to_json(state);
    kiln::models::save_checkpoint(ckpt, c);
  };
  const auto fails = [&](const std::string& part) {
    const std::string before = read_file(checkpoint_file(ckpt));
    const KilnResult r = run_kiln(train_args(ckpt, {"--resume"}));
    CHECK(r.status == 1);
    CHECK_MESSAGE(r.err.find(part) != std::string::npos, r.err);
    CHECK(read_file(checkpoint_file(ckpt)) == before);
  };
  set_step(2147483646, 2147483646);  // 3 more steps would pass INT32_MAX
  fails("cannot train 3 more steps from step 2147483646: the step counter is an i32 and would wrap past 2147483647");
  set_step(7, 3);
  fails(checkpoint_file(ckpt) + ": corrupt checkpoint: its trainer state is at step 3, its step counter 'step' at 7");
}

TEST_CASE("kiln average: the last snapshots of a run average into a checkpoint that evaluates and translates") {
  TempDir dir;
  const std::string run = dir.file("run"), out = dir.file("averaged");
  // 3 steps, a save at each: snapshots of steps 2 and 3 are kept.
  KilnResult r = run_kiln(train_args(run, {"--save-every", "1", "--keep-snapshots", "2"}));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(std::filesystem::exists(run + "/snapshots/step-00000002"));
  CHECK(std::filesystem::exists(run + "/snapshots/step-00000003"));
  CHECK_FALSE(std::filesystem::exists(run + "/snapshots/step-00000001"));
  r = run_kiln({"average", "--checkpoint", run, "--last", "2", "-o", out});
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.out.find("averaged 2 checkpoints") != std::string::npos);
  r = run_kiln({"eval", "--checkpoint", out, "--limit", "4", "--beam", "1", "--backend", "interp"});
  CHECK_MESSAGE(r.status == 0, r.err);
  r = run_kiln({"translate", "--checkpoint", out, "--backend", "interp", "1 2 3 4 5 6 7 8 9 10"});
  CHECK_MESSAGE(r.status == 0, r.err);
  // Explicit directories average too.
  r = run_kiln({"average", run + "/snapshots/step-00000002", run, "-o", dir.file("pair")});
  CHECK_MESSAGE(r.status == 0, r.err);
}

TEST_CASE("after a default run kiln average --last N and --best N work: its params kept at each fifth of the budget") {
  TempDir dir;
  const std::string run = dir.file("run");
  std::vector<std::string> args = {"train", "--task", "copy", "--steps", "10", "--checkpoint", run};
  const std::vector<std::string> model = small_model();
  args.insert(args.end(), model.begin(), model.end());
  KilnResult r = run_kiln(args);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  // Evaluated and saved at steps 2, 4, 6, 8 and 10: the 5 snapshots kept by default, the 3 best evaluated.
  CHECK(snapshot_names(run) == std::vector<std::string>{"step-00000002", "step-00000004", "step-00000006",
                                                          "step-00000008", "step-00000010"});
  CHECK(r.err.find("kept 5 snapshots (" + run + "/snapshots, params only: ") != std::string::npos);
  CHECK(r.err.find(" MB) and 3 best (" + run + "/best-snapshots: ") != std::string::npos);
  // Without Adam's two moments per param: about a third of the run's checkpoint.
  const auto snapshot_bytes = fs::file_size(checkpoint_file(run + "/snapshots/step-00000010"));
  const auto run_bytes = fs::file_size(checkpoint_file(run));
  CHECK(3 * snapshot_bytes < run_bytes + run_bytes / 10);
  CHECK(read_file(run + "/settings.toml").find("eval-every = 2") != std::string::npos);
  r = run_kiln({"average", "--checkpoint", run, "--last", "3", "-o", dir.file("last3")});
  CHECK_MESSAGE(r.status == 0, r.err);
  r = run_kiln({"average", "--checkpoint", run, "--best", "2", "-o", dir.file("best2")});
  CHECK_MESSAGE(r.status == 0, r.err);
  r = run_kiln({"eval", "--checkpoint", dir.file("best2"), "--limit", "4", "--beam", "1", "--backend", "interp"});
  CHECK_MESSAGE(r.status == 0, r.err);
}

TEST_CASE("kiln average refuses what it cannot average, naming why") {
  TempDir dir;
  const std::string run = dir.file("run");
  REQUIRE(run_kiln(train_args(run, {"--save-every", "1", "--keep-snapshots", "2"})).status == 0);
  const auto fails = [](const std::vector<std::string>& args, const std::string& part) {
    const KilnResult r = run_kiln(args);
    CHECK(r.status != 0);
    CHECK_MESSAGE(r.err.find(part) != std::string::npos, r.err);
  };
  fails({"average", "--checkpoint", run, "--last", "5", "-o", dir.file("o")}, "has 2 snapshots");
  fails({"average", "--checkpoint", run, "-o", dir.file("o")}, "needs --last N");
  fails({"average", run, "--last", "2", "-o", dir.file("o")}, "--last and --best need --checkpoint");
  fails({"average", "--checkpoint", run, "--best", "2", "-o", dir.file("o")}, "keeps 1 evaluated checkpoints");
  fails({"average", run, "-o", run}, "is one of the inputs");
  fails({"average", dir.file("missing"), "-o", dir.file("o")}, "missing");
  fails({"average", run}, "--output");
}

TEST_CASE("kiln batches writes a run's batches as subword ids, one JSON line per batch") {
  TempDir dir;
  KilnResult r = run_kiln({"batches", "--task", "copy", "--checkpoint", dir.file("run"), "--split", "dev", "-o",
                           dir.file("dev.jsonl")});
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const std::string text = read_file(dir.file("dev.jsonl"));
  CHECK(text.rfind("{\"src\":[[1,", 0) == 0);
  CHECK(r.out.find("copy dev batches") != std::string::npos);
  // -o -: the batches on stdout, the line saying so on stderr, no file named '-'.
  r = run_kiln({"batches", "--task", "copy", "--checkpoint", dir.file("run"), "--split", "dev", "-o", "-"},
               "cd " + shell_quote(dir.path().string()) + " && ");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.out == text);
  CHECK(r.err.find("copy dev batches to stdout") != std::string::npos);
  CHECK(!fs::exists(dir.file("-")));
  r = run_kiln({"batches", "--task", "copy", "--checkpoint", dir.file("run"), "--split", "valid", "-o", dir.file("x")});
  CHECK(r.status != 0);
  CHECK(r.err.find("--split") != std::string::npos);
}

TEST_CASE("kiln train --help prints every task's default recipe for each budget") {
  const KilnResult r = run_kiln({"train", "--help"});
  REQUIRE(r.status == 0);
  CHECK(r.out.find("Default recipes") != std::string::npos);
  for (const char* task : {"copy", "de-en"}) {
    for (const kiln::models::BudgetRecipe& row : kiln::models::task_recipes(task)) {
      const kiln::models::Recipe& c = row.recipe;
      const std::string settings = "--config " + c.config + " --batch-tokens " + std::to_string(c.batch_tokens) +
                                   " --warmup " + std::to_string(c.warmup);
      CAPTURE(settings);
      CHECK(r.out.find(std::string(task) + ", ") != std::string::npos);
      CHECK(r.out.find(settings) != std::string::npos);
    }
  }
  CHECK(r.out.find("Passes:") != std::string::npos);  // the recipes come before, not instead of, the passes
}

TEST_CASE("kiln train --unfused-loss trains the matmul and cross_entropy, and its checkpoint says so") {
  TempDir tmp;
  const KilnResult fused = run_kiln(train_args(tmp.file("fused")));
  const KilnResult unfused = run_kiln(train_args(tmp.file("unfused"), {"--unfused-loss"}));
  REQUIRE_MESSAGE(fused.status == 0, fused.err);
  REQUIRE_MESSAGE(unfused.status == 0, unfused.err);
  CHECK(kiln::models::load_checkpoint(tmp.file("fused")).config.fused_loss);
  CHECK(!kiln::models::load_checkpoint(tmp.file("unfused")).config.fused_loss);
}

TEST_CASE("kiln train --resume of a run whose --minutes are spent says so in one line and writes nothing") {
  TempDir dir;
  const std::string ckpt = dir.file("ckpt");
  KilnResult r = run_kiln(train_args(ckpt));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  // Every file of the run with its bytes and time of last change.
  const auto files = [&] {
    std::map<std::string, std::pair<std::string, fs::file_time_type>> out;
    for (const auto& e : fs::recursive_directory_iterator(ckpt))
      if (e.is_regular_file()) out[e.path().string()] = {read_file(e.path().string()), e.last_write_time()};
    return out;
  };
  const auto before = files();
  REQUIRE(before.count(ckpt + "/settings.toml") == 1);
  // 3 steps on the interpreter, compiles included, took far more than 0.001 min (60 ms).
  std::vector<std::string> resume = {"train", "--task", "copy", "--minutes", "0.001", "--resume", "--checkpoint", ckpt};
  const std::vector<std::string> model = small_model();
  resume.insert(resume.end(), model.begin(), model.end());
  r = run_kiln(resume);
  CHECK(r.status == 0);
  CHECK(r.out.empty());
  CHECK_MESSAGE(r.err.rfind("nothing to train: the run has trained ", 0) == 0, r.err);
  CHECK(r.err.find("of its --minutes 0.001; nothing written") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(files() == before);
}
