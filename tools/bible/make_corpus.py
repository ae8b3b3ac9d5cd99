#!/usr/bin/python3
"""Build a verse-aligned Spanish-English corpus from two Debian-packaged Bibles.

Usage: tools/bible/make_corpus.py OUT_DIR

Exports the SWORD modules spaRV1909eb (Reina-Valera 1909, package sword-text-sparv)
and engWEB2015eb (World English Bible, package sword-text-web) with mod2imp
(libsword-utils), strips their OSIS markup down to each verse's running text, pairs
verses by reference (book, chapter, verse), and writes OUT_DIR/{train,valid,test}.{es,en}:
UTF-8, one verse per line, line-aligned, in canonical Bible order (fairseq's layout, what
`kiln train --train OUT_DIR/train --src-lang es --tgt-lang en` reads).

Markup: notes and cross references (<note> with everything inside it), section headings
(<title> unless canonical="true": the Psalm superscriptions, which RV1909 prints as part
of verse 1, are kept), speaker labels of the Song of Songs (<speaker>), and every tag are
removed; the text inside <w> (its Strong's numbers and morphology are attributes),
<transChange>, <q>, <seg> and <name> is kept. XML entities are unescaped and whitespace
is collapsed. The RV1909's unmarked epistle subscriptions ("Amén. Escrita de Roma...")
are cut. Verse 0 entries (book and chapter introductions) are not verses and are
skipped.

Alignment: verses are paired by reference, except where the Reina-Valera module keeps
its own verse division under KJV keys (Numbers 13 and 30, 1 Samuel 24, 1 Kings 22,
1 Chronicles 21, 2 Chronicles 33, Hosea 12, Jonah 2, ...): there a length-based
alignment (Gale and Church) that is much cheaper replaces it, pairing 1-1, 2-1 or 1-2
verses. A verse present on one side only is dropped; WEB Job 39:1-40:5 is left out
(see EXCLUDED).

Split rule (fixed, stated here and in tools/bible/README.md): let h = zlib.crc32 of the
UTF-8 WEB reference "Book C:V" of the pair's (first) English verse, exactly as mod2imp
names it (e.g. "Genesis 1:1", "I Samuel 3:4", "Revelation of John 22:21").
h % 100 in {0, 1, 2} -> test (about 3%, ~900 verses), h % 100 == 3 -> valid (about 1%,
~300 verses), else train. Then every train pair whose Spanish source also occurs among
the test or valid sources is removed from train, because the Bible repeats verses;
sources are compared as their lower-cased words of letters and digits (punctuation
and spacing ignored).

Deterministic: the same packages give byte-identical files on every run. Each file is
written to a temporary name in OUT_DIR and renamed into place.
"""

import html
import itertools
import math
import os
import re
import subprocess
import sys
import zlib

# Gale and Church's bead priors, with 2-1 and 1-2 made rarer (verses are longer than sentences).
PRIORS = {(1, 1): 0.89, (1, 0): 0.02, (0, 1): 0.02, (2, 1): 0.035, (1, 2): 0.035}
# How much cheaper (in nats) the length alignment of a stretch of verses must be than
# pairing them by reference before it replaces that pairing (see choose_beads).
MARGIN = 20.0
# WEB verses left out: there the Reina-Valera module's Job 39 is shifted by three verses
# and its Job 39:30 holds KJV 39:27-40:5 in one verse, which no length alignment untangles.
EXCLUDED = (("Job", 39, 1), ("Job", 40, 5))
MODULES = {"es": "spaRV1909eb", "en": "engWEB2015eb"}
SPLITS = ("train", "valid", "test")

KEY_RE = re.compile(r"^\$\$\$(.+) (\d+):(\d+)$")
TAG_RE = re.compile(r"<(/?)([A-Za-z]+)((?:[^>\"]|\"[^\"]*\")*?)(/?)>")
# Elements whose whole content is not running text.
DROPPED = {"note", "speaker"}
# Elements that only separate words (a space): not tracked as open elements, since the WEB
# opens a <list> or <item> in one verse and closes it in a later one.
SEPARATORS = {"div", "l", "lg", "lb", "chapter", "milestone", "p", "list", "item"}
# Elements whose tags go and whose text stays, if no enclosing element is dropped.
INLINE = {"w", "transChange", "q", "seg", "name", "divineName", "hi", "foreign", "reference",
          "rdg", "catchWord"}


