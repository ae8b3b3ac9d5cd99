// The kiln command: flags and subcommands (CLI11), and the one place where errors
// become messages and exit codes: 0 success, 1 a user error (bad graph, file or
// binding), 2 bad flags.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <new>
#include <utility>

#include "compiler/aot/aot_interface.h"
#include "compiler/target/host.h"
#include "compiler/runtime/mpi_job.h"
#include "engine/ir/error.h"
#include "engine/tensor/collectives.h"
#include "engine/tensor/memory_check.h"
#include "ops/register_all.h"
#include "tools/cli_common.h"
#include "tools/cmd_average.h"
#include "tools/cmd_batches.h"
#include "tools/config_file.h"
#include "tools/corpus_flags.h"
#include "tools/cmd_bench.h"
#include "tools/cmd_export.h"
#include "tools/cmd_import.h"
#include "tools/cmd_lm.h"
#include "tools/pass_flags.h"
#include "tools/flag_checks.h"
#include "tools/path_checks.h"
#include "tools/continue_run.h"
#include "tools/usage_errors.h"

namespace {

std::string version_text() {
  const auto h = kiln::compiler::host_info();
  std::string s = "kiln ";
  s += KILN_VERSION;
  s += " (LLVM " + h.llvm_version;
  s += ", host CPU " + h.cpu_name;
  s += ", " + h.target_triple;
  return s + ")";
}

// Accepts NAME=PATH for --input, so a malformed binding is a flag error naming --input.
const CLI::Validator kNameEqualsPath =
    kiln::cli::parses_as([](const std::string& arg) { kiln::cli::split_binding(arg); }, "NAME=PATH.npy");

// --entry names a C function, so it must be a C identifier.
const CLI::Validator kCIdentifier(
    [](const std::string& arg) {
      return kiln::compiler::is_c_identifier(arg)
                 ? std::string()
                 : "'" + arg + "' is not a C identifier (letters, digits, '_'; no keyword)";
    },
    "C_IDENTIFIER");

// An error's message and exit code. In a job of several ranks (mpirun), the
// message names the rank and the job ends on every rank (MPI_Abort): the
// others would otherwise wait forever on a collective this rank never joins.
int fail(const std::string& message, int code) {
  if (kiln::compiler::in_mpi_job() && kiln::collectives().size() > 1) kiln::compiler::abort_mpi_job(message, code);
  std::cerr << message << '\n';
  return code;
}

// The subcommand `args` name (the first argument that is no flag: kiln's own
// flags take no value), or "" if none.
std::string named_command(const std::vector<std::string>& args) {
  for (const std::string& a : args)
    if (!kiln::cli::looks_like_flag(a)) return a;
  return "";
}

// The message for a usage error `e`, ending with the help of the subcommand
// given. An unknown flag of that subcommand, or an unknown subcommand, is
// named first (with the nearest valid name): CLI11 would report a missing
// required flag instead, and the typo is what went wrong.
std::string usage_error(const CLI::App& app, const std::vector<std::string>& args, const CLI::ParseError& e) {
  using kiln::cli::help_hint;
  const std::string name = named_command(args);
  if (name.empty()) {
    const std::string unknown = kiln::cli::unknown_flag_message(app, args);
    return "kiln: error: " + (unknown.empty() ? std::string(e.what()) : unknown) + "\n" + help_hint("kiln");
  }
  const std::vector<const CLI::App*> commands = app.get_subcommands([](const CLI::App*) { return true; });
  const auto cmd =
      std::find_if(commands.begin(), commands.end(), [&](const CLI::App* c) { return c->get_name() == name; });
  if (cmd == commands.end()) {
    std::vector<std::string> names;
    for (const CLI::App* c : commands) names.push_back(c->get_name());
    const std::string near = kiln::cli::nearest_name(name, names);
    return "kiln: error: unknown command '" + name + "'" + (near.empty() ? "" : "; did you mean '" + near + "'?") +
           "\nRun 'kiln --help' for the commands.";
  }
  const std::vector<std::string> rest(std::find(args.begin(), args.end(), name) + 1, args.end());
  const std::string unknown = kiln::cli::unknown_flag_message(**cmd, rest);
  return "kiln: error: " + (unknown.empty() ? std::string(e.what()) : unknown) + "\n" + help_hint("kiln " + name);
}

}  // namespace

