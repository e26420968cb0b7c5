"""Conversion methods that produce grouped signed-integer formats.

``grouped_absmax`` is the canonical reference encoder (bit-exact ordered
algorithm, binary32/binary16 round to nearest even throughout):

    amax   = max |x|                              per group, binary32
    scale  = f16(f32(amax / qmax)); +0 -> 0x0001 when amax != 0; +-inf -> refuse
    inv    = f32(1 / f32(scale))
    code   = clamp(rint(f32(x * inv)), qmin, qmax)
    an all-zero group gets scale +0 and zero codes.

``grouped_search`` keeps that result per group unless a candidate scale has a
strictly smaller importance-weighted squared error ``sum imp*(x - s*q)**2``
(evaluated in binary64), codes always chosen by the reciprocal multiply above.
Candidates, in the order they are tried:

1. 25 multiples 0.70, 0.72, ..., 1.18 of the max-abs scale ``amax / qmax``;
2. the same 25 multiples of the full-range scale ``extreme / qmin`` (``extreme``
   is the group's first value of largest magnitude; a positive extreme gives a
   negative scale that puts it on ``qmin``);
3. the max-abs scale times 1/4, 1/2 and 2;
4. the two binary16 neighbours of the max-abs scale;
5. the weighted least-squares scale ``sum(imp*x*q) / sum(imp*q*q)`` of the
   max-abs codes, and its two binary16 neighbours;
6. finally the least-squares scale of the winning codes, and its two binary16
   neighbours.

Computed candidates (1, 2, 3, 5, 6) round through binary32 to binary16 with the
``0x0001`` rescue; neighbours that are zero or infinite are skipped. Negative
candidates compete only with ``negative_scales=True``. ``importance`` is one
nonnegative finite weight per input channel (``[K]``); without it every channel
weighs 1.

``import_encoded`` copies codes and scales exactly after validating them.
"""
from __future__ import annotations

import numpy as np

from ..errors import DomainError
from ._base import FormatError, array_arg, bool_arg, finite_f32, first_index, words16
from ._floats import F16_MIN_SUBNORMAL, f32_to_f16, rescue_zero
from .grouped import GroupedCodes, GroupedFormat

SEARCH_MULTIPLIERS = ((70 + 2 * np.arange(25)) / 100).astype(np.float32)
POWER_OF_TWO_MULTIPLIERS = np.array([0.25, 0.5, 2.0], dtype=np.float32)
_SEARCH_CHUNK_VALUES = 1 << 20


# -- the ordered steps of the reference encoder ---------------------------------
def round_scales(raw32: np.ndarray) -> np.ndarray:
    """binary32 candidate scales -> binary16, with the minimum-subnormal rescue."""
    words = f32_to_f16(raw32).view(np.uint16)
    return rescue_zero(words, raw32, F16_MIN_SUBNORMAL).view(np.float16)


def absmax_scales(fmt: GroupedFormat, amax: np.ndarray) -> np.ndarray:
    """Canonical binary16 scales of groups with maximum magnitude ``amax`` (binary32)."""
    with np.errstate(over="ignore"):
        raw = np.divide(amax, np.float32(fmt.qmax), dtype=np.float32)
    scales = round_scales(raw)
    overflow = np.isinf(scales)
    if overflow.any():
        at = first_index(overflow)
        raise DomainError(f"{fmt.name}: group {at} with max |x| = {float(amax[at])!r} needs "
                          f"scale {float(raw[at])!r}, beyond binary16", record=at[0])
    return scales


