"""Low-precision number formats, computed from their definitions: FP8 (E4M3, E5M2), the OCP MX element types (FP6,
FP4), BF16/FP16 for comparison, and block scaling (MXFP8/6/4 with E8M0 scales, NVIDIA's NVFP4), emulated in numpy.

A format is its bit fields plus its rule for special values (``x4lib/data/formats.yaml``); everything else is
derived here, so a page never types a limit:

    normal    (E > 0)  v = 2^(E − bias) · (1 + M / 2^m)
    subnormal (E = 0)  v = 2^(1 − bias) · (M / 2^m)
    largest finite value, smallest normal/subnormal, the spacing (ULP) at x, every representable value

Rounding is to the nearest representable value, ties to the even mantissa (IEEE 754's default), as torch's casts
do. Overflow is a choice: ``saturate`` clamps to ±max (what OCP calls saturating conversion, and what Transformer
Engine does, nvidia-te-delayed-scaling: "values exceeding FP8 range are clipped"); ``ieee`` rounds to ±inf where the
format has one (E5M2) and to NaN where it has only NaN (E4M3).

Scaling, all in float64 here (hardware and Transformer Engine use FP32 for the scale arithmetic):

    per tensor   s = max_fmt / amax(x);   q = Q(x·s) / s                     (one FP32 scale per tensor)
    MX (OCP)     per block of k = 32:  X = 2^(⌊log2 amax_b⌋ − e_max,elem),  E8M0, clamped to 2^±127;  q = X·Q(x/X)
    NVFP4        s_enc = 448·6 / amax(x);  per block of 16:  d_b = E4M3(amax_b / 6 · s_enc);  q = (d_b/s_enc)·Q(x·s_enc/d_b)

Error: SQNR = 10·log10(Σx² / Σ(x − q)²) in dB (higher is better; each extra mantissa bit buys about 6 dB).

Delayed scaling (Transformer Engine's ``DelayedScaling`` recipe, nvidia-te-recipe): the scale used at step t comes
from the amax values of earlier steps, s_t = max_fmt / max(amax_{t−L} … amax_{t−1}) / 2^margin, so the tensor is
read once; a sudden jump in amax saturates that step. :func:`delayed_scaling` traces it.

Sources: ocp-ofp8, ocp-mx-v1, nvidia-nvfp4-blog, nvidia-te-recipe, nvidia-te-fp8-primer (references.bib).
Used in: book/02-h100-and-h200.md.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from types import MappingProxyType
from typing import Mapping

import numpy as np
from x4lib import paths

DATA_PATH = paths.DATA_DIR / "formats.yaml"
SCHEMA_PATH = paths.SCHEMA_DIR / "formats.schema.json"
E8M0_MIN_EXP, E8M0_MAX_EXP = -127, 127
OVERFLOW_MODES = ("saturate", "ieee")


class FormatsDataError(ValueError):
    """formats.yaml breaks its schema or a rule; the message names the field. The book's fault: exit code 1."""
    exit_code = 1


