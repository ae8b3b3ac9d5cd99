#!/usr/bin/python3
"""Time to quality: kiln and its PyTorch peer train the same model on the same batches
with the same schedule, one after the other (kiln for --kiln-minutes, PyTorch for
--minutes of training time); both are scored by kiln's BLEU (beam 4, length penalty
0.6) on the test split at the --bleu-at minutes. The task is de-en, or with --corpus
your own parallel text (kiln's text task).

  tools/bench/time_to_quality.py --minutes 60 --eval-minutes 10 --work /tmp/ttq
  tools/bench/time_to_quality.py --corpus /work/data/bible --src-lang es --tgt-lang en \
      --kiln-minutes 30 --minutes 60 --eval-minutes 5 --work /tmp/ttq-bible
  tools/bench/time_to_quality.py ... --skip kiln        # reuse WORK/kiln's run

kiln trains with its default recipe for the budget (`kiln train --help`; --train-args
adds or overrides flags), keeping a snapshot at each evaluation; `kiln batches` writes
the epochs it trains on, and torch_transformer.py trains on those files and writes a
kiln checkpoint (with the task's files) at each of its evaluations. Training time
counts compiles (kiln) and excludes dev evaluations and saves (both). Writes
WORK/time_to_quality.md (the table, and the minute at which each run reaches the
other's final dev loss) and WORK/time_to_quality.svg (dev loss over minutes with the
test BLEU points).
"""
import argparse
import json
import math
import os
import re
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BLEU = re.compile(r"BLEU = ([\d.]+)")


def run(cmd, log=None, **kw):
    print("+ " + " ".join(cmd), file=sys.stderr, flush=True)
    if log:
        with open(log, "w") as f:
            return subprocess.run(cmd, check=True, stdout=f, stderr=subprocess.STDOUT, text=True, **kw)
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, **kw)


def task_name(args):
    """kiln's name of the task: `kiln batches --task` takes it."""
    return "text" if args.corpus else "de-en"


def task_flags(args):
    """kiln train's flags that choose the task: de-en, or the text task on CORPUS/{train,valid,test}.{SRC,TGT}."""
    if not args.corpus:
        return ["--task", "de-en"]
    splits = [[f"--{split}", os.path.join(args.corpus, split)] for split in ("train", "valid", "test")]
    return sum(splits, []) + ["--src-lang", args.src_lang, "--tgt-lang", args.tgt_lang]


def thread_flags(args):
    return ["--threads", str(args.threads)] if args.threads else []


def recipe(kiln_work):
    """The settings kiln's run trained with (its recipe's, `kiln train --help`, and
    --train-args' sizes), from its checkpoint; exits on settings torch cannot follow."""
    meta = read_metadata(f"{kiln_work}/checkpoint.safetensors")
    config, state = json.loads(meta["config"]), json.loads(meta["trainer"])
    if state.get("update_freq", 1) != 1 or state.get("max_train_len", 0) != 0 or \
            config["enc_layers"] != config["dec_layers"]:
        sys.exit(f"{kiln_work}: torch_transformer.py train follows neither --update-freq, --max-train-len "
                 "nor unequal encoder and decoder depths")
    return {"config": config["name"].split("+")[0], "vocab": str(config["vocab"]),
            "d_model": str(config["d_model"]), "heads": str(config["heads"]), "d_ff": str(config["d_ff"]),
            "layers": str(config["enc_layers"]), "batch_tokens": str(state["batch_tokens"]),
            "seed": str(state["seed"]), "warmup": str(state["warmup"]), "lr_factor": str(state["lr_factor"]),
            "dropout": str(config["dropout"]), "label_smoothing": str(config["label_smoothing"])}


def test_bleu(args, checkpoint):
    """kiln eval's test BLEU, kept beside the checkpoint so that a rerun does not decode again."""
    kept = f"{checkpoint}/test_bleu.txt"
    if not os.path.exists(kept):
        out = run([args.kiln, "eval", "--checkpoint", checkpoint, "--split", "test", *thread_flags(args)]).stdout
        with open(kept, "w") as f:
            f.write(BLEU.search(out).group(1) + "\n")
    with open(kept) as f:
        return float(f.read())


