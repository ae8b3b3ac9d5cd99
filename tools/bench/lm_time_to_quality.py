#!/usr/bin/python3
"""Time to quality of the language model: kiln (kiln train --model lm) and its PyTorch
peer (torch_lm.py train) train the same model on the same text with the same schedule,
side by side, each on its own core (--threads 1 each, the default), kiln for
--kiln-minutes and PyTorch for --minutes of training time, both evaluated on the same
dev windows every --eval-minutes.

  tools/bible/make_lm_corpus.py /tmp/web
  tools/bench/lm_time_to_quality.py --train /tmp/web/train.txt --valid /tmp/web/valid.txt \\
      --kiln-minutes 30 --minutes 60 --samples-at 5,15,30 --work /tmp/lm-ttq

kiln's run stops at each of --samples-at minutes, writes a sample (kiln generate,
seeded) and continues (a continued run is the same run; its compile counts as
training time). Writes WORK/lm_time_to_quality.md (the table, the minute at which each
reaches the other's final dev loss, the samples) and WORK/lm_time_to_quality.svg.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from time_to_quality import crossing_notes, svg  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kiln", default=os.path.join(HERE, "..", "..", "build", "kiln"))
    p.add_argument("--train", required=True)
    p.add_argument("--valid", required=True)
    p.add_argument("--kiln-minutes", type=float, default=30)
    p.add_argument("--minutes", type=float, default=60, help="PyTorch's training time")
    p.add_argument("--eval-minutes", type=float, default=1)
    p.add_argument("--samples-at", default="5,15,30", help="kiln's minutes at which to write a sample")
    p.add_argument("--prompt", default="Jesus said to them,")
    p.add_argument("--threads", type=int, default=1, help="threads of each framework")
    p.add_argument("--train-args", default="", help="more kiln train flags (sizes carry over to PyTorch)")
    p.add_argument("--work", required=True)
    p.add_argument("--skip", choices=("kiln", "torch"), help="reuse that framework's run in WORK")
    return p.parse_args()


def sizes(train_args):
    """The model flags that both frameworks take, from --train-args."""
    words, out = shlex.split(train_args), []
    for flag in ("--context", "--batch-size", "--d-model", "--heads", "--d-ff", "--layers", "--lr", "--warmup",
                 "--positions"):
        if flag in words:
            value = words[words.index(flag) + 1]
            out += ["--batch" if flag == "--batch-size" else flag, value]
    return out


def kiln_points(work):
    """kiln's dev evaluations with the train loss logged last before each."""
    points, train = [], None
    with open(os.path.join(work, "kiln", "log.jsonl")) as f:
        for line in f:
            e = json.loads(line)
            if e["event"] == "train":
                train = e["loss"]
            elif e["event"] == "dev":
                points.append({"minutes": e["minutes"], "step": e["step"], "dev_loss": e["loss"],
                               "train_loss": train if train is not None else e["loss"]})
    return points


def torch_points(work):
    with open(os.path.join(work, "torch.log")) as f:
        return [json.loads(line) for line in f if line.startswith("{")]


def run_kiln(args):
    ckpt = os.path.join(args.work, "kiln")
    stops = sorted({float(m) for m in args.samples_at.split(",") if float(m) < args.kiln_minutes} |
                   {args.kiln_minutes})
    for minutes in stops:
        cmd = [args.kiln, "train", "--model", "lm", "--train", args.train, "--valid", args.valid, "--checkpoint", ckpt,
               "--minutes", f"{minutes:g}", "--eval-minutes", f"{args.eval_minutes:g}", "--threads",
               str(args.threads)] + shlex.split(args.train_args)
        print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
        with open(os.path.join(args.work, "kiln.log"), "a") as log:
            subprocess.run(cmd, check=True, stdout=log, stderr=subprocess.STDOUT)
        sample = subprocess.run([args.kiln, "generate", "--checkpoint", ckpt, "--seed", "1", "--max-tokens", "300",
                                 "--top-k", "40", "--threads", str(args.threads), args.prompt],
                                check=True, capture_output=True, text=True, errors="replace").stdout
        with open(os.path.join(args.work, f"sample_{minutes:g}min.txt"), "w") as f:
            f.write(sample)


def main():
    args = parse_args()
    os.makedirs(args.work, exist_ok=True)
    torch = None
    if args.skip != "torch":
        cmd = [os.path.join(HERE, "torch_lm.py"), "train", "--train", args.train, "--valid", args.valid, "--minutes",
               f"{args.minutes:g}", "--eval-minutes", f"{args.eval_minutes:g}", "--threads", str(args.threads)]
        cmd += sizes(args.train_args)
        print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
        torch = subprocess.Popen(cmd, stdout=open(os.path.join(args.work, "torch.log"), "w"), stderr=subprocess.STDOUT)
    if args.skip != "kiln":
        run_kiln(args)
    if torch and torch.wait() != 0:
        sys.exit("torch_lm.py failed: see " + os.path.join(args.work, "torch.log"))
    series = [("kiln", kiln_points(args.work)), ("PyTorch 1.13", torch_points(args.work))]
    for _, pts in series[1:]:
        for p in pts:
            p.setdefault("train_loss", p["dev_loss"])
    notes = crossing_notes(series)
    with open(os.path.join(args.work, "lm_time_to_quality.svg"), "w") as f:
        f.write(svg(series, "language model: dev loss over training time", "loss (nats per byte)",
                    f"training minutes ({args.threads} thread each, side by side)"))
    lines = ["| framework | minutes | step | dev loss | bits/byte |", "|---|---|---|---|---|"]
    for name, pts in series:
        lines += [f"| {name} | {p['minutes']:.1f} | {p['step']} | {p['dev_loss']:.4f} | {p['dev_loss'] / 0.693147:.3f} |"
                  for p in pts]
    lines += [""] + notes + [""]
    for name in sorted(os.listdir(args.work)):
        if name.startswith("sample_"):
            with open(os.path.join(args.work, name)) as f:
                lines += [f"{name}:", "", "```", f.read().rstrip(), "```", ""]
    with open(os.path.join(args.work, "lm_time_to_quality.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(notes))


if __name__ == "__main__":
    main()
