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


def test_train_resumes(checkpoint, tmp_path):
    path, _, _ = checkpoint
    with pytest.raises(kiln.Error, match=r"already holds a checkpoint: pass --resume"):
        kiln.train("copy", path, steps=1, **TINY)


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
