// kiln.evaluate, kiln.score and kiln.average: what `kiln eval`, `kiln score` and
// `kiln average` do, through the same functions, with the same defaults.
#include <pybind11/stl.h>

#include "engine/ir/error.h"
#include "models/eval/bleu.h"
#include "models/eval/chrf.h"
#include "models/train/evaluate.h"
#include "models/train/trained_model.h"
#include "models/train/translate_lines.h"
#include "models/train/trainer.h"
#include "tools/cmd_average.h"
#include "tools/python/bindings.h"

namespace kiln::python {
namespace {

// BLEU and chrF2 as sacreBLEU reports them, for `references` streams.
py::dict score_dict(const models::Bleu& bleu, const models::Chrf& chrf, size_t references) {
  py::dict d;
  d["bleu"] = bleu.score;
  d["chrf"] = chrf.score;
  d["bleu_line"] = models::bleu_str(bleu);
  d["bleu_signature"] = models::bleu_signature(references);
  d["chrf_line"] = models::chrf_str(chrf);
  d["chrf_signature"] = models::chrf_signature(references);
  return d;
}

// One reference per line (a list of str), or several streams (a list of such lists).
models::ReferenceStreams reference_streams(const py::handle& references) {
  const py::list list = py::list(py::reinterpret_borrow<py::object>(references));
  if (list.size() > 0 && py::isinstance<py::str>(list[0])) return {list.cast<std::vector<std::string>>()};
  return list.cast<models::ReferenceStreams>();
}

py::dict evaluate(const std::string& checkpoint, const std::string& split, const py::object& sources,
                  const py::object& references, int beam, double length_penalty, int64_t limit,
                  const std::string& data_dir, const std::string& backend, int64_t threads,
                  const std::string& precision) {
  if (beam < 1) throw Error("beam: " + std::to_string(beam) + " is not a beam size (1: greedy)");
  if (limit < 0) throw Error("limit: " + std::to_string(limit) + " is negative");
  if (sources.is_none() != references.is_none()) throw Error("sources and references go together");
  const models::DecodeOptions decode{beam, length_penalty};
  models::TrainedModel m;
  models::DecodeScores s;
  size_t streams = 1;
  if (sources.is_none()) {
    const models::Split which = models::parse_split(split);
    py::gil_scoped_release unlocked;
    m = models::load_trained_model(checkpoint, data_dir, backend_options(backend, threads, precision));
    s = models::evaluate_decoding(*m.task, *m.decoder, which, limit, decode);
  } else {
    std::vector<std::string> lines = sources.cast<std::vector<std::string>>();
    models::ReferenceStreams refs = reference_streams(references);
    for (const auto& stream : refs)
      if (stream.size() != lines.size())
        throw Error("references: a stream of " + std::to_string(stream.size()) + " lines for " +
                    std::to_string(lines.size()) + " sources");
    if (limit > 0 && static_cast<size_t>(limit) < lines.size()) {
      lines.resize(static_cast<size_t>(limit));
      for (auto& stream : refs) stream.resize(lines.size());
    }
    if (lines.empty()) throw Error("sources: no sentences to decode");
    streams = refs.size();
    py::gil_scoped_release unlocked;
    m = models::load_trained_model(checkpoint, data_dir, backend_options(backend, threads, precision));
    s = models::score_lines(m, lines, refs, decode, "sentence");
  }
  py::dict d = score_dict(s.bleu, s.chrf, streams);
  d["exact_match"] = s.exact_match;
  d["hypotheses"] = s.hypotheses;
  return d;
}

const char* const kEvaluateDoc = R"(Decodes and scores as `kiln eval` does, and returns a dict: bleu, chrf (sacreBLEU's
corpus BLEU, 13a, and chrF2), exact_match (the share equal to a reference), hypotheses,
bleu_line, bleu_signature, chrf_line and chrf_signature.

checkpoint      a checkpoint directory of kiln.train (its run, DIR/best, a snapshot, an average)
split           'dev' or 'test': the task's split (the default: test)
sources, references   instead of a split: sentences (list of str) and their references, one
                list of str, or several such lists for several references
beam, length_penalty  beam 4 and 0.6 as the paper (and `kiln eval`); beam 1: greedy
limit           decode only the first N sentences (0: all)

kiln.Error naming the sentence that cannot be translated, or a bad checkpoint.

    kiln.evaluate('ckpt/best')['bleu'])";

py::dict score(const std::vector<std::string>& hypotheses, const py::object& references) {
  const models::ReferenceStreams refs = reference_streams(references);
  if (hypotheses.empty()) throw Error("hypotheses: nothing to score");
  return score_dict(models::corpus_bleu(hypotheses, refs), models::corpus_chrf(hypotheses, refs), refs.size());
}

std::vector<std::string> average(const std::string& output, const std::string& checkpoint, int64_t last, int64_t best,
                                 const std::vector<std::string>& checkpoints) {
  if (last < 0 || best < 0) throw Error("last and best must not be negative");
  if (last > 0 && best > 0) throw Error("give last or best, not both");
  cli::AverageOptions o{checkpoints, checkpoint, last, best, output};
  py::gil_scoped_release unlocked;
  return cli::average_into(o);
}

}  // namespace

void define_evaluate(py::module_& m) {
  const std::string default_data_dir = models::TrainOptions{}.data_dir;
  m.def("evaluate", &evaluate, py::arg("checkpoint"), py::kw_only(), py::arg("split") = "test",
        py::arg("sources") = py::none(), py::arg("references") = py::none(), py::arg("beam") = 4,
        py::arg("length_penalty") = 0.6, py::arg("limit") = 0, py::arg("data_dir") = default_data_dir,
        py::arg("backend") = "jit", py::arg("threads") = 0, py::arg("precision") = "f32", kEvaluateDoc);
  m.def("score", &score, py::arg("hypotheses"), py::arg("references"),
        "BLEU and chrF2 of translations (list of str) against one list of references, or several, as\n"
        "`kiln score` and sacreBLEU score them: a dict of bleu, chrf, bleu_line, bleu_signature,\n"
        "chrf_line and chrf_signature. kiln.Error for lists of different lengths.\n\n"
        "    kiln.score(['the cat'], ['the cat'])['bleu']");
  m.def("average", &average, py::arg("output"), py::kw_only(), py::arg("checkpoint") = "", py::arg("last") = 0,
        py::arg("best") = 0, py::arg("checkpoints") = std::vector<std::string>{},
        "Averages checkpoints param by param into `output`, as `kiln average` does, and returns\n"
        "the directories averaged: a run's last N snapshots (checkpoint=DIR, last=N) or its N best\n"
        "evaluated checkpoints (checkpoint=DIR, best=N), both kept by default by kiln.train, or\n"
        "the directories `checkpoints`. The output evaluates and translates like any checkpoint.\n\n"
        "    kiln.average('ckpt-avg', checkpoint='ckpt', last=3)");
}

}  // namespace kiln::python
