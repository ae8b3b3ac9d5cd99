# One kiln.Executable (and one kiln.Translator) shared by several Python threads:
# calls run one after another, each whole, so every result is that call's own.
import threading

import numpy as np
import pytest

import kiln

THREADS, RUNS = 4, 60


def hammer(work):
    """Runs work(thread_index) on THREADS threads at once; re-raises the first failure."""
    errors = []

    def body(i):
        try:
            work(i)
        except BaseException as e:  # noqa: B036 - reported on the main thread
            errors.append(e)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


@pytest.mark.parametrize("backend", ["interp", "jit"])
def test_threads_running_one_executable_each_get_their_own_results(backend, mlp):
    exe = kiln.compile(mlp, backend=backend, threads=2, seed=5)
    rng = np.random.default_rng(1)
    inputs = [{"x": rng.standard_normal((8, 16)).astype(np.float32),
               "labels": rng.integers(0, 4, size=8).astype(np.int32)} for _ in range(THREADS)]
    alone = [{k: v.copy() for k, v in exe.run(**inp).items()} for inp in inputs]

    def work(i):
        for r in range(RUNS):
            if r % 3 == 0:  # bind first, then run: the binding may be another thread's by then
                exe["x"] = inputs[(i + 1) % THREADS]["x"]
            out = exe.run(**inputs[i])
            for name, want in alone[i].items():
                np.testing.assert_array_equal(out[name], want, err_msg=f"thread {i} run {r} output {name}")
            np.testing.assert_array_equal(exe.get("w1", copy=True), exe["w1"])

    hammer(work)


def test_an_executable_used_inside_its_own_bind_is_an_error(mlp, mlp_inputs):
    exe = kiln.compile(mlp, backend="interp")

    class Sneaky:
        def __array__(self, dtype=None, copy=None):
            exe.run(**mlp_inputs)
            return mlp_inputs["x"]

    with pytest.raises(kiln.Error, match=r"^input %x: numpy.asarray cannot read the Sneaky: Error: kiln.Executable @mlp: used from inside one of its own calls"):
        exe.bind("x", Sneaky())
    assert set(exe.run(**mlp_inputs)) == {"loss", "logits"}  # still usable


def test_threads_sharing_a_translator(tmp_path):
    path = str(tmp_path / "ckpt")
    kiln.train("copy", path, steps=2, d_model=16, heads=2, d_ff=32, layers=1, dropout=0, warmup=10,
               eval_sentences=2, log=lambda line: None)
    translator = kiln.Translator(path, backend="interp")
    sentences = [["1 2 3", "4 5"], ["6 7 8 9"], ["3 1"], ["2 2 2 2 2"]]
    alone = [translator(s) for s in sentences]

    def work(i):
        for _ in range(3):
            assert translator(sentences[i]) == alone[i]

    hammer(work)
