# kiln.train and kiln.translate on the copy task, kept to a few steps of a tiny model.
import pytest

import kiln

TINY = dict(d_model=16, heads=2, d_ff=32, layers=1, dropout=0, warmup=10, eval_sentences=4)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A checkpoint of 3 steps on the copy task, and the progress lines of its training."""
    path = str(tmp_path_factory.mktemp("copy") / "ckpt")
    lines = []
    result = kiln.train("copy", path, steps=3, log=lines.append, **TINY)
    return path, result, lines


def test_train(checkpoint):
    path, result, lines = checkpoint
    assert (result.first_step, result.last_step) == (1, 3)
    assert [step for step, _ in result.train_losses] == [1, 2, 3]
    assert all(loss > 0 for _, loss in result.train_losses)
    assert len(result.dev_losses) == 1 and 0 <= result.exact_match <= 1
    assert any("dev" in line for line in lines), lines


def test_train_again_continues_the_run(tmp_path):
    # As `kiln train`: a directory that holds a run is continued, and a setting
    # the run keeps may not change (the flag and both values named).
    path = str(tmp_path / "ckpt")
    kiln.train("copy", path, steps=2, **TINY)
    again = kiln.train("copy", path, steps=2, **TINY)
    assert (again.first_step, again.last_step) == (3, 4)
    with pytest.raises(kiln.Error, match=r"--d-model 24 differs from the run's 16"):
        kiln.train("copy", path, steps=1, **dict(TINY, d_model=24))


def write_numbers(directory, name, count, offset):
    es = "cero uno dos tres cuatro cinco seis siete ocho nueve".split()
    en = "zero one two three four five six seven eight nine".split()
    pairs = [((i + offset) % 10, (i * 7 + offset) % 10) for i in range(count)]
    (directory / f"{name}.es").write_text("".join(f"el {es[a]} y {es[b]}\n" for a, b in pairs))
    (directory / f"{name}.en").write_text("".join(f"the {en[a]} and {en[b]}\n" for a, b in pairs))


def test_own_corpus_train_evaluate_score_average(tmp_path):
    # The CLI's own-corpus flow from Python, with its defaults: evaluations and
    # saves at each fifth of the budget, snapshots and the best kept for averaging.
    for name, count, offset in (("train", 120, 0), ("valid", 8, 3), ("test", 8, 5)):
        write_numbers(tmp_path, name, count, offset)
    ckpt = str(tmp_path / "ckpt")
    corpus = dict(train=str(tmp_path / "train"), valid=str(tmp_path / "valid"), test=str(tmp_path / "test"),
                  src_lang="es", tgt_lang="en", vocab_size=40)
    result = kiln.train("text", ckpt, steps=5, backend="interp", log=lambda line: None, **corpus,
                        **dict(TINY, eval_sentences=8))
    assert len(result.dev_losses) == 5
    scores = kiln.evaluate(ckpt + "/best", beam=1, backend="interp")
    assert len(scores["hypotheses"]) == 8 and 0 <= scores["bleu"] <= 100
    assert scores["bleu_signature"].startswith("nrefs:1|")
    sources = (tmp_path / "test.es").read_text().splitlines()
    references = (tmp_path / "test.en").read_text().splitlines()
    given = kiln.evaluate(ckpt + "/best", sources=sources, references=references, beam=1, backend="interp")
    assert given["hypotheses"] == scores["hypotheses"]
    assert kiln.score(given["hypotheses"], references)["bleu"] == pytest.approx(given["bleu"])
    assert kiln.score(["the one and two"], [["the one and two"], ["one two"]])["bleu"] == pytest.approx(100)
    averaged = kiln.average(str(tmp_path / "last"), checkpoint=ckpt, last=3)
    assert [p.rsplit("/", 1)[1] for p in averaged] == ["step-00000003", "step-00000004", "step-00000005"]
    assert len(kiln.average(str(tmp_path / "best"), checkpoint=ckpt, best=2)) == 2
    assert len(kiln.evaluate(str(tmp_path / "last"), beam=1, backend="interp")["hypotheses"]) == 8
    with pytest.raises(kiln.Error, match=r"--last 9 but .* has 5 snapshots"):
        kiln.average(str(tmp_path / "nine"), checkpoint=ckpt, last=9)
    with pytest.raises(kiln.Error, match=r"a corpus .* is for task 'text', not 'copy'"):
        kiln.train("copy", str(tmp_path / "other"), steps=1, **corpus)


def test_train_option_errors(tmp_path):
    with pytest.raises(kiln.Error, match=r"give exactly one of --minutes and --steps"):
        kiln.train("copy", str(tmp_path / "a"))
    with pytest.raises(kiln.Error, match=r"d_model: -3.* is negative"):
        kiln.train("copy", str(tmp_path / "b"), steps=1, d_model=-3)
    with pytest.raises(kiln.Error, match=r"--resume: .* does not exist"):
        kiln.train("copy", str(tmp_path / "c"), steps=1, resume=True)


def test_train_and_translate_in_bf16(tmp_path):
    # The same 3 steps with the matmuls' operands in bf16: the same trajectory
    # within bf16's rounding (each loss within 2% of f32's), and the checkpoint
    # translates in either precision.
    f32 = kiln.train("copy", str(tmp_path / "f32"), steps=3, seed=5, **TINY)
    bf16 = kiln.train("copy", str(tmp_path / "bf16"), steps=3, seed=5, precision="bf16", **TINY)
    for (step, a), (_, b) in zip(f32.train_losses, bf16.train_losses):
        assert b == pytest.approx(a, rel=0.02), step
    assert f32.train_losses != bf16.train_losses  # bf16 did round something
    sentence = "1 2 3 4 5 6 7 8 9 10"
    assert len(kiln.translate(str(tmp_path / "bf16"), sentence, precision="bf16").split()) == 10
    assert len(kiln.Translator(str(tmp_path / "bf16"), precision="f32")(sentence).split()) == 10
    with pytest.raises(kiln.Error, match=r"precision must be 'f32' or 'bf16', got 'fp16'"):
        kiln.train("copy", str(tmp_path / "e"), steps=1, precision="fp16", **TINY)
    with pytest.raises(kiln.Error, match=r"precision must be 'f32' or 'bf16', got 'f64'"):
        kiln.Translator(str(tmp_path / "bf16"), precision="f64")


def test_train_log_callback_errors_propagate(tmp_path):
    def fail(line):
        raise RuntimeError("log failed")

    with pytest.raises(RuntimeError, match="log failed"):
        kiln.train("copy", str(tmp_path / "d"), steps=1, log=fail, **TINY)


def test_translate(checkpoint):
    path, _, _ = checkpoint
    out = kiln.translate(path, ["1 2 3 4 5 6 7 8 9 10", "1 5 5 5 5 5 5 5 5 5"])
    assert len(out) == 2
    for sentence in out:
        tokens = sentence.split()
        assert len(tokens) == 10 and tokens[0] == "1" and all(t.isdigit() for t in tokens)
    translator = kiln.Translator(path, beam=2)
    assert isinstance(translator("1 2 3 4 5 6 7 8 9 10"), str)


def test_translator_attention_as_the_command_writes_it(checkpoint, tmp_path):
    path, _, _ = checkpoint
    translator = kiln.Translator(path, beam=1)
    [found] = translator.attention("1 2 3 4 5 6", dir=str(tmp_path / "attn"))
    assert found["output"] == translator("1 2 3 4 5 6")
    s, t = len(found["source_pieces"]), len(found["output_pieces"])
    assert found["input_pieces"][0] == "<s>" and len(found["input_pieces"]) == t
    for name, weights in found["weights"].items():
        heads, queries, keys = weights.shape
        assert (queries, keys) == ((s, s) if name.startswith("enc.") else (t, s) if "cross" in name else (t, t))
        assert abs(weights.sum(axis=-1) - 1).max() < 1e-5, name
    assert {"enc.0.self_attn", "dec.0.self_attn", "dec.0.cross_attn"} <= set(found["weights"])
    assert (tmp_path / "attn" / "index.html").exists()
    assert (tmp_path / "attn" / "0001" / "dec.0.cross_attn.npy").exists()


def test_translate_decodes_as_the_commands_by_default(checkpoint):
    # `kiln translate` and `kiln eval` decode with beam 4 and length penalty 0.6 by default; so does Python.
    path, _, _ = checkpoint
    sentences = ["1 2 3 4 5 6 7 8 9 10", "1 5 5 5 5 5 5 5 5 5", "1 9 8 7"]
    assert "beam: int = 4" in kiln.translate.__doc__ and "length_penalty: float = 0.6" in kiln.translate.__doc__
    assert "beam: int = 4" in kiln.Translator.__init__.__doc__
    assert kiln.translate(path, sentences) == kiln.translate(path, sentences, beam=4, length_penalty=0.6)
    assert kiln.Translator(path)(sentences) == kiln.translate(path, sentences, beam=4)


def test_translate_errors(checkpoint, tmp_path):
    path, _, _ = checkpoint
    with pytest.raises(kiln.Error) as e:
        kiln.translate(path, ["1 2 3", "", "1 x"])
    assert str(e.value).splitlines() == [
        "sentence 3: copy task: bad token 'x' (expected integers 1..10 separated by spaces)",
        "1 of 3 sentences were not translated (sentence 3)",
    ]
    assert kiln.translate(path, ["1 2 3", " "])[1] == ""  # a blank sentence translates to nothing, not an error
    with pytest.raises(kiln.Error, match=r"checkpoint"):
        kiln.translate(str(tmp_path / "missing"), "1 2 3")
    with pytest.raises(kiln.Error, match=r"beam: 0"):
        kiln.Translator(path, beam=0)


def test_language_model_trains_generates_and_continues(tmp_path):
    # kiln.train(model='lm') and kiln.generate, as `kiln train --model lm` and `kiln generate`.
    text = tmp_path / "train.txt"
    text.write_text("to be or not to be, that is the question. " * 40)
    path = str(tmp_path / "gpt")
    lm = dict(model="lm", checkpoint=path, train=str(text), valid=str(text), context=16, d_model=16, heads=2,
              d_ff=32, layers=1, batch_size=4, warmup=5)
    lines = []
    first = kiln.train(steps=10, log=lines.append, **lm)
    assert (first["first_step"], first["last_step"]) == (0, 10)
    assert len(first["dev"]) == 5 and any("dev at step" in line for line in lines)
    again = kiln.train(steps=5, **lm)
    assert again["first_step"] == 10
    a = kiln.generate(path, "to be", max_tokens=20, seed=3, top_k=5)
    assert a == kiln.generate(path, "to be", max_tokens=20, seed=3, top_k=5)
    assert len(a) == 1 and a[0].startswith("to be")
    assert len(kiln.generate(path, samples=2, max_tokens=5, temperature=0)) == 2
    with pytest.raises(kiln.Error, match="differs from the run's 16"):
        kiln.train(steps=1, **dict(lm, d_model=32))
    with pytest.raises(kiln.Error, match="does not exist"):
        kiln.generate(str(tmp_path / "nope"))
