// kiln.train, kiln.Translator and kiln.translate: what `kiln train` and
// `kiln translate` do, through the same functions of models/.
#include <pybind11/stl.h>

#include <exception>
#include <filesystem>
#include <mutex>
#include <ostream>
#include <streambuf>

#include "compiler/runtime/mpi_job.h"
#include "compiler/runtime/thread_limit.h"
#include "engine/ir/error.h"
#include "engine/tensor/collectives.h"
#include "models/checkpoint.h"
#include "models/lm/byte_corpus.h"
#include "models/lm/generator.h"
#include "models/lm/lm_checkpoint.h"
#include "models/lm/lm_trainer.h"
#include "models/train/trained_model.h"
#include "models/train/attention_maps.h"
#include "models/train/translate_lines.h"
#include "models/train/trainer.h"
#include "tools/python/bindings.h"

namespace kiln::python {

// The threads are set (and checked against the pool's limit) here, where any
// Python int arrives; the executables then leave them as they are.
compiler::BackendOptions backend_options(const std::string& backend, int64_t threads, const std::string& precision) {
  const DType arithmetic = parse_precision(precision);
  if (threads != 0) compiler::set_threads(threads, "threads");
  compiler::BackendOptions exec;
  exec.backend = backend;
  exec.pipeline.passes.precision = arithmetic;
  return exec;
}

namespace {

// An ostream's lines, each handed to a Python callable (which runs with the GIL
// taken). A callable that raises is not called again, and its exception is
// rethrown by rethrow() (an ostream would swallow it).
class LineSink : public std::streambuf {
 public:
  explicit LineSink(py::object fn) : fn_(std::move(fn)) {}
  void rethrow() {
    finish_line();
    if (error_) std::rethrow_exception(error_);
  }

 protected:
  int overflow(int c) override {
    if (c == '\n' || c == '\r') finish_line();
    else if (c != traits_type::eof()) line_.push_back(static_cast<char>(c));
    return traits_type::not_eof(c);
  }

 private:
  void finish_line() {
    if (line_.empty() || error_) return;
    py::gil_scoped_acquire locked;
    try {
      fn_(line_);
    } catch (...) {
      error_ = std::current_exception();
    }
    line_.clear();
  }