@dataclasses.dataclass(frozen=True)
class FloatFormat:
    """A small binary floating-point format defined by its fields; every limit is a computed property."""
    id: str
    name: str
    exponent_bits: int
    mantissa_bits: int
    bias: int
    special: str          # "ieee", "fn" or "none" (see formats.yaml)
    source: str
    note: str = ""

    @property
    def bits(self) -> int:
        return 1 + self.exponent_bits + self.mantissa_bits

    @functools.cached_property
    def _table(self) -> tuple[np.ndarray, np.ndarray]:
        """All non-negative finite magnitudes in increasing order, and whether each code's mantissa is even."""
        e = np.repeat(np.arange(2 ** self.exponent_bits), 2 ** self.mantissa_bits)
        m = np.tile(np.arange(2 ** self.mantissa_bits), 2 ** self.exponent_bits)
        top = 2 ** self.exponent_bits - 1
        keep = np.ones(e.shape, bool)
        if self.special == "ieee":
            keep &= e != top
        elif self.special == "fn":
            keep &= ~((e == top) & (m == 2 ** self.mantissa_bits - 1))
        e, m = e[keep], m[keep]
        frac = m / 2.0 ** self.mantissa_bits
        mags = np.where(e == 0, frac * 2.0 ** (1 - self.bias), (1 + frac) * 2.0 ** (e - self.bias))
        return mags, (m % 2 == 0)

    @property
    def values(self) -> np.ndarray:
        """Every distinct finite value, negative to positive (one zero)."""
        mags = self._table[0]
        return np.concatenate([-mags[:0:-1], mags])

    @property
    def max_finite(self) -> float:
        return float(self._table[0][-1])

    @property
    def min_normal(self) -> float:
        return 2.0 ** (1 - self.bias)

    @property
    def min_subnormal(self) -> float:
        return 2.0 ** (1 - self.bias - self.mantissa_bits)

    @property
    def eps(self) -> float:
        """Spacing of representable values just above 1: 2^−m (machine epsilon)."""
        return 2.0 ** -self.mantissa_bits

    @property
    def emax(self) -> int:
        """Exponent of the largest finite value, ⌊log2 max⌋ (the e_max,elem of the OCP MX scale rule)."""
        return math.floor(math.log2(self.max_finite))

    @property
    def has_inf(self) -> bool:
        return self.special == "ieee"

    @property
    def n_nan_codes(self) -> int:
        """Codes that mean NaN, both signs."""
        if self.special == "ieee":
            return 2 * (2 ** self.mantissa_bits - 1)
        return 2 if self.special == "fn" else 0

    @property
    def n_finite_codes(self) -> int:
        """Codes that mean a finite number, both signs (+0 and −0 counted separately)."""
        return 2 * len(self._table[0])

    @property
    def dynamic_range_binades(self) -> float:
        """log2(max finite / smallest subnormal): how many powers of two the format spans."""
        return math.log2(self.max_finite / self.min_subnormal)

    def spacing(self, x) -> np.ndarray:
        """The gap between the two representable magnitudes around |x| (ULP), in the units of x; at or beyond the
        largest finite value, the gap just below it."""
        mags = self._table[0]
        a = np.abs(np.asarray(x, dtype=np.float64))
        i = np.clip(np.searchsorted(mags, a, side="right"), 1, len(mags) - 1)
        return mags[i] - mags[i - 1]


@dataclasses.dataclass(frozen=True)
class BlockFormat:
    """A block-scaled format: ``block`` elements of ``element`` share one ``scale`` (e8m0 or fp8_e4m3); NVFP4 adds
    one FP32 scale per tensor."""
    id: str
    name: str
    element: str
    block: int
    scale: str
    source: str
    tensor_scale: str | None = None
    note: str = ""

    @property
    def scale_bits(self) -> int:
        return 8

    @property
    def bits_per_element(self) -> float:
        """Storage per element: element bits + scale bits / block (the per-tensor FP32 scale is negligible)."""
        return get(self.element).bits + self.scale_bits / self.block


