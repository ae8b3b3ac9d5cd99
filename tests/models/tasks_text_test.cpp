// The text task: a user's parallel files read and cleaned, prepared once into
// subword ids, reused, and batched; and every bad input named.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "check_error.h"
#include "cli/temp_dir.h"
#include "models/tasks/parallel_text.h"
#include "models/tasks/text_corpus_prep.h"
#include "models/tasks/text_task.h"
#include "models/tasks/token_corpus.h"
#include "text_and_files.h"

using namespace kiln;
using namespace kiln::models;
namespace fs = std::filesystem;

namespace {

// A small made-up corpus: numbers spelled in two languages, so every pair is a real
// translation and subwords have something to learn.
std::pair<std::string, std::string> number_pairs(int count, int offset) {
  const char* es[] = {"uno", "dos", "tres", "cuatro", "cinco", "seis", "siete", "ocho", "nueve", "diez"};
  const char* en[] = {"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"};
  std::string src, tgt;
  for (int i = 0; i < count; ++i) {
    const int a = (i + offset) % 10, b = (i * 7 + offset) % 10, c = (i * 3 + 1) % 10;
    src += std::string("el ") + es[a] + " y " + es[b] + (i % 3 ? std::string(" con ") + es[c] : "") + "\n";
    tgt += std::string("the ") + en[a] + " and " + en[b] + (i % 3 ? std::string(" with ") + en[c] : "") + "\n";
  }
  return {src, tgt};
}

void write_split(const TempDir& dir, const std::string& name, int count, int offset) {
  const auto [src, tgt] = number_pairs(count, offset);
  write_file(dir.file(name + ".es"), src);
  write_file(dir.file(name + ".en"), tgt);
}

TextTaskOptions corpus_options(const TempDir& dir) {
  TextTaskOptions o;
  o.train = dir.file("train");
  o.valid = dir.file("valid");
  o.test = dir.file("test");
  o.src_lang = "es";
  o.tgt_lang = "en";
  o.vocab_size = 40;
  return o;
}

}  // namespace

TEST_CASE("parallel text: cleaning skips bad pairs and counts each reason") {
  TempDir dir;
  write_file(dir.file("c.es"), "hola mundo\n\nbien\n\xff\xfe roto\n" + std::string(2000, 'a') +
                                   "\nuno\nuna frase normal\r\n");
  write_file(dir.file("c.en"), "hello world\nempty source\n   \nbroken\nlong\none two three four five six seven eight "
                               "nine ten\na normal sentence\n");
  const ParallelText text = read_parallel_text(parallel_files("--train", dir.file("c"), "es", "en"), {});
  CHECK(text.lines == 7);
  CHECK(text.source == std::vector<std::string>{"hola mundo", "una frase normal"});
  CHECK(text.target == std::vector<std::string>{"hello world", "a normal sentence"});
  CHECK(text.skipped.empty == 2);
  CHECK(text.skipped.not_text == 1);
  CHECK(text.skipped.too_long == 1);
  CHECK(text.skipped.ratio == 1);
  CHECK(text.skipped.str() == "2 empty, 1 not UTF-8 text, 1 too long, 1 length ratio");
}

TEST_CASE("parallel text: bad files are errors naming them") {
  TempDir dir;
  write_file(dir.file("a.es"), "uno\ndos\ntres\n");
  write_file(dir.file("a.en"), "one\ntwo\n");
  check_error([&] { read_parallel_text(parallel_files("--train", dir.file("a"), "es", "en"), {}); },
              {dir.file("a.es"), "3 lines", dir.file("a.en"), "2"});
  check_error([&] { parallel_files("--valid", dir.file("missing"), "es", "en"); },
              {"--valid", dir.file("missing.es"), "does not exist"});
  write_file(dir.file("bad.tsv"), "uno\tone\nsin tabulador\n");
  check_error([&] { read_parallel_text(parallel_files("--train", dir.file("bad.tsv"), "es", "en"), {}); },
              {dir.file("bad.tsv") + ":2", "expected source<TAB>target", "0 tabs"});
}

