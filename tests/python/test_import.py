"""kiln.import_onnx: ONNX models made with onnx.helper (Debian's python3-onnx;
skipped without it) imported, compiled and run against numpy, and its errors."""
import pytest

from conftest import kiln, np

onnx = pytest.importorskip("onnx", reason="needs onnx (Debian's python3-onnx)")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def dense_relu_model(batch_dim=3, op="Relu"):
    """y = op(x @ w + b), with w and b initializers; batch_dim may be a symbol."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"], name="dense"),
         helper.make_node("Add", ["h", "b"], ["a"], name="bias"),
         helper.make_node(op, ["a"], ["y"], name="act")],
        "dense_relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch_dim, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch_dim, 5])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)]), w, b


def save(tmp_path, model):
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    return path


def test_import_runs_like_numpy(tmp_path):
    model, w, b = dense_relu_model()
    g, params = kiln.import_onnx(str(save(tmp_path, model)))
    assert sorted(params) == sorted(p.name for p in g.params)
    exe = kiln.compile(g)
    for name, value in params.items():
        exe.bind(name, value)
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    (y,) = exe.run(x=x).values()
    np.testing.assert_allclose(y, np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-6)


def test_a_model_without_initializers_has_no_params(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="act")], "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    g, params = kiln.import_onnx(str(save(tmp_path, model)))
    assert params == {} and g.params == []
    x = np.array([[-1, 2, -3], [4, -5, 6]], dtype=np.float32)
    (y,) = kiln.compile(g).run(x=x).values()
    np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_symbolic_dims_need_values(tmp_path):
    path = save(tmp_path, dense_relu_model(batch_dim="batch")[0])
    with pytest.raises(kiln.Error, match="batch"):
        kiln.import_onnx(str(path))
    g, _ = kiln.import_onnx(str(path), dims={"batch": 2})
    assert g.inputs[0].shape == (2, 4)
    g, _ = kiln.import_onnx(str(path), input_shapes={"x": [7, 4]})
    assert g.inputs[0].shape == (7, 4)


def test_unknown_ops_are_named_with_their_nodes(tmp_path):
    path = save(tmp_path, dense_relu_model(op="HardSwish")[0])
    with pytest.raises(kiln.Error, match="HardSwish.*act"):
        kiln.import_onnx(str(path))


@pytest.mark.parametrize("content", [b"", b"not an onnx model at all \x00\xff", "truncated"])
def test_bad_files_are_errors(tmp_path, content):
    path = save(tmp_path, dense_relu_model()[0])
    if content == "truncated":
        content = path.read_bytes()[:40]
    path.write_bytes(content)
    with pytest.raises(kiln.Error, match="model.onnx"):
        kiln.import_onnx(str(path))


def test_missing_file(tmp_path):
    with pytest.raises(kiln.Error, match="nowhere.onnx"):
        kiln.import_onnx(str(tmp_path / "nowhere.onnx"))


def test_a_path_starting_with_a_dash_is_no_flag(tmp_path, monkeypatch):
    onnx.save(dense_relu_model(batch_dim="batch")[0], str(tmp_path / "-o.onnx"))
    monkeypatch.chdir(tmp_path)
    g, params = kiln.import_onnx("-o.onnx", dims={"batch": 2})
    assert g.inputs[0].shape == (2, 4) and sorted(params) == ["b", "w"]
    with pytest.raises(kiln.Error, match="-nowhere.onnx"):
        kiln.import_onnx("-nowhere.onnx")


def test_tmpdir_unset_or_missing(tmp_path, monkeypatch):
    path = str(save(tmp_path, dense_relu_model()[0]))
    monkeypatch.delenv("TMPDIR", raising=False)
    assert kiln.import_onnx(path)[0].inputs[0].shape == (3, 4)  # /tmp
    monkeypatch.setenv("TMPDIR", str(tmp_path / "gone"))
    with pytest.raises(kiln.Error, match=r"^import_onnx: cannot create a temporary directory in .*/gone \(TMPDIR\): "
                                         r"No such file or directory$"):
        kiln.import_onnx(path)
