"""kiln translate --attention against PyTorch: a checkpoint's attention weights, as
kiln writes them, equal those of the same checkpoint run by tools/bench/torch_model.py
(kiln's Transformer written in PyTorch), and each row sums to 1. Skipped without
Debian's python3-torch or the kiln binary (KILN_BINARY)."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools" / "bench"))
import torch_model  # noqa: E402


def kiln(*args):
    binary = os.environ.get("KILN_BINARY")
    if not binary:
        pytest.skip("KILN_BINARY is not set")
    out = subprocess.run([binary, *map(str, args)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_attention_weights_match_pytorch(tmp_path):
    ckpt, out = tmp_path / "ckpt", tmp_path / "attention"
    kiln("train", "--task", "copy", "--steps", "40", "--checkpoint", ckpt, "--d-model", "32", "--heads", "4",
         "--d-ff", "64", "--layers", "2", "--eval-sentences", "4")
    kiln("translate", "--checkpoint", ckpt, "--attention", out, "1 2 3 4 5 6", "1 9 8 7")
    model, _ = torch_model.load_kiln_checkpoint(ckpt)
    model.eval()
    for layer in model.enc:
        layer.self_attn.keep_weights = True
    for layer in model.dec:
        layer.self_attn.keep_weights = layer.cross_attn.keep_weights = True
    for sentence in ("0001", "0002"):
        axes = json.loads((out / sentence / "pieces.json").read_text())
        src = torch.tensor([axes["source_ids"]], dtype=torch.long)
        tgt_in = torch.tensor([axes["input_ids"]], dtype=torch.long)
        pad = model.c["pad_id"]
        with torch.no_grad():
            src_mask = torch_model.padding_mask(src, pad)
            model.decode(tgt_in, model.encode(src, src_mask), src_mask)
        expected = {f"enc.{i}.self_attn": layer.self_attn.weights for i, layer in enumerate(model.enc)}
        for i, layer in enumerate(model.dec):
            expected[f"dec.{i}.self_attn"] = layer.self_attn.weights
            expected[f"dec.{i}.cross_attn"] = layer.cross_attn.weights
        for name, weights in expected.items():
            ours = np.load(out / sentence / f"{name}.npy")
            assert ours.shape == tuple(weights.shape[1:]), name
            np.testing.assert_allclose(ours.sum(axis=-1), 1.0, atol=1e-5, err_msg=name)
            np.testing.assert_allclose(ours, weights[0].numpy(), atol=2e-5, err_msg=name)