TEST_CASE("text task: a corpus left empty by cleaning is an error with the counts") {
  TempDir dir;
  write_file(dir.file("train.es"), "\n\n");
  write_file(dir.file("train.en"), "a\nb\n");
  write_split(dir, "valid", 5, 0);
  TextTaskOptions o = corpus_options(dir);
  o.test.clear();
  std::ostringstream log;
  check_error([&] { prepare_text_corpus(o, dir.file("prep"), dir.file("ckpt"), log); },
              {"--train", "no pair is left after cleaning", "2 read", "2 empty"});
}

TEST_CASE("text task: prepared once, reused, and a TSV gives the same ids as a prefix") {
  TempDir dir;
  write_split(dir, "train", 300, 0);
  write_split(dir, "valid", 20, 3);
  write_split(dir, "test", 20, 5);
  fs::create_directories(dir.file("ckpt"));
  std::ostringstream log;
  const TextCorpusInfo info = prepare_text_corpus(corpus_options(dir), dir.file("prep"), dir.file("ckpt"), log);
  CHECK(log.str().find("prepared") != std::string::npos);
  CHECK(info.bucket_lengths.back() == info.max_len);
  CHECK(info.max_len % 8 == 0);
  const auto ids_time = fs::last_write_time(dir.file("prep/train.ids"));

  std::ostringstream again;
  fs::create_directories(dir.file("ckpt2"));
  prepare_text_corpus(corpus_options(dir), dir.file("prep"), dir.file("ckpt2"), again);
  CHECK(again.str().find("reusing the corpus prepared in") != std::string::npos);
  CHECK(fs::last_write_time(dir.file("prep/train.ids")) == ids_time);

  // The task from the checkpoint: translation needs only its files.
  const auto task = open_text_task(dir.file("ckpt"));
  CHECK(task->name() == "text");
  REQUIRE(task->examples(Split::dev).size() == 20);
  // Prepared word by word (each distinct word segmented once), the ids are the
  // whole sentence's segmentation.
  for (const Example& e : task->examples(Split::dev)) {
    CHECK(task->encode(e.src_text) == e.src);
    CHECK(task->decode(e.tgt) == e.tgt_text);
  }
  CHECK(task->examples(Split::test).size() == 20);
  int64_t rows = 0;
  for (const Batch& b : task->train_batches(1, 1, 256)) rows += b.rows;
  CHECK(rows == 300);

  // The same pairs as one TSV file per split.
  for (const char* split : {"train", "valid", "test"}) {
    const auto [src, tgt] = number_pairs(split[0] == 't' && split[1] == 'r' ? 300 : 20,
                                         split[0] == 'v' ? 3 : split[1] == 'e' ? 5 : 0);
    std::istringstream s(src), t(tgt);
    std::string tsv;
    for (std::string a, b; std::getline(s, a) && std::getline(t, b);) tsv += a + "\t" + b + "\n";
    write_file(dir.file(std::string(split) + ".tsv"), tsv);
  }
  TextTaskOptions tsv = corpus_options(dir);
  tsv.train = dir.file("train.tsv");
  tsv.valid = dir.file("valid.tsv");
  tsv.test = dir.file("test.tsv");
  fs::create_directories(dir.file("ckpt-tsv"));
  prepare_text_corpus(tsv, dir.file("prep-tsv"), dir.file("ckpt-tsv"), log);
  const TokenCorpus a(dir.file("prep/train.ids"), info.model_vocab()), b(dir.file("prep-tsv/train.ids"), info.model_vocab());
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a.source(i) == b.source(i));
    CHECK(a.target(i) == b.target(i));
  }
}

