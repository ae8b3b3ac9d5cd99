# kiln.compile and running: the JIT against the interpreter, params, errors.
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import kiln


def test_jit_matches_the_interpreter(mlp, mlp_inputs):
    jit = kiln.compile(mlp, backend="jit", threads=2, seed=3).run(**mlp_inputs)
    interp = kiln.compile(mlp, backend="interp", seed=3).run(**mlp_inputs)
    assert list(jit) == ["loss", "logits"]
    for name in jit:
        # Summation order differs (vector width, fusion): a few ulps.
        np.testing.assert_allclose(jit[name], interp[name], rtol=1e-5, atol=1e-6)


def test_compile_options(mlp, mlp_inputs):
    exe = kiln.compile(mlp, passes="none", cache=False, reuse=False)
    assert exe.backend == "jit" and repr(exe) == "<kiln.Executable @mlp (jit)>"
    assert "fusion" not in str(exe.compiled_graph)
    fused = kiln.compile(mlp)
    assert "fusion" in str(fused.compiled_graph)
    assert kiln.compile(mlp, backend="interp").compiled_graph is None
    np.testing.assert_allclose(exe.run(**mlp_inputs)["loss"], fused.run(**mlp_inputs)["loss"], rtol=1e-5)
    assert str(exe.graph) == str(mlp)


def elf_build_id(path):
    """The GNU build-id note of an ELF file, hex (readelf -n)."""
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True, check=True).stdout
    return re.search(r"Build ID: ([0-9a-f]+)", out).group(1)


def test_build_identity_is_the_modules_not_pythons():
    # The kernel cache's keys carry it: were it python3's (the process's
    # executable), a rebuilt module would load kernels an older one compiled.
    assert kiln.build_identity() == "build-id " + elf_build_id(kiln.__file__)
    assert elf_build_id(kiln.__file__) != elf_build_id(os.path.realpath(sys.executable))


def test_bf16_precision_rounds_the_matmul_operands(mlp, mlp_inputs):
    f32 = kiln.compile(mlp, seed=3).run(**mlp_inputs)
    jit = kiln.compile(mlp, seed=3, precision="bf16")
    assert "bf16" in str(jit.compiled_graph)
    bf16 = jit.run(**mlp_inputs)
    interp = kiln.compile(mlp, backend="interp", seed=3, precision="bf16").run(**mlp_inputs)
    assert bf16["logits"].dtype == np.float32  # the products are f32
    np.testing.assert_allclose(bf16["logits"], interp["logits"], rtol=1e-2, atol=1e-3)
    assert not np.array_equal(bf16["logits"], f32["logits"])
    np.testing.assert_allclose(bf16["loss"], f32["loss"], rtol=2e-2)
    with pytest.raises(kiln.Error, match=r"precision must be 'f32' or 'bf16', got 'f16'"):
        kiln.compile(mlp, precision="f16")


def test_dump_dir_holds_every_stage(mlp, mlp_inputs, tmp_path):
    exe = kiln.compile(mlp, dump_dir=str(tmp_path))
    kiln.compile(mlp, dump_dir=str(tmp_path))  # a second compile of @mlp: its own directory
    first, second = tmp_path / "mlp", tmp_path / "mlp.2"
    assert (first / "00-input.kir").read_text() == str(mlp)
    assert (first / "12-dce.kir").read_text() == str(exe.compiled_graph)  # the last pass
    assert (first / "program.txt").read_text().startswith("program @mlp: ")
    assert (second / "memory-plan.txt").exists()
    assert sorted(p.suffix for p in (first / "kernels").iterdir() if p.name.startswith("k0-")) == [".ll", ".ll", ".s"]
    assert kiln.optimize(mlp, dump_dir=str(tmp_path / "opt")) is not None
    assert (tmp_path / "opt" / "mlp" / "10-fusion.kir").exists()
    assert (tmp_path / "opt" / "index.html").exists()  # the dump as a page (compiler/report)
    assert (tmp_path / "opt" / "mlp" / "page-data.js").read_text().startswith("kilnPage.addGraph(")


def test_params_come_from_the_seed(mlp):
    a, b, c = (kiln.compile(mlp, backend="interp", seed=s) for s in (1, 1, 2))
    for exe in (a, b, c):
        exe.initialize()
    np.testing.assert_array_equal(a["w1"], b["w1"])
    assert not np.array_equal(a["w1"], c["w1"])
    np.testing.assert_array_equal(a["b1"], np.zeros(32))  # rank 1: zeros
    bound = np.full((16, 32), 0.5, np.float32)
    a["w1"] = bound
    a.initialize(seed=7)  # binds only what is unbound
    np.testing.assert_array_equal(a["w1"], bound)


def test_compile_errors(mlp, mlp_inputs):
    with pytest.raises(kiln.Error, match=r"unknown backend"):
        kiln.compile(mlp, backend="gpu")
    with pytest.raises(kiln.Error, match=r"unknown pass 'bogus'"):
        kiln.compile(mlp, passes="simplify,bogus")
    with pytest.raises(kiln.Error, match=r"threads: -1 is negative"):
        kiln.compile(mlp, threads=-1)
    for threads in (10**6, 2**40):  # the pool's limit, never "Resource temporarily unavailable"
        with pytest.raises(kiln.Error, match=rf"^threads: {threads} is more than the limit of \d+ \("):
            kiln.compile(mlp, threads=threads)
    with pytest.raises(kiln.Error, match=r"^threads: 1000000 is more than the limit"):
        kiln.Translator("/nonexistent", threads=10**6)


def test_run_errors(mlp, mlp_inputs):
    exe = kiln.compile(mlp, backend="interp")
    with pytest.raises(kiln.Error, match=r"^graph @mlp: unbound input %labels$"):
        exe.run(x=mlp_inputs["x"])
    with pytest.raises(kiln.Error, match=r"has no output 'loss' \(or it has not run\)"):
        exe.output("loss")
    with pytest.raises(kiln.Error, match=r"^%x is not bound$"):
        kiln.compile(mlp, backend="interp").get("x")
    exe.run(**mlp_inputs)
    with pytest.raises(kiln.Error, match=r"has no output 'nope'"):
        exe["nope"]
    bad_labels = mlp_inputs["labels"].copy()
    bad_labels[2] = 9
    for backend in ("interp", "jit"):
        with pytest.raises(kiln.Error, match=r"9"):  # a class index outside [0, 4)
            kiln.compile(mlp, backend=backend).run(x=mlp_inputs["x"], labels=bad_labels)


def test_check_numerics_names_the_node():
    g = kiln.parse("graph @g {\n  input %x : f32[3]\n  %y = log(%x) : f32[3]\n  output %y\n}\n", "g.kir")
    for backend in ("interp", "jit"):
        exe = kiln.compile(g, backend=backend, check_numerics=True)
        with pytest.raises(kiln.Error, match=r"nan.*g\.kir:3"):
            exe.run(x=np.array([1, -1, 2], np.float32))
        unchecked = kiln.compile(g, backend=backend).run(x=np.array([1, -1, 2], np.float32))["y"]
        assert np.isnan(unchecked[1])
