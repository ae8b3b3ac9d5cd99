// kiln score as a user runs it: sacreBLEU's lines for two references (the example
// of sacreBLEU's README, with its published BLEU and chrF2), the JSON form, and a
// clear error for files that do not line up, are missing, are not UTF-8 or are
// empty, and for bad flags.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/run_kiln.h"
#include "text_and_files.h"

namespace {

// The hypotheses and the two reference files of sacreBLEU's README example, in `dir`.
struct ReadmeFiles {
  std::string hyp, ref1, ref2;
};
ReadmeFiles readme_files(const TempDir& dir) {
  ReadmeFiles f{dir.file("hyp.txt"), dir.file("ref1.txt"), dir.file("ref2.txt")};
  write_file(f.hyp, "The dog bit the man.\nIt wasn't surprising.\nThe man had just bitten him.\n");
  write_file(f.ref1, "The dog bit the man.\nIt was not unexpected.\nThe man bit him first.\n");
  write_file(f.ref2, "The dog had bit the man.\nNo one was surprised.\nThe man had bitten the dog.");  // no last '\n'
  return f;
}

}  // namespace

TEST_CASE("kiln score prints sacreBLEU's BLEU and chrF2 lines for two references") {
  TempDir dir;
  const ReadmeFiles f = readme_files(dir);
  const KilnResult r = run_kiln({"score", "--hyp", f.hyp, "--ref", f.ref1, f.ref2});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out ==
        "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)\n"
        "BLEU signature nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:kiln\n"
        "chrF2 = 59.73\n"
        "chrF2 signature nrefs:2|case:mixed|eff:yes|nc:6|nw:0|space:no|version:kiln\n");
  // --ref repeated is the same as one --ref with two files.
  CHECK(run_kiln({"score", "--hyp", f.hyp, "--ref", f.ref1, "--ref", f.ref2}).out == r.out);
  CHECK(contains(run_kiln({"score", "--hyp", f.hyp, "--ref", f.ref1}).out, "nrefs:1|"));
}

TEST_CASE("kiln score --json prints one JSON object with the scores and signatures") {
  TempDir dir;
  const ReadmeFiles f = readme_files(dir);
  const KilnResult r = run_kiln({"score", "--hyp", f.hyp, "--ref", f.ref1, f.ref2, "--json"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["sentences"] == 3);
  CHECK(j["refs"].size() == 2);
  CHECK(std::abs(j["bleu"]["score"].get<double>() - 48.530827) < 1e-6);
  CHECK(j["bleu"]["precisions"].size() == 4);
  CHECK(j["bleu"]["hyp_len"] == 17);
  CHECK(j["bleu"]["ref_len"] == 18);
  CHECK(std::abs(j["bleu"]["bp"].get<double>() - 0.943) < 5e-4);
  CHECK(std::abs(j["bleu"]["ratio"].get<double>() - 17.0 / 18) < 1e-12);
  CHECK(j["bleu"]["signature"] == "nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:kiln");
  CHECK(j["chrf"]["name"] == "chrF2");
  CHECK(std::abs(j["chrf"]["score"].get<double>() - 59.73) < 5e-3);
  CHECK(j["chrf"]["signature"] == "nrefs:2|case:mixed|eff:yes|nc:6|nw:0|space:no|version:kiln");
}

TEST_CASE("kiln score: files that do not line up, are missing, are not UTF-8 or are empty exit 1") {
  TempDir dir;
  const ReadmeFiles f = readme_files(dir);
  const std::string short_ref = dir.file("short.txt");
  write_file(short_ref, "The dog bit the man.\nIt was not unexpected.\n");
  KilnResult r = run_kiln({"score", "--hyp", f.hyp, "--ref", f.ref1, short_ref});
  CHECK(r.status == 1);
  CHECK(r.out.empty());
  CHECK(contains(r.err, "kiln: error: " + f.hyp + " has 3 lines but " + short_ref + " has 2"));

  const std::string missing = dir.file("missing.txt");
  r = run_kiln({"score", "--hyp", f.hyp, "--ref", missing});
  CHECK(r.status == 1);
  CHECK(contains(r.err, "kiln: error: cannot read " + missing));

  const std::string latin1 = dir.file("latin1.txt");
  write_file(latin1, "The dog bit the man.\nIt was not unexpected, caf\xe9.\nThe man bit him first.\n");  // Latin-1
  r = run_kiln({"score", "--hyp", f.hyp, "--ref", latin1});
  CHECK(r.status == 1);
  CHECK(contains(r.err, "kiln: error: " + latin1 + ":2: not UTF-8"));

  const std::string empty = dir.file("empty.txt");
  write_file(empty, "");
  r = run_kiln({"score", "--hyp", empty, "--ref", empty});
  CHECK(r.status == 1);
  CHECK(contains(r.err, "kiln: error: nothing to score: " + empty));
}

TEST_CASE("kiln score flag errors exit 2") {
  TempDir dir;
  const ReadmeFiles f = readme_files(dir);
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"score", "--hyp", f.hyp},
           {"score", "--ref", f.ref1},
           {"score", "--hyp", f.hyp, "--ref"},
           {"score", "--hyp", f.hyp, "--ref", f.ref1, "--bleu-only"},
       }) {
    const KilnResult r = run_kiln(args);
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(contains(r.err, "kiln: error: "));
  }
}

TEST_CASE("kiln score: a UTF-8 byte-order mark at the start of a file is not text") {
  TempDir dir;
  const ReadmeFiles f = readme_files(dir);
  const KilnResult want = run_kiln({"score", "--hyp", f.hyp, "--ref", f.ref1, f.ref2});
  REQUIRE(want.status == 0);
  // The mark on the hypotheses alone, then on the references alone: either way the scores do not change.
  const auto mark = [](const std::string& path) { write_file(path, "\xEF\xBB\xBF" + read_file(path)); };
  mark(f.hyp);
  KilnResult r = run_kiln({"score", "--hyp", f.hyp, "--ref", f.ref1, f.ref2});
  CHECK_MESSAGE(r.status == 0, r.err);
  CHECK(r.out == want.out);
  readme_files(dir);
  mark(f.ref1);
  mark(f.ref2);
  r = run_kiln({"score", "--hyp", f.hyp, "--ref", f.ref1, f.ref2});
  CHECK_MESSAGE(r.status == 0, r.err);
  CHECK(r.out == want.out);
}
