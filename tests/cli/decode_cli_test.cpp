// kiln translate and kiln eval on files, decoding in batches, as a user runs
// them: -i/-o, outputs in the input's order whatever the batching, blank lines
// kept in place, Moses' n-best lines, -o left as it was by a failing run, eval
// --src/--ref scoring as eval --split does, and bad flags. A small copy model
// on the interpreter keeps it fast; its outputs have as many tokens as their
// inputs, which shows which input each output line belongs to.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cli/run_kiln.h"
#include "engine/atomic_file.h"
#include "engine/npy.h"
#include "text_and_files.h"

namespace {

const std::string& checkpoint() {
  static TempDir dir;
  static const std::string path = [] {
    const std::string p = dir.file("ckpt");
    const KilnResult r =
        run_kiln({"train", "--task", "copy", "--steps", "3", "--checkpoint", p, "--d-model", "32", "--heads", "2",
                  "--d-ff", "64", "--layers", "1", "--backend", "interp", "--eval-sentences", "4"});
    REQUIRE_MESSAGE(r.status == 0, r.err);
    return p;
  }();
  return path;
}

std::vector<std::string> translate_args(std::vector<std::string> extra) {
  std::vector<std::string> args = {"translate", "--checkpoint", checkpoint(), "--backend", "interp"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

size_t tokens_in(const std::string& line) {
  std::istringstream in(line);
  size_t n = 0;
  for (std::string t; in >> t;) ++n;
  return n;
}

// Copy-task sentences of shuffled lengths (3 to 20 tokens: several padded
// lengths), with blank lines among them.
const std::string kInput =
    "1 2 3 4 5 6 7 8 9 10\n1 3 3\n\n1 4 5 6 7 8 9 10 2 3 4 5 6 7 8 9 10 2 3 4\n1 5 6 7 8\n   \n"
    "1 2 2 2 2 2 2 2 2 2 2 2 2\n1 9 8 7 6 5 4\n1 6 6 6 6 6 6 6 6 6 6 6 6 6 6 6\n";

}  // namespace

TEST_CASE("kiln translate -i -o: outputs in the input's order, blank lines kept as empty lines") {
  TempDir dir;
  const std::string in = dir.file("in.txt"), out = dir.file("out.txt");
  kiln::write_file_atomically(in, kInput);
  const KilnResult r = run_kiln(translate_args({"-i", in, "-o", out}));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.out.empty());
  CHECK(r.err.empty());
  const std::vector<std::string> inputs = lines_of(kInput), outputs = lines_of(read_file(out));
  REQUIRE(outputs.size() == inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    CAPTURE(i);
    CHECK(tokens_in(outputs[i]) == tokens_in(inputs[i]));  // copy: as many tokens out as in
    if (tokens_in(inputs[i]) > 0) CHECK(outputs[i].rfind("1 ", 0) == 0);
  }
  // Batching changes nothing: one line at a time, or small batches, give the same.
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--buffer-lines", "1"}, std::vector<std::string>{"--batch-tokens", "40"}}) {
    CAPTURE(flags[0]);
    std::vector<std::string> args = {"-i", in};
    args.insert(args.end(), flags.begin(), flags.end());
    const KilnResult again = run_kiln(translate_args(args));
    REQUIRE_MESSAGE(again.status == 0, again.err);
    CHECK(again.out == read_file(out));
  }
  // -o -: standard output, no file named '-'.
  const KilnResult to_stdout =
      run_kiln(translate_args({"-i", in, "-o", "-"}), "cd " + shell_quote(dir.path().string()) + " && ");
  REQUIRE_MESSAGE(to_stdout.status == 0, to_stdout.err);
  CHECK(to_stdout.out == read_file(out));
  CHECK(!std::filesystem::exists(dir.file("-")));
}

