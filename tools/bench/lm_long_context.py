#!/usr/bin/python3
"""The language model's training step at long contexts: kiln against its PyTorch peer.

  tools/bench/lm_long_context.py --contexts 1024,2048,4096,8192,16384 --threads 2

For each context T (batch 1, the default model: 4 layers, 128 wide, 4 heads), kiln's
step (kiln export --model lm, then kiln profile: the kernel time per step, median
of --steps) and torch_lm.py step (ms per step, median), each in its own process
under a memory limit (--limit-gib, so that a run that would not fit fails fast
instead of swapping), with its peak RSS. A context that does not fit is reported
as such and larger ones are not tried for that framework. Prints a markdown table.
"""
import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
KERNEL_TIME = re.compile(r"kernel time per step: ([\d.]+) ms")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kiln", default=os.path.join(HERE, "..", "..", "build", "kiln"))
    p.add_argument("--contexts", default="1024,2048,4096,8192,16384")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--limit-gib", type=float, default=20)
    p.add_argument("--sizes", default="", help="more model flags for both, e.g. \"--layers 2\"")
    return p.parse_args()


def measured(cmd, limit_gib):
    """(stdout, peak RSS in MiB) of cmd run under GNU time with an address-space limit, or
    (None, the reason) when it fails."""
    limit = int(limit_gib * 2 ** 30)

    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    done = subprocess.run(["/usr/bin/time", "-f", "maxrss %M"] + cmd, capture_output=True, text=True,
                          preexec_fn=cap)
    lines = done.stderr.strip().splitlines()
    if done.returncode != 0:
        reasons = [line for line in lines if not line.startswith(("maxrss", "Command exited"))]
        return None, (reasons or ["exit %d" % done.returncode])[-1][:120]
    return done.stdout, int(lines[-1].split()[1]) / 1024


def main():
    args = parse_args()
    sizes = args.sizes.split()
    rows, fits = [], {"kiln": True, "torch": True}
    for t in (int(c) for c in args.contexts.split(",")):
        row = {"context": t}
        with tempfile.TemporaryDirectory() as work:
            if fits["kiln"]:
                subprocess.run([args.kiln, "export", "--model", "lm", "--batch", "1", "--context", str(t), "-o", work]
                               + sizes, check=True, capture_output=True)
                out, info = measured([args.kiln, "profile", os.path.join(work, "train_step.kir"), "--steps",
                                      str(args.steps), "--threads", str(args.threads), "--trace",
                                      os.path.join(work, "t.json")], args.limit_gib)
                if out is None:
                    fits["kiln"], row["kiln"] = False, f"does not fit ({info})"
                else:
                    row["kiln"] = (float(KERNEL_TIME.search(out).group(1)), info)
            if fits["torch"]:
                out, info = measured([os.path.join(HERE, "torch_lm.py"), "step", "--context", str(t), "--batch", "1",
                                      "--steps", str(args.steps), "--threads", str(args.threads)] + sizes,
                                     args.limit_gib)
                if out is None:
                    fits["torch"], row["torch"] = False, f"does not fit ({info})"
                else:
                    row["torch"] = (json.loads(out.strip().splitlines()[-1])["ms_per_step"], info)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)

    def cell(v):
        if v is None:
            return "not tried"
        if isinstance(v, str):
            return v
        return f"{v[0]:.0f} ms, {v[1]:.0f} MiB"
    print(f"| context | kiln (step, peak RSS) | PyTorch 1.13 (step, peak RSS) |\n|---|---|---|")
    for r in rows:
        print(f"| {r['context']} | {cell(r.get('kiln'))} | {cell(r.get('torch'))} |")


if __name__ == "__main__":
    main()