def export_module(module):
    """Returns mod2imp's export of a SWORD module: '$$$Book C:V' lines, each followed by its markup."""
    done = subprocess.run(["mod2imp", module], check=True, capture_output=True)
    return done.stdout.decode("utf-8")


def parse_imp(text):
    """Maps (book, chapter, verse) to the verse's raw markup, in the module's order.

    Heading entries ('$$$[ Module Heading ]') and verse 0 (book and chapter introductions)
    are skipped: they are not verses of either translation.
    """
    verses = {}
    key, lines = None, []
    for line in text.split("\n") + ["$$$[ end ]"]:
        if line.startswith("$$$"):
            if key is not None:
                verses[key] = "\n".join(lines)
            match = KEY_RE.match(line)
            key = (match[1], int(match[2]), int(match[3])) if match else None
            if key is not None and key[2] == 0:
                key = None
            lines = []
        else:
            lines.append(line)
    return verses


def is_dropped(name, attributes):
    """Whether an element's content is not running text: notes, speakers, non-canonical titles."""
    if name == "title":
        return 'canonical="true"' not in attributes
    return name in DROPPED


def strip_markup(markup):
    """Returns a verse's running text: tags removed, dropped elements' content removed, entities unescaped.

    Open elements (other than separators) form a stack; text is kept only while no
    enclosing element is dropped. Separators and self-closing tags (milestones such as
    <l sID=.../>) only separate words. A tag this function does not know, or an element
    left unbalanced in the verse, raises ValueError, so that new markup is looked at, not guessed.
    """
    pieces, stack, at = [], [], 0
    for tag in TAG_RE.finditer(markup):
        if not any(dropped for _, dropped in stack):
            pieces.append(markup[at:tag.start()])
        at = tag.end()
        closing, name, attributes, self_closing = tag.groups()
        if name in SEPARATORS:
            pieces.append(" ")
            continue
        if name not in INLINE and name not in DROPPED and name != "title":
            raise ValueError(f"unknown tag <{name}> in: {markup[:200]}")
        if name == "title" or name in DROPPED:
            pieces.append(" ")
        if self_closing:
            continue
        if closing:
            if not stack or stack[-1][0] != name:
                raise ValueError(f"unbalanced </{name}> in: {markup[:200]}")
            stack.pop()
        else:
            stack.append((name, is_dropped(name, attributes)))
    if stack:
        raise ValueError(f"unclosed <{stack[-1][0]}> in: {markup[:200]}")
    pieces.append(markup[at:])
    return clean_text("".join(pieces))


def clean_text(text):
    """Unescapes XML entities and collapses whitespace (also before closing punctuation)."""
    text = html.unescape(text)
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r" ([,.;:!?)»”’])", r"\1", text)


SUBSCRIPTION_RE = re.compile(r"(Amén\.) [^.]*\b(?:[Ee]scrita|[Ee]nviada)\b.*$")


def drop_subscription(text):
    """Removes an epistle's closing subscription ('Amén. Escrita de Roma ...'), unmarked in RV1909.

    The WEB has no such lines, so they would teach the model to invent them.
    """
    return SUBSCRIPTION_RE.sub(r"\1", text)


def read_bible(module):
    """Maps (book, chapter, verse) to the running text of one module's verse."""
    return {key: strip_markup(markup) for key, markup in parse_imp(export_module(module)).items()}


def by_book(verses):
    """Groups a module's non-empty verses by book: {book: [(key, text)]}, each in verse order."""
    books = {}
    for key, text in verses.items():
        if text:
            books.setdefault(key[0], []).append((key, text))
    return books


def bead_cost(source_chars, target_chars, ratio):
    """Gale and Church's cost of pairing texts of these lengths: -log P(length difference).

    The target length is taken as normal with mean source*ratio and variance
    proportional to the mean length (their s2 = 6.8). A verse on one side only (a 1-0 or
    0-1 bead) costs nothing here, only its prior: translations do lack whole verses (the
    WEB omits Luke 17:36, for one), and charging their length would make the alignment
    join such a verse to a neighbour instead.
    """
    if not source_chars or not target_chars:
        return 0.0
    mean = (source_chars + target_chars / ratio) / 2
    delta = abs(target_chars - source_chars * ratio) / math.sqrt(6.8 * max(mean, 1))
    return -math.log(max(math.erfc(delta / math.sqrt(2)), 1e-300))


def path_cost(beads, ratio):
    """The cost of a sequence of beads: their priors and their length costs."""
    return sum(-math.log(PRIORS[(len(s), len(t))]) +
               bead_cost(sum(len(x) for _, x in s), sum(len(x) for _, x in t), ratio) for s, t in beads)


