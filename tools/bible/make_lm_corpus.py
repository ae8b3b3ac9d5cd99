#!/usr/bin/env python3
"""Writes the World English Bible's running text for kiln's language model.

Usage: make_lm_corpus.py OUT_DIR

Exports engWEB2015eb (package sword-text-web) with mod2imp, cleaned as make_corpus.py
cleans it, one verse a line and a blank line between chapters, in book order, and holds
whole books out so that the dev and test text is unseen prose, not shuffled verses:
OUT_DIR/valid.txt is Ruth and Philippians, OUT_DIR/test.txt Jonah and Colossians,
OUT_DIR/train.txt every other book of the Protestant canon (the deuterocanon is left out).
The same files every run.
"""
import os
import sys

from make_corpus import by_book, read_bible, write_atomically

HELD_OUT = {"valid": ("Ruth", "Philippians"), "test": ("Jonah", "Colossians")}
# The deuterocanonical books the module adds after Malachi.
DEUTEROCANON = {"Tobit", "Judith", "Esther (Greek)", "Wisdom", "Sirach", "Baruch", "I Maccabees", "II Maccabees",
                "I Esdras", "Prayer of Manasses", "Additional Psalm", "III Maccabees", "II Esdras", "IV Maccabees"}


def book_lines(verses):
    """A book's verses, one a line, with a blank line where a chapter starts."""
    lines, chapter = [], None
    for (_, c, _), text in verses:
        if chapter is not None and c != chapter:
            lines.append("")
        chapter = c
        lines.append(text)
    return lines


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    books = by_book(read_bible("engWEB2015eb"))
    held = {book: split for split, names in HELD_OUT.items() for book in names}
    missing = [book for book in held if book not in books]
    if missing:
        sys.exit(f"make_lm_corpus.py: the module has no book {', '.join(missing)}")
    splits = {"train": [], "valid": [], "test": []}
    for book, verses in books.items():  # mod2imp's order: the canon's
        if book in DEUTEROCANON:
            continue
        lines = splits[held.get(book, "train")]
        if lines:
            lines.append("")
        lines.extend(book_lines(verses))
    os.makedirs(sys.argv[1], exist_ok=True)
    for name, lines in splits.items():
        write_atomically(os.path.join(sys.argv[1], f"{name}.txt"), lines)
        size = sum(len(line.encode()) + 1 for line in lines)
        print(f"{name}: {size:,} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
