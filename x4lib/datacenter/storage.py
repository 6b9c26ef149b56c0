"""Storage for a training run: the read bandwidth its input needs and the writes its checkpoints need.

Model (SI units):

    tokens per second    r_tok = R / (6 N)                 [token/s]  R: useful cluster rate [FLOP/s], N parameters
    input read           B_in = r_tok · b_tok               [B/s]      b_tok: bytes of one stored token
    dataset size         D · b_tok                           [B]        D tokens, read once
    checkpoint size      S = N · (2 + 12)                    [B]        16-bit weights (2 B) and the FP32 Adam state
                                                                        (master weights, momentum, variance: 12 B),
                                                                        gradients not saved (Rajbhandari et al. 2020)
    checkpoint time      δ = S / W                           [s]        W: aggregate write bandwidth [B/s]
    average write        S / (τ + δ)                         [B/s]      one checkpoint every τ of compute

Used in: book/04-datacenter-economics.md.
"""
from __future__ import annotations

import dataclasses
import math

from x4lib.training import memory

CHECKPOINT_BYTES_PER_PARAM = {"weights": memory.MIXED_ADAM_BYTES_PER_PARAM["weights"],
                              "optimizer": memory.MIXED_ADAM_BYTES_PER_PARAM["optimizer"]}


def _positive(name: str, v: float) -> None:
    if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be > 0, got {v}")


def checkpoint_bytes(params: float) -> float:
    """S = N · 14 B: weights and optimizer state of mixed-precision Adam (no gradients)."""
    return memory.model_state_bytes(params, CHECKPOINT_BYTES_PER_PARAM)


@dataclasses.dataclass(frozen=True)
class StorageDemand:
    """What one training run asks of its storage (B, B/s, s)."""
    tokens_per_s: float
    input_read_Bps: float
    dataset_B: float
    checkpoint_B: float
    checkpoint_s: float
    write_Bps: float            # the aggregate bandwidth a checkpoint is written at (the burst)
    average_write_Bps: float    # one checkpoint per interval, averaged


def storage_demand(params: float, tokens: float, cluster_flop_per_s: float, bytes_per_token: float,
                   write_Bps: float, interval_s: float | None = None) -> StorageDemand:
    """Read and write demand of a run (module docstring). ``interval_s`` is the compute time between
    checkpoints (e.g. from :func:`x4lib.datacenter.reliability.checkpoint_plan`); without it the average write is 0."""
    for name, v in (("params", params), ("tokens", tokens), ("cluster rate", cluster_flop_per_s),
                    ("bytes per token", bytes_per_token), ("write bandwidth", write_Bps)):
        _positive(name, v)
    r_tok = cluster_flop_per_s / (6.0 * params)
    ck = checkpoint_bytes(params)
    delta = ck / write_Bps
    avg = 0.0
    if interval_s is not None:
        _positive("checkpoint interval", interval_s)
        avg = ck / (interval_s + delta)
    return StorageDemand(r_tok, r_tok * bytes_per_token, tokens * bytes_per_token, ck, delta, write_Bps, avg)
