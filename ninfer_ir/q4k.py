"""Q4_K records for tests, examples and the command line.

    w = encode_q4k(values)          # float32 [..., K] -> uint8 [..., K/256, 144]
    w = random_q4k(rng, n, g)       # valid records with random fields

A Q4_K record holds 256 values as eight sub-blocks of 32:
``value = d * sc[j] * q - dmin * m[j]`` with binary16 ``d`` and ``dmin`` (bytes 0-3),
6-bit ``sc[j]`` and ``m[j]`` packed into 12 bytes (bytes 4-15) and 4-bit codes ``q``
(bytes 16-143). The byte image is ggml's ``block_q4_K``, so the records can be
written to GGUF files and decoded by ``ninfer_ir.formats.get("gguf_q4_k")``.

``encode_q4k`` is a plain min/max encoder (each sub-block's range split into 15
steps, the sub-block scales and minima quantized to 6 bits against the largest);
it aims at valid records with a small error, not at ggml's error-minimizing search.
"""
from __future__ import annotations

import numpy as np

RECORD_BYTES = 144
VALUES = 256


def pack_scales(sc: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Eight 6-bit scales and minima ``[..., 8]`` -> the 12 scale bytes ``[..., 12]``."""
    sc = sc.astype(np.uint8)
    m = m.astype(np.uint8)
    out = np.zeros(sc.shape[:-1] + (12,), np.uint8)
    out[..., 0:4] = (sc[..., 0:4] & 63) | ((sc[..., 4:8] >> 4) << 6)
    out[..., 4:8] = (m[..., 0:4] & 63) | ((m[..., 4:8] >> 4) << 6)
    out[..., 8:12] = (sc[..., 4:8] & 15) | ((m[..., 4:8] & 15) << 4)
    return out


def pack_codes(q: np.ndarray) -> np.ndarray:
    """256 codes 0..15 ``[..., 256]`` -> 128 bytes: in each 64-value chunk, value ``l``
    is the low nibble and value ``32 + l`` the high nibble of byte ``l``."""
    q = q.astype(np.uint8).reshape(q.shape[:-1] + (4, 2, 32))
    return (q[..., 0, :] | (q[..., 1, :] << 4)).reshape(q.shape[:-3] + (128,))


def encode_q4k(values) -> np.ndarray:
    """float32 ``[..., K]`` (K a multiple of 256, finite) -> uint8 ``[..., K/256, 144]``."""
    x = np.asarray(values, dtype=np.float32)
    if x.ndim < 1 or x.shape[-1] % VALUES:
        raise ValueError(f"the last axis must be a multiple of {VALUES}, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("Q4_K encoding needs finite values")
    lead = x.shape[:-1] + (x.shape[-1] // VALUES,)
    sub = x.reshape(lead + (8, 32)).astype(np.float64)
    lo = np.minimum(sub.min(axis=-1), 0.0)
    step = (sub.max(axis=-1) - lo) / 15.0
    d = (step.max(axis=-1) / 63.0).astype(np.float16)
    dmin = (-lo.min(axis=-1) / 63.0).astype(np.float16)
    d64, dmin64 = d.astype(np.float64), dmin.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        sc = np.where(d64[..., None] > 0, np.rint(step / d64[..., None]), 0)
        m = np.where(dmin64[..., None] > 0, np.rint(-lo / dmin64[..., None]), 0)
        sc, m = np.clip(sc, 0, 63), np.clip(m, 0, 63)
        scale = (d64[..., None] * sc)[..., None]
        offset = (dmin64[..., None] * m)[..., None]
        q = np.where(scale > 0, np.rint((sub + offset) / scale), 0)
    q = np.clip(q, 0, 15).reshape(lead + (VALUES,))
    out = np.empty(lead + (RECORD_BYTES,), np.uint8)
    out[..., 0:2] = d[..., None].view(np.uint8)
    out[..., 2:4] = dmin[..., None].view(np.uint8)
    out[..., 4:16] = pack_scales(sc, m)
    out[..., 16:] = pack_codes(q)
    return out


def random_q4k(rng: np.random.Generator, *shape: int) -> np.ndarray:
    """Valid Q4_K records ``uint8 [*shape, 144]``: random codes and 6-bit fields, small
    finite binary16 ``d`` and ``dmin``."""
    w = rng.integers(0, 256, size=shape + (RECORD_BYTES,), dtype=np.uint8)
    scales = (rng.standard_normal(shape + (2,)) * 0.01).astype("<f2")
    w[..., 0:4] = scales.view(np.uint8).reshape(shape + (4,))
    return w