  py::object fn_;
  std::string line_;
  std::exception_ptr error_;
};

void check_not_negative(const char* option, double value) {
  if (value < 0) throw Error(std::string(option) + ": " + std::to_string(value) + " is negative");
}

models::TrainResult train(const std::string& task, const std::string& checkpoint, int64_t steps, double minutes,
                          bool resume, const std::string& config, int64_t d_model, int64_t heads, int64_t d_ff,
                          int64_t layers, std::optional<double> dropout, std::optional<double> label_smoothing,
                          std::optional<uint64_t> seed, int64_t batch_tokens, int64_t max_train_len, int64_t warmup,
                          double lr_factor, int64_t eval_every, double eval_minutes, int64_t save_every,
                          int64_t keep_snapshots, int64_t eval_sentences, int64_t log_every,
                          const std::string& data_dir, const std::string& backend, int64_t threads,
                          const std::string& precision, const py::object& log, const std::string& train_prefix,
                          const std::string& valid, const std::string& test, const std::string& src_lang,
                          const std::string& tgt_lang, int64_t vocab_size, const std::string& vocab,
                          const std::string& prepared, int64_t keep_best, const std::string& best_metric,
                          int64_t patience) {
  models::TrainOptions o;
  // As `kiln train`: a corpus given means the text task.
  const bool corpus = !train_prefix.empty() || !valid.empty() || !prepared.empty();
  if (corpus && task != "text") throw Error("train: a corpus (train, valid, prepared) is for task 'text', not '" + task + "'");
  o.task = task;
  o.text.train = train_prefix;
  o.text.valid = valid;
  o.text.test = test;
  o.text.src_lang = src_lang;
  o.text.tgt_lang = tgt_lang;
  o.text.vocab_size = vocab_size;
  if (vocab != "joint" && vocab != "separate") throw Error("vocab: '" + vocab + "' is not joint or separate");
  o.text.separate_vocab = vocab == "separate";
  o.prepared_dir = prepared;
  if (task == "text" && !corpus && !std::filesystem::exists(models::checkpoint_file(checkpoint)))
    throw Error("train: task 'text' needs train and valid (or prepared) to start a run");
  if (keep_best < 1 || patience < 0 || vocab_size < 1) throw Error("keep_best and vocab_size must be positive, patience not negative");
  o.keep_best = keep_best;
  o.best_metric = best_metric;
  o.patience = patience;
  o.checkpoint_dir = checkpoint;
  o.steps = steps;
  o.minutes = minutes;
  o.resume = resume;
  o.config = config;
  for (const auto& [option, value] : {std::pair<const char*, int64_t>{"d_model", d_model}, {"heads", heads},
                                      {"d_ff", d_ff}, {"layers", layers}, {"batch_tokens", batch_tokens},
                                      {"max_train_len", max_train_len}, {"warmup", warmup},
                                      {"eval_every", eval_every}, {"save_every", save_every},
                                      {"keep_snapshots", keep_snapshots}})
    check_not_negative(option, static_cast<double>(value));
  check_not_negative("lr_factor", lr_factor);
  check_not_negative("eval_minutes", eval_minutes);
  if (eval_sentences <= 0 || log_every <= 0) throw Error("eval_sentences and log_every must be positive");
  o.d_model = d_model;
  o.heads = heads;
  o.d_ff = d_ff;
  o.layers = layers;
  if (dropout) check_not_negative("dropout", *dropout);
  if (label_smoothing) check_not_negative("label_smoothing", *label_smoothing);
  o.dropout = dropout.value_or(-1);
  o.label_smoothing = label_smoothing.value_or(-1);
  o.seed = seed;
  o.batch_tokens = batch_tokens;
  o.max_train_len = max_train_len;
  o.warmup = warmup;
  o.lr_factor = lr_factor;
  o.eval_every = eval_every;
  o.eval_minutes = eval_minutes;
  o.save_every = save_every;
  o.keep_snapshots = keep_snapshots;
  o.eval_sentences = eval_sentences;
  o.log_every = log_every;
  o.data_dir = data_dir;
  o.exec = backend_options(backend, threads, precision);
  std::optional<LineSink> sink;
  std::optional<std::ostream> stream;
  if (!log.is_none()) {
    sink.emplace(log);
    stream.emplace(&*sink);
    o.log = &*stream;
  }
  // Under mpirun every rank's Python calls kiln.train: one model on all ranks.
  if (compiler::mpirun_ranks() > 0) compiler::start_mpi_job();
  models::TrainResult r;
  {
    py::gil_scoped_release unlocked;
    try {
      r = models::train(o);
    } catch (const std::exception& e) {
      // The other ranks wait on collectives this one will never join: end the job.
      if (collectives().size() > 1)
        compiler::abort_mpi_job(std::string("kiln: error: ") + e.what(), 1);
      throw;
    }
  }
  if (sink) sink->rethrow();
  return r;
}

// kiln.train(model="lm", ...): `kiln train --model lm`.
py::dict train_lm(const std::string& model, const std::string& checkpoint, const std::string& train_path,
                  const std::string& valid, int64_t steps, double minutes, std::optional<int64_t> context,
                  std::optional<std::string> positions, std::optional<std::string> norm,
                  std::optional<int64_t> d_model, std::optional<int64_t> heads, std::optional<int64_t> d_ff,
                  std::optional<int64_t> layers, std::optional<double> dropout, std::optional<int64_t> batch_size,
                  std::optional<double> lr, std::optional<int64_t> warmup, std::optional<uint64_t> seed,
                  int64_t eval_every, double eval_minutes, int64_t log_every, const std::string& backend,
                  int64_t threads, const py::object& log) {
  if (model != "lm")
    throw Error("train: model '" + model + "' is not the language model; the Transformer trains with "
                "kiln.train(task, checkpoint, ...)");
  models::LmTrainOptions o;
  o.train = train_path;
  o.valid = valid;
  o.checkpoint_dir = checkpoint;
  o.steps = steps;
  o.minutes = minutes;
  o.settings = {d_model, heads, d_ff, layers, context, std::nullopt, positions, norm, dropout, batch_size, lr,
                warmup, seed};
  check_not_negative("eval_minutes", eval_minutes);
  if (eval_every < 0 || log_every <= 0) throw Error("eval_every must not be negative, log_every must be positive");
  o.eval_every = eval_every;
  o.eval_minutes = eval_minutes;
  o.log_every = log_every;
  o.exec = backend_options(backend, threads, "f32");
  std::optional<LineSink> sink;
  std::optional<std::ostream> stream;
  if (!log.is_none()) {
    sink.emplace(log);
    stream.emplace(&*sink);
    o.log = &*stream;
  }
  models::LmTrainResult r;
  {
    py::gil_scoped_release unlocked;
    r = models::train_lm(o);
  }
  if (sink) sink->rethrow();
  py::list dev;
  for (const models::LmEvalPoint& p : r.dev) dev.append(py::make_tuple(p.step, p.minutes, p.loss));
  py::dict out;
  out["first_step"] = r.first_step;
  out["last_step"] = r.last_step;
  out["dev"] = dev;
  out["tokens_per_second"] = r.tokens_per_second;
  out["train_minutes"] = r.train_minutes;
  return out;
}

// kiln.generate: `kiln generate`, each sample (the prompt and its continuation) a str.
py::list generate(const std::string& checkpoint, const std::string& prompt, int64_t max_tokens, int64_t samples,
                  double temperature, int64_t top_k, double top_p, uint64_t seed, const std::string& backend,
                  int64_t threads) {
  if (max_tokens < 1 || samples < 1 || temperature < 0 || top_k < 0 || !(top_p > 0 && top_p <= 1))
    throw Error("generate: max_tokens and samples must be positive, temperature and top_k not negative, top_p in "
                "(0, 1]");
  const auto [ckpt, cfg] = models::load_lm_checkpoint(checkpoint);
  const std::vector<int32_t> ids = models::byte_ids(prompt);
  const int64_t positions = std::max<int64_t>(1, static_cast<int64_t>(ids.size())) + max_tokens;
  std::vector<std::string> texts;
  {
    py::gil_scoped_release unlocked;
    models::LmGenerator generator(cfg, ckpt.tensors, std::min(positions, cfg.max_len),
                                  backend_options(backend, threads, "f32"));
    for (int64_t i = 0; i < samples; ++i) {
      models::Sampler sampler({temperature, top_k, top_p, seed}, static_cast<uint64_t>(i));
      texts.push_back(prompt + models::bytes_of(generator.generate(ids, max_tokens, sampler)));
    }
  }
  py::list out;
  for (const std::string& t : texts)
    out.append(py::reinterpret_steal<py::str>(PyUnicode_DecodeUTF8(t.data(), static_cast<Py_ssize_t>(t.size()), "replace")));
  return out;
}

py::list step_losses(const std::vector<models::EvalPoint>& points) {
  py::list out;
  for (const models::EvalPoint& p : points) out.append(py::make_tuple(p.step, p.loss));
  return out;
}

// A checkpoint loaded once, translating many calls' sentences.
class Translator {
 public:
  Translator(const std::string& checkpoint, int beam, double length_penalty, const std::string& data_dir,
             const std::string& backend, int64_t threads, const std::string& precision)
      : decode_{beam, length_penalty} {
    if (beam < 1) throw Error("beam: " + std::to_string(beam) + " is not a beam size (1: greedy)");
    check_not_negative("length_penalty", length_penalty);
    const compiler::BackendOptions exec = backend_options(backend, threads, precision);
    py::gil_scoped_release unlocked;
    model_ = models::load_trained_model(checkpoint, data_dir, exec);
  }

