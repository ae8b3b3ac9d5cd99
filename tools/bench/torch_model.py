"""kiln's Transformer written independently in plain torch.nn, for the peer benchmark.

The same computation as models/transformer/: post-LN encoder-decoder, one
embedding table shared by source, target and the pre-softmax projection (scaled
by sqrt(d_model) at the input, no output bias), sinusoidal positions, dropout
only on the embedding sums and on each sublayer's output before its residual add
(none inside attention or the FFN), LayerNorm eps 1e-5, additive -inf masks,
label-smoothed cross-entropy averaged over the non-pad targets. Adam and its
schedule live in torch_transformer.py. Needs torch imported by the caller's
environment setup first (thread counts are read at import).
"""
import json
import math
import os
import shutil
import struct

import torch
import torch.nn.functional as F
from torch import nn

PRESETS = {  # models/transformer/config.cpp
    "tiny": dict(d_model=128, heads=4, d_ff=512, enc_layers=2, dec_layers=2),
    "small": dict(d_model=256, heads=4, d_ff=1024, enc_layers=3, dec_layers=3),
    "base": dict(d_model=512, heads=8, d_ff=2048, enc_layers=6, dec_layers=6),
}
DEFAULTS = dict(dropout=0.1, max_len=256, label_smoothing=0.1, pad_id=0)


def preset(name, vocab):
    return dict(DEFAULTS, vocab=vocab, **PRESETS[name])


def sinusoidal(positions, d):
    """engine/param_init.cpp: dim j uses frequency 10000^-(j - j%2)/d, sin on even j, cos on odd."""
    pos = torch.arange(positions, dtype=torch.float64).unsqueeze(1)
    j = torch.arange(d)
    angle = pos * torch.pow(10000.0, -(j - j % 2).double() / d)
    return torch.where(j % 2 == 0, torch.sin(angle), torch.cos(angle)).float()


def padding_mask(tokens, pad_id):
    """f32[B,1,1,L]: -inf where the key is padding, 0 elsewhere."""
    mask = torch.zeros(tokens.shape, dtype=torch.float32).masked_fill(tokens == pad_id, float("-inf"))
    return mask.view(tokens.shape[0], 1, 1, tokens.shape[1])


def causal_padding_mask(tokens, pad_id):
    """f32[B,1,L,L]: the key-padding mask plus -inf above the diagonal."""
    length = tokens.shape[1]
    causal = torch.triu(torch.full((length, length), float("-inf")), diagonal=1)
    return padding_mask(tokens, pad_id) + causal


def linear(d_in, d_out):
    """nn.Linear with kiln's init: Glorot-uniform weight, zero bias."""
    layer = nn.Linear(d_in, d_out)
    nn.init.xavier_uniform_(layer.weight)
    nn.init.zeros_(layer.bias)
    return layer


class MultiHeadAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.scale = 1.0 / math.sqrt(d // heads)
        self.keep_weights = False
        self.wq, self.wk, self.wv, self.wo = linear(d, d), linear(d, d), linear(d, d), linear(d, d)

    def split(self, x):  # [B,L,D] -> [B,H,L,D/H]
        b, length, d = x.shape
        return x.view(b, length, self.heads, d // self.heads).transpose(1, 2)

    def attend(self, q, k, v, mask):
        weights = torch.softmax(q @ k.transpose(-2, -1) * self.scale + mask, dim=-1)
        if self.keep_weights:  # what `kiln translate --attention` writes, for comparing
            self.weights = weights.detach()
        x = weights @ v
        b, h, length, dk = x.shape
        return self.wo(x.transpose(1, 2).reshape(b, length, h * dk))

    def forward(self, queries, keys_values, mask):
        return self.attend(self.split(self.wq(queries)), self.split(self.wk(keys_values)),
                           self.split(self.wv(keys_values)), mask)

    def keys_values(self, x):
        return self.split(self.wk(x)), self.split(self.wv(x))

    def step(self, x, cache, mask):
        """Incremental self-attention: x [B,1,D] is the newest position; cache holds
        the earlier positions' keys and values and grows by this one."""
        k, v = self.keys_values(x)
        if cache:
            k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
        cache[:] = [k, v]
        return self.attend(self.split(self.wq(x)), k, v, mask)


class FeedForward(nn.Module):
    def __init__(self, d, d_ff):
        super().__init__()
        self.w1, self.w2 = linear(d, d_ff), linear(d_ff, d)

    def forward(self, x):
        return self.w2(torch.relu(self.w1(x)))


class EncoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["d_model"]
        self.self_attn = MultiHeadAttention(d, c["heads"])
        self.ffn = FeedForward(d, c["d_ff"])
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-5), nn.LayerNorm(d, eps=1e-5)
        self.drop = nn.Dropout(c["dropout"])

    def forward(self, x, mask):
        x = self.ln1(x + self.drop(self.self_attn(x, x, mask)))
        return self.ln2(x + self.drop(self.ffn(x)))


class DecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["d_model"]
        self.self_attn = MultiHeadAttention(d, c["heads"])
        self.cross_attn = MultiHeadAttention(d, c["heads"])
        self.ffn = FeedForward(d, c["d_ff"])
        self.ln1, self.ln2, self.ln3 = (nn.LayerNorm(d, eps=1e-5) for _ in range(3))
        self.drop = nn.Dropout(c["dropout"])

    def forward(self, x, memory, src_mask, self_mask):
        x = self.ln1(x + self.drop(self.self_attn(x, x, self_mask)))
        x = self.ln2(x + self.drop(self.cross_attn(x, memory, src_mask)))
        return self.ln3(x + self.drop(self.ffn(x)))

    def step(self, x, cache, src_mask):
        """x [B,1,D]; cache = [self-attention keys/values (growing), memory's keys/values]."""
        x = self.ln1(x + self.self_attn.step(x, cache[0], 0.0))
        k, v = cache[1]
        x = self.ln2(x + self.cross_attn.attend(self.cross_attn.split(self.cross_attn.wq(x)), k, v, src_mask))
        return self.ln3(x + self.ffn(x))


class Transformer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        d = c["d_model"]
        self.embed = nn.Embedding(c["vocab"], d)
        nn.init.normal_(self.embed.weight, std=d ** -0.5)
        self.register_buffer("pos_enc", sinusoidal(c["max_len"], d))
        self.enc = nn.ModuleList(EncoderLayer(c) for _ in range(c["enc_layers"]))
        self.dec = nn.ModuleList(DecoderLayer(c) for _ in range(c["dec_layers"]))
        self.drop = nn.Dropout(c["dropout"])
        self.scale = math.sqrt(d)

    def embed_tokens(self, tokens, first_position=0):
        positions = self.pos_enc[first_position:first_position + tokens.shape[1]]
        return self.drop(self.embed(tokens) * self.scale + positions)

    def encode(self, src, src_mask):
        x = self.embed_tokens(src)
        for layer in self.enc:
            x = layer(x, src_mask)
        return x

    def decode(self, tgt_in, memory, src_mask):
        self_mask = causal_padding_mask(tgt_in, self.c["pad_id"])
        x = self.embed_tokens(tgt_in)
        for layer in self.dec:
            x = layer(x, memory, src_mask, self_mask)
        return x

    def logits(self, hidden):
        return F.linear(hidden, self.embed.weight)  # tied, no bias

    def loss(self, src, tgt_in, tgt_out):
        src_mask = padding_mask(src, self.c["pad_id"])
        logits = self.logits(self.decode(tgt_in, self.encode(src, src_mask), src_mask))
        return F.cross_entropy(logits.reshape(-1, self.c["vocab"]), tgt_out.reshape(-1),
                               ignore_index=self.c["pad_id"], label_smoothing=self.c["label_smoothing"])

    def start_decoding(self, memory):
        """Per decoder layer: an empty self-attention cache and the memory's keys and values."""
        return [[[], layer.cross_attn.keys_values(memory)] for layer in self.dec]

    def decode_step(self, token, position, caches, src_mask):
        """token i32[B,1] at `position` -> hidden [B,1,D]; extends the caches."""
        x = self.embed_tokens(token, position)
        for layer, cache in zip(self.dec, caches):
            x = layer.step(x, cache, src_mask)
        return x


def train_step_flops(c, batch, src_len, tgt_len):
    """Matmul FLOPs (2 M N K each) of one training step: the forward's, plus the
    backward's two products per matmul (every operand needs a gradient), so 3x."""
    d, dff, v = c["d_model"], c["d_ff"], c["vocab"]
    s, t = batch * src_len, batch * tgt_len  # token rows
    attn_self = lambda rows, length: 4 * 2 * rows * d * d + 2 * 2 * rows * length * d
    ffn = lambda rows: 2 * 2 * rows * d * dff
    enc = attn_self(s, src_len) + ffn(s)
    cross = 2 * 2 * t * d * d + 2 * 2 * s * d * d + 2 * 2 * t * src_len * d
    dec = attn_self(t, tgt_len) + cross + ffn(t)
    forward = c["enc_layers"] * enc + c["dec_layers"] * dec + 2 * t * d * v
    return 3 * forward


def read_safetensors(path):
    """(tensors by name, metadata) of a safetensors file: an 8-byte little-endian
    header length, a JSON header, then the raw little-endian data."""
    dtypes = {"F32": torch.float32, "I32": torch.int32, "BOOL": torch.bool}
    with open(path, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
        data = bytearray(f.read())
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        dtype = dtypes[info["dtype"]]
        count = math.prod(info["shape"])
        flat = (torch.frombuffer(data, dtype=dtype, count=count, offset=begin) if count
                else torch.empty(0, dtype=dtype))
        if flat.numel() * flat.element_size() != end - begin:
            raise ValueError(f"{path}: tensor {name} has {end - begin} bytes for shape {info['shape']}")
        tensors[name] = flat.reshape(info["shape"])
    return tensors, header.get("__metadata__", {})


def kiln_name(name):
    """The kiln param (models/transformer/params.cpp) behind a torch param name, and
    whether it is stored transposed (a kiln Linear's weight is [in, out])."""
    parts = name.split(".")
    if parts == ["embed", "weight"]:
        return "embed", False
    prefix, layer, leaf = ".".join(parts[:-2]), parts[-2], parts[-1]
    if layer.startswith("ln"):  # enc.0.ln1.weight -> enc.0.ln1.gamma
        return f"{prefix}.{layer}.{'gamma' if leaf == 'weight' else 'beta'}", False
    if leaf == "weight":  # enc.0.self_attn.wq.weight -> enc.0.self_attn.wq
        return f"{prefix}.{layer}", True
    return f"{prefix}.b{layer[1:]}", False  # enc.0.ffn.w1.bias -> enc.0.ffn.b1


def load_kiln_params(model, tensors, where):
    """Copies kiln's params (and pos_enc if present) by kiln name into the model."""
    with torch.no_grad():
        for name, param in model.named_parameters():
            source, transposed = kiln_name(name)
            if source not in tensors:
                raise ValueError(f"{where}: no param {source}")
            value = torch.as_tensor(tensors[source])
            value = value.t() if transposed else value
            if value.shape != param.shape:
                raise ValueError(f"{where}: {source} is {list(value.shape)}, expected {list(param.shape)}")
            param.copy_(value)
        if "pos_enc" in tensors:
            model.pos_enc.copy_(torch.as_tensor(tensors["pos_enc"]))


def write_safetensors(path, tensors, metadata):
    """The inverse of read_safetensors; the header is padded to 8 bytes, as safetensors does."""
    names = {torch.float32: "F32", torch.int32: "I32", torch.bool: "BOOL"}
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name, value in tensors.items():
        data = value.detach().contiguous().cpu().numpy().tobytes()
        header[name] = {"dtype": names[value.dtype], "shape": list(value.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for blob in blobs:
            f.write(blob)
    os.replace(path + ".tmp", path)


def save_kiln_checkpoint(model, template, directory):
    """A kiln checkpoint directory holding the model's params: the template checkpoint
    (same task and config: its metadata, task files and any other tensors) with
    every param replaced, so that `kiln eval` and `kiln translate` can score it."""
    tensors, meta = read_safetensors(f"{template}/checkpoint.safetensors")
    if json.loads(meta["config"])["d_model"] != model.c["d_model"]:
        raise ValueError(f"{template}: a checkpoint of another config")
    with torch.no_grad():
        for name, param in model.named_parameters():
            target, transposed = kiln_name(name)
            if target not in tensors or tensors[target].shape != (param.t() if transposed else param).shape:
                raise ValueError(f"{template}: no param {target} of the model's shape")
            tensors[target] = (param.t() if transposed else param).clone()
    os.makedirs(directory, exist_ok=True)
    for name in task_files(template):
        shutil.copy(f"{template}/{name}", f"{directory}/{name}")
    write_safetensors(f"{directory}/checkpoint.safetensors", tensors, meta)


def task_files(checkpoint):
    """The files besides the params that a kiln checkpoint's task loads from its directory:
    the subword models (de-en: spm.model; text: spm.model, or one per language with
    --vocab separate) and the text task's corpus.json, which names the prepared corpus."""
    names = sorted(n for n in os.listdir(checkpoint)
                   if n == "corpus.json" or (n.startswith("spm") and n.endswith(".model")))
    if not any(n.endswith(".model") for n in names):
        raise ValueError(f"{checkpoint}: no subword model (spm*.model) to copy")
    return names


def load_kiln_checkpoint(directory):
    """A Transformer with the config and params of a kiln checkpoint directory
    (models/checkpoint.h)."""
    tensors, meta = read_safetensors(f"{directory}/checkpoint.safetensors")
    if meta.get("format") != "kiln-checkpoint-1":
        raise ValueError(f"{directory}: not a kiln checkpoint (format {meta.get('format')!r})")
    model = Transformer(json.loads(meta["config"]))
    load_kiln_params(model, tensors, directory)
    return model, meta