TEST_CASE("kiln translate --nbest prints Moses' n-best lines, best first, the best what --beam prints") {
  TempDir dir;
  const std::string in = dir.file("in.txt");
  kiln::write_file_atomically(in, kInput);
  const KilnResult best = run_kiln(translate_args({"-i", in, "--beam", "3"}));
  REQUIRE_MESSAGE(best.status == 0, best.err);
  const KilnResult r = run_kiln(translate_args({"-i", in, "--beam", "3", "--nbest", "2"}));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const std::vector<std::string> plain = lines_of(best.out), nbest = lines_of(r.out);
  const std::regex moses(R"((\d+) \|\|\| ([0-9 ]+) \|\|\| (-?[0-9]+\.[0-9]+))");
  std::map<int, std::vector<std::pair<std::string, double>>> by_line;
  for (const std::string& line : nbest) {
    std::smatch m;
    REQUIRE_MESSAGE(std::regex_match(line, m, moses), line);
    by_line[std::stoi(m[1])].emplace_back(m[2], std::stod(m[3]));
  }
  // Blank lines (2 and 5, 0-based) have no entries; every other line two, best first.
  CHECK(by_line.size() == plain.size() - 2);
  for (const auto& [i, hyps] : by_line) {
    CAPTURE(i);
    REQUIRE(hyps.size() == 2);
    CHECK(hyps[0].second >= hyps[1].second);
    CHECK(hyps[0].first == plain.at(static_cast<size_t>(i)));
  }
  CHECK(by_line.count(2) == 0);
  CHECK(by_line.count(5) == 0);
}

TEST_CASE("kiln translate decodes as kiln eval does by default, and --nbest K without --beam keeps K") {
  TempDir dir;
  const std::string in = dir.file("in.txt");
  kiln::write_file_atomically(in, "1 2 3 4 5\n1 7 7 2\n1 9 8 7 6 5 4\n");
  // eval's hypotheses of the same lines, by its default decoding (beam 4, length penalty 0.6).
  const KilnResult eval = run_kiln({"eval", "--checkpoint", checkpoint(), "--backend", "interp", "--src", in, "--ref",
                                    in, "--output", dir.file("eval")});
  REQUIRE_MESSAGE(eval.status == 0, eval.err);
  CHECK(eval.out.find("beam 4, length penalty 0.6") != std::string::npos);
  const KilnResult plain = run_kiln(translate_args({"-i", in}));
  REQUIRE_MESSAGE(plain.status == 0, plain.err);
  CHECK(plain.out == read_file(dir.file("eval/hyp.txt")));
  const KilnResult beam4 = run_kiln(translate_args({"-i", in, "--beam", "4", "--length-penalty", "0.6"}));
  REQUIRE_MESSAGE(beam4.status == 0, beam4.err);
  CHECK(plain.out == beam4.out);
  const KilnResult help = run_kiln({"translate", "--help"});
  CHECK(help.out.find("beam 4, length penalty 0.6") != std::string::npos);

  // --nbest 6 without --beam: a beam of 6, six lines a sentence; the best is
  // what --beam 6 prints. --nbest 2: the default beam's best first.
  KilnResult r = run_kiln(translate_args({"-i", in, "--nbest", "6"}));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const std::vector<std::string> six = lines_of(r.out);
  CHECK(six.size() == 18);
  const KilnResult beam6 = run_kiln(translate_args({"-i", in, "--beam", "6"}));
  REQUIRE_MESSAGE(beam6.status == 0, beam6.err);
  CHECK(six.at(0).find(" ||| " + lines_of(beam6.out).at(0) + " ||| ") != std::string::npos);
  r = run_kiln(translate_args({"-i", in, "--nbest", "2"}));
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const std::vector<std::string> two = lines_of(r.out);
  REQUIRE(two.size() == 6);
  CHECK(two.at(0).find(" ||| " + lines_of(plain.out).at(0) + " ||| ") != std::string::npos);
}

