#!/usr/bin/python3
"""kiln's data-parallel training step against PyTorch DistributedDataParallel, on
this machine: 1 rank x 2 threads against 2 ranks x 1 thread, the same model and
the same global batch (2B sentences: B per rank), each framework both ways,
alternating, one process (or job) per measurement.

  tools/bench/data_parallel.py [--configs small,base] [--rounds 3] [--markdown FILE]

kiln: `kiln bench --model transformer --json` at --threads 2 and --batch 2B, and
`mpirun -np 2 kiln bench ... --threads 1 --batch B`, whose gradients the
allreduce-buckets pass sums in buckets during the backward pass; it also reports
the allreduce's time in flight (start to seen done, seen between kernels), the
time the step waited for it, and so the share of the step spent waiting and
the share of the time in flight that overlapped the kernels.
PyTorch: torch_transformer.py bench at --threads 2 and --batch 2B, and with
--ranks 2 --threads 1 --batch B (DDP over gloo, its 25 MiB buckets).
The table gives the median over rounds of each run's median step.
"""
import argparse
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import peer  # noqa: E402 (run_json, environment, torch_script: one way to run each side)

# Unbound, as the torch processes are.
MPIRUN = ["mpirun", "-np", "2", "--allow-run-as-root", "--bind-to", "none", "--mca", "btl", "self,vader",
          "--mca", "btl_vader_single_copy_mechanism", "none", "-x", "MALLOC_MMAP_MAX_", "-x", "MALLOC_TRIM_THRESHOLD_"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kiln", default="build/kiln", help="the kiln binary")
    p.add_argument("--python", default="/usr/bin/python3", help="the Python that has torch")
    p.add_argument("--configs", default="small,base")
    p.add_argument("--rounds", type=int, default=3, help="measurements of each of the four, alternating")
    p.add_argument("--repeats", type=int, default=10, help="timed steps per measurement (at least 3)")
    p.add_argument("--max-ms", type=float, default=20000, help="stop timing a measurement after this long")
    p.add_argument("--markdown", help="also write the table as markdown to this file")
    args = p.parse_args()
    args.configs = args.configs.split(",")
    # What peer.py's helpers read.
    args.glibc_malloc_defaults = False
    args.omp_wait_policy = "passive"
    return args


def batch_of(config):
    return 16 if config == "base" else 32  # per rank: kiln bench's and torch_transformer.py's default


def measure(args, env, config):
    b = batch_of(config)
    common = ["--config", config, "--repeats", args.repeats, "--max-ms", args.max_ms]
    runs = {
        "kiln 1x2": [args.kiln, "bench", "--model", "transformer", "--json", "--threads", 2, "--batch", 2 * b, *common],
        "kiln 2x1": MPIRUN + [args.kiln, "bench", "--model", "transformer", "--json", "--threads", 1, "--batch", b,
                              *common],
        "torch 1x2": peer.torch_script(args, "bench") + ["--threads", 2, "--batch", 2 * b, *common],
        "torch DDP 2x1": peer.torch_script(args, "bench") + ["--threads", 1, "--batch", b, "--ranks", 2, *common],
    }
    results = {name: [] for name in runs}
    for r in range(args.rounds):
        for name, cmd in runs.items():
            out = peer.run_json(cmd, env)
            if out:
                results[name].append(out)
                print(f"{config} round {r + 1} {name}: {out['median_ms']:.0f} ms/step, "
                      f"{out['tokens_per_s']:.0f} tokens/s", file=sys.stderr)
    return results


def median(rows, key):
    values = [r[key] for r in rows if key in r]
    return statistics.median(values) if values else float("nan")


def table(args, cpu, all_results):
    lines = [f"CPU: {cpu}; tokens/s are source + target tokens of the global batch per second "
             f"(median of {args.rounds} runs' medians)", "",
             "| config | run | ms/step | tokens/s | vs 1x2 | allreduce MiB | waiting (% of step) | "
             "overlapped (% of in flight) |",
             "|---|---|---|---|---|---|---|---|"]
    for config, results in all_results.items():
        for name, rows in results.items():
            base = "kiln 1x2" if name.startswith("kiln") else "torch 1x2"
            ratio = median(rows, "tokens_per_s") / median(results[base], "tokens_per_s")
            comm = ["", "", ""]
            if name == "kiln 2x1" and rows:
                wait, flight = median(rows, "allreduce_wait_ms"), median(rows, "allreduce_in_flight_ms")
                comm = [f"{median(rows, 'allreduce_bytes') / 2**20:.1f}", f"{100 * wait / median(rows, 'median_ms'):.1f}",
                        f"{100 * (1 - wait / flight):.0f}"]
            lines.append(f"| {config} | {name} | {median(rows, 'median_ms'):.0f} | {median(rows, 'tokens_per_s'):.0f} | "
                         f"{ratio:.3f} | " + " | ".join(comm) + " |")
        kiln, ddp = median(results["kiln 2x1"], "tokens_per_s"), median(results["torch DDP 2x1"], "tokens_per_s")
        lines.append(f"| {config} | kiln 2x1 / torch DDP 2x1 | | | {kiln / ddp:.3f} | | | |")
    return "\n".join(lines) + "\n"


def main():
    args = parse_args()
    env = peer.environment(args)
    peak = peer.run_json([args.kiln, "bench", "--peak", "--json"], env) or {}
    all_results = {config: measure(args, env, config) for config in args.configs}
    text = table(args, peak.get("cpu", "?"), all_results)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