def train_kiln(args, work):
    run([args.kiln, "train", *task_flags(args), "--checkpoint", work, "--minutes", str(args.kiln_minutes),
         "--eval-minutes", str(args.eval_minutes), "--keep-snapshots", "1000", "--eval-sentences", "200",
         *thread_flags(args), *shlex.split(args.train_args)], log=work + ".log")


def kiln_points(work):
    """kiln's dev evaluations, one per snapshot, each with the mean train loss of the
    steps before it. The minutes are the snapshot's training time: the log's "dev at
    step N (M min)" also counts that evaluation's own decoding."""
    if not os.path.exists(f"{work}/snapshots"):
        return []
    history = json.loads(read_metadata(f"{work}/checkpoint.safetensors")["trainer"])["train_loss"]
    points, previous = [], 0
    for name in sorted(os.listdir(f"{work}/snapshots")):
        checkpoint = f"{work}/snapshots/{name}"
        state = json.loads(read_metadata(f"{checkpoint}/checkpoint.safetensors")["trainer"])
        step, dev = state["step"], dict(state["dev_loss"])
        if step not in dev:  # a save without an evaluation
            continue
        window = [l for s, l in history if previous < s <= step]
        points.append({"minutes": round(state["train_seconds"] / 60, 2), "step": step, "dev_loss": dev[step],
                       "train_loss": sum(window) / len(window), "checkpoint": checkpoint})
        previous = step
    return points


def epochs_to_write(args, kiln_work):
    """--epochs, else enough that PyTorch never starts over from the first file if it
    is no faster than kiln: kiln's epochs scaled by --minutes / --kiln-minutes, plus one."""
    if args.epochs:
        return args.epochs
    kiln_epochs = json.loads(read_metadata(f"{kiln_work}/checkpoint.safetensors")["trainer"])["epoch"] + 1
    return math.ceil(kiln_epochs * args.minutes / args.kiln_minutes) + 1


def write_batches(args, work, kiln_work, r):
    """`kiln batches` files: the train epochs kiln's run saw (same seed and batch size), and the dev batches."""
    common = ["--task", task_name(args), "--checkpoint", kiln_work, "--batch-tokens", r["batch_tokens"]]
    epochs = []
    for epoch in range(epochs_to_write(args, kiln_work)):
        path = f"{work}/train-{epoch}.jsonl"
        if not os.path.exists(path):
            run([args.kiln, "batches", *common, "--seed", r["seed"], "--epoch", str(epoch), "-o", path])
        epochs.append(path)
    dev = f"{work}/dev.jsonl"
    run([args.kiln, "batches", *common, "--split", "dev", "-o", dev])
    return epochs, dev


def train_torch(args, work, kiln_work, r):
    os.makedirs(work, exist_ok=True)
    epochs, dev = write_batches(args, work, kiln_work, r)
    sizes = sum(([f"--{k.replace('_', '-')}", r[k]] for k in ("d_model", "heads", "d_ff", "layers")), [])
    cmd = [sys.executable, f"{HERE}/torch_transformer.py", "train", "--config", r["config"], "--vocab", r["vocab"],
           *sizes, "--batches", *epochs, "--dev-batches", dev, "--minutes", str(args.minutes),
           "--eval-minutes", str(args.eval_minutes), "--warmup", r["warmup"], "--lr-factor", r["lr_factor"],
           "--dropout", r["dropout"], "--label-smoothing", r["label_smoothing"], "--save", f"{work}/checkpoints",
           "--template", kiln_work, *thread_flags(args)]
    run(cmd, log=work + ".log")


def torch_lines(work, prefix):
    """The JSON lines of torch_transformer.py train's log that start with `prefix`."""
    if not os.path.exists(work + ".log"):
        return []
    with open(work + ".log") as f:
        return [json.loads(line) for line in f if line.startswith(prefix)]


def read_metadata(path):
    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        return json.loads(f.read(size))["__metadata__"]


def minute_reaching(points, loss):
    """The first training minute at which a run's dev loss is at most `loss`, linear
    between its evaluations (its first evaluation's minute if already there); None if never."""
    before = None
    for p in points:
        if p["dev_loss"] <= loss:
            if before is None:
                return p["minutes"]
            share = (before["dev_loss"] - loss) / (before["dev_loss"] - p["dev_loss"])
            return before["minutes"] + share * (p["minutes"] - before["minutes"])
        before = p
    return None