TEST_CASE("kiln translate -o: a failing run leaves an existing file as it was") {
  TempDir dir;
  const std::string in = dir.file("in.txt"), out = dir.file("out.txt");
  kiln::write_file_atomically(out, "mine\n");
  // A line past the 64 KiB limit after good lines stops the command.
  kiln::write_file_atomically(in, "1 2 3\n" + std::string(70000, '5') + "\n");
  KilnResult r = run_kiln(translate_args({"-i", in, "-o", out}));
  CHECK(r.status == 1);
  CHECK(r.err.find(in + ": line 2 is longer than 65536 bytes") != std::string::npos);
  CHECK(read_file(out) == "mine\n");
  // Lines that cannot be translated: the file gets every line, the bad ones empty, and the command fails.
  kiln::write_file_atomically(in, "1 2 3\n1 x 3\n1 4 4 4\n");
  r = run_kiln(translate_args({"-i", in, "-o", out}));
  CHECK(r.status == 1);
  CHECK(r.err.find("line 2: copy task: bad token 'x'") != std::string::npos);
  CHECK(r.err.find("1 of 3 lines were not translated (line 2)") != std::string::npos);
  const std::vector<std::string> written = lines_of(read_file(out));
  REQUIRE(written.size() == 3);
  CHECK(written[1].empty());
  CHECK(tokens_in(written[2]) == 4);
  // An output in a directory that does not exist: a flag error, before decoding.
  r = run_kiln(translate_args({"-i", in, "-o", dir.file("missing/out.txt")}));
  CHECK(r.status == 2);
  CHECK(r.err.find("--output: cannot write " + dir.file("missing/out.txt") + ": " + dir.file("missing") +
                   " does not exist") != std::string::npos);
}

TEST_CASE("kiln translate flag errors exit 2 naming the flag") {
  TempDir dir;
  KilnResult r = run_kiln(translate_args({"--beam", "2", "--nbest", "3", "1 2 3"}));
  CHECK(r.status == 2);
  CHECK(r.err.find("--nbest: 3 is more than --beam 2 keeps: add --beam 3 (or more), or leave --beam out") !=
        std::string::npos);
  r = run_kiln(translate_args({"-i", dir.file("missing.txt")}));
  CHECK(r.status == 2);
  CHECK(r.err.find("--input") != std::string::npos);
  CHECK(r.err.find(dir.file("missing.txt")) != std::string::npos);
  kiln::write_file_atomically(dir.file("in.txt"), "1 2 3\n");
  r = run_kiln(translate_args({"-i", dir.file("in.txt"), "1 2 3"}));
  CHECK(r.status == 2);
  r = run_kiln(translate_args({"--batch-tokens", "0", "1 2 3"}));
  CHECK(r.status == 2);
  CHECK(r.err.find("--batch-tokens") != std::string::npos);
}

TEST_CASE("kiln eval --src --ref scores a file pair as --split scores the same sentences") {
  TempDir dir;
  const std::string split = dir.file("split");
  const KilnResult by_split = run_kiln({"eval", "--checkpoint", checkpoint(), "--backend", "interp", "--split", "dev",
                                        "--limit", "24", "--output", split});
  REQUIRE_MESSAGE(by_split.status == 0, by_split.err);
  const std::string src = split + "/src.txt", ref = split + "/ref.txt";
  // The same sentences, with a second reference: the first one's tokens reversed.
  std::string reversed;
  for (const std::string& line : lines_of(read_file(ref))) {
    std::istringstream in(line);
    std::vector<std::string> tokens;
    for (std::string t; in >> t;) tokens.insert(tokens.begin(), t);
    for (size_t i = 0; i < tokens.size(); ++i) reversed += (i ? " " : "") + tokens[i];
    reversed += '\n';
  }
  kiln::write_file_atomically(dir.file("ref2.txt"), reversed);
  const std::string out = dir.file("files");
  const KilnResult one = run_kiln(
      {"eval", "--checkpoint", checkpoint(), "--backend", "interp", "--src", src, "--ref", ref, "--output", out});
  REQUIRE_MESSAGE(one.status == 0, one.err);
  CHECK(one.out.find("copy " + src + ", 24 sentences, beam 4, length penalty 0.6") != std::string::npos);
  // Everything after the first line but the time is the same as --split's.
  const auto scores = [](const std::string& text) {
    const size_t from = text.find('\n'), to = text.find("decoding took");
    return text.substr(from, to - from);
  };
  CHECK(scores(one.out) == scores(by_split.out));
  CHECK(read_file(out + "/hyp.txt") == read_file(split + "/hyp.txt"));

  const KilnResult two = run_kiln({"eval", "--checkpoint", checkpoint(), "--backend", "interp", "--src", src, "--ref",
                                   ref, dir.file("ref2.txt"), "--output", out});
  REQUIRE_MESSAGE(two.status == 0, two.err);
  CHECK(two.out.find("BLEU signature nrefs:2|") != std::string::npos);
  CHECK(two.out.find("chrF2 = ") != std::string::npos);
  CHECK(read_file(out + "/ref2.txt") == reversed);
}

