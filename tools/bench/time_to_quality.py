#!/usr/bin/python3
"""Time to quality on de-en: kiln and its PyTorch peer train the same model on the
same batches with the same schedule, one after the other (kiln for --kiln-minutes,
PyTorch for --minutes of training time); both are scored by kiln's BLEU (beam 4,
length penalty 0.6) on the test split at the --bleu-at minutes.

  tools/bench/time_to_quality.py --minutes 60 --eval-minutes 10 --work /tmp/ttq
  tools/bench/time_to_quality.py ... --skip kiln        # reuse WORK/kiln's run

kiln trains with its default recipe for the budget (`kiln train --help`), keeping a
snapshot at each evaluation; `kiln batches` writes the epochs it trains on, and
torch_transformer.py trains on those files and writes a kiln checkpoint at each of
its evaluations. Training time counts compiles (kiln) and excludes dev evaluations
and saves (both). Writes WORK/time_to_quality.md (the table) and
WORK/time_to_quality.svg (dev loss over minutes with the test BLEU points).
"""
import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEV = re.compile(r"dev at step (\d+) \(([\d.]+) min\): loss ([\d.]+)")
BLEU = re.compile(r"BLEU = ([\d.]+)")


def run(cmd, log=None, **kw):
    print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    if log:
        with open(log, "w") as f:
            return subprocess.run(cmd, check=True, stdout=f, stderr=subprocess.STDOUT, text=True, **kw)
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, **kw)


def recipe(kiln_work):
    """The settings kiln's run trained with (its recipe's, `kiln train --help`), from its checkpoint."""
    meta = read_metadata(f"{kiln_work}/checkpoint.safetensors")
    config, state = json.loads(meta["config"]), json.loads(meta["trainer"])
    return {"config": config["name"].split("+")[0], "vocab": str(config["vocab"]),
            "batch_tokens": str(state["batch_tokens"]), "warmup": str(state["warmup"]),
            "lr_factor": str(state["lr_factor"]), "dropout": str(config["dropout"]),
            "label_smoothing": str(config["label_smoothing"])}


def test_bleu(args, checkpoint):
    """kiln eval's test BLEU, kept beside the checkpoint so that a rerun does not decode again."""
    kept = f"{checkpoint}/test_bleu.txt"
    if not os.path.exists(kept):
        out = run([args.kiln, "eval", "--checkpoint", checkpoint, "--split", "test"]).stdout
        with open(kept, "w") as f:
            f.write(BLEU.search(out).group(1) + "\n")
    with open(kept) as f:
        return float(f.read())


def train_kiln(args, work):
    run([args.kiln, "train", "--task", "de-en", "--checkpoint", work, "--minutes", str(args.kiln_minutes),
         "--eval-minutes", str(args.eval_minutes), "--keep-snapshots", "1000",
         "--eval-sentences", "200"], log=work + ".log")


def kiln_points(work):
    """kiln's dev evaluations from its log, each with the mean train loss of the steps before it."""
    if not os.path.exists(work + ".log"):
        return []
    with open(work + ".log") as f:
        evals = DEV.findall(f.read())
    history = json.loads(read_metadata(f"{work}/checkpoint.safetensors")["trainer"])["train_loss"]
    points, previous = [], 0
    for step, minutes, loss in evals:
        step = int(step)
        window = [l for s, l in history if previous < s <= step]
        points.append({"minutes": float(minutes), "step": step, "dev_loss": float(loss),
                       "train_loss": sum(window) / len(window), "checkpoint": f"{work}/snapshots/step-{step:08d}"})
        previous = step
    return points


def train_torch(args, work, kiln_work, r):
    tokens = r["batch_tokens"]
    os.makedirs(work, exist_ok=True)
    batches = []
    for epoch in range(args.epochs):
        path = f"{work}/train-{epoch}.jsonl"
        if not os.path.exists(path):
            run([args.kiln, "batches", "--task", "de-en", "--checkpoint", kiln_work, "--epoch", str(epoch),
                 "--batch-tokens", tokens, "-o", path])
        batches.append(path)
    dev = f"{work}/dev.jsonl"
    run([args.kiln, "batches", "--task", "de-en", "--checkpoint", kiln_work, "--split", "dev",
         "--batch-tokens", tokens, "-o", dev])
    cmd = [sys.executable, f"{HERE}/torch_transformer.py", "train", "--config", r["config"], "--vocab", r["vocab"],
           "--batches", *batches, "--dev-batches", dev, "--minutes", str(args.minutes),
           "--eval-minutes", str(args.eval_minutes), "--warmup", r["warmup"], "--lr-factor", r["lr_factor"],
           "--dropout", r["dropout"], "--label-smoothing", r["label_smoothing"], "--save", f"{work}/checkpoints",
           "--template", kiln_work]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    run(cmd, log=work + ".log")


def torch_points(work):
    if not os.path.exists(work + ".log"):
        return []
    with open(work + ".log") as f:
        return [json.loads(line) for line in f if line.startswith('{"minutes"')]


def read_metadata(path):
    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        return json.loads(f.read(size))["__metadata__"]


