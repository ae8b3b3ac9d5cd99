#!/usr/bin/python3
"""Make a large parallel corpus for data-preparation benchmarks by perturbing Bible pairs.

Usage: tools/bible/make_big_corpus.py [--pairs N] [--seed S] IN_PREFIX OUT_PREFIX

Reads IN_PREFIX.es / IN_PREFIX.en (e.g. data/bible/train from make_corpus.py) and writes
N pairs (default 1,000,000) to OUT_PREFIX.es / OUT_PREFIX.en: the input pairs repeated
in order, each repeat after the first perturbed so that lines are not all exact copies
(a benchmark of vocabulary building or deduplication should see realistic variety).
Each perturbed pair gets one to three edits, each applied to both sides alike where it
names a position in proportion to the side's length: drop a word, swap two adjacent
words, flip the case of the first letter, or replace a word by a number. Not a corpus to
train a translation model on: the edits do not keep the sides translations of each other.

Deterministic: random.Random(seed) drives every choice, so the same input and seed give
the same files. Each file is written to a temporary name and renamed into place.
"""

import argparse
import os
import random


def read_lines(path):
    """The lines of a UTF-8 file, without their newlines."""
    with open(path, encoding="utf-8") as file:
        return file.read().splitlines()


def drop_word(words, at):
    """Removes the word at relative position at (0 <= at < 1), keeping at least one word."""
    if len(words) > 1:
        del words[int(at * len(words))]


def swap_words(words, at):
    """Swaps the word at relative position at with the next one."""
    if len(words) > 1:
        i = min(int(at * len(words)), len(words) - 2)
        words[i], words[i + 1] = words[i + 1], words[i]


def flip_case(words, _):
    """Flips the case of the first letter of the first word."""
    words[0] = words[0][:1].swapcase() + words[0][1:]


def put_number(words, at, number):
    """Replaces the word at relative position at by a number."""
    words[int(at * len(words))] = str(number)


def perturb(pair, rng):
    """Returns a copy of (es, en) with one to three edits, each applied to both sides alike."""
    sides = [line.split() for line in pair]
    for _ in range(rng.randint(1, 3)):
        edit, at = rng.randrange(4), rng.random()
        number = rng.randint(1, 9999)
        for words in sides:
            if edit == 3:
                put_number(words, at, number)
            else:
                (drop_word, swap_words, flip_case)[edit](words, at)
    return tuple(" ".join(words) for words in sides)


def big_corpus(pairs, count, seed):
    """count pairs: the input in order, repeated, every repeat after the first perturbed."""
    rng = random.Random(seed)
    return [pairs[i % len(pairs)] if i < len(pairs) else perturb(pairs[i % len(pairs)], rng)
            for i in range(count)]


def write_atomically(path, lines):
    """Writes lines (one per line, UTF-8) to path through a temporary file renamed into place."""
    temporary = f"{path}.tmp{os.getpid()}"
    with open(temporary, "w", encoding="utf-8", newline="\n") as out:
        out.writelines(line + "\n" for line in lines)
    os.replace(temporary, path)


def main():
    """Reads the input pairs, builds the big corpus, writes both sides."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=1_000_000, help="pairs to write")
    parser.add_argument("--seed", type=int, default=1, help="seed of the perturbations")
    parser.add_argument("in_prefix", help="reads IN_PREFIX.es and IN_PREFIX.en")
    parser.add_argument("out_prefix", help="writes OUT_PREFIX.es and OUT_PREFIX.en")
    args = parser.parse_args()
    pairs = list(zip(read_lines(f"{args.in_prefix}.es"), read_lines(f"{args.in_prefix}.en"), strict=True))
    if not pairs:
        parser.error(f"{args.in_prefix}.es has no lines")
    corpus = big_corpus(pairs, args.pairs, args.seed)
    out_dir = os.path.dirname(args.out_prefix)
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
    for side in (0, 1):
        write_atomically(f"{args.out_prefix}.{('es', 'en')[side]}", [pair[side] for pair in corpus])
    print(f"wrote {len(corpus)} pairs to {args.out_prefix}.es and .en "
          f"({len(set(corpus))} distinct pairs)")


if __name__ == "__main__":
    main()