def length_beads(source, target, ratio):
    """Aligns one book's verses by length alone (Gale and Church 1993): beads [(source verses, target verses)].

    Beads are 1-1, 2-1, 1-2, 1-0 and 0-1 with PRIORS. The search stays within a band
    around the diagonal: the translations differ by only a few verses per book.
    """
    moves = [(di, dj, -math.log(prior)) for (di, dj), prior in PRIORS.items()]
    source_end = list(itertools.accumulate((len(text) for _, text in source), initial=0))
    target_end = list(itertools.accumulate((len(text) for _, text in target), initial=0))
    band = abs(len(source) - len(target)) + 12
    best = {(0, 0): (0.0, None)}
    for i in range(len(source) + 1):
        for j in range(max(0, i - band), min(len(target), i + band) + 1):
            for di, dj, penalty in moves:
                previous = best.get((i - di, j - dj))
                if previous is None or (i, j) == (0, 0):
                    continue
                cost = previous[0] + penalty + bead_cost(source_end[i] - source_end[i - di],
                                                         target_end[j] - target_end[j - dj], ratio)
                if (i, j) not in best or cost < best[(i, j)][0]:
                    best[(i, j)] = (cost, (di, dj))
    beads, i, j = [], len(source), len(target)
    while (i, j) != (0, 0):
        di, dj = best[(i, j)][1]
        beads.append((source[i - di:i], target[j - dj:j]))
        i, j = i - di, j - dj
    return beads[::-1]


def reference_beads(source, target):
    """Aligns one book's verses by reference: 1-1 where both have a verse, else 1-0 or 0-1."""
    beads, i, j = [], 0, 0
    while i < len(source) or j < len(target):
        source_key = source[i][0][1:] if i < len(source) else (math.inf,)
        target_key = target[j][0][1:] if j < len(target) else (math.inf,)
        di, dj = int(source_key <= target_key), int(target_key <= source_key)
        beads.append((source[i:i + di], target[j:j + dj]))
        i, j = i + di, j + dj
    return beads


def choose_beads(by_reference, by_length, ratio):
    """Pairs verses by reference except in stretches where the length alignment is MARGIN cheaper.

    Between two grid points both alignments pass through, the stretch of the length
    alignment replaces that of the reference alignment only if it costs MARGIN nats less:
    where the Reina-Valera module keeps its own verse division under the KJV key, a run of
    shifted verses makes the lengths disagree strongly; a verse one translation lacks, or
    a list of similar verses, does not.
    """
    points_a = list(itertools.accumulate(((len(s), len(t)) for s, t in by_reference),
                                         lambda p, q: (p[0] + q[0], p[1] + q[1]), initial=(0, 0)))
    points_b = set(itertools.accumulate(((len(s), len(t)) for s, t in by_length),
                                        lambda p, q: (p[0] + q[0], p[1] + q[1]), initial=(0, 0)))
    common = [point for point in points_a if point in points_b]
    beads_a, beads_b = segment(by_reference, common), segment(by_length, common)
    chosen = []
    for run_a, run_b in zip(beads_a, beads_b):
        better = path_cost(run_b, ratio) + MARGIN < path_cost(run_a, ratio)
        chosen.extend(run_b if better else run_a)
    return chosen


def segment(beads, common):
    """Cuts a bead path into the runs between consecutive common grid points."""
    runs, run, point, cuts = [], [], (0, 0), set(common[1:])
    for bead in beads:
        run.append(bead)
        point = (point[0] + len(bead[0]), point[1] + len(bead[1]))
        if point in cuts:
            runs.append(run)
            run = []
    return runs


def excluded(key):
    """Whether a WEB verse lies in EXCLUDED (an inclusive range of references of one book)."""
    first, last = EXCLUDED
    return key[0] == first[0] and first[1:] <= key[1:] <= last[1:]