int main(int argc, char** argv) {
  kiln::register_all_ops();

  CLI::App app{"kiln: an autodiff tensor engine with a static graph compiler", "kiln"};
  app.set_version_flag("--version", version_text, "Print kiln's version, the LLVM version and the host CPU");
  app.require_subcommand(1);

  std::string graph_path;
  auto* check = app.add_subcommand("check", "Parse and verify a .kir graph and print its canonical form");
  check->add_option("FILE", graph_path, "the .kir file")->check(kiln::cli::file_to_read())->required();

  kiln::cli::DotOptions dot_opts;
  auto* dot = app.add_subcommand("dot", "Print a .kir graph as Graphviz DOT (kiln dot g.kir | dot -Tsvg > g.svg)");
  dot->add_option("FILE", dot_opts.graph_path, "the .kir file")->check(kiln::cli::file_to_read())->required();
  dot->add_flag("--fuse", dot_opts.fuse, "draw the graph after the default passes: each fusion a cluster of its ops");
  dot->add_option("--color-by", dot_opts.color_by,
                  "draw the compiled graph (as --fuse), each kernel coloured by its planned buffer (buffer: "
                  "kernels whose results reuse the same arena bytes share a colour) or by its share of a profiled "
                  "run's time (time: 10 runs with the JIT, inputs zeros)")
      ->check(CLI::IsMember({"buffer", "time"}));

  app.add_subcommand("ops", "List the registered ops with their operands, attributes and summaries");

  kiln::cli::RunOptions run_opts;
  auto* run = app.add_subcommand("run", "Run a .kir graph once and write its outputs as .npy files");
  run->add_option("FILE", run_opts.graph_path, "the .kir file")->check(kiln::cli::file_to_read())->required();
  run->add_option("--input,-i", run_opts.inputs,
                  "bind a declared input, param or state to a .npy file (repeatable); unbound params "
                  "and state are initialized from --seed, unbound inputs are an error")
      ->check(kNameEqualsPath)
      ->allow_extra_args(false);
  run->add_option("--output-dir,-o", run_opts.output_dir, "where each output goes, as NAME.npy")
      ->check(kiln::cli::dir_to_write())
      ->capture_default_str();
  run->add_option("--seed", run_opts.seed, "seed of the param initialization")->capture_default_str();
  kiln::cli::add_backend_flags(*run, run_opts.exec);
  run->add_option("--target-cpu", run_opts.exec.target_cpu, "jit: generate code for this CPU (default: the host)");
  kiln::cli::add_compiler_flags(run, run_opts.exec.pipeline, &run_opts.exec.kernels);

  run->add_option("--steps", run_opts.steps, "run the graph N times in a row, printing its scalar outputs each step")
      ->check(kiln::cli::positive(run_opts.steps))
      ->capture_default_str();
  run->add_option("--load", run_opts.load_dir, "bind each param and state that has a DIR/NAME.npy")
      ->check(CLI::ExistingDirectory);
  run->add_option("--save", run_opts.save_dir, "after the last step, write every param and state as DIR/NAME.npy")
      ->check(kiln::cli::dir_to_write());

  kiln::cli::ProfileOptions profile_opts;
  auto* profile = app.add_subcommand("profile", "Run a .kir graph with the JIT, every kernel call timed: print a table "
                                                "by kernel and write a Chrome trace");
  profile->add_option("FILE", profile_opts.graph_path, "the .kir file")->check(kiln::cli::file_to_read())->required();
  profile->add_option("--input,-i", profile_opts.inputs,
                      "bind a declared input, param or state to a .npy file (repeatable); unbound inputs are "
                      "zeros (the time does not depend on them), unbound params and state come from --seed")
      ->check(kNameEqualsPath)
      ->allow_extra_args(false);
  profile->add_option("--seed", profile_opts.seed, "seed of the param initialization")->capture_default_str();
  profile->add_option("--steps", profile_opts.steps, "timed runs, after one warm-up run")
      ->check(kiln::cli::positive(profile_opts.steps))
      ->capture_default_str();
  profile->add_option("--trace", profile_opts.trace_path,
                      "the Chrome trace JSON to write (chrome://tracing, ui.perfetto.dev): a track per thread, the "
                      "kernel calls on the caller's")
      ->check(kiln::cli::file_to_write())
      ->capture_default_str();
  profile->add_option("--by", profile_opts.by,
                      "the table's rows: kernel (each distinct kernel), or scope (each model part, as loc(...) "
                      "names it: forward and backward time apart, with its share of the step)")
      ->check(CLI::IsMember({"kernel", "scope"}))
      ->capture_default_str();
  profile->add_option("--depth", profile_opts.depth,
                      "with --by scope: group scopes by their first N dotted parts (2: enc.0, dec.1, ...; 0: whole)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  profile->add_option("--threads", profile_opts.exec.threads, "threads of the JIT's parallel loops (default: all cores)")
      ->check(kiln::cli::thread_count(1));
  profile->add_option("--target-cpu", profile_opts.exec.target_cpu, "generate code for this CPU (default: the host)");
  kiln::cli::add_compiler_flags(profile, profile_opts.exec.pipeline, &profile_opts.exec.kernels);

  kiln::cli::CompileOptions compile_opts;
  auto* compile = app.add_subcommand("compile", "Compile a .kir graph to LLVM IR, assembly or an object file");
  compile->add_option("FILE", compile_opts.graph_path, "the .kir file")->check(kiln::cli::file_to_read())->required();
  compile->add_option("--emit", compile_opts.emit, "what to write")
      ->check(CLI::IsMember({"llvm", "asm", "obj", "program"}))
      ->capture_default_str();
  compile->add_option("-o,--output", compile_opts.output_path, "the file to write (-: stdout)")
      ->check(kiln::cli::file_or_stdout_to_write())
      ->required();
  compile->add_option("--header", compile_opts.header_path,
                      "AOT (with --emit obj): also write a C header declaring the typed entry point ENTRY_run")
      ->check(kiln::cli::file_to_write());
  compile->add_option("--entry", compile_opts.entry,
                      "the entry point's name (default kiln_main); with --header, the C API's prefix "
                      "(ENTRY_run, struct ENTRY_args; default the graph's name)")
      ->check(kCIdentifier);
  compile->add_option("--target-cpu", compile_opts.target_cpu, "generate code for this CPU (default: the host)");
  kiln::cli::add_compiler_flags(compile, compile_opts.pipeline);
  compile->final_callback([&compile_opts] {
    if (!compile_opts.header_path.empty() && compile_opts.emit != "obj")
      throw CLI::ValidationError("--header", "needs --emit obj (the header declares the object's entry point)");
    if (!compile_opts.header_path.empty() && compile_opts.output_path == "-")
      throw CLI::ValidationError("--header", "needs -o FILE, not -: the object and its header are written together");
  });

  kiln::cli::GradOptions grad_opts;
  auto* grad = app.add_subcommand("grad", "Append the backward pass; output each gradient as NAME.grad");
  grad->add_option("FILE", grad_opts.graph_path, "the .kir file")->check(kiln::cli::file_to_read())->required();
  grad->add_option("--loss", grad_opts.loss, "the scalar f32 value to differentiate")->required();
  grad->add_option("--wrt", grad_opts.wrt, "the values to differentiate with respect to")
      ->required()
      ->delimiter(',');
  grad->add_option("-o,--output", grad_opts.output_path, "write the joint graph here instead of stdout (-: stdout)")
      ->check(kiln::cli::file_or_stdout_to_write());

  kiln::cli::TrainGraphOptions train_opts;
  auto* train_graph = app.add_subcommand("train-graph", "Write the whole training step (forward, backward, "
                                                        "optimizer updates of params and state) as one graph");
  train_graph->add_option("FILE", train_opts.graph_path, "the .kir file")->check(kiln::cli::file_to_read())->required();
  train_graph->add_option("--loss", train_opts.loss, "the scalar f32 value to minimize")->required();
  train_graph->add_option("--optimizer", train_opts.optimizer, "sgd, or adam with the warm-up schedule")
      ->check(CLI::IsMember({"adam", "sgd"}))
      ->capture_default_str();
  train_graph->add_option("--lr", train_opts.lr,
                          "sgd: step size (default 0.1); adam: a constant rate replacing the schedule")
      ->check(kiln::cli::positive(train_opts.lr));
  train_graph->add_option("--beta1", train_opts.beta1, "adam")->check(kiln::cli::in_range(train_opts.beta1, 0.0, 1.0))->capture_default_str();
  train_graph->add_option("--beta2", train_opts.beta2, "adam")->check(kiln::cli::in_range(train_opts.beta2, 0.0, 1.0))->capture_default_str();
  train_graph->add_option("--eps", train_opts.eps, "adam")->check(kiln::cli::positive(train_opts.eps))->capture_default_str();
  train_graph->add_option("--factor", train_opts.factor, "adam schedule: factor * d_model^-0.5 * min(step^-0.5, "
                                                         "step * warmup^-1.5)")
      ->check(kiln::cli::positive(train_opts.factor))
      ->capture_default_str();
  train_graph->add_option("--warmup", train_opts.warmup, "adam schedule: warm-up steps")
      ->check(kiln::cli::positive(train_opts.warmup))
      ->capture_default_str();
  train_graph->add_option("--d-model", train_opts.d_model, "adam schedule: d_model")
      ->check(kiln::cli::positive(train_opts.d_model))
      ->capture_default_str();
  train_graph->add_option("-o,--output", train_opts.output_path, "the training-step .kir to write (-: stdout)")
      ->check(kiln::cli::file_or_stdout_to_write())
      ->required();

  kiln::cli::OptOptions opt_opts;
  auto* opt = app.add_subcommand("opt", "Run the graph passes on a .kir graph and print the optimized graph");
  opt->add_option("FILE", opt_opts.graph_path, "the .kir file")->check(kiln::cli::file_to_read())->required();
  opt->add_option("-o,--output", opt_opts.output_path, "write the optimized graph here instead of stdout (-: stdout)")
      ->check(kiln::cli::file_or_stdout_to_write());
  kiln::cli::add_pass_flags(opt, opt_opts.passes);
  kiln::cli::add_dump_dir_flag(opt, opt_opts.dump_dir);

  kiln::cli::BenchOptions bench_opts;
  auto* bench = kiln::cli::add_bench_command(app, bench_opts);

  // The Transformer's training and decoding (cmd_train.cpp, cmd_translate.cpp, cmd_eval.cpp).
  kiln::models::TrainOptions model_train_opts;
  auto* model_train = kiln::cli::add_train_command(app, model_train_opts);
  kiln::cli::ModelFlags model_flags;
  kiln::cli::add_model_flags(*model_train, model_flags);
  // The language model's generation (cmd_lm.cpp).
  kiln::cli::GenerateOptions generate_opts;
  auto* generate = kiln::cli::add_generate_command(app, generate_opts);
  kiln::cli::TranslateOptions translate_opts;
  auto* translate = kiln::cli::add_translate_command(app, translate_opts);
  kiln::cli::EvalOptions eval_opts;
  auto* eval = kiln::cli::add_eval_command(app, eval_opts);
  kiln::cli::AverageOptions average_opts;
  auto* average = kiln::cli::add_average_command(app, average_opts);
  kiln::cli::BatchesOptions batches_opts;
  auto* batches = kiln::cli::add_batches_command(app, batches_opts);
  kiln::cli::PrepareOptions prepare_opts;
  auto* prepare = kiln::cli::add_prepare_command(app, prepare_opts);

  // Scoring any translation file against references (cmd_score.cpp).
  kiln::cli::ScoreOptions score_opts;
  auto* score = kiln::cli::add_score_command(app, score_opts);

  // The Transformer's graphs as .kir files (cmd_export.cpp).
  kiln::cli::ExportOptions export_opts;
  auto* export_cmd = kiln::cli::add_export_command(app, export_opts);

  // ONNX models as .kir graphs: kiln-import does it (cmd_import.h says why).
  auto* import_cmd = app.add_subcommand("import", "Import an ONNX model as a .kir graph and its params as .npy "
                                                  "files (kiln import --help for its flags)");
  import_cmd->prefix_command()->set_help_flag();

  std::vector<std::string> args{argv + 1, argv + argc};
  const std::string name = named_command(args);
  const std::vector<const CLI::App*> named =
      std::as_const(app).get_subcommands([&](const CLI::App* c) { return c->get_name() == name; });
  try {
    args = kiln::cli::expand_config_file(args, named.empty() ? nullptr : named.front());
  } catch (const kiln::Error& e) {
    std::cerr << "kiln: error: " << e.what() << '\n'
              << kiln::cli::help_hint(name.empty() ? "kiln" : "kiln " + name) << '\n';
    return 2;
  }
  // kiln train on a directory that holds a run continues it (tools/continue_run.h).
  try {
    if (name == "train") args = kiln::cli::continue_run_args(args);
  } catch (const kiln::Error& e) {
    std::cerr << "kiln: error: " << e.what() << '\n' << kiln::cli::help_hint("kiln train") << '\n';
    return 1;
  }
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes a vector last argument first
  try {
    app.parse(reversed);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << usage_error(app, args, e) << '\n';
    return 2;
  }

  try {
    if (*check) kiln::cli::check(graph_path);
    if (*dot) kiln::cli::dot(dot_opts);
    if (app.got_subcommand("ops")) kiln::cli::list_ops();
    if (*run) kiln::cli::run(run_opts);
    if (*profile) kiln::cli::profile(profile_opts);
    if (*compile) kiln::cli::compile(compile_opts);
    if (*grad) kiln::cli::grad(grad_opts);
    if (*train_graph) kiln::cli::train_graph(train_opts);
    if (*opt) kiln::cli::opt(opt_opts);
    if (*bench) kiln::cli::bench(bench_opts);
    if (*model_train && model_flags.model == "lm") kiln::cli::train_lm(*model_train, model_train_opts, model_flags);
    if (*model_train && model_flags.model == "transformer") kiln::cli::train(model_train_opts);
    if (*generate) kiln::cli::generate(generate_opts);
    if (*translate) kiln::cli::translate(translate_opts);
    if (*eval) kiln::cli::eval(eval_opts);
    if (*average) kiln::cli::average(average_opts);
    if (*batches) kiln::cli::write_batches(batches_opts);
    if (*prepare) kiln::cli::prepare(prepare_opts);
    if (*score) kiln::cli::score(score_opts);
    if (*export_cmd) kiln::cli::export_model(export_opts);
    if (*import_cmd) kiln::cli::exec_import(import_cmd->remaining());
  } catch (const kiln::ParseError& e) {
    return fail(e.what(), 1);  // already "FILE:LINE:COL: error: ..."
  } catch (const std::bad_alloc&) {  // the last line: sizes from outside are checked before they are allocated
    return fail(std::string("kiln: error: ") + kiln::out_of_memory_message(), 1);
  } catch (const std::exception& e) {
    return fail(std::string("kiln: error: ") + e.what(), 1);
  }
  return 0;
}
