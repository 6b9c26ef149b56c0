"""SIMT on a GPU SM: occupancy from the per-SM limits, the cost of a divergent branch, and Little's law for the
bytes (and warps) a GPU must keep in flight to saturate its memory.

Occupancy. A kernel launched with T threads per block, r registers per thread and S bytes of shared memory per
block fits B blocks on an SM, the smallest of

    B_warps = ⌊W_max / ⌈T/32⌉⌋     B_regs = ⌊R_SM / (r · 32 · ⌈T/32⌉)⌋
    B_smem  = ⌊S_SM / (S + S_res)⌋  B_max                                      [blocks]

and occupancy = B · ⌈T/32⌉ / W_max (resident warps over the most the SM holds). Registers are partitioned among
warps and shared memory among blocks (CUDA Programming Guide 3.2.2.2); the hardware allocates registers in
units (of 256 per warp on recent GPUs) that this model does not round to, so B_regs is an upper bound for
register counts that are not multiples of 8.

Divergence. A warp issues one instruction for all 32 lanes; when lanes take different paths of a branch, the
warp runs each path taken, with the other lanes masked off. Its SIMT efficiency is the useful lane-instructions
over 32 × the instructions issued.

Little's law. To sustain a bandwidth W [B/s] against a latency L [s], W · L bytes must be in flight. Spread over
the SMs and expressed in warp-wide loads of b bytes per thread, that is the number of warps per SM (each with
one load outstanding) the memory system needs.

Sources: the H100's limits in ``x4lib/data/facts/h100_sm.yaml``, latencies in ``h100_memory.yaml`` (both with
their bib keys). Used in: book/01-cpu-vs-gpu-vs-tpu-vs-trn1.md.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Sequence

from x4lib.catalog import facts


@dataclasses.dataclass(frozen=True)
class SmLimits:
    """Per-SM limits of one compute capability (counts; bytes for shared memory)."""
    name: str
    warp_size: int
    max_warps: int
    max_threads: int
    max_blocks: int
    registers: int
    max_registers_per_thread: int
    max_threads_per_block: int
    shared_memory_B: int
    max_shared_memory_per_block_B: int
    shared_memory_reserved_per_block_B: int


def h100_limits() -> SmLimits:
    """The H100's per-SM limits (compute capability 9.0), from the facts file with their sources."""
    g = "h100_sm"

    def v(name):
        return int(facts.get(g, name).si)
    return SmLimits("H100 (compute capability 9.0)", v("warp_size"), v("max_warps_per_sm"), v("max_threads_per_sm"),
                    v("max_blocks_per_sm"), v("registers_per_sm"), v("max_registers_per_thread"),
                    v("max_threads_per_block"), v("shared_memory_per_sm"), v("max_shared_memory_per_block"),
                    v("shared_memory_reserved_per_block"))


@dataclasses.dataclass(frozen=True)
class Occupancy:
    """How many blocks and warps of a kernel fit on one SM, and which limit binds."""
    threads_per_block: int
    registers_per_thread: int
    shared_memory_per_block_B: int
    warps_per_block: int
    blocks_by_limit: dict       # {"warps": ..., "registers": ..., "shared memory": ..., "blocks": ...}
    blocks_per_sm: int
    active_warps: int
    max_warps: int

    @property
    def occupancy(self) -> float:
        """Resident warps / the SM's maximum (0..1)."""
        return self.active_warps / self.max_warps

    @property
    def limiter(self) -> str:
        """The limit that allows the fewest blocks (ties: the first in warps, registers, shared memory, blocks)."""
        return min(self.blocks_by_limit, key=lambda k: self.blocks_by_limit[k])


def occupancy(threads_per_block: int, registers_per_thread: int, shared_memory_per_block_B: int = 0,
              limits: SmLimits | None = None) -> Occupancy:
    """Theoretical occupancy of a launch configuration (module docstring). A configuration that cannot launch
    (too many threads, registers or shared memory for one block) raises ValueError naming the limit."""
    lim = limits or h100_limits()
    t, r, s = int(threads_per_block), int(registers_per_thread), int(shared_memory_per_block_B)
    if not 1 <= t <= lim.max_threads_per_block:
        raise ValueError(f"{t} threads per block: must be 1..{lim.max_threads_per_block} on {lim.name}")
    if not 0 <= r <= lim.max_registers_per_thread:
        raise ValueError(f"{r} registers per thread: must be 0..{lim.max_registers_per_thread} on {lim.name}")
    if not 0 <= s <= lim.max_shared_memory_per_block_B:
        raise ValueError(f"{s} B of shared memory per block: must be 0..{lim.max_shared_memory_per_block_B} "
                         f"on {lim.name}")
    wpb = math.ceil(t / lim.warp_size)
    regs_per_block = r * lim.warp_size * wpb
    by = {"warps": lim.max_warps // wpb,
          "registers": lim.registers // regs_per_block if regs_per_block else lim.max_blocks,
          "shared memory": lim.shared_memory_B // (s + lim.shared_memory_reserved_per_block_B),
          "blocks": lim.max_blocks}
    blocks = min(by.values())
    if blocks < 1:
        raise ValueError(f"one block needs more {min(by, key=by.get)} than an SM of {lim.name} has: cannot launch")
    return Occupancy(t, r, s, wpb, by, blocks, blocks * wpb, lim.max_warps)


