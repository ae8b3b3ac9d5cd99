# numpy arrays in and out of an Executable: dtypes, shapes, conversions, and
# results read without a copy.
import gc

import numpy as np
import pytest

import kiln


@pytest.fixture(params=["jit", "interp"])
def exe(request, mlp):
    return kiln.compile(mlp, backend=request.param)


def test_bind_checks_dtype_and_shape(exe):
    with pytest.raises(kiln.Error, match=r"^input %x is f32\[8,16\], got a tensor of i32\[8,16\]$"):
        exe.bind("x", np.zeros((8, 16), np.int32))
    with pytest.raises(kiln.Error, match=r"^input %x is f32\[8,16\], got a tensor of f32\[8,15\]$"):
        exe["x"] = np.zeros((8, 15), np.float32)
    with pytest.raises(kiln.Error, match=r"^param %w1 is f32\[16,32\], got a tensor of f32\[\]$"):
        exe.bind("w1", np.float32(1))
    with pytest.raises(kiln.Error, match=r"^graph @mlp declares no input, param or state named 'nope'$"):
        exe.bind("nope", np.zeros(3, np.float32))
    with pytest.raises(kiln.Error, match=r"^input %x: numpy dtype float16 is not supported"):
        exe.bind("x", np.zeros((8, 16), np.float16))
    with pytest.raises(kiln.Error, match=r"^input %x: numpy dtype >f4 is not supported"):
        exe.bind("x", np.zeros((8, 16), ">f4"))
    with pytest.raises(kiln.Error, match=r"^input %x: numpy dtype object is not supported"):
        exe.bind("x", object())


def test_float64_and_int64_convert_when_they_fit(exe, mlp_inputs):
    x64 = mlp_inputs["x"].astype(np.float64)
    labels64 = mlp_inputs["labels"].astype(np.int64)
    converted = exe.run(x=x64, labels=labels64)["logits"].copy()
    exact = exe.run(**mlp_inputs)["logits"]
    np.testing.assert_array_equal(converted, exact)
    with pytest.raises(kiln.Error, match=r"^input %labels: element 3 of the <i8 data \(4294967296\) does not fit in i32$"):
        exe.bind("labels", np.array([0, 1, 2, 2**32, 0, 1, 2, 3]))
    with pytest.raises(kiln.Error, match=r"^input %x: element 0 of the <f8 data does not fit in f32$"):
        exe.bind("x", np.full((8, 16), 1e300))
    with pytest.raises(kiln.Error, match=r"input %labels is i32\[8\], got a tensor of f32\[8\] "
                                         r"\(converted from numpy float64\)$"):
        exe.bind("labels", np.zeros(8))  # a float64 array becomes f32, not i32


def test_lists_and_non_contiguous_arrays(exe, mlp_inputs):
    expected = exe.run(**mlp_inputs)["logits"].copy()
    x_fortran = np.asfortranarray(mlp_inputs["x"])
    x_strided = np.repeat(mlp_inputs["x"], 2, axis=1)[:, ::2]
    assert not x_fortran.flags.c_contiguous and not x_strided.flags.c_contiguous
    for x in (x_fortran, x_strided):
        np.testing.assert_array_equal(exe.run(x=x, labels=mlp_inputs["labels"].tolist())["logits"], expected)


def test_bool_tensors():
    g = kiln.Graph("g")
    b = kiln.Builder(g)
    mask = b.input("mask", kiln.bool_, [4])
    x = b.input("x", kiln.f32, [4])
    b.output(b.select(mask, x, b.neg(x), name="y"))
    for backend in ("jit", "interp"):
        out = kiln.compile(g, backend=backend).run(mask=[True, False, True, False],
                                                   x=np.arange(4, dtype=np.float32))["y"]
        np.testing.assert_array_equal(out, [0, -1, 2, -3])


def test_binding_copies(exe, mlp_inputs):
    x = mlp_inputs["x"].copy()
    exe.bind("x", x)
    x[:] = 7
    np.testing.assert_array_equal(exe["x"], mlp_inputs["x"])


def test_results_are_views_without_a_copy(exe, mlp_inputs):
    out = exe.run(**mlp_inputs)
    logits = out["logits"]
    assert logits.dtype == np.float32 and logits.shape == (8, 4)
    assert np.shares_memory(logits, exe.output("logits"))
    assert np.shares_memory(logits, exe["logits"])
    assert np.shares_memory(exe["w1"], exe.get("w1"))
    assert not logits.flags.writeable
    with pytest.raises(ValueError):
        logits[0, 0] = 1
    copy = exe.output("logits", copy=True)
    assert copy.flags.writeable and not np.shares_memory(copy, logits)
    assert not np.shares_memory(exe.get("w1", copy=True), exe["w1"])


def test_views_outlive_runs_binds_and_the_executable(mlp, mlp_inputs):
    for backend in ("jit", "interp"):
        exe = kiln.compile(kiln.train_graph(mlp, "loss", optimizer="sgd", lr=0.5), backend=backend)
        first = exe.run(**mlp_inputs)
        loss1, w1 = first["loss"], exe["w1"]
        saved_loss, saved_w1 = loss1.copy(), w1.copy()
        second = exe.run(**mlp_inputs)  # updates w1 in place (sgd) and makes new outputs
        np.testing.assert_array_equal(loss1, saved_loss)
        np.testing.assert_array_equal(w1, saved_w1)
        assert second["loss"] < saved_loss
        assert not np.array_equal(exe["w1"], saved_w1)
        x = exe["x"]
        exe.bind("x", np.zeros((8, 16), np.float32))
        np.testing.assert_array_equal(x, mlp_inputs["x"])
        logits = second["logits"]
        saved_logits = logits.copy()
        del exe, first, second
        gc.collect()
        # The executable is gone; its tensors that arrays still show are theirs now.
        np.testing.assert_array_equal(logits, saved_logits)
        np.testing.assert_array_equal(w1, saved_w1)


def test_a_huge_broadcast_view_is_refused_before_it_is_copied(exe):
    huge = np.broadcast_to(np.float32(1), (2**40, 2**20))  # 2^60 elements over 4 bytes of memory
    with pytest.raises(kiln.Error, match=r"^input %x: a numpy float32 array of shape \[1099511627776,1048576\] needs "
                                         r"4611686018427387904 bytes .*, more than "):
        exe.bind("x", huge)
    exe.bind("x", np.broadcast_to(np.float32(2), (8, 16)))  # a small view binds (a copy in C order)
    np.testing.assert_array_equal(exe["x"], np.full((8, 16), 2, np.float32))


def test_what_numpy_cannot_read_is_named(exe):
    with pytest.raises(kiln.Error, match=r"^input %x: numpy.asarray cannot read the list: ValueError: setting an "
                                         r"array element with a sequence"):
        exe.bind("x", [[1.0, 2.0], [3.0]])