def select_codes(fmt: GroupedFormat, groups32: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """Codes of ``groups32 [..., G]`` for binary16 ``scales [...]`` by reciprocal multiply."""
    lo, hi = fmt.code_interval
    scale32 = scales.astype(np.float32)
    with np.errstate(divide="ignore"):
        inv = np.where(scale32 == 0, np.float32(0),
                       np.divide(np.float32(1), scale32, dtype=np.float32))
    normalized = np.multiply(groups32, inv[..., None], dtype=np.float32)
    return np.clip(np.rint(normalized), lo, hi).astype(np.int8)


def _codes_in_rows(codes: np.ndarray, shape) -> np.ndarray:
    """Grouped codes ``[..., groups, G]`` back to the logical shape ``[..., K]``."""
    rows = codes.reshape(*shape[:-1], codes.shape[-2] * codes.shape[-1])
    return np.ascontiguousarray(rows[..., :shape[-1]])


def grouped_absmax(fmt: GroupedFormat, source) -> GroupedCodes:
    """The canonical reference encoder of the module docstring."""
    x32 = finite_f32(fmt.name, source)
    groups = fmt.grouped(x32)
    scales = absmax_scales(fmt, np.max(np.abs(groups), axis=-1))
    codes = select_codes(fmt, groups, scales)
    return GroupedCodes(fmt, _codes_in_rows(codes, x32.shape), scales)


# -- grouped_search -------------------------------------------------------------
def _importance(fmt: GroupedFormat, importance, k: int) -> np.ndarray:
    if importance is None:
        return np.ones(k, dtype=np.float64)
    imp = array_arg(fmt.name, "importance", importance)
    if imp.dtype.kind not in "fiu" or imp.shape != (k,):
        raise FormatError(f"{fmt.name}: importance must be one real weight per input "
                          f"channel, shape ({k},), got {imp.dtype} {imp.shape}")
    imp = imp.astype(np.float64)
    bad = ~np.isfinite(imp) | (imp < 0)
    if bad.any():
        raise DomainError(f"{fmt.name}: importance[{first_index(bad)[0]}] = "
                          f"{imp[bad][0]!r} is not a finite nonnegative weight")
    return imp


def _weighted_error(x64, w64, scales, codes) -> np.ndarray:
    residual = x64 - scales.astype(np.float64)[:, None] * codes
    return np.sum(w64 * residual * residual, axis=-1)


def _least_squares(x64, w64, codes) -> np.ndarray:
    """Binary16 weighted least-squares scales of fixed codes (0 where undefined)."""
    num = np.sum(w64 * x64 * codes, axis=-1)
    den = np.sum(w64 * codes * codes, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return round_scales(np.where(den > 0, num / den, 0.0).astype(np.float32))


def _neighbours(scales: np.ndarray) -> list[np.ndarray]:
    return [np.nextafter(scales, np.float16(np.inf)), np.nextafter(scales, np.float16(-np.inf))]


def _search_chunk(fmt, x32, w64, negative_scales):
    """Search one chunk of nonzero groups ``x32 [n, G]`` with weights ``w64 [n, G]``."""
    x64 = x32.astype(np.float64)
    amax = np.max(np.abs(x32), axis=-1)
    best_scale = maxabs_scale = absmax_scales(fmt, amax)
    best_codes = select_codes(fmt, x32, best_scale)
    best_err = _weighted_error(x64, w64, best_scale, best_codes)

    def contest(candidates):
        nonlocal best_scale, best_codes, best_err
        for cand in candidates:
            usable = np.isfinite(cand) & (cand != 0)
            if not negative_scales:
                usable &= cand > 0
            codes = select_codes(fmt, x32, np.where(usable, cand, np.float16(0)))
            err = np.where(usable, _weighted_error(x64, w64, cand, codes), np.inf)
            better = err < best_err
            best_scale = np.where(better, cand, best_scale)
            best_codes = np.where(better[:, None], codes, best_codes)
            best_err = np.where(better, err, best_err)

    maxabs = np.divide(amax, np.float32(fmt.qmax), dtype=np.float32)
    extreme = x32[np.arange(len(x32)), np.argmax(np.abs(x32), axis=-1)]
    full_range = np.divide(extreme, np.float32(fmt.code_interval[0]), dtype=np.float32)
    computed = [maxabs * m for m in SEARCH_MULTIPLIERS]
    computed += [full_range * m for m in SEARCH_MULTIPLIERS]
    computed += [maxabs * m for m in POWER_OF_TWO_MULTIPLIERS]
    with np.errstate(over="ignore"):
        candidates = [round_scales(c) for c in computed]
    candidates += _neighbours(maxabs_scale)
    fit = _least_squares(x64, w64, best_codes)
    contest([*candidates, fit, *_neighbours(fit)])
    refit = _least_squares(x64, w64, best_codes)
    contest([refit, *_neighbours(refit)])
    return best_scale, best_codes


def grouped_search(fmt: GroupedFormat, source, *, importance=None,
                   negative_scales: bool = False) -> GroupedCodes:
    """Importance-weighted scale search of the module docstring."""
    negative_scales = bool_arg(fmt.name, "negative_scales", negative_scales)
    x32 = finite_f32(fmt.name, source)
    k = x32.shape[-1]
    imp = _importance(fmt, importance, k)
    groups = fmt.grouped(x32)
    weights = fmt.grouped(imp)                          # [groups_per_row, G]
    flat = groups.reshape(-1, fmt.group)
    row_group = np.arange(len(flat)) % weights.shape[0]
    scales = absmax_scales(fmt, np.max(np.abs(groups), axis=-1)).reshape(-1).copy()
    codes = select_codes(fmt, flat, scales)
    live = np.flatnonzero(scales != 0)
    step = max(1, _SEARCH_CHUNK_VALUES // fmt.group)
    for start in range(0, len(live), step):
        pick = live[start:start + step]
        scales[pick], codes[pick] = _search_chunk(fmt, flat[pick], weights[row_group[pick]],
                                                  negative_scales)
    return GroupedCodes(fmt, _codes_in_rows(codes.reshape(groups.shape), x32.shape),
                        scales.reshape(groups.shape[:-1]))


# -- import_encoded ---------------------------------------------------------------
def _import_fields(fmt: GroupedFormat, source) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(source, GroupedCodes):
        if source.format is not fmt:
            raise FormatError(f"{fmt.name}: cannot import codes of {source.format.name}")
        return source.codes, source.scales
    if not isinstance(source, tuple) or len(source) != 2:
        raise FormatError(f"{fmt.name}: import_encoded takes GroupedCodes or a "
                          "(codes, scales) tuple")
    codes, scales = array_arg(fmt.name, "codes", source[0]), source[1]
    if codes.dtype.kind not in "iu":
        raise FormatError(f"{fmt.name}: codes must be integers, got {codes.dtype}")
    lo, hi = fmt.code_interval
    bad = (codes < lo) | (codes > hi)
    if bad.any():
        at = first_index(bad)
        raise DomainError(f"{fmt.name}: code {int(codes[at])} at {at} is outside [{lo}, {hi}]",
                          record=at[0] if codes.ndim else None)
    return codes.astype(np.int8), words16(fmt.name, "scales", scales, "float16").view(np.float16)


def _q2_from_gguf_q2_0(fmt: GroupedFormat, blocks) -> tuple[np.ndarray, np.ndarray]:
    from ._ggml_quants import q2_0_fields
    from .registry import get
    source_format = get("gguf_q2_0")
    blocks = source_format.blocks(blocks)
    offset_words, scale_words = q2_0_fields(blocks.reshape(-1, source_format.block_bytes))
    rows = blocks.shape[:-1]
    return (fmt.word_codec.from_words(offset_words).reshape(*rows, -1),
            scale_words.view(np.float16).reshape(*rows, -1))


_FOREIGN_SOURCES = {("q2_g64_fp16", "gguf_q2_0"): _q2_from_gguf_q2_0}


def import_encoded(fmt: GroupedFormat, source, *, source_format: str | None = None) -> GroupedCodes:
    """Copy already encoded codes and scales without rounding, negating or
    canonicalizing them. ``source`` is GroupedCodes of this format or a
    ``(codes, scales)`` tuple (scales as float16 or their uint16 words); with
    ``source_format="gguf_q2_0"``, ``q2_g64_fp16`` takes ggml Q2_0 blocks
    ``uint8 [..., n*18]`` and moves their words into the code and scale planes."""
    if source_format is not None and not isinstance(source_format, str):
        raise FormatError(f"{fmt.name}: source_format must be a format name or None, got "
                          f"{source_format!r}")
    if source_format is None:
        codes, scales = _import_fields(fmt, source)
    elif (fmt.name, source_format) in _FOREIGN_SOURCES:
        codes, scales = _FOREIGN_SOURCES[(fmt.name, source_format)](fmt, source)
    else:
        raise FormatError(f"{fmt.name}: import_encoded cannot read {source_format!r} sources")
    enc = GroupedCodes(fmt, np.array(codes, dtype=np.int8), np.array(scales, dtype=np.float16))
    fmt.validate(enc)
    return enc
