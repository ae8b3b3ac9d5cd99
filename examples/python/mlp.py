# %% [markdown]
# # kiln from Python: an MLP built, differentiated, compiled and trained
#
# Run it as a script (`PYTHONPATH=build/python /usr/bin/python3 examples/python/mlp.py`)
# or cell by cell in an editor that knows `# %%` cells (VS Code, Jupyter's jupytext).

# %%
import numpy as np

import kiln

# %% [markdown]
# ## Build the graph
# A two-layer perceptron on 32 examples of 10 features, 3 classes. Every registered
# op is a Builder method; `name=` names a result.

# %%
batch, features, hidden, classes = 32, 10, 64, 3
g = kiln.Graph("mlp")
b = kiln.Builder(g)
x = b.input("x", kiln.f32, [batch, features])
labels = b.input("labels", kiln.i32, [batch])
w1 = b.param("w1", kiln.f32, [features, hidden])  # glorot by default (rank 2)
b1 = b.param("b1", kiln.f32, [hidden])            # zeros by default (rank 1)
w2 = b.param("w2", kiln.f32, [hidden, classes])
b2 = b.param("b2", kiln.f32, [classes])
h = b.relu(b.add(b.matmul(x, w1), b1), name="hidden")
logits = b.add(b.matmul(h, w2), b2, name="logits")
loss = b.cross_entropy(logits, labels, name="loss")
b.output(loss)
b.output(logits)
print(g)

# %% [markdown]
# ## Differentiate and optimize
# `kiln.grad` appends the backward pass and outputs each gradient as NAME.grad;
# `kiln.optimize` runs the graph passes, ending with fusion.

# %%
params = ["w1", "b1", "w2", "b2"]
joint = kiln.grad(g, "loss", params)
print([v.name for v in joint.outputs])
optimized = kiln.optimize(joint)
print(f"{joint.num_nodes} nodes, {optimized.num_nodes} after the passes")

# %% [markdown]
# ## Compile with the JIT and train with SGD
# A learnable task: the class is which of three fixed directions x points most along.
# Each step runs the joint graph, then updates the params in numpy and binds them back.

# %%
rng = np.random.default_rng(0)
directions = rng.standard_normal((features, classes)).astype(np.float32)
exe = kiln.compile(optimized, backend="jit", seed=0)
exe.initialize()
weights = {name: exe.get(name, copy=True) for name in params}
for step in range(1, 101):
    xs = rng.standard_normal((batch, features)).astype(np.float32)
    out = exe.run(x=xs, labels=np.argmax(xs @ directions, axis=1), **weights)  # int64 labels fit i32
    for name in params:
        weights[name] -= 0.1 * out[name + ".grad"]
    if step % 20 == 0:
        print(f"step {step}: loss {float(out['loss']):.4f}")

# %% [markdown]
# ## The JIT against the interpreter
# The same graph and weights through the reference interpreter: equal up to the
# order of summation.

# %%
xs = rng.standard_normal((batch, features)).astype(np.float32)
ys = np.argmax(xs @ directions, axis=1)
jit = exe.run(x=xs, labels=ys, **weights)
interp = kiln.compile(joint, backend="interp").run(x=xs, labels=ys, **weights)
for name in jit:
    print(f"{name:9} largest difference {np.max(np.abs(jit[name] - interp[name])):.2e}")
    np.testing.assert_allclose(jit[name], interp[name], rtol=1e-4, atol=1e-5)
print("accuracy", np.mean(np.argmax(jit["logits"], axis=1) == ys))
