#!/usr/bin/python3
"""What kiln's data-parallel step would give at many ranks, on paper: ring
allreduce's cost model driven by a measured step.

  mpirun -np 2 build/kiln bench --model transformer --config small --threads 1 --trace small.json
  tools/bench/scaling_model.py small=small.json [base=base.json] [--markdown FILE]

From the trace (rank 0's, 5 profiled steps) it takes the median step's compute
time (the step minus its waits), each gradient bucket's size, the compute time
at which its allreduce starts (its last gradient made) and at which the step
first needs it (Adam), and the kernel boundaries, where kiln's runtime calls
MPI_Testall: MPI moves a nonblocking allreduce on only inside MPI calls, so
between two boundaries no new step of the ring can start.

Each bucket of b bytes is a ring allreduce over p ranks: 2(p-1) steps, each
sending b/p bytes over the slowest link, so a step takes b/(p*BW) + alpha and
the whole bucket 2(p-1)/p * b/BW + 2(p-1)*alpha. Buckets go over the network
one after another, in the order they start. A step of the ring can start only
at a kernel boundary or while the program waits (then they run back to back).
Time the program waits is added to the step; the rest overlaps compute.
Also shown: the same with MPI progressing on its own (a progress thread), no
boundary limit. Assumed per network (override with --net NAME=GBITS:ALPHA_US):
10 and 25 Gb/s Ethernet over TCP (alpha 25 and 15 us), 100 Gb/s RDMA (3 us).
Not modelled: more than one rank per machine (shared memory inside, the
network between machines), contention beyond the slowest link, stragglers.
"""
import argparse
import bisect
import json
import sys

NETWORKS = {"10 Gb/s": (10.0, 25.0), "25 Gb/s": (25.0, 15.0), "100 Gb/s": (100.0, 3.0)}
RANKS = [8, 64, 512]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("traces", nargs="+", help="NAME=TRACE.json (kiln bench --model ... --trace) per config")
    p.add_argument("--ranks", default=",".join(map(str, RANKS)))
    p.add_argument("--net", action="append", default=[], help="NAME=GBITS:ALPHA_US (replaces the default three)")
    p.add_argument("--markdown", help="also write the tables as markdown to this file")
    args = p.parse_args()
    args.ranks = [int(r) for r in args.ranks.split(",")]
    if args.net:
        nets = {}
        for spec in args.net:
            name, _, rest = spec.partition("=")
            gbits, _, alpha = rest.partition(":")
            nets[name] = (float(gbits), float(alpha))
        args.networks = nets
    else:
        args.networks = NETWORKS
    return args


class Step:
    """One measured step, in compute time (ms from the step's first kernel, waits taken out)."""

    def __init__(self, compute_ms, buckets, boundaries):
        self.compute_ms = compute_ms
        self.buckets = buckets  # [(bytes, ready_ms, needed_ms)] in start order
        self.boundaries = boundaries  # sorted kernel ends