  // Each sentence's translation, in order, decoded in batches; a blank one
  // translates to "". The sentences that cannot be translated are named, with
  // why, in one kiln.Error after all were tried.
  // Calls from several threads decode one after another (the model's
  // executables serve one call at a time); the GIL is released first, so a
  // thread waiting here never blocks the one decoding.
  std::vector<std::string> translate(const std::vector<std::string>& sentences) {
    py::gil_scoped_release unlocked;
    const std::lock_guard<std::mutex> one_call(decoding_);
    std::vector<std::string> out;
    std::string errors, numbers;
    const auto lines = models::translate_lines(model_, sentences, decode_);
    for (size_t i = 0; i < lines.size(); ++i) {
      if (lines[i].error.empty()) {
        out.push_back(lines[i].texts.empty() ? "" : lines[i].texts.front());
      } else {
        errors += "sentence " + std::to_string(i + 1) + ": " + lines[i].error + "\n";
        numbers += (numbers.empty() ? "" : ", ") + std::to_string(i + 1);
      }
    }
    if (!errors.empty())
      throw Error(errors + std::to_string(sentences.size() - out.size()) + " of " + std::to_string(sentences.size()) +
                  " sentences were not translated (sentence " + numbers + ")");
    return out;
  }

  // What `kiln translate --attention DIR` writes, for each sentence that has a
  // translation (the best): its pieces and every attention's weights; with a
  // directory, the files and their page too.
  py::list attention(const std::vector<std::string>& sentences, const std::string& dir) {
    std::vector<models::SentenceAttention> found;
    {
      py::gil_scoped_release unlocked;
      const std::lock_guard<std::mutex> one_call(decoding_);
      const auto lines = models::translate_lines(model_, sentences, decode_);
      for (size_t i = 0; i < lines.size(); ++i)
        if (!lines[i].error.empty()) throw Error("sentence " + std::to_string(i + 1) + ": " + lines[i].error);
      found = models::translated_attention(model_, sentences, lines);
      if (!dir.empty()) models::write_attention(dir, found);
    }
    py::list out;
    for (const models::SentenceAttention& s : found) {
      py::dict weights;
      for (const models::AttentionMap& map : s.maps) weights[py::str(map.name)] = array_copy(map.weights);
      py::dict d;
      d["source"] = s.source_text;
      d["output"] = s.output_text;
      d["source_pieces"] = s.source_pieces;
      d["input_pieces"] = s.input_pieces;
      d["output_pieces"] = s.output_pieces;
      d["weights"] = weights;
      out.append(d);
    }
    return out;
  }

