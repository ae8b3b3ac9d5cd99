"""kiln import of models PyTorch exports to ONNX (an nn.Sequential MLP, an
nn.TransformerEncoderLayer, an nn.TransformerDecoderLayer, at opsets 14 and 17):
kiln runs each and differentiates a loss through it, and the outputs and the
gradients with respect to the inputs and every param match PyTorch's. An
imported model run without its params, or with one missing, is an error naming
them, never a run on made-up weights; an opset beyond 17 is refused.

Needs Debian's python3-torch and python3-onnx (skipped without them) and the
kiln binary in KILN_BINARY (CTest sets it). Run with -s to see the max errors.
"""
import os
import re
import subprocess

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="needs PyTorch (Debian's python3-torch)")
pytest.importorskip("onnx", reason="torch.onnx.export needs onnx (Debian's python3-onnx)")

KILN = os.environ.get("KILN_BINARY")
if not KILN:
    pytest.skip("KILN_BINARY (the kiln binary) is not set", allow_module_level=True)

D_MODEL, HEADS, FF = 16, 2, 32


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 16), torch.nn.Tanh(),
                               torch.nn.Linear(16, 4)), {"x": (3, 8)}


def encoder(**kw):
    return torch.nn.TransformerEncoderLayer(D_MODEL, HEADS, FF, dropout=0.0, batch_first=True, **kw), {"x": (2, 5, D_MODEL)}


def decoder():
    layer = torch.nn.TransformerDecoderLayer(D_MODEL, HEADS, FF, dropout=0.0, batch_first=True)
    return layer, {"x": (2, 5, D_MODEL), "memory": (2, 6, D_MODEL)}


MODELS = {
    "mlp": mlp,
    "encoder": encoder,
    "encoder_gelu_norm_first": lambda: encoder(activation="gelu", norm_first=True),
    "decoder": decoder,
}