def crossing_notes(series):
    """For each run, the minute at which it reaches the other's final dev loss."""
    notes = []
    (_, kiln), (_, torch) = series
    for name, pts, other, theirs in (("kiln", kiln, "PyTorch", torch), ("PyTorch", torch, "kiln", kiln)):
        if not pts or not theirs:
            continue
        target = theirs[-1]
        at = minute_reaching(pts, target["dev_loss"])
        if at is None:
            reached = f"not within its {pts[-1]['minutes']:g} minutes (its final: {pts[-1]['dev_loss']:.3f})"
        elif at == pts[0]["minutes"]:
            reached = f"by its first evaluation, at minute {at:.1f}"
        else:
            reached = f"at minute {at:.1f} (linear between its evaluations)"
        notes.append(f"{name} reaches {other}'s final dev loss ({target['dev_loss']:.3f} at minute "
                     f"{target['minutes']:g}) {reached}.")
    return notes


def svg(series, title, y_label="loss per target token", x_label="training minutes (2 cores)"):
    """Dev and train loss over training minutes for each framework, BLEU labels at the scored points."""
    w, h, left, right, top, bottom = 800, 420, 60, 70, 40, 50  # on the right: the last point's BLEU label
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
           f'<text x="{w / 2}" y="{h - 12}" text-anchor="middle">{x_label}</text>',
           f'<text x="16" y="{h / 2}" transform="rotate(-90 16 {h / 2})" text-anchor="middle">{y_label}</text>']
    for i in range(6):
        x, y = x_max * i / 5, y_min + (y_max - y_min) * i / 5
        out.append(f'<text x="{sx(x):.1f}" y="{h - bottom + 16}" text-anchor="middle">{x:.3g}</text>')
        out.append(f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:.2f}</text>')
    for (label, pts), colour, row in zip(series, ("#1f77b4", "#d62728"), (0, 1)):
        for key, dash in (("dev_loss", ""), ("train_loss", ' stroke-dasharray="6 4"')):
            line = " ".join(f"{sx(p['minutes']):.1f},{sy(p[key]):.1f}" for p in pts)
            out.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        for p in pts:
            out.append(f'<circle cx="{sx(p["minutes"]):.1f}" cy="{sy(p["dev_loss"]):.1f}" r="3" fill="{colour}"/>')
            if "test_bleu" in p:  # kiln's labels under its points, PyTorch's over, where the two meet
                dy = 16 if row == 0 else -6
                out.append(f'<text x="{sx(p["minutes"]) + 4:.1f}" y="{sy(p["dev_loss"]) + dy:.1f}" '
                           f'fill="{colour}">BLEU {p["test_bleu"]:.1f}</text>')
        out.append(f'<text x="{w - right}" y="{top + 18 * row + 10}" text-anchor="end" fill="{colour}">{label}: '
                   f'dev (solid), train (dashed)</text>')
    return "\n".join(out + ["</svg>\n"])


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kiln", default=os.path.join(HERE, "..", "..", "build", "kiln"))
    p.add_argument("--corpus", help="the text task on CORPUS/{train,valid,test}.{SRC,TGT} (default: de-en)")
    p.add_argument("--src-lang", help="with --corpus: the source files' suffix, e.g. es")
    p.add_argument("--tgt-lang", help="with --corpus: the target files' suffix, e.g. en")
    p.add_argument("--train-args", default="", help="more kiln train flags, one string (e.g. \"--vocab-size 4000 "
                   "--d-model 256\"); the model sizes carry over to PyTorch")
    p.add_argument("--minutes", type=float, default=60, help="PyTorch's training time")
    p.add_argument("--kiln-minutes", type=float, help="kiln's training time (default: --minutes)")
    p.add_argument("--eval-minutes", type=float, default=10)
    p.add_argument("--bleu-at", default="10,30,60", help="minutes whose checkpoints are scored on the test split")
    p.add_argument("--epochs", type=int, default=0, help="epochs of batches written for PyTorch, which starts over "
                   "from the first if it runs out (default: kiln's epochs x --minutes / --kiln-minutes, plus one)")
    p.add_argument("--threads", type=int, default=0, help="threads of both frameworks (default: all cores)")
    p.add_argument("--work", default="/tmp/kiln-ttq")
    p.add_argument("--skip", action="append", default=[], choices=("kiln", "torch"), help="reuse that run")
    args = p.parse_args()
    if args.corpus and not (args.src_lang and args.tgt_lang):
        p.error("--corpus needs --src-lang and --tgt-lang")
    if args.corpus:
        missing = [f"{args.corpus}/{split}.{lang}" for split in ("train", "valid", "test")
                   for lang in (args.src_lang, args.tgt_lang)
                   if not os.path.exists(f"{args.corpus}/{split}.{lang}")]
        if missing:
            p.error("--corpus: missing " + ", ".join(missing))
    args.kiln_minutes = args.kiln_minutes or args.minutes
    return args


