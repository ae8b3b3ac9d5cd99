#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <xtensor/xmath.hpp>
#include <xtensor/xoperation.hpp>
#include <xtensor/xview.hpp>

#include "cli/temp_dir.h"
#include "engine/ir/error.h"
#include "models/tasks/batching.h"
#include "models/tasks/subwords.h"
#include "models/tasks/task.h"

using namespace kiln;
using namespace kiln::models;
using doctest::Contains;

namespace {

// A small dictionary in trans-de-en's format: nouns with plurals and adjective phrases.
std::string fixture_dictionary() {
  const std::vector<std::array<std::string, 5>> nouns = {
      {"Haus", "n", "Häuser", "house", "houses"},      {"Baum", "m", "Bäume", "tree", "trees"},
      {"Katze", "f", "Katzen", "cat", "cats"},         {"Hund", "m", "Hunde", "dog", "dogs"},
      {"Buch", "n", "Bücher", "book", "books"},        {"Stadt", "f", "Städte", "city", "cities"},
      {"Garten", "m", "Gärten", "garden", "gardens"},  {"Fenster", "n", "Fenster", "window", "windows"},
      {"Straße", "f", "Straßen", "street", "streets"}, {"Tisch", "m", "Tische", "table", "tables"}};
  const std::vector<std::pair<std::string, std::string>> adjectives = {
      {"große", "big"}, {"kleine", "small"}, {"alte", "old"}, {"neue", "new"}, {"schöne", "beautiful"}};
  std::string text = "# Version :: fixture\n";
  for (const auto& [de, gender, de_pl, en, en_pl] : nouns) {
    for (const auto& [adj_de, adj_en] : adjectives) {
      text += de + " {" + gender + "} [ugs.] | " + de_pl + " {pl} | die " + adj_de + " " + de + " (Beispiel) :: " + en +
              " [coll.]; " + en + "s | " + en_pl + " | the " + adj_en + " " + en + "\n";
    }
    text += de + " {" + gender + "} | " + de_pl + " :: " + en + "\n";  // misaligned: skipped
  }
  return text;
}

DeEnOptions fixture_options(const TempDir& dir) {
  std::ofstream(dir.file("de-en")) << fixture_dictionary();
  DeEnOptions options;
  options.data_path = dir.file("de-en");
  options.spm_model_path = dir.file("spm.model");
  options.vocab_size = 50;
  options.max_len = 32;
  options.dev_permille = 200;
  options.test_permille = 200;
  return options;
}

}  // namespace

TEST_CASE("de-en: the data package missing is a clear error") {
  DeEnOptions options;
  options.data_path = "/nonexistent/trans/de-en";
  CHECK_THROWS_WITH_AS(make_de_en_task(options),
                       "cannot read /nonexistent/trans/de-en: install Debian's trans-de-en package", Error);
}

TEST_CASE("de-en: with a saved subword model the data is needed only for examples") {
  TempDir dir;
  DeEnOptions options = fixture_options(dir);
  const auto learned = make_de_en_task(options);
  options.data_path = dir.file("removed-de-en");
  const auto task = make_de_en_task(options);  // loads spm.model, reads nothing else yet
  CHECK(task->decode(task->encode("die alte Katze")) == "die alte Katze");
  CHECK(task->encode("die alte Katze") == learned->encode("die alte Katze"));
  CHECK_THROWS_WITH_AS(task->examples(Split::dev), Contains("install Debian's trans-de-en package"), Error);
  CHECK_THROWS_WITH_AS(task->train_batches(1, 0, 64), Contains("cannot read"), Error);
}