def kiln(*args):
    r = subprocess.run([KILN, *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 0, f"kiln {' '.join(map(str, args))}:\n{r.stderr}"
    return r.stdout


def with_loss(kir, output, probe_shape):
    """The graph plus loss = sum(output * probe), probe a new input."""
    dims = ",".join(map(str, probe_shape))
    header, rest = kir.split("\n", 1)
    body = rest.rstrip()
    assert body.endswith("}")
    return (f"{header}\n  input %probe : f32[{dims}]\n{body[:-1]}"
            f"  %weighted = mul(%{output}, %probe) : f32[{dims}]\n"
            f"  %loss = sum(%weighted) : f32[]\n  output %loss\n}}\n")


def torch_grad_for(value, params):
    """How the gradient of an ONNX initializer comes from a torch param's: torch
    exports a param, its transpose, or a block of its rows (or their transpose)."""
    for p in params:
        w = p.detach().numpy()
        for transposed in (False, True):
            v = value.T if transposed else value
            if v.ndim != w.ndim or v.shape[1:] != w.shape[1:]:
                continue
            for start in range(w.shape[0] - v.shape[0] + 1):
                if np.array_equal(w[start:start + v.shape[0]], v):
                    def grad(p=p, start=start, rows=v.shape[0], transposed=transposed):
                        g = p.grad.numpy()[start:start + rows]
                        return g.T if transposed else g
                    return grad
    raise AssertionError(f"no torch param holds an initializer of shape {value.shape}")


@pytest.mark.parametrize("opset", [14, 17])
@pytest.mark.parametrize("name", list(MODELS))
def test_import_matches_pytorch(tmp_path, name, opset):
    torch.manual_seed(0)
    model, input_shapes = MODELS[name]()
    with torch.no_grad():  # distinct values, so torch shares no initializers between params
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.3)
    model.eval()
    inputs = {k: torch.randn(*s) for k, s in input_shapes.items()}
    torch.onnx.export(model, tuple(inputs.values()), tmp_path / "model.onnx", opset_version=opset,
                      input_names=list(inputs), output_names=["y"])

    kiln("import", tmp_path / "model.onnx", "-o", tmp_path / "model.kir", "--params", tmp_path / "params")
    kir = (tmp_path / "model.kir").read_text()
    params = re.findall(r"^  param %(\S+) :", kir, re.M)

    xs = {k: v.clone().requires_grad_(True) for k, v in inputs.items()}
    y = model(*xs.values())
    probe = torch.randn_like(y)
    (y * probe).sum().backward()

    (tmp_path / "loss.kir").write_text(with_loss(kir, "y", y.shape))
    kiln("grad", tmp_path / "loss.kir", "--loss", "loss", "--wrt", ",".join([*inputs, *params]),
         "-o", tmp_path / "grad.kir")
    bindings = []
    for k, v in [*inputs.items(), ("probe", probe)]:
        np.save(tmp_path / f"{k}.npy", v.detach().numpy())
        bindings += ["--input", f"{k}={tmp_path / (k + '.npy')}"]
    kiln("run", tmp_path / "grad.kir", *bindings, "--load", tmp_path / "params", "--output-dir", tmp_path / "out")

    out = lambda n: np.load(tmp_path / "out" / f"{n}.npy")
    y_err = np.abs(out("y") - y.detach().numpy()).max()
    grad_err = max(np.abs(out(f"{k}.grad") - xs[k].grad.numpy()).max() for k in inputs)
    for p in params:
        expected = torch_grad_for(np.load(tmp_path / "params" / f"{p}.npy"), list(model.parameters()))()
        grad_err = max(grad_err, np.abs(out(f"{p}.grad") - expected).max())
    print(f"{name} opset {opset}: max |y - torch| = {y_err:.2e}, max |grad - torch| = {grad_err:.2e} "
          f"(inputs and {len(params)} params)")
    assert y_err < 1e-4
    assert grad_err < 1e-3


def kiln_fails(*args):
    r = subprocess.run([KILN, *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 1, f"kiln {' '.join(map(str, args))} exited {r.returncode}:\n{r.stderr}"
    return r.stderr


def test_imported_params_are_never_made_up(tmp_path):
    """kiln run of an imported encoder layer without --load, or with a --load
    directory that lacks one param, names what it lacks and writes nothing (it
    used to run on random weights and exit 0)."""
    torch.manual_seed(0)
    model, input_shapes = encoder()
    torch.onnx.export(model.eval(), (torch.randn(*input_shapes["x"]),), tmp_path / "model.onnx", opset_version=17,
                      input_names=["x"], output_names=["y"])
    kiln("import", tmp_path / "model.onnx", "-o", tmp_path / "model.kir", "--params", tmp_path / "params")
    params = re.findall(r"^  param %(\S+) :", (tmp_path / "model.kir").read_text(), re.M)
    assert params
    np.save(tmp_path / "x.npy", np.zeros(input_shapes["x"], np.float32))
    run = ["run", tmp_path / "model.kir", "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", tmp_path / "out"]

    err = kiln_fails(*run)
    assert all(f"param %{p}" in err for p in params), err
    assert 'init "load"' in err

    (tmp_path / "params" / f"{params[-1]}.npy").unlink()
    err = kiln_fails(*run, "--load", tmp_path / "params")
    assert f"param %{params[-1]}: " in err and f"param %{params[0]}," not in err, err
    assert not (tmp_path / "out").exists()


def test_an_opset_beyond_17_is_refused(tmp_path):
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="act")], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    (tmp_path / "m.onnx").write_bytes(model.SerializeToString())
    err = kiln_fails("import", tmp_path / "m.onnx", "-o", tmp_path / "m.kir")
    assert "opset 18" in err and "1 to 17" in err, err
    assert not (tmp_path / "m.kir").exists()


class SelfAttention(torch.nn.Module):
    """nn.MultiheadAttention as a module of one output (its weights not asked for)."""

    def __init__(self):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(D_MODEL, HEADS)

    def forward(self, x, mask):
        return self.attn(x, x, x, attn_mask=mask, need_weights=False)[0]


class PaddedEncoder(torch.nn.Module):
    """nn.TransformerEncoderLayer with a key padding mask (exported as Where(mask, -inf, 0))."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(D_MODEL, HEADS, FF, dropout=0.0)

    def forward(self, x, padding):
        return self.layer(x, src_key_padding_mask=padding)


def padding_of(batch, lengths, n):
    return torch.arange(n)[None, :].expand(batch, n) >= torch.tensor(lengths)[:, None]


def causal(n):
    return torch.triu(torch.full((n, n), float("-inf")), diagonal=1)


ATTENTION_MODELS = {
    "multihead_attention": lambda: (SelfAttention(), {"x": torch.randn(5, 2, D_MODEL), "mask": causal(5)}),
    "encoder_sequence_first": lambda: (torch.nn.TransformerEncoderLayer(D_MODEL, HEADS, FF, dropout=0.0),
                                       {"x": torch.randn(5, 2, D_MODEL)}),
    "encoder_key_padding": lambda: (PaddedEncoder(), {"x": torch.randn(5, 2, D_MODEL), "padding": padding_of(2, [5, 3], 5)}),
    "transformer": lambda: (torch.nn.Transformer(D_MODEL, HEADS, 1, 1, FF, dropout=0.0),
                            {"src": torch.randn(6, 2, D_MODEL), "tgt": torch.randn(5, 2, D_MODEL)}),
}


@pytest.mark.parametrize("opset", [13, 14, 17])
@pytest.mark.parametrize("name", list(ATTENTION_MODELS))
def test_exported_attention_becomes_flash_attention(tmp_path, name, opset):
    """PyTorch exports attention with q scaled before the product and k^T read
    as stored ([S, B*H, d] transposed with perm [1,2,0]): the flash-attention
    pass takes every one, the compiled program has no softmax kernel left, and
    the outputs match PyTorch's."""
    torch.manual_seed(0)
    model, inputs = ATTENTION_MODELS[name]()
    model.eval()
    try:
        torch.onnx.export(model, tuple(inputs.values()), tmp_path / "model.onnx", opset_version=opset,
                          input_names=list(inputs), output_names=["y"])
    except Exception as e:  # torch 1.13 cannot export some modules at some opsets
        pytest.skip(f"torch.onnx.export: {e}")
    kiln("import", tmp_path / "model.onnx", "-o", tmp_path / "model.kir", "--params", tmp_path / "params")
    kiln("compile", tmp_path / "model.kir", "--emit", "program", "-o", tmp_path / "program.txt")
    program = (tmp_path / "program.txt").read_text()
    attention_blocks = {"multihead_attention": 1, "encoder_sequence_first": 1, "encoder_key_padding": 1,
                        "transformer": 3}[name]
    calls = len(re.findall(r"^  \d+: k\d+ flash_attention\(", program, re.M))
    print(f"{name} opset {opset}: {program.count('softmax')} softmax, {calls} flash_attention calls")
    assert "softmax" not in program
    assert calls == attention_blocks
    bindings = []
    for k, v in inputs.items():
        np.save(tmp_path / f"{k}.npy", v.numpy())
        bindings += ["--input", f"{k}={tmp_path / (k + '.npy')}"]
    kiln("run", tmp_path / "model.kir", *bindings, "--load", tmp_path / "params", "--output-dir", tmp_path / "out")
    with torch.no_grad():
        y = model(*inputs.values()).numpy()
    err = np.abs(np.load(tmp_path / "out" / "y.npy") - y).max()
    print(f"{name} opset {opset}: max |y - torch| = {err:.2e}")
    assert err < 1e-4