TEST_CASE("kiln eval --src --ref errors name the flag, the file and the line") {
  TempDir dir;
  kiln::write_file_atomically(dir.file("src.txt"), "1 2 3\n1 4 5\n");
  kiln::write_file_atomically(dir.file("short.txt"), "1 2 3\n");
  kiln::write_file_atomically(dir.file("bad.txt"), "1 2 3\n1 x 5\n");
  const std::vector<std::string> eval = {"eval", "--checkpoint", checkpoint(), "--backend", "interp"};
  const auto run = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), eval.begin(), eval.end());
    return run_kiln(extra);
  };
  KilnResult r = run({"--src", dir.file("src.txt")});
  CHECK(r.status == 2);
  CHECK(r.err.find("--src requires --ref") != std::string::npos);
  r = run({"--src", dir.file("src.txt"), "--ref", dir.file("src.txt"), "--split", "dev"});
  CHECK(r.status == 2);
  r = run({"--src", dir.file("src.txt"), "--ref", dir.file("missing.txt")});
  CHECK(r.status == 2);
  CHECK(r.err.find(dir.file("missing.txt")) != std::string::npos);
  r = run({"--src", dir.file("src.txt"), "--ref", dir.file("short.txt")});
  CHECK(r.status == 1);
  CHECK(r.err.find("--ref: " + dir.file("short.txt") + " has 1 lines, --src " + dir.file("src.txt") + " has 2") !=
        std::string::npos);
  r = run({"--src", dir.file("bad.txt"), "--ref", dir.file("src.txt")});
  CHECK(r.status == 1);
  CHECK(r.err.find(dir.file("bad.txt") + ":2: copy task: bad token 'x'") != std::string::npos);
}

TEST_CASE("kiln translate and eval: a UTF-8 byte-order mark starting the input is not text") {
  TempDir dir;
  const std::string plain = dir.file("plain.txt"), marked = dir.file("marked.txt");
  kiln::write_file_atomically(plain, kInput);
  kiln::write_file_atomically(marked, "\xEF\xBB\xBF" + kInput);
  const KilnResult want = run_kiln(translate_args({"-i", plain}));
  REQUIRE_MESSAGE(want.status == 0, want.err);
  for (const std::vector<std::string>& how : {std::vector<std::string>{"-i", marked}, std::vector<std::string>{}}) {
    CAPTURE(how.size());
    std::vector<std::string> args = translate_args(how);
    std::string cmd;
    for (const std::string& a : args) cmd += " " + shell_quote(a);
    const KilnResult r = how.empty() ? run_shell(shell_quote(KILN_BINARY) + cmd + " < " + shell_quote(marked))
                                     : run_kiln(args);
    CHECK_MESSAGE(r.status == 0, r.err);
    CHECK(r.out == want.out);
  }
  // eval --src and --ref read the same way: a marked file scores as the plain one.
  const std::string ref = dir.file("ref.txt"), marked_ref = dir.file("marked_ref.txt");
  kiln::write_file_atomically(ref, "1 2 3\n");
  kiln::write_file_atomically(marked_ref, "\xEF\xBB\xBF" "1 2 3\n");
  kiln::write_file_atomically(marked, "\xEF\xBB\xBF" "1 2 3\n");
  const std::vector<std::string> eval = {"eval", "--checkpoint", checkpoint(), "--backend", "interp"};
  std::vector<std::string> a = eval, b = eval;
  a.insert(a.end(), {"--src", ref, "--ref", ref});
  b.insert(b.end(), {"--src", marked, "--ref", marked_ref});
  const KilnResult ra = run_kiln(a), rb = run_kiln(b);
  REQUIRE_MESSAGE(ra.status == 0, ra.err);
  CHECK_MESSAGE(rb.status == 0, rb.err);
  CHECK(lines_of(ra.out).at(1) == lines_of(rb.out).at(1));  // the BLEU line
}

