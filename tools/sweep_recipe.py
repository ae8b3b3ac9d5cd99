#!/usr/bin/env python3
"""Sweep training recipes at a fixed wall-clock budget per point.

de-en: each point is `kiln train --task de-en --minutes M` with the baseline's
settings changed in one or two places; all points share one subword model and the
kernel cache. It prints and writes a Markdown table: steps, target tokens/s, dev
loss and dev BLEU (greedy, on --eval-sentences dev sentences) of each point.

  tools/sweep_recipe.py --minutes 4 --out sweep.md                  # every point
  tools/sweep_recipe.py --minutes 2 --points baseline,lr-0.5        # a few
  tools/sweep_recipe.py --extra 'mine=--lr-factor 0.7 --dropout 0'  # one of yours

A corpus of your own (--corpus, the text task's flags): the baseline is the recipe
kiln fits to the corpus and budget (no flags), the points are --extra's, all share
one prepared corpus, and the table adds the test BLEU of `kiln eval` (beam 4) and
the recipe each point trained with:

  tools/sweep_recipe.py --minutes 1 --corpus '--train d/train --valid d/valid
      --test d/test --src-lang num --tgt-lang en' --extra 'b1024=--batch-tokens 1024'

Short points favour what learns fast (high rates, small models, no dropout):
read the table as a ranking for budgets a few times the point's, not beyond.
Dev losses of points with different label smoothing are not comparable (the loss
is the smoothed one); compare their BLEU.
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

BASELINE = ("--config small --batch-tokens 2048 --warmup 400 --lr-factor 1 "
            "--dropout 0.1 --label-smoothing 0.1")

# name -> flags that replace the baseline's. The first round varies the rate (the
# baseline's is too high for this post-LN model); the second starts from its winner;
# the third from the second's (tiny).
POINTS = {
    "baseline": "",
    "lr-2": "--lr-factor 2",
    "lr-0.5": "--lr-factor 0.5",
    "lr-0.25": "--lr-factor 0.25",
    "lr-0.5-batch-4096": "--lr-factor 0.5 --batch-tokens 4096",
    "lr-0.5-dropout-0": "--lr-factor 0.5 --dropout 0",
    "lr-0.5-smoothing-0": "--lr-factor 0.5 --label-smoothing 0",
    "lr-0.5-tiny": "--lr-factor 0.5 --config tiny",
    "lr-0.5-base": "--lr-factor 0.5 --config base",
    "lr-0.5-warmup-1000": "--lr-factor 0.5 --warmup 1000",
    "tiny": "--config tiny",
    "lr-0.5-tiny-dropout-0": "--lr-factor 0.5 --config tiny --dropout 0",
    "lr-0.5-tiny-batch-4096": "--lr-factor 0.5 --config tiny --batch-tokens 4096",
}

RESULT = re.compile(r"trained steps (\d+)\.\.(\d+)(?: \(.*\))?: (\d+) target tokens/s; dev loss (\S+) BLEU (\S+)")


def merged_flags(change):
    """The baseline's flags with those of `change` replacing the same names."""
    flags = dict(zip(*[iter(shlex.split(BASELINE))] * 2))
    words = shlex.split(change)
    i = 0
    while i < len(words):
        flags[words[i]] = words[i + 1]
        i += 2
    return [w for kv in flags.items() for w in kv]


TEST_BLEU = re.compile(r"^BLEU = (\S+)", re.M)
RECIPE = re.compile(r"recipe for [^:]*: (.*?) \(")


def point_command(args, name, change, spm):
    """The point's `kiln train` command, its directory made ready."""
    ckpt = os.path.join(args.work, name)
    shutil.rmtree(ckpt, ignore_errors=True)
    os.makedirs(ckpt)
    common = ["--checkpoint", ckpt, "--minutes", str(args.minutes), "--eval-sentences", str(args.eval_sentences)]
    if args.threads:
        common += ["--threads", str(args.threads)]
    if args.corpus:
        return ckpt, [args.kiln, "train"] + shlex.split(args.corpus) + ["--prepared", os.path.join(args.work, "prepared")] \
            + common + shlex.split(change)
    shutil.copy(spm, os.path.join(ckpt, "spm.model"))
    return ckpt, [args.kiln, "train", "--task", "de-en", "--data-dir", args.data_dir] + common + merged_flags(change)


