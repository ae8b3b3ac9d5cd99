# kiln.parse / kiln.load / printing, graph inspection, the Builder and kiln.ops().
import subprocess

import pytest

import kiln
from conftest import EXAMPLES, SOURCE_DIR


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.kir")), ids=lambda p: p.name)
def test_print_parse_round_trip_is_exact(path, kiln_binary):
    g = kiln.load(str(path))
    text = str(g)
    assert text == g.to_kir()
    assert str(kiln.parse(text)) == text
    # The canonical text is what `kiln check` prints.
    assert text == subprocess.run([kiln_binary, "check", str(path)], capture_output=True, text=True,
                                  check=True).stdout


def test_inspection(mlp):
    assert mlp.name == "mlp"
    assert [(v.name, v.type) for v in mlp.inputs] == [("x", "f32[8,16]"), ("labels", "i32[8]")]
    assert [v.name for v in mlp.params] == ["w1", "b1", "w2", "b2"]
    assert mlp.state == []
    assert [str(v) for v in mlp.outputs] == ["%loss : f32[]", "%logits : f32[8,4]"]
    assert mlp.num_nodes == 6
    x = mlp.value("x")
    assert (x.dtype, x.shape, x.kind) == (kiln.f32, (8, 16), "input")
    assert mlp.value("hidden").kind == "result"
    assert "w1" in mlp and "nope" not in mlp
    assert repr(x) == "<kiln.Value %x : f32[8,16]>"
    assert "digraph" in mlp.to_dot()
    mlp.verify()


def test_unknown_value_name(mlp):
    with pytest.raises(kiln.Error, match=r"value nope: graph @mlp has no value named 'nope'"):
        mlp.value("nope")


def test_parse_error_names_file_line_and_column():
    text = "graph @g {\n  input %x : f32[2]\n  %y = bogus(%x) : f32[2]\n  output %y\n}\n"
    with pytest.raises(kiln.ParseError) as e:
        kiln.parse(text, "bad.kir")
    assert str(e.value) == "bad.kir:3:8: error: unknown op 'bogus'"
    assert (e.value.file, e.value.line, e.value.col) == ("bad.kir", 3, 8)
    assert isinstance(e.value, kiln.Error)


@pytest.mark.parametrize("path", sorted((SOURCE_DIR / "tests" / "kir_bad").glob("*.kir")), ids=lambda p: p.name)
def test_bad_kir_gives_the_commands_message(path, kiln_binary):
    with pytest.raises(kiln.Error) as e:
        kiln.load(str(path))
    check = subprocess.run([kiln_binary, "check", str(path)], capture_output=True, text=True)
    assert check.returncode == 1
    expected = check.stderr.rstrip("\n")
    if not isinstance(e.value, kiln.ParseError):
        expected = expected.removeprefix("kiln: error: ")
    assert str(e.value) == expected


def test_missing_file():
    with pytest.raises(kiln.Error, match=r"cannot read /nonexistent/g.kir"):
        kiln.load("/nonexistent/g.kir")


def build_mlp():
    g = kiln.Graph("mlp")
    b = kiln.Builder(g)
    x = b.input("x", kiln.f32, [8, 16])
    labels = b.input("labels", "i32", [8])
    w1 = b.param("w1", kiln.f32, [16, 32])
    b1 = b.param("b1", kiln.f32, [32])
    w2 = b.param("w2", kiln.f32, [32, 4])
    b2 = b.param("b2", kiln.f32, [4])
    hidden = b.relu(b.add(b.matmul(x, w1, name="xw1"), b1, name="pre"), name="hidden")
    logits = b.add(b.matmul(hidden, w2, name="hw2"), b2, name="logits")
    b.output(b.cross_entropy(logits, labels, name="loss"))
    b.output("logits")
    return g


def test_builder_builds_the_example(mlp):
    assert str(build_mlp()) == str(mlp)


def test_builder_ops_and_attributes():
    g = kiln.Graph("g")
    b = kiln.Builder(g)
    x = b.input("x", kiln.f32, [2, 3])
    w = b.param("w", kiln.f32, [4, 3], init="normal", std=0.5)
    y = b.emit("matmul", [x, w], {"transpose_b": True}, name="y")
    assert y.type == "f32[2,4]"
    s = b.sum(y, axes=[1], keepdims=True)
    assert s.shape == (2, 1)
    m = b.mean("y", axes=[0])  # operands may be named
    assert m.shape == (4,)
    c = b.cast(x, dtype="i32")
    assert c.dtype == kiln.i32
    assert b.concat(x, x, axis=0).shape == (4, 3)
    assert "param %w : f32[4,3] {init=\"normal\", std=0.5}" in str(g)
    assert "%y = matmul(%x, %w) {transpose_b=true} : f32[2,4]" in str(g)
    g.verify()


def test_builder_mistakes():
    g = kiln.Graph("g")
    b = kiln.Builder(g)
    x = b.input("x", kiln.f32, [2, 3])
    w = b.input("w", kiln.f32, [4, 5])
    with pytest.raises(kiln.Error, match=r"matmul\(f32\[2,3\], f32\[4,5\]\): inner dimensions differ"):
        b.matmul(x, w)
    with pytest.raises(kiln.Error, match=r"unknown op 'bogus'"):
        b.emit("bogus", [x])
    with pytest.raises(kiln.Error, match=r"^add\(f32\[2,3\]\): expects 2 operand\(s\), got 1$"):
        b.add(x)
    with pytest.raises(kiln.Error, match=r"attribute 'axes' of op 'sum' must be int list, got float"):
        b.sum(x, axes=1.5)
    with pytest.raises(kiln.Error, match=r"unknown attribute 'axis' for op 'sum'"):
        b.sum(x, axis=1)
    with pytest.raises(kiln.Error, match=r"relu: operand 1: expected a value name \(str\) or a kiln.Value, got float"):
        b.relu(1.0)
    other = kiln.Builder(kiln.Graph("other")).input("z", kiln.f32, [2, 3])
    with pytest.raises(kiln.Error, match=r"belongs to graph @other"):
        b.add(x, other)
    with pytest.raises(kiln.Error, match=r"dtype: expected kiln.f32"):
        b.input("y", "f64", [2])
    with pytest.raises(kiln.Error, match=r"shape: expected a list of ints"):
        b.input("y", kiln.f32, [2.5])
    with pytest.raises(kiln.Error):
        b.input("x", kiln.f32, [2])  # the name is taken


def test_every_op_is_a_builder_method():
    ops = kiln.ops()
    names = [op.name for op in ops]
    assert names == sorted(names) and "matmul" in names
    for op in ops:
        if op.name != "fusion":  # a fusion carries a body graph: the passes make them
            assert op.summary in getattr(kiln.Builder, op.name).__doc__
    matmul = next(op for op in ops if op.name == "matmul")
    assert (matmul.min_operands, matmul.max_operands) == (2, 2)
    assert matmul.attrs["transpose_b"] == ("bool", "false")


def test_docstrings():
    for obj in (kiln.compile, kiln.parse, kiln.load, kiln.grad, kiln.optimize, kiln.train, kiln.translate,
                kiln.Executable, kiln.Graph, kiln.Builder, kiln.Executable.run):
        assert obj.__doc__ and len(obj.__doc__) > 40, obj
    assert "backend" in kiln.compile.__doc__ and "check_numerics" in kiln.compile.__doc__


def test_graph_copy_is_independent(mlp):
    copy = mlp.copy()
    kiln.Builder(copy).output("hidden")
    assert len(copy.outputs) == 3 and len(mlp.outputs) == 2
    assert [v.name for v in mlp.outputs] == ["loss", "logits"]