  py::object call(const py::handle& sentences) {
    if (py::isinstance<py::str>(sentences)) return py::str(translate({sentences.cast<std::string>()}).front());
    return py::cast(translate(sentences.cast<std::vector<std::string>>()));
  }

 private:
  models::DecodeOptions decode_;
  models::TrainedModel model_;
  std::mutex decoding_;
};

const char* const kTrainDoc = R"(Trains the Transformer on a task, as `kiln train` does, and returns a kiln.TrainResult.

task            'copy' (the synthetic copy task), 'de-en' (German to English, trans-de-en) or
                'text' (your own corpus: train, valid and the rest below)
checkpoint      the run's directory; one that holds a run is continued, as `kiln train` does
steps, minutes  the budget: exactly one of them (minutes: training wall time, compiles included,
                the whole run's; steps: this call's)
resume          require a run in `checkpoint` to continue (an error if there is none)
config          'tiny', 'small' or 'base' ('': the task's recipe, or the checkpoint's)
d_model, heads, d_ff, layers      override the preset's sizes (0: the preset's)
dropout, label_smoothing, seed    None: the recipe's (or the checkpoint's)
batch_tokens, max_train_len, warmup, lr_factor    0: the recipe's (max_train_len 0: all shapes)
eval_every, eval_minutes, save_every, keep_snapshots, keep_best, best_metric, patience,
eval_sentences, log_every: as the command's flags, with its defaults (none of the first three:
                an evaluation and a save at each fifth of the budget; the last 5 saves' params
                kept in DIR/snapshots and the 3 best in DIR/best-snapshots, for kiln.average)
train, valid, test  task 'text': the corpus files, PREFIX (PREFIX.SRC and PREFIX.TGT) or a .tsv
src_lang, tgt_lang  the languages, the files' suffixes
vocab_size, vocab   subword pieces (8000) of a 'joint' or 'separate' sentencepiece model
prepared        where the corpus is prepared (default CHECKPOINT/data), or one `kiln prepare` wrote
data_dir        de-en: the trans-de-en dictionary
backend, threads  'jit' or 'interp'; the JIT's threads (0: all cores)
precision       'f32', or 'bf16': the matmuls' operands in bf16, f32 sums (`kiln train --precision bf16`)
log             None: progress lines on stderr, as the command prints them; or a callable
                called with each line (str)

kiln.Error with the command's message for bad options, an existing checkpoint
without resume, or a loss that stops being finite.

Under mpirun (mpirun -np N python3 script.py) every rank calls it with the
same arguments and they train one model, as `mpirun -np N kiln train` does:
rank 0 logs and writes, the others return a TrainResult of their steps only.
There an error ends the whole job with its message (naming the rank) instead
of raising: the other ranks could not go on without this one.

    r = kiln.train('copy', 'ckpt', steps=400, d_model=64, heads=4, d_ff=256, layers=2, dropout=0, warmup=100)
    r = kiln.train('text', 'ckpt-es-en', train='data/train', valid='data/valid', src_lang='es',
                   tgt_lang='en', minutes=30))";

}  // namespace

