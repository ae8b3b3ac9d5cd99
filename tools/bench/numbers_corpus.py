#!/usr/bin/env python3
"""Write a made-up parallel corpus: numbers in digits to English words.

  tools/bench/numbers_corpus.py OUT_DIR [--train 2000] [--valid 200] [--test 200] [--seed 0]

OUT_DIR gets train, valid and test as PREFIX.num (e.g. "4 0 2 1 3") and PREFIX.en
("forty thousand two hundred thirteen"), one pair a line, the splits disjoint. A small
corpus a model can learn exactly, for measuring the text task's recipe
(`kiln train --train OUT_DIR/train --valid OUT_DIR/valid --test OUT_DIR/test
--src-lang num --tgt-lang en`; tools/sweep_recipe.py --corpus). Deterministic in
--seed; each file is written under a temporary name and renamed into place.
"""
import argparse
import os
import random

ONES = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen").split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def below_thousand(n):
    """The words of 0 < n < 1000."""
    words = []
    if n >= 100:
        words += [ONES[n // 100], "hundred"]
        n %= 100
    if n >= 20:
        words.append(TENS[n // 10])
        n %= 10
    if n:
        words.append(ONES[n])
    return words


def in_words(n):
    """The English words of 0 <= n < 10**9, without "and" or hyphens."""
    if n == 0:
        return "zero"
    words = []
    for scale, name in ((10**6, "million"), (10**3, "thousand")):
        if n >= scale:
            words += below_thousand(n // scale) + [name]
            n %= scale
    return " ".join(words + below_thousand(n))


def draw(rng):
    """A number with 1 to 7 digits, each digit count as likely."""
    digits = rng.randint(1, 7)
    return rng.randrange(10 ** (digits - 1) if digits > 1 else 0, 10**digits)


def write_lines(path, lines):
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(path + ".tmp", path)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--train", type=int, default=2000)
    p.add_argument("--valid", type=int, default=200)
    p.add_argument("--test", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    rng = random.Random(args.seed)
    seen = set()
    os.makedirs(args.out, exist_ok=True)
    for split in ("train", "valid", "test"):
        numbers = []
        while len(numbers) < getattr(args, split):
            n = draw(rng)
            if n not in seen:
                seen.add(n)
                numbers.append(n)
        prefix = os.path.join(args.out, split)
        write_lines(prefix + ".num", [" ".join(str(n)) for n in numbers])
        write_lines(prefix + ".en", [in_words(n) for n in numbers])
    print(f"wrote {args.train} train, {args.valid} valid and {args.test} test pairs to {args.out}")


if __name__ == "__main__":
    main()