def score(args, series):
    """Scores on the test split the evaluation nearest each --bleu-at minute (within half
    an evaluation period); returns those minutes."""
    wanted = [float(m) for m in args.bleu_at.split(",")]
    for _, pts in series:
        for m in wanted:
            near = nearest(pts, m, args.eval_minutes)
            if near and "test_bleu" not in near:
                near["test_bleu"] = test_bleu(args, near["checkpoint"])
    return wanted


def nearest(points, minute, period):
    near = min(points, key=lambda q: abs(q["minutes"] - minute), default=None)
    return near if near and abs(near["minutes"] - minute) < period / 2 else None


def report(args, series, wanted, r, torch_summary):
    """The markdown: the recipe, the table at the --bleu-at minutes, where each run reaches the other's final loss."""
    rows = ["| minutes | kiln dev loss | kiln test BLEU | PyTorch dev loss | PyTorch test BLEU |",
            "|---|---|---|---|---|"]
    for m in wanted:
        cells = [f"{m:g}"]
        for _, pts in series:
            near = nearest(pts, m, args.eval_minutes)
            cells += [f"{near['dev_loss']:.3f}" if near else "—",
                      f"{near['test_bleu']:.2f}" if near and "test_bleu" in near else "—"]
        rows.append("| " + " | ".join(cells) + " |")
    settings = " ".join(f"--{k.replace('_', '-')} {v}" for k, v in r.items() if k != "vocab")
    notes = crossing_notes(series)
    passes = torch_summary.get("passes_over_batch_files", 1)
    if passes > 1:
        notes.append(f"PyTorch ran out of the epoch files written and went through them {passes} times "
                     "(kiln would have seen new shuffles): raise --epochs.")
    return (f"Task: {task_title(args)}. Recipe: `{settings}` (vocabulary {r['vocab']}); kiln "
            f"{args.kiln_minutes:g} min, then PyTorch {args.minutes:g} min.\n\n" + "\n".join(rows) + "\n\n" +
            "".join(f"- {n}\n" for n in notes))


def task_title(args):
    if not args.corpus:
        return "de-en"
    return f"{args.src_lang}-{args.tgt_lang} on {os.path.basename(os.path.normpath(args.corpus))} (text task)"


def main():
    args = parse_args()
    os.makedirs(args.work, exist_ok=True)
    kiln_work, torch_work = f"{args.work}/kiln", f"{args.work}/torch"
    if "kiln" not in args.skip:
        train_kiln(args, kiln_work)
    r = recipe(kiln_work)
    if "torch" not in args.skip:
        train_torch(args, torch_work, kiln_work, r)
    series = [("kiln", kiln_points(kiln_work)),
              ("PyTorch 1.13 (same batches)", torch_lines(torch_work, '{"minutes"'))]
    wanted = score(args, series)
    summary = next(iter(torch_lines(torch_work, '{"framework"')), {})
    table = report(args, series, wanted, r, summary)
    with open(f"{args.work}/time_to_quality.md", "w") as f:
        f.write(table)
    with open(f"{args.work}/time_to_quality.svg", "w") as f:
        f.write(svg(series, f"{task_title(args)}: loss over training time, test BLEU (beam 4) at the marked points"))
    with open(f"{args.work}/points.json", "w") as f:
        json.dump(dict(series), f, indent=1)
    print(table, end="")


if __name__ == "__main__":
    main()