def align(source, target):
    """Pairs the verses of books present in both, in the source module's order.

    Pairing by reference alone misaligns some chapters: the Reina-Valera module keeps
    its own verse division (e.g. KJV Numbers 12:16 is its Numbers 13:1) under the KJV
    versification key; there the verses are aligned by length instead (choose_beads).
    Returns (pairs [(target key, source text, target text)], beads that differ from
    pairing by reference). 2-1 and 1-2 beads become one pair of joined texts; 1-0 and
    0-1 beads are dropped.
    """
    source_books, target_books = by_book(source), by_book(target)
    books = [book for book in source_books if book in target_books]
    ratio = (sum(len(t) for book in books for _, t in target_books[book]) /
             sum(len(t) for book in books for _, t in source_books[book]))
    pairs, moved = [], []
    for book in books:
        source_verses, target_verses = source_books[book], target_books[book]
        by_reference = reference_beads(source_verses, target_verses)
        by_length = length_beads(source_verses, target_verses, ratio)
        for source_run, target_run in choose_beads(by_reference, by_length, ratio):
            if [k for k, _ in source_run] != [k for k, _ in target_run] and source_run and target_run:
                moved.append(([k for k, _ in source_run], [k for k, _ in target_run]))
            if source_run and target_run and not excluded(target_run[0][0]):
                pairs.append((target_run[0][0], " ".join(t for _, t in source_run),
                              " ".join(t for _, t in target_run)))
    return pairs, moved


def reference(key):
    """The reference string the split hashes, e.g. 'Genesis 1:1'."""
    book, chapter, verse = key
    return f"{book} {chapter}:{verse}"


def split_of(key):
    """The fixed split rule: crc32 of the reference mod 100: 0-2 test, 3 valid, else train."""
    bucket = zlib.crc32(reference(key).encode("utf-8")) % 100
    if bucket < 3:
        return "test"
    return "valid" if bucket == 3 else "train"


def match_form(text):
    """The form in which sources are compared for overlap: lower-cased words of letters and digits."""
    return " ".join(re.findall(r"\w+", text.lower()))


def split_pairs(pairs):
    """Splits pairs by split_of, then removes train pairs whose source occurs in test or valid.

    Returns ({split: [(key, es, en)]}, number of train pairs removed).
    """
    splits = {name: [] for name in SPLITS}
    for pair in pairs:
        splits[split_of(pair[0])].append(pair)
    held_out = {match_form(es) for name in ("valid", "test") for _, es, _ in splits[name]}
    kept = [pair for pair in splits["train"] if match_form(pair[1]) not in held_out]
    removed = len(splits["train"]) - len(kept)
    splits["train"] = kept
    test_sources = {es for _, es, _ in splits["test"]}
    assert not any(es in test_sources for _, es, _ in kept), "a test source is among train sources"
    return splits, removed


def write_atomically(path, lines):
    """Writes lines (one per line, UTF-8) to path through a temporary file renamed into place."""
    temporary = f"{path}.tmp{os.getpid()}"
    with open(temporary, "w", encoding="utf-8", newline="\n") as out:
        out.writelines(line + "\n" for line in lines)
    os.replace(temporary, path)


def write_splits(out_dir, splits):
    """Writes OUT_DIR/{split}.es and .en for every split."""
    os.makedirs(out_dir, exist_ok=True)
    for name, pairs in splits.items():
        for side, column in (("es", 1), ("en", 2)):
            lines = [pair[column] for pair in pairs]
            assert all("\n" not in line and line for line in lines)
            write_atomically(os.path.join(out_dir, f"{name}.{side}"), lines)


def markup_leftovers(splits):
    """Self-check: the lines of any split that still contain '<', '>' or '&'."""
    return [f"{name} {reference(key)}: {text}" for name, pairs in splits.items() for key, es, en in pairs
            for text in (es, en) if re.search(r"[<>&]", text)]


def mean_words(lines):
    """Mean number of whitespace-separated words per line."""
    return sum(len(line.split()) for line in lines) / max(len(lines), 1)


def report(splits, removed, aligned, moved):
    """Prints pair counts and mean words per side for each split."""
    print(f"aligned pairs: {aligned} ({len(moved)} paired other than by reference); "
          f"train pairs removed for a source in valid/test: {removed}")
    for name, pairs in splits.items():
        es_words = mean_words([es for _, es, _ in pairs])
        en_words = mean_words([en for _, _, en in pairs])
        print(f"{name}: {len(pairs)} pairs, mean words es {es_words:.1f}, en {en_words:.1f}")


def main():
    """Exports, cleans, aligns, splits and writes the corpus; fails if markup is left over."""
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    en = read_bible(MODULES["en"])
    es = {key: drop_subscription(text) for key, text in read_bible(MODULES["es"]).items()}
    pairs, moved = align(es, en)
    splits, removed = split_pairs(pairs)
    leftovers = markup_leftovers(splits)
    if leftovers:
        sys.exit("markup left in the output:\n" + "\n".join(leftovers[:20]))
    write_splits(sys.argv[1], splits)
    report(splits, removed, len(pairs), moved)


if __name__ == "__main__":
    main()