@functools.lru_cache(maxsize=1)
def _load() -> tuple[Mapping[str, FloatFormat], Mapping[str, BlockFormat]]:
    import json

    import jsonschema
    try:
        from x4lib.catalog.specs import read_yaml
        raw = read_yaml(DATA_PATH, FormatsDataError)
        jsonschema.validate(raw, json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise FormatsDataError(f"{DATA_PATH.name}: {where}: {exc.message}") from None
    floats = {k: FloatFormat(id=k, name=v["name"], exponent_bits=v["exponent_bits"],
                             mantissa_bits=v["mantissa_bits"], bias=v["bias"], special=v["special"],
                             source=v["source"], note=v.get("note", "").strip())
              for k, v in raw["formats"].items()}
    blocks = {}
    for k, v in raw["block_formats"].items():
        if v["element"] not in floats:
            raise FormatsDataError(f"{DATA_PATH.name}: block_formats/{k}/element: unknown format {v['element']!r}")
        if v["scale"] != "e8m0" and v["scale"] not in floats:
            raise FormatsDataError(f"{DATA_PATH.name}: block_formats/{k}/scale: unknown scale {v['scale']!r}")
        blocks[k] = BlockFormat(id=k, name=v["name"], element=v["element"], block=v["block"], scale=v["scale"],
                                source=v["source"], tensor_scale=v.get("tensor_scale"),
                                note=v.get("note", "").strip())
    return MappingProxyType(floats), MappingProxyType(blocks)


def formats() -> Mapping[str, FloatFormat]:
    return _load()[0]


def block_formats() -> Mapping[str, BlockFormat]:
    return _load()[1]


def get(fmt: str | FloatFormat) -> FloatFormat:
    """A format by id (``fp8_e4m3``, ``fp4_e2m1``...); an unknown id raises LookupError listing the known ones."""
    if isinstance(fmt, FloatFormat):
        return fmt
    known = formats()
    if fmt not in known:
        raise LookupError(f"unknown format {fmt!r}; known: {', '.join(known)}")
    return known[fmt]


def get_block(fmt: str | BlockFormat) -> BlockFormat:
    if isinstance(fmt, BlockFormat):
        return fmt
    known = block_formats()
    if fmt not in known:
        raise LookupError(f"unknown block format {fmt!r}; known: {', '.join(known)}")
    return known[fmt]


# --------------------------------------------------------------------------------------------- rounding

def quantize(x, fmt: str | FloatFormat, overflow: str = "saturate") -> np.ndarray:
    """Round ``x`` to the nearest value of ``fmt`` (ties to even mantissa). Beyond the largest finite value:
    ``saturate`` gives ±max; ``ieee`` gives ±inf (E5M2, FP16, BF16) or NaN (E4M3), and ±max for formats with neither.
    NaN stays NaN; ±inf saturates to ±max (``saturate``) or stays infinite/NaN (``ieee``). Returns float64."""
    if overflow not in OVERFLOW_MODES:
        raise ValueError(f"overflow must be one of {OVERFLOW_MODES}, got {overflow!r}")
    f = get(fmt)
    mags, even = f._table
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    finite_a = np.where(np.isnan(a), 0.0, a)
    i = np.clip(np.searchsorted(mags, finite_a, side="left"), 1, len(mags) - 1)
    lo, hi = mags[i - 1], mags[i]
    d_lo, d_hi = finite_a - lo, hi - finite_a
    q = np.where((d_hi < d_lo) | ((d_hi == d_lo) & even[i]), hi, lo)
    if overflow == "ieee":
        top_gap = mags[-1] - mags[-2]
        threshold = mags[-1] + top_gap / 2
        over = (finite_a > threshold) | ((finite_a == threshold) & ~even[-1])
        beyond = np.inf if f.special == "ieee" else (np.nan if f.special == "fn" else mags[-1])
        q = np.where(over, beyond, q)
    q = np.where(np.isnan(a), np.nan, q)
    return np.copysign(q, x)


def sqnr_db(x, q) -> float:
    """Signal-to-quantisation-noise ratio 10·log10(Σx²/Σ(x−q)²) in dB; inf when q equals x."""
    x = np.asarray(x, dtype=np.float64)
    err = float(np.sum((x - np.asarray(q, dtype=np.float64)) ** 2))
    if not math.isfinite(err):
        return -math.inf
    return math.inf if err == 0 else 10 * math.log10(float(np.sum(x ** 2)) / err)


def _blocks(x: np.ndarray, block: int) -> tuple[np.ndarray, int]:
    flat = np.asarray(x, dtype=np.float64).ravel()
    n = flat.size
    pad = (-n) % block
    return np.concatenate([flat, np.zeros(pad)]).reshape(-1, block), n


def quantize_per_tensor(x, fmt: str | FloatFormat, margin: int = 0) -> np.ndarray:
    """One scale for the whole tensor: s = max_fmt / amax / 2^margin, q = Q(x·s)/s (saturating).
    This is Transformer Engine's *current* scaling; delayed scaling takes amax from earlier steps."""
    f = get(fmt)
    x = np.asarray(x, dtype=np.float64)
    amax = float(np.max(np.abs(x))) if x.size else 0.0
    if amax == 0:
        return np.zeros_like(x)
    s = f.max_finite / amax / 2.0 ** margin
    return quantize(x * s, f) / s


MX_SCALE_RULES = ("ocp", "round-up")


def mx_scale_exponents(x, fmt: str | BlockFormat, rule: str = "ocp") -> np.ndarray:
    """The shared exponent of each block, clamped to E8M0's 2^−127..2^127 (all-zero blocks get 0):
    ``ocp``       ⌊log2 amax_b⌋ − e_max,elem, the specification's reference rule (ocp-mx-v1); the block's largest
                  value then lands between 2^e_max and 2^(e_max+1), and can exceed the element's maximum;
    ``round-up``  ⌈log2(amax_b / max_elem)⌉, Transformer Engine's rule (nvidia-te-fp8-primer): nothing is clipped."""
    b = get_block(fmt)
    if b.scale != "e8m0":
        raise ValueError(f"{b.id} does not use an E8M0 scale")
    if rule not in MX_SCALE_RULES:
        raise ValueError(f"rule must be one of {MX_SCALE_RULES}, got {rule!r}")
    blocks, _ = _blocks(x, b.block)
    amax = np.max(np.abs(blocks), axis=1)
    safe = np.where(amax > 0, amax, 1.0)
    with np.errstate(divide="ignore"):
        if rule == "ocp":
            e = np.floor(np.log2(safe)) - get(b.element).emax
        else:
            e = np.ceil(np.log2(safe / get(b.element).max_finite))
    return np.clip(np.where(amax > 0, e, 0), E8M0_MIN_EXP, E8M0_MAX_EXP).astype(int)


def quantize_mx(x, fmt: str | BlockFormat, rule: str = "ocp") -> np.ndarray:
    """An MX format (MXFP8, MXFP6, MXFP4): each block of 32 is divided by its power-of-two scale (``rule`` as in
    :func:`mx_scale_exponents`), rounded to the element type (saturating: with the ``ocp`` rule a block's largest
    values can exceed the element's maximum and are clamped), and multiplied back."""
    b = get_block(fmt)
    x = np.asarray(x, dtype=np.float64)
    blocks, n = _blocks(x, b.block)
    scale = 2.0 ** mx_scale_exponents(x, b, rule)[:, None]
    q = quantize(blocks / scale, b.element) * scale
    return q.ravel()[:n].reshape(x.shape)


def quantize_nvfp4(x, fmt: str | BlockFormat = "nvfp4") -> np.ndarray:
    """NVFP4: FP4 E2M1 elements, an E4M3 decode scale per block of 16, one FP32 encode scale per tensor
    (s_enc = 448·6/amax), as in Transformer Engine's NVFP4 quantiser (float64 here)."""
    b = get_block(fmt)
    e4m3, elem = get(b.scale), get(b.element)
    x = np.asarray(x, dtype=np.float64)
    amax = float(np.max(np.abs(x))) if x.size else 0.0
    if amax == 0:
        return np.zeros_like(x)
    s_enc = e4m3.max_finite * elem.max_finite / amax
    blocks, n = _blocks(x, b.block)
    d = quantize(np.max(np.abs(blocks), axis=1) / elem.max_finite * s_enc, e4m3)[:, None]
    eff = d / s_enc                                         # the block's decode scale in the units of x
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(eff > 0, quantize(blocks / np.where(eff > 0, eff, 1.0), elem) * eff, 0.0)
    return q.ravel()[:n].reshape(x.shape)


def quantize_scheme(x, scheme: str) -> np.ndarray:
    """One of :data:`SCHEMES` applied to x."""
    if scheme not in SCHEMES:
        raise LookupError(f"unknown scheme {scheme!r}; known: {', '.join(SCHEMES)}")
    kind, fmt = SCHEMES[scheme][:2]
    if kind == "cast":
        return quantize(x, fmt)
    if kind == "tensor":
        return quantize_per_tensor(x, fmt)
    if kind == "mx":
        return quantize_mx(x, fmt)
    return quantize_nvfp4(x, fmt)


#: scheme -> (kind, format id): kind is cast, tensor (per-tensor scale), mx or nvfp4
SCHEMES: Mapping[str, tuple[str, str]] = MappingProxyType({
    "BF16 cast": ("cast", "bf16"),
    "FP8 E4M3, per-tensor scale": ("tensor", "fp8_e4m3"),
    "FP8 E5M2, per-tensor scale": ("tensor", "fp8_e5m2"),
    "MXFP8 (E4M3), block 32": ("mx", "mxfp8_e4m3"),
    "MXFP6 (E2M3), block 32": ("mx", "mxfp6_e2m3"),
    "MXFP6 (E3M2), block 32": ("mx", "mxfp6_e3m2"),
    "FP4 E2M1, per-tensor scale": ("tensor", "fp4_e2m1"),
    "MXFP4, block 32": ("mx", "mxfp4"),
    "NVFP4, block 16": ("nvfp4", "nvfp4"),
})


def scheme_bits(scheme: str) -> float:
    kind, fmt = SCHEMES[scheme]
    return get_block(fmt).bits_per_element if kind in ("mx", "nvfp4") else float(get(fmt).bits)


# ------------------------------------------------------------------------------------------ test tensors

TENSOR_KINDS = ("normal", "heavy-tailed", "outliers")


def sample(kind: str, n: int = 1 << 16, seed: int = 0, outlier_every: int = 512,
           outlier_scale: float = 50.0) -> np.ndarray:
    """A synthetic tensor of n values: ``normal`` N(0, 1); ``heavy-tailed`` Student t with 3 degrees of freedom;
    ``outliers`` N(0, 1) with every ``outlier_every``-th value multiplied by ``outlier_scale`` (a few large
    entries, as some activation channels have). Stated assumptions of the page, not measured tensors."""
    rng = np.random.default_rng(seed)
    if kind == "normal":
        return rng.standard_normal(n)
    if kind == "heavy-tailed":
        return rng.standard_t(3, n)
    if kind == "outliers":
        x = rng.standard_normal(n)
        x[::outlier_every] *= outlier_scale
        return x
    raise LookupError(f"unknown tensor kind {kind!r}; known: {', '.join(TENSOR_KINDS)}")


def error_rows(kinds=TENSOR_KINDS, schemes=None, n: int = 1 << 16, seed: int = 0) -> list[dict]:
    """SQNR (dB) of each scheme on each synthetic tensor kind: rows {tensor, scheme, bits, sqnr_db}."""
    rows = []
    for kind in kinds:
        x = sample(kind, n, seed)
        for s in (schemes or SCHEMES):
            rows.append({"tensor": kind, "scheme": s, "bits": scheme_bits(s),
                         "sqnr_db": sqnr_db(x, quantize_scheme(x, s))})
    return rows


# ------------------------------------------------------------------------------------------- delayed scaling

@dataclasses.dataclass(frozen=True)
class ScalingStep:
    """One step of delayed scaling: the tensor's amax, the scale used (from history), and what happened."""
    step: int
    amax: float
    scale: float
    scaled_amax: float     # amax · scale: above max_fmt means the largest values saturate
    saturated: bool
    headroom: float        # max_fmt / scaled_amax (< 1: saturated; >> 1: unused range, lost precision)


def delayed_scaling(amaxes, fmt: str = "fp8_e4m3", history_len: int = 16, margin: int = 0,
                    algo: str = "max") -> list[ScalingStep]:
    """Trace Transformer Engine's delayed scaling over a sequence of per-step amax values: s_t = max_fmt /
    reduce(history) / 2^margin with history = the last ``history_len`` amaxes before step t (``algo`` 'max' or
    'most_recent'); the first step has no history and uses s = 1 (TE's initial scale)."""
    if history_len < 1:
        raise ValueError(f"history_len must be >= 1, got {history_len}")
    if algo not in ("max", "most_recent"):
        raise ValueError(f"algo must be 'max' or 'most_recent', got {algo!r}")
    fmax = get(fmt).max_finite
    history: list[float] = []
    out = []
    for t, amax in enumerate(float(a) for a in amaxes):
        if history:
            ref = max(history[-history_len:]) if algo == "max" else history[-1]
            scale = fmax / ref / 2.0 ** margin if ref > 0 else 1.0
        else:
            scale = 1.0
        scaled = amax * scale
        out.append(ScalingStep(t, amax, scale, scaled, scaled > fmax, fmax / scaled if scaled > 0 else math.inf))
        history.append(amax)
    return out


# --------------------------------------------------------------------------------------------- torch checks

TORCH_DTYPES = {"fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2", "bf16": "bfloat16", "fp16": "float16"}


def torch_cast(x, fmt: str) -> np.ndarray:
    """x cast to torch's dtype for ``fmt`` and back to float64 (what this machine's torch does, for comparison)."""
    import torch
    if fmt not in TORCH_DTYPES:
        raise LookupError(f"torch has no dtype for {fmt!r} here; known: {', '.join(TORCH_DTYPES)}")
    t = torch.as_tensor(np.asarray(x, dtype=np.float32))
    return t.to(getattr(torch, TORCH_DTYPES[fmt])).to(torch.float64).numpy()


def torch_overflow(fmt: str, values=(1e4, 1e6, math.inf)) -> dict:
    """What this torch build returns when values beyond the format's range are cast to it: {value: result}."""
    return {v: float(r) for v, r in zip(values, torch_cast(np.array(values), fmt))}


def scaled_mm_error(n: int = 256, fmt: str = "fp8_e4m3", seed: int = 0) -> dict:
    """An FP8 matmul you can run on a CPU: A (n×n) and B (n×n) from N(0, 1), each cast to FP8 with a per-tensor
    scale, multiplied by ``torch._scaled_mm`` (BF16 output) and compared with the float64 product of the originals.
    Returns {n, fmt, rel_error (Frobenius), sqnr_db, emulated_rel_error (our own quantiser, same scales)}.
    Only the numerical error is computed; the CPU's speed says nothing about a GPU's FP8 rate."""
    import torch
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    f = get(fmt)
    sa, sb = f.max_finite / np.abs(a).max(), f.max_finite / np.abs(b).max()
    dt = getattr(torch, TORCH_DTYPES[fmt])
    qa = torch.as_tensor(a * sa, dtype=torch.float32).to(dt)
    qb = torch.as_tensor(b * sb, dtype=torch.float32).to(dt).t().contiguous().t()   # column-major, as required
    out = torch._scaled_mm(qa, qb, scale_a=torch.tensor(1 / sa, dtype=torch.float32),
                           scale_b=torch.tensor(1 / sb, dtype=torch.float32), out_dtype=torch.bfloat16)
    ref = a @ b
    got = out.to(torch.float64).numpy()
    emulated = (quantize(a * sa, f) / sa) @ (quantize(b * sb, f) / sb)
    rel = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
    return {"n": n, "fmt": fmt, "rel_error": rel, "sqnr_db": sqnr_db(ref, got),
            "emulated_rel_error": float(np.linalg.norm(emulated - ref) / np.linalg.norm(ref))}


# ---------------------------------------------------------------------------------------------- summaries

def properties_rows(ids=("bf16", "fp16", "fp8_e5m2", "fp8_e4m3", "fp6_e3m2", "fp6_e2m3", "fp4_e2m1")) -> list[dict]:
    """One row per format with its computed properties (display: plain numbers)."""
    rows = []
    for i in ids:
        f = get(i)
        rows.append({"format": f.name, "bits": f.bits, "exponent bits": f.exponent_bits,
                     "mantissa bits": f.mantissa_bits, "bias": f.bias, "max finite": f.max_finite,
                     "min normal": f.min_normal, "min subnormal": f.min_subnormal, "eps": f.eps,
                     "binades": f.dynamic_range_binades, "infinity": f.has_inf, "NaN codes": f.n_nan_codes,
                     "finite codes": f.n_finite_codes})
    return rows


def block_rows() -> list[dict]:
    rows = []
    for b in block_formats().values():
        rows.append({"format": b.name, "element": get(b.element).name, "block": b.block,
                     "scale": "E8M0 (power of two)" if b.scale == "e8m0" else get(b.scale).name,
                     "tensor scale": b.tensor_scale.upper() if b.tensor_scale else "—",
                     "bits per element": b.bits_per_element})
    return rows