def run_point(args, name, change, spm):
    ckpt, cmd = point_command(args, name, change, spm)
    start = time.time()
    log_path = os.path.join(args.work, name + ".log")
    with open(log_path, "w") as log:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
    match = RESULT.search(proc.stdout)
    if proc.returncode != 0 or not match:
        return {"name": name, "change": change, "error": f"exit {proc.returncode}, see {log_path}"}
    row = {"name": name, "change": change or "(baseline)", "steps": int(match.group(2)),
           "tokens_per_s": int(match.group(3)), "dev_loss": float(match.group(4)),
           "dev_bleu": float(match.group(5)), "seconds": time.time() - start}
    if args.corpus:
        with open(log_path) as log:
            recipe = RECIPE.search(log.read())
        row["recipe"] = recipe.group(1) if recipe else "?"
        proc = subprocess.run([args.kiln, "eval", "--checkpoint", ckpt, "--split", "test"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
        bleu = TEST_BLEU.search(proc.stdout)
        row["test_bleu"] = float(bleu.group(1)) if proc.returncode == 0 and bleu else float("nan")
    return row


def table(rows, args):
    baseline = "the recipe kiln fits (no flags)" if args.corpus else f"`{BASELINE}`"
    lines = [f"Sweep: {args.minutes:g} min per point on {os.cpu_count()} cores; baseline {baseline}; "
             f"dev BLEU greedy on {args.eval_sentences} dev sentences" +
             ("; test BLEU beam 4 (kiln eval)." if args.corpus else "."), ""]
    extra = " test BLEU | recipe fitted (the point's flags win) |" if args.corpus else ""
    lines += ["| point | change | steps | tokens/s | dev loss | dev BLEU |" + extra,
              "|---|---|---|---|---|---|" + ("---|---|" if args.corpus else "")]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['name']} | `{r['change']}` | failed: {r['error']} | | | |" +
                         (" | |" if args.corpus else ""))
            continue
        line = (f"| {r['name']} | `{r['change']}` | {r['steps']} | {r['tokens_per_s']} | "
                f"{r['dev_loss']:.3f} | {r['dev_bleu']:.2f} |")
        if args.corpus:
            line += f" {r['test_bleu']:.2f} | `{r['recipe']}` |"
        lines.append(line)
    return "\n".join(lines) + "\n"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kiln", default=os.path.join(here, "..", "build", "kiln"))
    p.add_argument("--minutes", type=float, default=4, help="training budget of each point")
    p.add_argument("--points", help="comma-separated names of: " + ", ".join(POINTS) +
                   " (default: all; with --corpus: baseline)")
    p.add_argument("--corpus", help="the text task's corpus flags (--train ... --tgt-lang ...): sweep it, not de-en")
    p.add_argument("--extra", action="append", default=[], help="NAME=FLAGS: one more point")
    p.add_argument("--eval-sentences", type=int, default=500)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--data-dir", default="/usr/share/trans/de-en")
    p.add_argument("--work", default="/tmp/kiln-sweep", help="checkpoints and logs of the points")
    p.add_argument("--out", help="also write the table to this Markdown file")
    args = p.parse_args()

    points = []
    for name in (args.points or ("baseline" if args.corpus else ",".join(POINTS))).split(","):
        if name not in POINTS or (args.corpus and name != "baseline"):
            p.error(f"unknown point '{name}' (choices: baseline; the rest with --extra)" if args.corpus else
                    f"unknown point '{name}' (choices: {', '.join(POINTS)})")
        points.append((name, POINTS[name]))
    for extra in args.extra:
        name, sep, flags = extra.partition("=")
        if not sep or not name:
            p.error(f"--extra wants NAME=FLAGS, got '{extra}'")
        points.append((name, flags))

    os.makedirs(args.work, exist_ok=True)
    spm_dir = os.path.join(args.work, "subwords")
    spm = os.path.join(spm_dir, "spm.model")
    if not args.corpus and not os.path.exists(spm):  # learned once, shared by every point
        subprocess.run([args.kiln, "batches", "--task", "de-en", "--checkpoint", spm_dir, "--split", "dev",
                        "--data-dir", args.data_dir, "-o", os.path.join(spm_dir, "dev.jsonl")],
                       check=True, stdout=subprocess.DEVNULL)

    rows = []
    for i, (name, change) in enumerate(points):
        print(f"[{i + 1}/{len(points)}] {name}: {change or '(baseline)'}", file=sys.stderr, flush=True)
        rows.append(run_point(args, name, change, spm))
        print(table(rows[-1:], args).splitlines()[-1], file=sys.stderr, flush=True)
    text = table(rows, args)
    print(text, end="")
    if args.out:
        with open(args.out + ".tmp", "w") as f:
            f.write(text)
        os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()
