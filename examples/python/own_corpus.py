# Your own parallel corpus from Python, as the kiln command does it: two text files
# per split to a trained model, its BLEU, a translated file and an averaged model,
# each step with the command's defaults. Notebook-style `# %%` cells.
#
#   PYTHONPATH=build/python /usr/bin/python3 examples/python/own_corpus.py [DIR] [--minutes M]
#
# DIR (default out/own-corpus) gets a made-up corpus (Spanish numbers to English
# words) unless it holds DIR/train.es and the rest already: put your own files
# there. --quick trains a tiny model for a few steps (a smoke test, as
# tests/python/test_examples.py runs it).
import argparse
import pathlib
import random

import kiln

# %% The corpus: PREFIX.es and PREFIX.en per split, one sentence a line.
args = argparse.ArgumentParser(description=__doc__)
args.add_argument("dir", nargs="?", default="out/own-corpus")
args.add_argument("--minutes", type=float, default=1.0, help="training time (the run's budget)")
args.add_argument("--quick", action="store_true", help="a tiny model for a few steps: a smoke test")
opts = args.parse_args()
work = pathlib.Path(opts.dir)
work.mkdir(parents=True, exist_ok=True)

ES = "cero uno dos tres cuatro cinco seis siete ocho nueve".split()
EN = "zero one two three four five six seven eight nine".split()


def write_split(name, pairs, rng):
    src, tgt = [], []
    for _ in range(pairs):
        digits = [rng.randrange(10) for _ in range(rng.randint(1, 4))]
        src.append(" ".join(ES[d] for d in digits))
        tgt.append(" ".join(EN[d] for d in digits))
    (work / f"{name}.es").write_text("\n".join(src) + "\n")
    (work / f"{name}.en").write_text("\n".join(tgt) + "\n")


if not (work / "train.es").exists():
    rng = random.Random(0)
    for name, pairs in (("train", 300 if opts.quick else 2000), ("valid", 30), ("test", 30)):
        write_split(name, pairs, rng)

# %% Train: the recipe for the budget, evaluations and saves at each fifth of it,
# the best model in CKPT/best, the last snapshots and the best ones kept for averaging.
ckpt = str(work / "ckpt")
budget = dict(steps=10) if opts.quick else dict(minutes=opts.minutes)
tiny = dict(d_model=16, heads=2, d_ff=32, layers=1, vocab_size=40, batch_tokens=512, eval_sentences=8) if opts.quick else {}
result = kiln.train("text", ckpt, train=str(work / "train"), valid=str(work / "valid"), test=str(work / "test"),
                    src_lang="es", tgt_lang="en", **budget, **tiny)
print(f"trained steps {result.first_step}..{result.last_step}, dev BLEU {result.bleu:.2f}")

# %% Evaluate the best checkpoint on the test split (beam 4, as `kiln eval`).
scores = kiln.evaluate(ckpt + "/best")
print("best:", scores["bleu_line"])

# %% Translate a file, as `kiln translate -i test.es -o test.hyp.en`.
sources = (work / "test.es").read_text().splitlines()
(work / "test.hyp.en").write_text("\n".join(kiln.translate(ckpt + "/best", sources)) + "\n")

# %% Average the last 3 snapshots and score its translations against the references.
averaged = str(work / "averaged")
kiln.average(averaged, checkpoint=ckpt, last=3)
hypotheses = kiln.evaluate(averaged)["hypotheses"]
references = (work / "test.en").read_text().splitlines()
print("averaged:", kiln.score(hypotheses, references)["bleu_line"])