TEST_CASE("kiln translate and eval refuse an output that is one of their inputs, by any name, writing nothing") {
  TempDir dir;
  const std::string in = dir.file("in.txt");
  kiln::write_file_atomically(in, "1 2 3\n");
  std::filesystem::create_symlink(in, dir.file("symlink.txt"));
  std::filesystem::create_hard_link(in, dir.file("hardlink.txt"));
  for (const std::string& out : {in, dir.file("./in.txt"), dir.file("symlink.txt"), dir.file("hardlink.txt")}) {
    CAPTURE(out);
    const KilnResult r = run_kiln(translate_args({"-i", in, "-o", out}));
    CHECK(r.status == 1);
    CHECK_MESSAGE(r.err.find("-o " + out + " is the same file as -i " + in + ", which kiln reads") != std::string::npos,
                  r.err);
    CHECK(read_file(in) == "1 2 3\n");
  }
  // stdin redirected from the file -o names.
  std::string cmd = shell_quote(KILN_BINARY);
  for (const std::string& a : translate_args({"-o", dir.file("hardlink.txt")})) cmd += " " + shell_quote(a);
  KilnResult r = run_shell(cmd + " < " + shell_quote(in));
  CHECK(r.status == 1);
  CHECK_MESSAGE(r.err.find("is the same file as stdin") != std::string::npos, r.err);
  CHECK(read_file(in) == "1 2 3\n");
  // eval --output: hyp.txt would replace the reference.
  std::filesystem::create_directory(dir.file("out"));
  std::filesystem::create_hard_link(in, dir.file("out/hyp.txt"));
  r = run_kiln({"eval", "--checkpoint", checkpoint(), "--backend", "interp", "--src", in, "--ref", in, "--output",
                dir.file("out")});
  CHECK(r.status == 1);
  CHECK_MESSAGE(r.err.find("--output's " + dir.file("out/hyp.txt") + " is the same file as --src " + in) !=
                    std::string::npos,
                r.err);
  CHECK(read_file(in) == "1 2 3\n");
}

TEST_CASE("kiln translate --attention writes every attention's weights per sentence and their page") {
  for (const char* beam : {"1", "4"}) {
    CAPTURE(beam);
    TempDir dir;
    const std::string out = dir.file("attn");
    const KilnResult r = run_kiln(translate_args({"--beam", beam, "--attention", out, "1 2 3 4 5", "1 6 7"}));
    INFO(r.err);
    REQUIRE(r.status == 0);
    const std::vector<std::string> hyps = lines_of(r.out);
    REQUIRE(hyps.size() == 2);
    for (const char* sentence : {"0001", "0002"}) {
      CAPTURE(sentence);
      const std::string sub = out + "/" + sentence + "/";
      const nlohmann::json axes = nlohmann::json::parse(read_file(sub + "pieces.json"));
      const size_t s = axes.at("source_pieces").size(), t = axes.at("output_pieces").size();
      CHECK(axes.at("input_pieces").size() == t);
      CHECK(axes.at("input_pieces")[0] == "<s>");
      const std::map<std::string, std::pair<size_t, size_t>> shapes = {
          {"enc.0.self_attn", {s, s}}, {"dec.0.self_attn", {t, t}}, {"dec.0.cross_attn", {t, s}}};
      for (const auto& [name, shape] : shapes) {
        CAPTURE(name);
        const kiln::Tensor w = kiln::load_npy(sub + name + ".npy");
        REQUIRE(w.shape() == kiln::Shape{2, static_cast<int64_t>(shape.first), static_cast<int64_t>(shape.second)});
        const auto& a = w.f32();
        for (size_t h = 0; h < 2; ++h)
          for (size_t q = 0; q < shape.first; ++q) {
            double sum = 0;
            for (size_t k = 0; k < shape.second; ++k) {
              sum += a(h, q, k);
              // The decoder's self-attention is causal: nothing after the query's own position.
              if (name == "dec.0.self_attn" && k > q) CHECK(a(h, q, k) == 0.0f);
            }
            CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
          }
      }
    }
    const std::string page = read_file(out + "/index.html");
    CHECK(contains(page, "\"name\":\"dec.0.cross_attn\""));
    CHECK(contains(page, "\"source\":\"1 6 7\""));
  }
  // A directory that cannot be made is named, and nothing is translated to a half-written page.
  TempDir dir;
  write_file(dir.file("file"), "x");
  const KilnResult bad = run_kiln(translate_args({"--attention", dir.file("file") + "/sub", "1 2"}));
  CHECK(bad.status != 0);
  CHECK(contains(bad.err, "--attention"));
}
