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


def round_trips(g):
    text = str(g)
    assert str(kiln.parse(text)) == text


def test_names_and_strings_the_module_takes_print_and_parse_back():
    with pytest.raises(kiln.Error, match=r"^invalid graph name 'a b' \(letters, digits, '_' and '.'\)$"):
        kiln.Graph("a b")
    g = kiln.Graph("g")
    with pytest.raises(kiln.Error, match=r"^invalid graph name 'x}'"):
        g.name = "x}"
    g.name = "g.2"
    b = kiln.Builder(g)
    x = b.input("x", kiln.f32, [2])
    with pytest.raises(kiln.Error, match=r"^invalid value name 'y z'"):
        b.input("y z", kiln.f32, [2])
    with pytest.raises(kiln.Error, match=r"^invalid value name 'h-1'"):
        b.relu(x, name="h-1")
    with pytest.raises(kiln.Error, match=r"^invalid attribute name 'a b'"):
        b.param("w", kiln.f32, [2], **{"a b": 1})
    with pytest.raises(kiln.Error, match=r"^attribute names are str, got 1$"):
        b.emit("relu", [x], {1: 2})
    with pytest.raises(kiln.Error, match=r"^name: expected a str or a list of str, got \[1\]$"):
        b.emit("relu", [x], name=[1])
    with pytest.raises(kiln.Error, match=r'^param %v: unknown init "evil"'):
        b.param("v", kiln.f32, [2], init="evil")
    b.param("w", kiln.f32, [2], init="normal", note="Grüße \"quoted\"\n\\ done")
    b.output(b.relu(x, name="h.1"))
    assert [v.name for v in g.params] == ["w"] and g.num_nodes == 1  # the failed calls added nothing
    round_trips(g)


def test_a_string_attribute_that_is_not_utf8_is_refused_where_it_is(tmp_path):
    path = tmp_path / "g.kir"
    path.write_bytes(b'graph @g {\n  param %w : f32[2] {init="ab\xffc"}\n  output %w\n}\n')
    with pytest.raises(kiln.ParseError, match=r"g\.kir:2:30: error: string is not UTF-8: byte 0xff") as e:
        kiln.load(str(path))
    assert (e.value.line, e.value.col) == (2, 30)


def test_sizes_from_python_are_errors_naming_them():
    b = kiln.Builder(kiln.Graph("g"))
    with pytest.raises(kiln.Error, match=r"^input %x: shape \[9223372036854775808\]: 9223372036854775808 does not fit "
                                         r"in int64 \[-2\^63, 2\^63-1\]$"):
        b.input("x", kiln.f32, [2**63])
    with pytest.raises(kiln.Error, match=r"^param %w: f32\[0,-3\] has a negative dimension$"):
        b.param("w", kiln.f32, [0, -3])
    with pytest.raises(kiln.Error, match=r"^input %y: shape \[4611686018427387904,4\] has too many elements$"):
        b.input("y", kiln.f32, [2**62, 4])
    x = b.input("x", kiln.f32, [2, 3])
    with pytest.raises(kiln.Error, match=r"^attribute 'axes' \[-1, 36893488147419103232\]: 36893488147419103232 does "
                                         r"not fit in int64"):
        b.sum(x, axes=[-1, 2**65])
    with pytest.raises(kiln.Error, match=r"^attribute 'axis': -9223372036854775809 does not fit in int64"):
        b.concat(x, x, axis=-2**63 - 1)


def test_builder_scopes_name_nodes_and_print_as_loc():
    g = kiln.Graph("scoped")
    b = kiln.Builder(g)
    x = b.input("x", kiln.f32, [4, 8])
    w = b.param("w", kiln.f32, [8, 8])
    with b.scope("enc"), b.scope("0.ffn"):
        h = b.relu(b.matmul(x, w), name="h")
    y = b.neg(h, name="y")
    b.output(y)
    assert h.scopes == ["enc.0.ffn"]
    assert y.scopes == [] and x.scopes == []
    assert 'loc("enc.0.ffn")' in str(g)
    assert str(kiln.parse(str(g))) == str(g)
    with pytest.raises(kiln.Error, match="invalid scope name"):
        with b.scope("a b"):
            pass
