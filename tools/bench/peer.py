#!/usr/bin/python3
"""kiln against PyTorch on the same Transformer training step, one process per
measurement, the two frameworks alternating so that the machine's load hits both.

  tools/bench/peer.py [--configs tiny,small,base] [--threads 1,2] [--markdown FILE]
                      [--translate CHECKPOINT [--translate-only] [--beam N]]

Runs `kiln bench --peak` once, then for each config and thread count `kiln bench
--model transformer --json` and torch_transformer.py bench, and prints ms/step
(median, min), tokens/s, GFLOP/s (kiln's matmul FLOPs counted from its train graph,
the same for both), % of the f32 FMA peak, peak RSS, and torch/kiln ratios. With
--translate, also greedy decoding of a checkpoint's test split (de-en, or a text task
run's): `kiln eval --beam 1` against torch_transformer.py translate (KV cache, and
full re-run) on the same source ids, in seconds and sentences per second; --beam N
makes it beam search, `kiln eval --beam N` against torch's (KV cache only).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# The same for both frameworks (torch_transformer.py explains why it wants them).
MALLOC_TUNING = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(1 << 40)}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kiln", default="build/kiln", help="the kiln binary")
    p.add_argument("--python", default="/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable,
                   help="the Python that has torch (Debian's python3-torch is for /usr/bin/python3)")
    p.add_argument("--configs", default="tiny,small,base")
    p.add_argument("--precision", choices=("f32", "bf16"), default="f32",
                   help="bf16: kiln bench --precision bf16 against torch under CPU autocast bf16")
    p.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    p.add_argument("--repeats", type=int, default=10, help="timed steps per run (at least 3)")
    p.add_argument("--max-ms", type=float, default=3000, help="stop timing a run after this long")
    p.add_argument("--glibc-malloc-defaults", action="store_true",
                   help="leave glibc malloc's mmap and trim thresholds alone (for both frameworks)")
    p.add_argument("--omp-wait-policy", choices=("passive", "active", "unset"), default="passive",
                   help="torch's OMP_WAIT_POLICY (torch_transformer.py --help)")
    p.add_argument("--markdown", help="also write the tables as markdown to this file")
    p.add_argument("--translate", metavar="CHECKPOINT", help="also time greedy decoding of this checkpoint's test "
                   "split (a de-en or text task checkpoint)")
    p.add_argument("--translate-only", action="store_true", help="with --translate: skip the training step")
    p.add_argument("--translate-threads", type=int, default=0, help="threads for --translate (default: the most "
                   "of --threads)")
    p.add_argument("--beam", type=int, default=1, help="with --translate: beam size (1: greedy); more: beam search "
                   "(length penalty 0.6) by both, torch with its KV cache only (its full re-run took 10 times as "
                   "long with beam 4)")
    args = p.parse_args()
    args.configs = args.configs.split(",")
    args.threads = [int(t) for t in args.threads.split(",")]
    if any(c not in ("tiny", "small", "base") for c in args.configs) or min(args.threads) < 1 or args.repeats < 3:
        p.error("configs are tiny, small, base; thread counts positive; --repeats at least 3")
    if args.translate_only and not args.translate:
        p.error("--translate-only needs --translate")
    if args.beam < 1:
        p.error("--beam must be positive")
    args.translate_threads = args.translate_threads or max(args.threads)
    return args


def environment(args):
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    for name, value in MALLOC_TUNING.items():
        if args.glibc_malloc_defaults:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def run(cmd, env):
    """(exit code, stdout, stderr, wall seconds, the process's peak RSS in MiB)."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=err, env=env)
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return proc.returncode, out.decode(), err.read().decode(), wall, usage.ru_maxrss / 1024


def run_json(cmd, env):
    """The last line of a run's stdout as JSON, or None (and the error on stderr)."""
    code, out, err, _, _ = run(cmd, env)
    lines = out.strip().splitlines()
    if code != 0 or not lines:
        print(f"failed ({code}): {' '.join(map(str, cmd))}\n{err.strip()[-2000:]}", file=sys.stderr)
        return None
    return json.loads(lines[-1])


def torch_script(args, mode):
    flags = ["--omp-wait-policy", args.omp_wait_policy]
    if args.glibc_malloc_defaults:
        flags.append("--glibc-malloc-defaults")
    return [args.python, os.path.join(HERE, "torch_transformer.py"), mode, *flags]


def measure_steps(args, env, peak):
    rows = []
    for config in args.configs:
        for threads in args.threads:
            common = ["--config", config, "--threads", threads, "--repeats", args.repeats, "--max-ms", args.max_ms,
                      "--precision", args.precision]
            kiln = run_json([args.kiln, "bench", "--model", "transformer", "--json", *common], env)
            torch = run_json(torch_script(args, "bench") + common, env)
            flops = (kiln or torch or {}).get("flops_per_step")
            if kiln and torch and kiln["flops_per_step"] != torch["flops_per_step"]:
                print(f"note: {config}: kiln's graph counts {kiln['flops_per_step']:.4g} matmul FLOPs, "
                      f"torch_model.py's formula {torch['flops_per_step']:.4g}; the table uses kiln's", file=sys.stderr)
            for name, r in (("kiln", kiln), ("torch", torch)):
                row = {"config": config, "threads": threads, "framework": name, "result": r}
                if r:
                    gflops = flops / r["median_ms"] / 1e6
                    row.update(gflops=gflops, pct_peak=100 * gflops / peak_at(peak, threads))
                rows.append(row)
            ms = lambda r: f"{r['median_ms']:.1f} ms" if r else "failed"
            print(f"  {config}, {threads} thread(s): kiln {ms(kiln)}, torch {ms(torch)}", file=sys.stderr, flush=True)
    return rows


def peak_at(peak, threads):
    """The FMA peak at `threads`: measured at 1 and at the most threads, else 1-thread x threads."""
    if threads == 1:
        return peak["gflops_1"]
    return peak["gflops_n"] if threads == peak["threads"] else peak["gflops_1"] * threads


def step_table(rows):
    head = ["config", "threads", "framework", "ms/step median", "ms/step min", "tokens/s", "GFLOP/s", "% FMA peak",
            "peak RSS MiB", "torch/kiln time", "torch/kiln RSS"]
    body, kiln = [], None
    for row in rows:
        r = row["result"]
        if not r:
            body.append([row["config"], row["threads"], row["framework"], "failed"] + [""] * 8)
            continue
        cells = [row["config"], row["threads"], row["framework"], f"{r['median_ms']:.1f}", f"{r['min_ms']:.1f}",
                 f"{r['tokens_per_s']:.0f}", f"{row['gflops']:.1f}", f"{row['pct_peak']:.1f}",
                 f"{r['peak_rss_mib']:.0f}"]
        if row["framework"] == "kiln":
            kiln = r
            cells += ["", ""]
        else:
            same = kiln and kiln["config"] == r["config"] and kiln["threads"] == r["threads"]
            cells += ([f"{r['median_ms'] / kiln['median_ms']:.2f}", f"{r['peak_rss_mib'] / kiln['peak_rss_mib']:.2f}"]
                      if same else ["", ""])
        body.append(cells)
    return head, body


def decoding_name(beam):
    return f"beam {beam}" if beam > 1 else "greedy"


def measure_translation(args, env, workdir):
    """Greedy decoding (or beam search) of the checkpoint's test split, kiln's (its time
    includes the JIT compiles of the decoder's shapes) and torch's with a KV cache and,
    greedy only, without, on the source ids kiln dumps. Returns the table and torch's
    last result (for the notes)."""
    ids = os.path.join(workdir, "ids.txt")
    code, _, err, _, _ = run([args.kiln, "eval", "--checkpoint", args.translate, "--split", "test", "--dump-ids", ids],
                             env)
    if code != 0:
        print(f"kiln eval --dump-ids failed:\n{err}", file=sys.stderr)
        return [], [], None
    with open(ids) as f:
        sentences = sum(1 for _ in f)
    t = args.translate_threads
    body = [row for row in [kiln_translation(args, env, t, sentences)] if row]
    torch = None
    for decoding in ("kv", "rerun") if args.beam == 1 else ("kv",):
        beam = ["--beam", args.beam] if args.beam > 1 else []
        r = run_json(torch_script(args, "translate") + ["--checkpoint", args.translate, "--ids", ids,
                                                        "--decoding", decoding, *beam, "--threads", t], env)
        if r:
            torch = r
            body.append([t, "torch", r["decoding"], r["sentences"], f"{r['decode_s']:.2f}",
                         f"{r['sentences_per_s']:.1f}", f"{r['wall_s']:.1f}", f"{100 * r['exact_match']:.2f}%",
                         f"{r['peak_rss_mib']:.0f}"])
    head = ["threads", "framework", "decoding", "sentences", "decode s", "sentences/s", "process wall s",
            "exact match", "peak RSS MiB"]
    return head, body, torch


def kiln_translation(args, env, threads, sentences):
    """kiln eval --beam N's table row (decoding time as kiln reports it), or None if it failed."""
    code, out, err, wall, rss = run([args.kiln, "eval", "--checkpoint", args.translate, "--split", "test",
                                     "--beam", args.beam, "--threads", threads], env)
    if code != 0:
        print(f"kiln eval failed:\n{err}", file=sys.stderr)
        return None
    took = float(next(line for line in out.splitlines() if line.startswith("decoding took")).split()[2])
    exact = next(line for line in out.splitlines() if line.startswith("exact match")).split()[2]
    return [threads, "kiln", f"{decoding_name(args.beam)}, models/decode's Decoder", sentences, f"{took:.2f}",
            f"{sentences / took:.1f}", f"{wall:.1f}", exact, f"{rss:.0f}"]


def text_table(head, body):
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    line = lambda cells: "  ".join(str(c).rjust(w) for c, w in zip(cells, widths))
    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(r) for r in body])


