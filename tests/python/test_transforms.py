# kiln.grad, kiln.train_graph and kiln.optimize.
import numpy as np
import pytest

import kiln

TINY = """graph @tiny {
  input %x : f32[2,3]
  param %w : f32[3,2]
  param %b : f32[2]
  %h = matmul(%x, %w) : f32[2,2]
  %a = add(%h, %b) : f32[2,2]
  %t = tanh(%a) : f32[2,2]
  %loss = sum(%t) {axes=[0,1]} : f32[]
  output %loss
}
"""


def test_grad_matches_finite_differences():
    g = kiln.parse(TINY)
    joint = kiln.grad(g, "loss", ["w", g.value("b")])
    assert [v.name for v in joint.outputs] == ["loss", "w.grad", "b.grad"]
    assert len(g.outputs) == 1  # the argument is left unchanged
    rng = np.random.default_rng(1)
    values = {"x": rng.standard_normal((2, 3)), "w": rng.standard_normal((3, 2)), "b": rng.standard_normal(2)}
    values = {k: v.astype(np.float32) for k, v in values.items()}
    grads = kiln.compile(joint, backend="jit").run(**values)
    forward = kiln.compile(g, backend="interp")

    def loss(**changed):
        return float(forward.run(**{**values, **changed})["loss"])

    eps = 1e-2  # central differences in f32: error ~eps^2 from the curvature plus rounding ~1e-7/eps
    for name in ("w", "b"):
        numeric = np.zeros_like(values[name])
        for i in np.ndindex(numeric.shape):
            plus, minus = values[name].copy(), values[name].copy()
            plus[i] += eps
            minus[i] -= eps
            numeric[i] = (loss(**{name: plus}) - loss(**{name: minus})) / (2 * eps)
        np.testing.assert_allclose(grads[name + ".grad"], numeric, rtol=1e-2, atol=1e-3)


def test_grad_errors():
    g = kiln.parse(TINY)
    with pytest.raises(kiln.Error, match=r"^wrt nope: graph @tiny has no value named 'nope'$"):
        kiln.grad(g, "loss", ["w", "nope"])
    with pytest.raises(kiln.Error, match=r"^loss nope: graph @tiny has no value named 'nope'$"):
        kiln.grad(g, "nope", "w")
    with pytest.raises(kiln.Error, match=r"scalar"):
        kiln.grad(g, "t", "w")
    with pytest.raises(kiln.Error, match=r"wrt: expected a value name"):
        kiln.grad(g, "loss", [3])


def test_train_graph_sgd_lowers_the_loss(mlp, mlp_inputs):
    step = kiln.train_graph(mlp, "loss", optimizer="sgd", lr=0.5)
    assert "assign" in str(step) and [v.name for v in step.state] == ["step"]
    exe = kiln.compile(step)
    losses = [float(exe.run(**mlp_inputs)["loss"]) for _ in range(20)]
    assert losses[-1] < 0.5 * losses[0]
    adam = kiln.train_graph(mlp, "loss", lr=0.01)
    assert "w1.adam_m" in adam
    with pytest.raises(kiln.Error, match=r"optimizer 'rmsprop'"):
        kiln.train_graph(mlp, "loss", optimizer="rmsprop")


def test_optimize(mlp):
    fused = kiln.optimize(mlp)
    assert "fusion" in str(fused) and fused.num_nodes < mlp.num_nodes
    assert [v.name for v in fused.outputs] == ["loss", "logits"]
    assert str(kiln.optimize(mlp, passes="none")) == str(mlp)
    assert str(kiln.optimize(mlp, passes=["cse", "dce"])) == str(mlp)
    assert str(kiln.parse(str(fused))) == str(fused)
    names = [name for name, _ in kiln.passes()]
    assert names[:13] == ["constant-fold", "simplify", "transpose-folding", "pretranspose-weights", "cse",
                          "linear-cross-entropy", "flash-attention", "bf16-matmuls", "bf16-saves", "dce",
                          "allreduce-buckets", "fusion", "horizontal-fusion"]
    with pytest.raises(kiln.Error, match=r"unknown pass 'bogus' \(known: "):
        kiln.optimize(mlp, passes="bogus")
