// kiln train on a user's own corpus (the text task), as a user runs it: bad files
// named, the prepared corpus reused, early stopping and DIR/best, the run's log and
// settings, kiln prepare and kiln average --best. A small model on the interpreter.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/run_kiln.h"
#include "text_and_files.h"

namespace fs = std::filesystem;

namespace {

// Numbers spelled in two languages: every pair a real translation.
void write_corpus(const TempDir& dir, const std::string& name, int count, int offset) {
  const char* es[] = {"uno", "dos", "tres", "cuatro", "cinco", "seis", "siete", "ocho", "nueve", "diez"};
  const char* en[] = {"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"};
  std::string src, tgt;
  for (int i = 0; i < count; ++i) {
    const int a = (i + offset) % 10, b = (i * 7 + offset) % 10;
    src += std::string("el ") + es[a] + " y " + es[b] + "\n";
    tgt += std::string("the ") + en[a] + " and " + en[b] + "\n";
  }
  write_file(dir.file(name + ".es"), src);
  write_file(dir.file(name + ".en"), tgt);
}

// The flags that train a small model on the corpus in `dir`, written on first use.
std::vector<std::string> text_args(const TempDir& dir, const std::string& ckpt, std::vector<std::string> extra = {}) {
  if (!fs::exists(dir.file("train.es"))) {
    write_corpus(dir, "train", 120, 0);
    write_corpus(dir, "valid", 8, 3);
  }
  std::vector<std::string> args = {"train",      "--train",    dir.file("train"), "--valid",  dir.file("valid"),
                                   "--src-lang", "es",         "--tgt-lang",      "en",       "--vocab-size",
                                   "40",         "--checkpoint", ckpt,            "--d-model", "16",
                                   "--heads",    "2",          "--d-ff",          "32",       "--layers",
                                   "1",          "--backend",  "interp",          "--eval-sentences", "8"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::vector<nlohmann::json> log_lines(const std::string& ckpt) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(read_file(ckpt + "/log.jsonl"));
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

}  // namespace

TEST_CASE("kiln train --train: bad corpus files are named, exit 1, and leave no checkpoint") {
  TempDir dir;
  write_file(dir.file("a.es"), "uno\ndos\ntres\n");
  write_file(dir.file("a.en"), "one\ntwo\n");
  write_corpus(dir, "valid", 4, 0);
  const std::string ckpt = dir.file("ckpt");
  KilnResult r = run_kiln({"train", "--train", dir.file("a"), "--valid", dir.file("valid"), "--src-lang", "es",
                           "--tgt-lang", "en", "--checkpoint", ckpt, "--steps", "1"});
  CHECK(r.status == 1);
  CHECK(r.err.find(dir.file("a.es") + " has 3 lines, " + dir.file("a.en") + " has 2") != std::string::npos);
  CHECK(!fs::exists(ckpt + "/checkpoint.safetensors"));

  r = run_kiln({"train", "--train", dir.file("nothing"), "--valid", dir.file("valid"), "--src-lang", "es",
                "--tgt-lang", "en", "--checkpoint", ckpt, "--steps", "1"});
  CHECK(r.status == 1);
  CHECK(r.err.find("--train " + dir.file("nothing") + ": " + dir.file("nothing.es") + " does not exist") !=
        std::string::npos);

  r = run_kiln({"train", "--task", "copy", "--train", dir.file("a"), "--checkpoint", ckpt, "--steps", "1"});
  CHECK(r.status == 2);
  CHECK(r.err.find("--train") != std::string::npos);
  r = run_kiln({"train", "--train", dir.file("a"), "--valid", dir.file("valid"), "--src-lang", "es", "--tgt-lang",
                "es", "--checkpoint", ckpt, "--steps", "1"});
  CHECK(r.status == 1);
  CHECK(r.err.find("--src-lang and --tgt-lang must differ") != std::string::npos);
}

TEST_CASE("kiln train --train: early stopping keeps the best, logs every evaluation, and writes its settings") {
  TempDir dir;
  const std::string ckpt = dir.file("ckpt");
  // A rate too small to change anything: BLEU cannot improve, so --patience 1 stops
  // at the second evaluation and the first stays the best.
  const KilnResult r = run_kiln(text_args(
      dir, ckpt, {"--steps", "20", "--eval-every", "2", "--patience", "1", "--lr-factor", "1e-12", "--keep-best", "2"}));
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.err.find("prepared " + ckpt + "/data") != std::string::npos);
  // The recipe fitted to the corpus, and why, in one line (a step budget: no minutes).
  CHECK(r.err.find("recipe for 120 pairs (") != std::string::npos);
  CHECK(r.err.find("batches an epoch; tiny; about 20 steps") != std::string::npos);
  CHECK(r.err.find("; flags given win") != std::string::npos);
  CHECK(r.err.find("stopping early: 1 dev evaluations without a better bleu than step 2's") != std::string::npos);
  CHECK(r.out.find("best dev bleu") != std::string::npos);
  CHECK(r.out.find("at step 2 (" + ckpt + "/best); stopped early (--patience)") != std::string::npos);
  CHECK(fs::exists(ckpt + "/best/checkpoint.safetensors"));
  CHECK(fs::exists(ckpt + "/best/corpus.json"));
  CHECK(fs::exists(ckpt + "/best/spm.model"));

  const auto lines = log_lines(ckpt);
  REQUIRE(lines.size() >= 4);
  CHECK(lines.front()["event"] == "start");
  CHECK(lines.front()["settings"]["update-freq"] == 1);
  int devs = 0;
  for (const auto& l : lines) devs += l["event"] == "dev";
  CHECK(devs == 2);
  CHECK(lines.back()["event"] == "stop");
  CHECK(lines.back()["step"] == 4);

  // The settings read back as a config file: the same run elsewhere.
  const std::string settings = read_file(ckpt + "/settings.toml");
  CHECK(settings.find("d-model = 16") != std::string::npos);
  CHECK(settings.find("src-lang = \"es\"") != std::string::npos);
  CHECK(settings.find("\n# recipe for 120 pairs (") != std::string::npos);
  const std::string again = dir.file("again");
  const KilnResult c = run_kiln({"train", "--config-file", ckpt + "/settings.toml", "--checkpoint", again});
  INFO(c.err);
  CHECK(c.status == 0);
  CHECK(read_file(again + "/settings.toml").find("d-model = 16") != std::string::npos);
  const KilnResult bad = run_kiln({"train", "--config-file", dir.file("missing.toml"), "--checkpoint", again});
  CHECK(bad.status == 2);
  CHECK(bad.err.find("--config-file " + dir.file("missing.toml")) != std::string::npos);

  // --best 2 averages the two kept evaluations.
  const KilnResult avg = run_kiln({"average", "--checkpoint", ckpt, "--best", "2", "-o", dir.file("avg")});
  INFO(avg.err);
  CHECK(avg.status == 0);
  CHECK(fs::exists(dir.file("avg") + "/corpus.json"));
  const KilnResult too_many = run_kiln({"average", "--checkpoint", ckpt, "--best", "3", "-o", dir.file("avg3")});
  CHECK(too_many.status == 1);
  CHECK(too_many.err.find("keeps 2 evaluated checkpoints") != std::string::npos);
}

TEST_CASE("kiln train --train: a second run and a resume reuse the prepared corpus") {
  TempDir dir;
  const std::string first = dir.file("first");
  KilnResult r = run_kiln(text_args(dir, first, {"--steps", "2"}));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const auto prepared_at = fs::last_write_time(first + "/data/train.ids");

  r = run_kiln(text_args(dir, dir.file("second"), {"--steps", "2", "--prepared", first + "/data"}));
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK(r.err.find("reusing the corpus prepared in " + first + "/data") != std::string::npos);
  CHECK(fs::last_write_time(first + "/data/train.ids") == prepared_at);

  r = run_kiln(text_args(dir, first, {"--steps", "2", "--resume"}));
  CHECK(r.status == 0);
  CHECK(r.err.find("preparing") == std::string::npos);
  CHECK(fs::last_write_time(first + "/data/train.ids") == prepared_at);

  // The settings of a run without --patience read back: a resume from its own file.
  CHECK(read_file(first + "/settings.toml").find("patience") == std::string::npos);
  r = run_kiln({"train", "--config-file", first + "/settings.toml", "--resume", "--steps", "3"});
  CHECK_MESSAGE(r.status == 0, r.err);

  // Other files on resume: refused, the checkpoint left as it was.
  write_corpus(dir, "other", 50, 1);
  std::vector<std::string> other = text_args(dir, first, {"--steps", "2", "--resume"});
  other[2] = dir.file("other");
  const std::string before = read_file(first + "/checkpoint.safetensors");
  r = run_kiln(other);
  CHECK(r.status == 1);
  CHECK(r.err.find("--train " + dir.file("other") + " differs from the run's " + dir.file("train")) !=
        std::string::npos);
  CHECK(read_file(first + "/checkpoint.safetensors") == before);
}

TEST_CASE("kiln prepare, then kiln train --prepared alone") {
  TempDir dir;
  write_corpus(dir, "train", 60, 0);
  write_corpus(dir, "valid", 6, 2);
  KilnResult r = run_kiln({"prepare", "--train", dir.file("train"), "--valid", dir.file("valid"), "--src-lang", "es",
                           "--tgt-lang", "en", "--vocab-size", "40", "-o", dir.file("prep")});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("kiln train --prepared " + dir.file("prep")) != std::string::npos);
  r = run_kiln({"train", "--prepared", dir.file("prep"), "--checkpoint", dir.file("ckpt"), "--steps", "1",
                "--d-model", "16", "--heads", "2", "--d-ff", "32", "--layers", "1", "--backend", "interp",
                "--eval-sentences", "4"});
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK(fs::exists(dir.file("ckpt") + "/corpus.json"));
  r = run_kiln({"train", "--prepared", dir.file("nowhere"), "--checkpoint", dir.file("ckpt2"), "--steps", "1"});
  CHECK(r.status == 1);
  CHECK(r.err.find("--prepared " + dir.file("nowhere") + ": no corpus.json there") != std::string::npos);
}