@dataclasses.dataclass(frozen=True)
class Divergence:
    """SIMT efficiency of a warp running a branch."""
    lanes: int
    issued: int                 # instructions the warp issues
    useful_lane_instructions: int

    @property
    def efficiency(self) -> float:
        """useful lane-instructions / (lanes × issued)."""
        return self.useful_lane_instructions / (self.lanes * self.issued) if self.issued else 1.0


def branch(paths: Sequence[tuple[int, int]], common_instructions: int = 0, warp_size: int = 32) -> Divergence:
    """One warp through a branch: ``paths`` = [(lanes that take it, instructions on it), ...]; every lane also
    runs ``common_instructions``. A path no lane takes costs nothing; every taken path is issued in full."""
    lanes = sum(p[0] for p in paths)
    if any(p[0] < 0 or p[1] < 0 for p in paths) or lanes > warp_size or common_instructions < 0:
        raise ValueError(f"lane counts must be >= 0 and add up to at most {warp_size}; instructions >= 0")
    issued = common_instructions + sum(n for k, n in paths if k > 0)
    useful = warp_size * common_instructions + sum(k * n for k, n in paths)
    return Divergence(warp_size, issued, useful)


def block_branch_efficiency(take: Sequence[bool], then_instructions: int, else_instructions: int,
                            warp_size: int = 32) -> float:
    """SIMT efficiency of ``if (cond) {then} else {else}`` over a block, ``take[i]`` the condition of thread i:
    warps are consecutive thread IDs, and each warp pays for every path one of its lanes takes."""
    issued = useful = 0
    for w0 in range(0, len(take), warp_size):
        lanes = take[w0:w0 + warp_size]
        d = branch([(sum(lanes), then_instructions), (len(lanes) - sum(lanes), else_instructions)],
                   warp_size=warp_size)
        issued += d.issued * warp_size
        useful += d.useful_lane_instructions
    return useful / issued if issued else 1.0


@dataclasses.dataclass(frozen=True)
class LittlesLaw:
    """Bytes and warps in flight needed to sustain a bandwidth against a latency."""
    bandwidth_Bps: float
    latency_s: float
    sms: int
    bytes_per_thread_load: int
    warp_size: int
    max_warps_per_sm: int

    @property
    def bytes_in_flight_B(self) -> float:
        """W · L in bytes, for the whole GPU."""
        return self.bandwidth_Bps * self.latency_s

    @property
    def per_sm_B(self) -> float:
        return self.bytes_in_flight_B / self.sms

    @property
    def bytes_per_warp_load_B(self) -> int:
        return self.warp_size * self.bytes_per_thread_load

    @property
    def warps_per_sm(self) -> float:
        """Warps per SM with one warp-wide load each outstanding that keep W · L bytes in flight."""
        return self.per_sm_B / self.bytes_per_warp_load_B

    @property
    def occupancy_needed(self) -> float:
        """warps_per_sm / the SM's maximum (above 1: one load per warp cannot do it, each warp needs several)."""
        return self.warps_per_sm / self.max_warps_per_sm


def littles_law(bandwidth_Bps: float, latency_s: float, sms: int, bytes_per_thread_load: int = 4,
                limits: SmLimits | None = None) -> LittlesLaw:
    """Little's law for a GPU's memory: W · L bytes in flight, per SM and in warps (module docstring)."""
    if bandwidth_Bps <= 0 or latency_s <= 0 or sms < 1 or bytes_per_thread_load < 1:
        raise ValueError("bandwidth, latency, SM count and bytes per load must be positive")
    lim = limits or h100_limits()
    return LittlesLaw(bandwidth_Bps, latency_s, int(sms), int(bytes_per_thread_load), lim.warp_size, lim.max_warps)