TEST_CASE("text task: separate vocabularies keep target ids apart from source ids") {
  TempDir dir;
  write_split(dir, "train", 200, 0);
  write_split(dir, "valid", 10, 1);
  TextTaskOptions o = corpus_options(dir);
  o.test.clear();
  o.separate_vocab = true;
  fs::create_directories(dir.file("ckpt"));
  std::ostringstream log;
  const TextCorpusInfo info = prepare_text_corpus(o, dir.file("prep"), dir.file("ckpt"), log);
  CHECK(!info.joint_vocab);
  const auto task = open_text_task(dir.file("ckpt"));
  CHECK(task->vocab_size() == info.source_vocab + info.target_vocab - 4);
  for (const Example& e : task->examples(Split::dev)) {
    for (int32_t id : e.tgt) CHECK((id < 4 || id >= info.source_vocab));
    CHECK(task->decode(e.tgt) == e.tgt_text);
  }
  const auto never = task->never_generated();
  CHECK(std::find(never.begin(), never.end(), 4) != never.end());
}

TEST_CASE("token corpus: a damaged file is refused, naming it") {
  TempDir dir;
  write_token_corpus(dir.file("ok.ids"), 100, {{5, 6, 7}, {8}}, {{9}, {10, 11}});
  const TokenCorpus ok(dir.file("ok.ids"), 100);
  CHECK(ok.size() == 2);
  CHECK(ok.source(0) == std::vector<int32_t>{5, 6, 7});
  CHECK(ok.target(1) == std::vector<int32_t>{10, 11});
  check_error([&] { TokenCorpus(dir.file("ok.ids"), 50); }, {dir.file("ok.ids"), "vocabulary"});
  std::ifstream in(dir.file("ok.ids"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  write_file(dir.file("cut.ids"), bytes.substr(0, bytes.size() - 1));
  check_error([&] { TokenCorpus(dir.file("cut.ids"), 100); }, {dir.file("cut.ids"), "bytes"});
  std::string bad_id = bytes;
  bad_id[bad_id.size() - 2] = '\x7f';
  write_file(dir.file("id.ids"), bad_id);
  check_error([&] { TokenCorpus(dir.file("id.ids"), 100); }, {dir.file("id.ids"), "outside the vocabulary"});
  write_file(dir.file("junk.ids"), std::string(64, 'x'));
  check_error([&] { TokenCorpus(dir.file("junk.ids"), 100); }, {dir.file("junk.ids"), "wrong marker"});
  check_error([&] { TokenCorpus(dir.file("none.ids"), 100); }, {dir.file("none.ids")});
}

TEST_CASE("parallel text: a UTF-8 byte-order mark at the start of a file is not text") {
  TempDir dir;
  write_file(dir.file("c.es"), "\xEF\xBB\xBFhola mundo\r\nuna frase\r\n");
  write_file(dir.file("c.en"), "\xEF\xBB\xBFhello world\na sentence\n");
  ParallelText text = read_parallel_text(parallel_files("--train", dir.file("c"), "es", "en"), {});
  CHECK(text.source == std::vector<std::string>{"hola mundo", "una frase"});
  CHECK(text.target == std::vector<std::string>{"hello world", "a sentence"});
  write_file(dir.file("c.tsv"), "\xEF\xBB\xBFhola mundo\thello world\n");
  text = read_parallel_text(parallel_files("--train", dir.file("c.tsv"), "es", "en"), {});
  CHECK(text.source == std::vector<std::string>{"hola mundo"});
  CHECK(text.target == std::vector<std::string>{"hello world"});
}

TEST_CASE("text task: a bad --spm-model is an error naming the file given, not kiln's copy of it") {
  TempDir dir;
  write_split(dir, "train", 30, 0);
  write_split(dir, "valid", 5, 1);
  write_file(dir.file("garbage.model"), "not a model");
  TextTaskOptions o = corpus_options(dir);
  o.test.clear();
  o.spm_model = dir.file("garbage.model");
  fs::create_directories(dir.file("ckpt"));
  std::ostringstream log;
  std::string message;
  try {
    prepare_text_corpus(o, dir.file("prep"), dir.file("ckpt"), log);
  } catch (const Error& e) {
    message = e.what();
  }
  CHECK_MESSAGE(message.find("--spm-model " + dir.file("garbage.model") + ": not a sentencepiece model") !=
                    std::string::npos,
                message);
  CHECK_MESSAGE(message.find("spm.model") == std::string::npos, message);
}