TEST_CASE("de-en: splits by German text and encodes every pair") {
  TempDir dir;
  const auto task = make_de_en_task(fixture_options(dir));
  CHECK(task->name() == "de-en");
  CHECK(task->pad_id() == 0);
  CHECK(task->bos_id() == 2);
  CHECK(task->eos_id() == 3);
  CHECK(task->never_generated() == std::vector<int32_t>{0, 1, 2});  // pad, unk, bos
  CHECK(task->vocab_size() <= 50);
  std::map<std::string, Split> split_of_german;
  std::size_t total = 0;
  for (Split split : {Split::train, Split::dev, Split::test}) {
    const auto& examples = task->examples(split);
    CHECK(!examples.empty());
    total += examples.size();
    for (const Example& ex : examples) {
      const auto [it, inserted] = split_of_german.emplace(ex.src_text, split);
      CHECK(it->second == split);  // the same German never lands in two splits
      CHECK(task->encode(ex.src_text) == ex.src);
      CHECK(task->decode(ex.tgt) == ex.tgt_text);
      CHECK(ex.src_text.find('{') == std::string::npos);
      CHECK(ex.tgt_text.find('[') == std::string::npos);
    }
  }
  CHECK(total == 10 * 5 * 3 - 10 * 4 * 2);  // noun and plural pairs are duplicates across adjectives
  // Reading again gives the same examples.
  TempDir again;
  const auto task2 = make_de_en_task(fixture_options(again));
  CHECK(task2->examples(Split::test).size() == task->examples(Split::test).size());
  CHECK(task2->examples(Split::dev).front().src == task->examples(Split::dev).front().src);
}

TEST_CASE("de-en: batches carry bos and eos in bucket shapes") {
  TempDir dir;
  const auto task = make_de_en_task(fixture_options(dir));
  std::set<Shape> shapes;
  int64_t rows = 0;
  for (const Batch& batch : task->train_batches(3, 0, 64)) {
    shapes.insert({batch.src.shape()[0], batch.src.shape()[1], batch.tgt_in.shape()[1]});
    CHECK(xt::all(xt::equal(xt::view(batch.tgt_in.i32(), xt::all(), 0), 2)));
    rows += batch.rows;
    for (std::size_t r = 0; r < static_cast<std::size_t>(batch.rows); ++r)
      CHECK(xt::sum(xt::equal(xt::view(batch.tgt_out.i32(), r), 3))() == 1);  // exactly one eos per row
  }
  CHECK(rows == static_cast<int64_t>(task->examples(Split::train).size()));
  for (const auto& [indices, batch] : task->eval_batches(Split::test, 64))
    shapes.insert({batch.src.shape()[0], batch.src.shape()[1], batch.tgt_in.shape()[1]});
  CHECK(shapes.size() <= bucket_lengths(32).size());
  for (const Example& ex : task->examples(Split::test)) {
    CHECK(task->max_output_len(ex) >= static_cast<int64_t>(ex.tgt.size()) + 1);
    CHECK(task->max_output_len(ex) <= 32);
  }
}

TEST_CASE("de-en: the subword model is saved once and then loaded") {
  TempDir dir;
  const DeEnOptions options = fixture_options(dir);
  const auto learned = make_de_en_task(options);
  REQUIRE(std::filesystem::exists(options.spm_model_path));
  CHECK(!std::filesystem::exists(options.spm_model_path + ".tmp"));
  // A different model at the path is loaded rather than learned again.
  DeEnOptions bigger = options;
  bigger.vocab_size = 100;
  bigger.spm_model_path = dir.file("bigger.model");
  const auto other = make_de_en_task(bigger);
  std::filesystem::copy_file(bigger.spm_model_path, options.spm_model_path,
                             std::filesystem::copy_options::overwrite_existing);
  CHECK(make_de_en_task(options)->vocab_size() == other->vocab_size());
  CHECK(other->vocab_size() != learned->vocab_size());
  // A corrupt one is an error naming it.
  std::ofstream(options.spm_model_path, std::ios::trunc) << "garbage";
  CHECK_THROWS_WITH_AS(make_de_en_task(options),
                       Contains((options.spm_model_path + ": not a sentencepiece model").c_str()), Error);
}

TEST_CASE("de-en: text to translate") {
  TempDir dir;
  const auto task = make_de_en_task(fixture_options(dir));
  CHECK(task->encode("  die  große Katze ") == task->encode("die große Katze"));
  CHECK_THROWS_WITH_AS(task->encode(""), "the text to translate is empty", Error);
  CHECK_THROWS_WITH_AS(task->encode(" \t "), "the text to translate is empty", Error);
  const auto ids = task->encode("die alte Katze");
  std::vector<int32_t> generated = ids;
  generated.insert(generated.begin(), task->pad_id());
  generated.push_back(task->eos_id());
  generated.push_back(ids[0]);  // after eos: ignored
  CHECK(task->decode(generated) == "die alte Katze");
}