def markdown_table(head, body):
    return "\n".join(["| " + " | ".join(map(str, head)) + " |", "|" + "---|" * len(head)]
                     + ["| " + " | ".join(map(str, r)) + " |" for r in body])


def training_step_tables(args, env):
    """kiln's FMA peak and the training-step table, or (None, []) with --translate-only."""
    if args.translate_only:
        return None, []
    peak = run_json([args.kiln, "bench", "--peak", "--json", "--threads", max(args.threads)], env)
    if not peak:
        sys.exit("kiln bench --peak failed")
    rows = measure_steps(args, env, peak)
    torch = next((r["result"] for r in rows if r["framework"] == "torch" and r["result"]), None)
    title = "Training step" + (" (bf16: kiln --precision bf16, torch CPU autocast)" if args.precision == "bf16" else "")
    return peak, [(title, *step_table(rows), torch)]


def notes_on(peak, torch, load_before, load_after):
    """The machine and torch's environment, as measured."""
    notes = []
    if peak:
        peak_n = f", {peak['gflops_n']:.0f} on {peak['threads']}" if peak["threads"] > 1 else ""
        notes.append(f"CPU {peak['cpu']}; f32 FMA peak ({peak['isa']}): {peak['gflops_1']:.0f} GFLOP/s on 1 "
                     f"thread{peak_n}")
    torch = torch or {}
    notes.append(f"torch {torch.get('version')}, BLAS {torch.get('blas_alternative')} (OpenBLAS core "
                 f"{torch.get('openblas_core')}), ATen "
                 f"{torch.get('cpu_capability')}, malloc: {torch.get('malloc')}, OMP_WAIT_POLICY "
                 f"{torch.get('omp_wait_policy')}")
    notes.append(f"load average (1 min) {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    if peak:
        notes.append("GFLOP/s: the step's matmul FLOPs (kiln's train graph, forward and backward) per median step; "
                     "tokens: source + target")
    return notes


def main():
    args = parse_args()
    env = environment(args)
    load_before = os.getloadavg()
    peak, tables = training_step_tables(args, env)
    if args.translate:
        with tempfile.TemporaryDirectory() as workdir:
            head, body, torch = measure_translation(args, env, workdir)
        if body:
            title = "Greedy translation" if args.beam == 1 else f"Beam-{args.beam} translation"
            tables.append((f"{title} of the test split", head, body, torch))
    torch = next((t for *_, t in tables if t), None)
    notes = notes_on(peak, torch, load_before, os.getloadavg())
    print("\n".join(notes))
    for title, head, body, _ in tables:
        print(f"\n{title}\n{text_table(head, body)}")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(f"- {n}" for n in notes) + "\n")
            for title, head, body, _ in tables:
                f.write(f"\n### {title}\n\n{markdown_table(head, body)}\n")


if __name__ == "__main__":
    main()