def read_steps(path):
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    calls = [e for e in events if e.get("ph") == "X" and e.get("tid") == 0 and "call" in e.get("args", {})]
    flights = [e for e in events if e.get("cat") == "collective" and not e["name"].startswith("wait ")]
    waits = [e for e in events if e.get("cat") == "collective" and e["name"].startswith("wait ")]
    calls.sort(key=lambda e: e["ts"])
    runs, current = [], []
    for e in calls:  # a run starts again at call 0
        if current and e["args"]["call"] <= current[-1]["args"]["call"]:
            runs.append(current)
            current = []
        current.append(e)
    if current:
        runs.append(current)
    if not runs:
        sys.exit(f"{path}: no kernel calls in the trace (was it written by kiln bench --model ... --trace?)")
    steps = []
    for i, run in enumerate(runs):
        begin = run[0]["ts"]
        end = runs[i + 1][0]["ts"] if i + 1 < len(runs) else run[-1]["ts"] + run[-1]["dur"]
        in_run = lambda e: begin <= e["ts"] < end  # noqa: E731
        run_waits = sorted((w for w in waits if in_run(w)), key=lambda w: w["ts"])

        def compute_time(t):  # wall time of the trace -> this step's compute time
            stalled = sum(min(w["dur"], max(0.0, t - w["ts"])) for w in run_waits)
            return (t - begin - stalled) / 1000

        by_id = {w["args"]["collective"]: w for w in run_waits}
        buckets = []
        for c in sorted((c for c in flights if in_run(c)), key=lambda c: c["ts"]):
            wait = by_id.get(c["args"]["collective"])
            needed = compute_time(wait["ts"]) if wait else compute_time(end)
            buckets.append((c["args"]["bytes"], compute_time(c["ts"]), needed))
        last = run[-1]["ts"] + run[-1]["dur"]
        boundaries = sorted(compute_time(e["ts"] + e["dur"]) for e in run)
        steps.append(Step(compute_time(last), buckets, boundaries))
    if not steps[0].buckets:
        sys.exit(f"{path}: no allreduce in the trace (run the benchmark under mpirun -np 2)")
    steps.sort(key=lambda s: s.compute_ms)
    return steps[len(steps) // 2]  # the median step


def simulate(step, p, gbits, alpha_us, progress_at_boundaries=True):
    """The time the step waits for its allreduces at p ranks (ms)."""
    bytes_per_ms = gbits * 1e9 / 8 / 1000
    alpha = alpha_us / 1000
    stall = 0.0  # wall = compute + stall, for compute times after the last wait so far
    net_free = 0.0  # wall time at which the ring's previous step ends
    for nbytes, ready, needed in step.buckets:
        phase = nbytes / p / bytes_per_ms + alpha
        left = 2 * (p - 1)
        t = max(net_free, ready + stall)
        # Steps that start at kernel boundaries before the bucket is needed.
        while left > 0:
            if progress_at_boundaries:
                i = bisect.bisect_left(step.boundaries, t - stall)
                if i == len(step.boundaries) or step.boundaries[i] >= needed:
                    break
                t = step.boundaries[i] + stall
            elif t >= needed + stall:
                break
            t += phase
            left -= 1
        # The rest while the program waits: back to back.
        done = t + left * phase
        stall += max(0.0, done - (needed + stall))
        net_free = done
    return stall


def cells(step, p, gbits, alpha):
    """Ring time of all buckets, time waited, efficiency, and efficiency with a progress thread."""
    ring = sum(2 * (p - 1) / p * b / (gbits * 1e9 / 8 / 1000) + 2 * (p - 1) * alpha / 1000 for b, _, _ in step.buckets)
    waited = simulate(step, p, gbits, alpha)
    free = simulate(step, p, gbits, alpha, progress_at_boundaries=False)
    return [f"{ring:.0f}", f"{waited:.0f}", f"{100 * step.compute_ms / (step.compute_ms + waited):.1f}%",
            f"{100 * step.compute_ms / (step.compute_ms + free):.1f}%"]


def main():
    args = parse_args()
    steps = []
    lines = []
    for spec in args.traces:
        name, _, path = spec.partition("=")
        step = read_steps(path)
        steps.append((name, step))
        mib = sum(b for b, _, _ in step.buckets) / (1 << 20)
        lines.append(f"- {name}: compute {step.compute_ms:.0f} ms per step (one rank); {len(step.buckets)} buckets, "
                     f"{mib:.1f} MiB, the first starting at {step.buckets[0][1]:.0f} ms and the last at "
                     f"{step.buckets[-1][1]:.0f} ms, all needed from {min(n for _, _, n in step.buckets):.0f} ms; "
                     f"{len(step.boundaries)} kernel boundaries")
    lines.append("")
    header = ["network", "ranks"]
    for name, _ in steps:
        header += [f"{name}: ring (ms)", f"{name}: waited (ms)", f"{name}: efficiency",
                   f"{name}: with a progress thread"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for net, (gbits, alpha) in args.networks.items():
        for p in args.ranks:
            row = [net, str(p)]
            for _, step in steps:
                row += cells(step, p, gbits, alpha)
            lines.append("| " + " | ".join(row) + " |")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
