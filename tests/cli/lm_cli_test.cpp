// kiln train --model lm, kiln generate and kiln eval --text as a user runs them:
// a run, the same text from the same seed, and every bad input named.
#include <doctest/doctest.h>

#include <filesystem>

#include "cli/run_kiln.h"
#include "text_and_files.h"

namespace {

// A tiny language model trained for a few steps in `dir`/gpt (once per directory).
std::string trained_lm(const TempDir& dir) {
  const std::string ckpt = dir.file("gpt");
  if (std::filesystem::exists(ckpt)) return ckpt;
  std::string text;
  for (int i = 0; i < 50; ++i) text += "In the beginning was the word. ";
  write_file(dir.file("train.txt"), text);
  const KilnResult r = run_kiln({"train",
                                 "--model",
                                 "lm",
                                 "--train",
                                 dir.file("train.txt"),
                                 "--valid",
                                 dir.file("train.txt"),
                                 "--checkpoint",
                                 ckpt,
                                 "--steps",
                                 "6",
                                 "--context",
                                 "32",
                                 "--d-model",
                                 "16",
                                 "--heads",
                                 "2",
                                 "--d-ff",
                                 "32",
                                 "--layers",
                                 "1",
                                 "--batch-size",
                                 "4"});
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.out.find("trained steps 0..6") != std::string::npos);
  CHECK(r.out.find("perplexity") != std::string::npos);
  return ckpt;
}

std::vector<std::string> lm_args(const TempDir& dir, std::vector<std::string> extra) {
  write_file(dir.file("t.txt"), std::string(400, 'a'));
  std::vector<std::string> args{"train", "--model", "lm", "--checkpoint", dir.file("bad"), "--steps", "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

}  // namespace

TEST_CASE("kiln generate writes the same text from the same seed, and kiln eval --text its perplexity") {
  const TempDir dir;
  const std::string ckpt = trained_lm(dir);
  const std::vector<std::string> gen{"generate", "--checkpoint", ckpt, "In the", "--max-tokens", "20", "--seed", "4",
                                     "--top-p",  "0.9",          "-n", "2"};
  const KilnResult a = run_kiln(gen), b = run_kiln(gen);
  REQUIRE_MESSAGE(a.status == 0, a.err);
  CHECK(a.out == b.out);
  CHECK(a.out.rfind("In the", 0) == 0);
  CHECK(a.out.find("\n---\nIn the") != std::string::npos);  // two samples
  CHECK(a.err.find("tokens/s") != std::string::npos);
  const KilnResult e = run_kiln({"eval", "--checkpoint", ckpt, "--text", dir.file("train.txt")});
  REQUIRE_MESSAGE(e.status == 0, e.err);
  CHECK(e.out.find("perplexity") != std::string::npos);
  // Standard output closed: the text is lost, so the command fails.
  CHECK(run_shell(shell_quote(KILN_BINARY) + " generate --checkpoint " + shell_quote(ckpt) + " --max-tokens 3 >&-")
            .status != 0);
}

TEST_CASE("bad input to the language model's commands is named, with a non-zero exit") {
  const TempDir dir;
  const std::string text = dir.file("t.txt");
  const auto fails = [](const KilnResult& r, int status, const std::string& what) {
    CHECK_MESSAGE(r.status == status, r.err);
    CHECK_MESSAGE(r.err.find(what) != std::string::npos, r.err);
  };
  fails(run_kiln(lm_args(dir, {"--train", text})), 1, "--model lm needs --train and --valid");
  fails(run_kiln(lm_args(dir, {"--train", text, "--valid", text, "--task", "copy"})), 1,
        "--task is a Transformer flag");
  fails(run_kiln(lm_args(dir, {"--train", dir.file("missing.txt"), "--valid", text})), 1, "missing.txt: no such file");
  fails(run_kiln(lm_args(dir, {"--train", text, "--valid", text, "--context", "1000"})), 1,
        "fewer than the 1001 one window");
  fails(run_kiln(lm_args(dir, {"--train", text, "--valid", text, "--positions", "alibi"})), 2, "--positions");
  fails(run_kiln(lm_args(dir, {"--train", text, "--valid", text, "--heads", "3"})), 1,
        "must be a multiple of \"heads\"");
  fails(run_kiln(lm_args(dir, {"--train", text, "--valid", text, "--positions", "learned", "--positions-max", "999"})),
        1, "\"max_len\" must equal \"context\"");
  fails(run_kiln({"train", "--model", "gpt", "--checkpoint", dir.file("x"), "--steps", "1"}), 2, "--model");
  fails(run_kiln({"generate", "--checkpoint", dir.path().string()}), 1, "holds no checkpoint.safetensors");
  fails(run_kiln({"generate", "--checkpoint", dir.path().string(), "--top-p", "0"}), 2, "--top-p");
  fails(run_kiln({"generate", "--checkpoint", dir.path().string(), "--temperature", "-1"}), 2, "--temperature");
  const std::string ckpt = trained_lm(dir);
  fails(run_kiln({"translate", "--checkpoint", ckpt, "hola"}), 1, "of model 'lm', not of the Transformer");
  fails(run_kiln({"train", "--model", "lm", "--train", dir.file("train.txt"), "--valid", dir.file("train.txt"),
                  "--checkpoint", ckpt, "--steps", "1", "--d-model", "32"}),
        1, "--d-model 32 differs from the run's 16");
  fails(run_kiln({"eval", "--checkpoint", ckpt, "--text", dir.file("nope.txt")}), 2, "--text");
  fails(run_kiln({"generate", "--checkpoint", ckpt, "--max-tokens", "2000", std::string(60, 'x')}), 0, "");
}
