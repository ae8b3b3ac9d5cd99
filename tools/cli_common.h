#pragma once
// The kiln command's subcommands. main.cpp defines the flags (CLI11) and turns
// errors into messages and exit codes; each subcommand lives in its own cmd_*.cpp
// and reports failure by throwing kiln::Error.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "compiler/backend.h"
#include "compiler/jit_executable.h"
#include "compiler/passes/pass_manager.h"
#include "models/decode/decode_all.h"
#include "models/train/trainer.h"

namespace CLI {
class App;
}

namespace kiln::cli {

// Commands that read a .kir file let parse_kir_file's errors through
// ("FILE:LINE:COL: error: ...").

// `kiln check FILE`: parses and verifies, then prints the canonical text form.
void check(const std::string& path);

// `kiln dot FILE`: prints Graphviz DOT; with `fuse`, of the graph after the
// default passes (fusions as clusters of their bodies); with color_by "buffer"
// or "time", of the compiled graph, each kernel coloured by its planned buffer
// or its share of a profiled run's time (tools/dot_marks.h).
struct DotOptions {
  std::string graph_path;
  bool fuse = false;
  std::string color_by;  // "", "buffer" or "time"
};
void dot(const DotOptions& opts);

// `kiln ops`: lists the registered ops with their operand counts, attributes and summaries.
void list_ops();

// `kiln run FILE --input NAME=PATH ... --output-dir DIR --seed N --backend B`.
struct RunOptions {
  std::string graph_path;
  std::vector<std::string> inputs;  // "NAME=PATH.npy"
  std::string output_dir = "out";
  uint64_t seed = 0;
  compiler::BackendOptions exec;
  int64_t steps = 1;        // runs in a row; params and state carry over
  std::string load_dir;     // binds each param/state with a DIR/NAME.npy
  std::string save_dir;     // writes every param and state as DIR/NAME.npy at the end
};
void run(const RunOptions& opts);

// `kiln compile FILE --emit llvm|asm|obj -o OUT [--target-cpu CPU]`: the JIT's
// code for the graph (O3, vectorized for the target) as LLVM IR, assembly or an
// object file whose entry function (`kiln_main`, or --entry) follows
// compiler/codegen/lower_graph.h. With `--header OUT.h` (obj only): an AOT object
// whose one global function is the typed entry point ENTRY_run (ENTRY: --entry,
// default the graph's name), declared and documented in the C header written to
// OUT.h (compiler/aot/).
struct CompileOptions {
  std::string graph_path;
  std::string emit = "obj";
  std::string output_path;
  std::string header_path;  // empty: no AOT header
  std::string entry;        // empty: the default above
  std::string target_cpu;
  compiler::PipelineOptions pipeline;
};
void compile(const CompileOptions& opts);

// `kiln grad FILE --loss NAME --wrt NAME,... [-o OUT]`: appends the backward pass
// and outputs each gradient as NAME.grad; prints the joint graph or writes OUT.
struct GradOptions {
  std::string graph_path;
  std::string loss;
  std::vector<std::string> wrt;
  std::string output_path;  // empty: stdout
};
void grad(const GradOptions& opts);

// `kiln train-graph FILE --loss NAME --optimizer adam|sgd [...] -o OUT`: the
// whole training step (forward, backward, optimizer updates) as one graph.
struct TrainGraphOptions {
  std::string graph_path;
  std::string loss;
  std::string optimizer = "adam";
  std::string output_path;
  double lr = 0.0;  // sgd: the step size (default 0.1); adam: a constant rate instead of the schedule
  double beta1 = 0.9, beta2 = 0.98, eps = 1e-9, factor = 1.0;
  int64_t warmup = 4000, d_model = 512;
};
void train_graph(const TrainGraphOptions& opts);

// `kiln opt FILE [pass flags] [-o OUT]`: runs the pass pipeline (compiler/passes/)
// and prints the optimized graph or writes OUT atomically.
struct OptOptions {
  std::string graph_path;
  std::string output_path;  // empty: stdout
  compiler::PassOptions passes;
  std::string dump_dir;  // --dump-dir: the graph after each pass, under DIR/NAME/ (compiler/dump_dir.h)
};
void opt(const OptOptions& opts);

// `kiln profile FILE`: binds --input files (other inputs: zeros) and params from
// the seed, runs once to warm up, then `steps` runs with every kernel call timed;
// prints the kernel table and writes the Chrome trace to trace_path.
struct ProfileOptions {
  std::string graph_path;
  std::vector<std::string> inputs;  // "NAME=PATH.npy"
  uint64_t seed = 0;
  compiler::BackendOptions exec;    // its pipeline, kernels and threads (0: all cores)
  int64_t steps = 10;
  std::string trace_path = "profile.trace.json";
  std::string by = "kernel";  // the table's rows: "kernel" or "scope" (model part)
  int depth = 0;              // --by scope: scopes cut to this many dotted parts (0: whole)
};
void profile(const ProfileOptions& opts);
// The runs behind it (also `kiln dot --color-by time`): the executable, profiled.
std::unique_ptr<compiler::JitExecutable> profiled_runs(Graph g, const ProfileOptions& opts);

// Splits "NAME=PATH" at the first '='; throws kiln::Error unless both sides are non-empty.
std::pair<std::string, std::string> split_binding(const std::string& arg);

// Loads and binds each --input NAME=PATH.npy (`run`, `profile`).
void bind_inputs(Executable& exe, const std::vector<std::string>& args);

// ---- The Transformer's training and decoding (tools/cmd_train.cpp, cmd_translate.cpp, cmd_eval.cpp) ----
// Each add_*_command adds the subcommand and its flags to `app`, filling the options.

// `kiln train --task copy|de-en --config NAME (--minutes M | --steps N) --checkpoint DIR [--resume] ...`:
// models/train/trainer.h, then a summary line on stdout.
CLI::App* add_train_command(CLI::App& app, models::TrainOptions& opts);
void train(const models::TrainOptions& opts);

// `kiln translate --checkpoint DIR [-i FILE] [-o FILE] [--batch-tokens N] [--beam K] [--length-penalty A]
// [--nbest K] [--buffer-lines N] [TEXT...]`: each TEXT, or each line of -i or of stdin, translated on its own
// output line (--nbest: Moses' `i ||| translation ||| score` lines, i the 0-based line number), in the input's
// order. It decodes as `kiln eval` does (beam 4, length penalty 0.6); --nbest K without --beam widens the beam
// to K when K is more than that. Lines are decoded in batches, --buffer-lines at a time (interactive stdin: each line as it comes). A
// blank line gets an empty output line. A line that cannot be translated gets an error on stderr and an empty
// output line, the others are still translated, and the command then fails (exit 1) naming those lines. -o is
// written atomically at the end.
struct TranslateOptions {
  std::string checkpoint_dir;
  std::vector<std::string> texts;  // empty: read input_path, or stdin
  std::string input_path;          // empty: stdin
  std::string output_path;         // empty: stdout
  models::DecodeOptions decode{4, 0.6};  // --beam etc.: as eval decodes (beam 4, length penalty 0.6)
  bool nbest_lines = false;        // --nbest given: Moses' n-best lines
  int64_t buffer_lines = 10000;    // lines read, sorted and decoded together
  std::string attention_dir;       // --attention: each sentence's attention weights and their page
  std::string data_dir = "/usr/share/trans/de-en";
  compiler::BackendOptions exec;
};
CLI::App* add_translate_command(CLI::App& app, TranslateOptions& opts);
void translate(const TranslateOptions& opts);

// `kiln eval --checkpoint DIR (--split dev|test | --src FILE --ref FILE [--ref FILE...]) [--beam K] [--limit N]`:
// corpus BLEU (sacreBLEU's line) and the exact-match accuracy of the decoded split or source file; of a
// language model's checkpoint, `kiln eval --checkpoint DIR --text FILE`: its loss, perplexity and bits per byte.
struct EvalOptions {
  std::string checkpoint_dir;
  std::string split = "test";
  std::string src_path;                // a source file instead of a split
  std::vector<std::string> ref_paths;  // its references, one line per source line each
  models::DecodeOptions decode{4, 0.6};  // as the paper evaluates: beam 4, length penalty 0.6
  int64_t limit = 0;  // the first N sentences; 0: all
  std::string output_dir;  // also write src.txt, hyp.txt, ref.txt here
  std::string data_dir = "/usr/share/trans/de-en";
  compiler::BackendOptions exec;
  std::string dump_ids;  // write the split's subword ids here instead of decoding
  std::string text_path;  // a language model's checkpoint: the perplexity of this text file or folder
  int64_t context = 0;    // with text_path: windows of this many tokens (0: the model's trained context)
};
CLI::App* add_eval_command(CLI::App& app, EvalOptions& opts);
void eval(const EvalOptions& opts);

// translate's and eval's --beam, --length-penalty, --batch-tokens, --data-dir, --backend and --threads.
void add_decoding_flags(CLI::App& cmd, models::DecodeOptions& decode, std::string& data_dir,
                        compiler::BackendOptions& exec);

// ---- Scoring translation files (tools/cmd_score.cpp) ----

// `kiln score --hyp FILE --ref FILE [FILE...] [--json]`: corpus BLEU and chrF2 of the hypothesis file
// against one or more reference files (one sentence a line, UTF-8), sacreBLEU's lines and signatures or
// one JSON object.
struct ScoreOptions {
  std::string hyp_path;
  std::vector<std::string> ref_paths;  // one reference stream each
  bool json = false;
};
CLI::App* add_score_command(CLI::App& app, ScoreOptions& opts);
void score(const ScoreOptions& opts);

}  // namespace kiln::cli