void define_train(py::module_& m) {
  py::class_<models::TrainResult>(m, "TrainResult", "What kiln.train reports at the end.")
      .def_readonly("first_step", &models::TrainResult::first_step, "The first step this call ran.")
      .def_readonly("last_step", &models::TrainResult::last_step, "The last step this call ran.")
      .def_property_readonly(
          "train_losses", [](const models::TrainResult& r) { return step_losses(r.train_losses); },
          "[(step, loss)] for every step of the whole run, resumes included.")
      .def_property_readonly(
          "dev_losses", [](const models::TrainResult& r) { return step_losses(r.dev_losses); },
          "[(step, loss)] for every dev evaluation.")
      .def_readonly("bleu", &models::TrainResult::bleu, "The last dev BLEU; -1 if not measured.")
      .def_readonly("exact_match", &models::TrainResult::exact_match,
                    "The last dev exact-match share in [0, 1]; -1 if not measured.")
      .def_readonly("tokens_per_second", &models::TrainResult::tokens_per_second,
                    "Target tokens of this call's steps per second of their time.")
      .def_readonly("train_minutes", &models::TrainResult::train_minutes,
                    "Training time of the whole run, resumes included.")
      .def("__repr__", [](const models::TrainResult& r) {
        return "<kiln.TrainResult steps " + std::to_string(r.first_step) + ".." + std::to_string(r.last_step) +
               ", BLEU " + std::to_string(r.bleu) + ", exact match " + std::to_string(r.exact_match) + ">";
      });
  m.def("train", &train, py::arg("task"), py::arg("checkpoint"), py::kw_only(), py::arg("steps") = 0,
        py::arg("minutes") = 0.0, py::arg("resume") = false, py::arg("config") = "", py::arg("d_model") = 0,
        py::arg("heads") = 0, py::arg("d_ff") = 0, py::arg("layers") = 0, py::arg("dropout") = py::none(),
        py::arg("label_smoothing") = py::none(), py::arg("seed") = py::none(), py::arg("batch_tokens") = 0,
        py::arg("max_train_len") = 0, py::arg("warmup") = 0, py::arg("lr_factor") = 0.0, py::arg("eval_every") = 0,
        py::arg("eval_minutes") = 0.0, py::arg("save_every") = 0,
        py::arg("keep_snapshots") = models::TrainOptions{}.keep_snapshots, py::arg("eval_sentences") = 200,
        py::arg("log_every") = 100, py::arg("data_dir") = models::TrainOptions{}.data_dir, py::arg("backend") = "jit",
        py::arg("threads") = 0, py::arg("precision") = "f32", py::arg("log") = py::none(), py::arg("train") = "",
        py::arg("valid") = "", py::arg("test") = "", py::arg("src_lang") = "", py::arg("tgt_lang") = "",
        py::arg("vocab_size") = models::TextTaskOptions{}.vocab_size, py::arg("vocab") = "joint",
        py::arg("prepared") = "", py::arg("keep_best") = models::TrainOptions{}.keep_best,
        py::arg("best_metric") = "", py::arg("patience") = 0, kTrainDoc);
  m.def("train", &train_lm, py::kw_only(), py::arg("model"), py::arg("checkpoint"), py::arg("train"),
        py::arg("valid"), py::arg("steps") = 0, py::arg("minutes") = 0.0, py::arg("context") = py::none(),
        py::arg("positions") = py::none(), py::arg("norm") = py::none(), py::arg("d_model") = py::none(),
        py::arg("heads") = py::none(), py::arg("d_ff") = py::none(), py::arg("layers") = py::none(),
        py::arg("dropout") = py::none(), py::arg("batch_size") = py::none(), py::arg("lr") = py::none(),
        py::arg("warmup") = py::none(), py::arg("seed") = py::none(), py::arg("eval_every") = 0,
        py::arg("eval_minutes") = 0.0, py::arg("log_every") = 100, py::arg("backend") = "jit",
        py::arg("threads") = 0, py::arg("log") = py::none(),
        "kiln.train(model='lm', checkpoint=DIR, train=FILE, valid=FILE, minutes=M or steps=N, ...): trains the\n"
        "language model as `kiln train --model lm` does (a directory that holds a run continues it) and\n"
        "returns {'first_step', 'last_step', 'dev': [(step, minutes, loss)], 'tokens_per_second',\n"
        "'train_minutes'}. Settings left None take the defaults, or the run's when it continues.\n\n"
        "    r = kiln.train(model='lm', checkpoint='gpt', train='train.txt', valid='valid.txt', minutes=5)");
  m.def("generate", &generate, py::arg("checkpoint"), py::arg("prompt") = "", py::kw_only(),
        py::arg("max_tokens") = 256, py::arg("samples") = 1, py::arg("temperature") = 1.0, py::arg("top_k") = 0,
        py::arg("top_p") = 1.0, py::arg("seed") = 0, py::arg("backend") = "jit", py::arg("threads") = 0,
        "The prompt and its continuation by a language model's checkpoint (kiln.train(model='lm', ...)), one\n"
        "str per sample, as `kiln generate` writes them: temperature 0 is greedy; top_k and top_p keep the\n"
        "most likely tokens; the same seed gives the same text.\n\n"
        "    kiln.generate('gpt', 'In the beginning', max_tokens=200, temperature=0.8, top_k=40)");

  const std::string default_data_dir = models::TrainOptions{}.data_dir;
  py::class_<Translator>(m, "Translator",
                         "A trained checkpoint loaded once for many kiln.translate-like calls:\n\n"
                         "    t = kiln.Translator('ckpt'); t(['1 2 3 4 5 6 7 8 9 10'])")
      .def(py::init<const std::string&, int, double, const std::string&, const std::string&, int64_t,
                    const std::string&>(),
           py::arg("checkpoint"), py::kw_only(), py::arg("beam") = 4, py::arg("length_penalty") = 0.6,
           py::arg("data_dir") = default_data_dir, py::arg("backend") = "jit", py::arg("threads") = 0,
           py::arg("precision") = "f32",
           "Loads the checkpoint directory of kiln.train (or `kiln train`). It decodes as\n"
           "`kiln translate` and `kiln eval` do by default: beam 4, length penalty 0.6;\n"
           "beam 1 decodes greedily; beam search ranks by log p / ((5 + len) / 6)^length_penalty;\n"
           "precision 'bf16' runs the decoder's matmuls on bf16 operands.\n"
           "kiln.Error for a missing or corrupt checkpoint.")
      .def(
          "attention",
          [](Translator& t, const py::handle& sentences, const std::string& dir) {
            return t.attention(py::isinstance<py::str>(sentences)
                                   ? std::vector<std::string>{sentences.cast<std::string>()}
                                   : sentences.cast<std::vector<std::string>>(),
                               dir);
          },
          py::arg("sentences"), py::kw_only(), py::arg("dir") = "",
          "What every attention of the model looked at for each sentence's best translation,\n"
          "as `kiln translate --attention DIR` writes it: a list of dicts (source, output,\n"
          "source_pieces, input_pieces, output_pieces, weights: {'enc.0.self_attn': array of\n"
          "[heads, queries, keys], ...}); with dir=, also DIR/NNNN/*.npy and DIR/index.html.")
      .def("__call__", &Translator::call, py::arg("sentences"),
           "The translation of a sentence (str), or of each of a list of them (a list).\n"
           "kiln.Error naming each sentence that cannot be translated (empty, not text, not\n"
           "encodable by the task) once all were tried.");
  m.def(
      "translate",
      [](const std::string& checkpoint, const py::handle& sentences, int beam, double length_penalty,
         const std::string& data_dir, const std::string& backend, int64_t threads, const std::string& precision) {
        return Translator(checkpoint, beam, length_penalty, data_dir, backend, threads, precision).call(sentences);
      },
      py::arg("checkpoint"), py::arg("sentences"), py::kw_only(), py::arg("beam") = 4,
      py::arg("length_penalty") = 0.6, py::arg("data_dir") = default_data_dir, py::arg("backend") = "jit",
      py::arg("threads") = 0, py::arg("precision") = "f32",
      "Translates a sentence (str) or a list of them with a trained checkpoint, as\n"
      "`kiln translate --checkpoint DIR` does: kiln.Translator(checkpoint, ...)(sentences).");
}

}  // namespace kiln::python