def svg(series, title):
    """Dev and train loss over training minutes for each framework, BLEU labels at the scored points."""
    w, h, left, right, top, bottom = 760, 420, 60, 20, 40, 50
    xs = [p["minutes"] for _, pts in series for p in pts]
    ys = [p[k] for _, pts in series for p in pts for k in ("dev_loss", "train_loss")]
    x_max, y_min, y_max = max(xs), min(ys) - 0.1, max(ys) + 0.1
    sx = lambda x: left + (w - left - right) * x / x_max
    sy = lambda y: top + (h - top - bottom) * (y_max - y) / (y_max - y_min)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" '
           f'font-size="12"><rect width="100%" height="100%" fill="white"/>',
           f'<text x="{w / 2}" y="22" text-anchor="middle" font-size="14">{title}</text>',
           f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="black"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="black"/>',
           f'<text x="{w / 2}" y="{h - 12}" text-anchor="middle">training minutes (2 cores)</text>',
           f'<text x="16" y="{h / 2}" transform="rotate(-90 16 {h / 2})" text-anchor="middle">loss per '
           f'target token</text>']
    for i in range(6):
        x, y = x_max * i / 5, y_min + (y_max - y_min) * i / 5
        out.append(f'<text x="{sx(x):.1f}" y="{h - bottom + 16}" text-anchor="middle">{x:.0f}</text>')
        out.append(f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:.2f}</text>')
    for (label, pts), colour, row in zip(series, ("#1f77b4", "#d62728"), (0, 1)):
        for key, dash in (("dev_loss", ""), ("train_loss", ' stroke-dasharray="6 4"')):
            line = " ".join(f"{sx(p['minutes']):.1f},{sy(p[key]):.1f}" for p in pts)
            out.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        for p in pts:
            out.append(f'<circle cx="{sx(p["minutes"]):.1f}" cy="{sy(p["dev_loss"]):.1f}" r="3" fill="{colour}"/>')
            if "test_bleu" in p:
                out.append(f'<text x="{sx(p["minutes"]) + 4:.1f}" y="{sy(p["dev_loss"]) - 6:.1f}" '
                           f'fill="{colour}">BLEU {p["test_bleu"]:.1f}</text>')
        out.append(f'<text x="{w - right - 250}" y="{top + 18 * row + 10}" fill="{colour}">{label}: dev (solid), '
                   f'train (dashed)</text>')
    return "\n".join(out + ["</svg>\n"])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kiln", default=os.path.join(HERE, "..", "..", "build", "kiln"))
    p.add_argument("--minutes", type=float, default=60, help="PyTorch's training time")
    p.add_argument("--kiln-minutes", type=float, help="kiln's training time (default: --minutes)")
    p.add_argument("--eval-minutes", type=float, default=10)
    p.add_argument("--bleu-at", default="10,30,60", help="minutes whose checkpoints are scored on the test split")
    p.add_argument("--epochs", type=int, default=6, help="epochs of batches written for torch (repeated if short)")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--work", default="/tmp/kiln-ttq")
    p.add_argument("--skip", action="append", default=[], choices=("kiln", "torch"), help="reuse that run")
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    kiln_work, torch_work = f"{args.work}/kiln", f"{args.work}/torch"
    args.kiln_minutes = args.kiln_minutes or args.minutes
    if "kiln" not in args.skip:
        train_kiln(args, kiln_work)
    r = recipe(kiln_work)
    if "torch" not in args.skip:
        train_torch(args, torch_work, kiln_work, r)
    wanted = [float(m) for m in args.bleu_at.split(",")]
    series = [("kiln", kiln_points(kiln_work)), ("PyTorch 1.13 (same batches)", torch_points(torch_work))]
    for _, pts in series:
        for m in wanted:
            near = min(pts, key=lambda q: abs(q["minutes"] - m), default=None)
            if near and abs(near["minutes"] - m) < args.eval_minutes / 2 and "test_bleu" not in near:
                near["test_bleu"] = test_bleu(args, near["checkpoint"])
    rows = ["| minutes | kiln dev loss | kiln test BLEU | PyTorch dev loss | PyTorch test BLEU |",
            "|---|---|---|---|---|"]
    for m in wanted:
        cells = [f"{m:g}"]
        for _, pts in series:
            near = min(pts, key=lambda q: abs(q["minutes"] - m), default=None)
            ok = near and abs(near["minutes"] - m) < args.eval_minutes / 2
            cells += [f"{near['dev_loss']:.3f}" if ok else "—",
                      f"{near['test_bleu']:.2f}" if ok and "test_bleu" in near else "—"]
        rows.append("| " + " | ".join(cells) + " |")
    settings = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in r.items() if k != "vocab")
    table = (f"Recipe: `{settings}`; kiln {args.kiln_minutes:g} min, then PyTorch {args.minutes:g} min.\n\n" +
             "\n".join(rows) + "\n")
    with open(f"{args.work}/time_to_quality.md", "w") as f:
        f.write(table)
    with open(f"{args.work}/time_to_quality.svg", "w") as f:
        f.write(svg(series, "de-en: loss over training time, test BLEU (beam 4) at the marked points"))
    with open(f"{args.work}/points.json", "w") as f:
        json.dump(dict(series), f, indent=1)
    print(table, end="")


if __name__ == "__main__":
    main()
