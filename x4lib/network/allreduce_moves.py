"""The data movement of one AllReduce, step by step: which rank sends how many bytes to whom, for the three
algorithms chapter 03 draws (x4lib.book.diagrams_network.allreduce_moves).

For p ranks and an AllReduce of S bytes (nccl-tests' size convention):

* **ring** (patarasuk-2009): a reduce-scatter of p − 1 steps, then an all-gather of p − 1 steps; in step s every
  rank r sends one chunk of S/p to rank r + 1. 2(p − 1) steps, each rank sends 2(p − 1)/p · S: the α and β terms of
  ``collectives.alpha_beta_time_s("all_reduce", "ring", ...)``.
* **tree**: a binary tree in heap order (the parent of rank r is (r − 1) // 2); partial sums go up one level per step
  (reduce), then the result comes down one level per step (broadcast). 2·⌊log2 p⌋ steps, each edge carries S up and
  S down. NCCL runs two such trees, each on half the data, and pipelines chunks through them so the steps overlap
  (the 2⌈log2 p⌉·α + 2·S·β of the double binary tree in ``collectives``).
* **nvls** (NVLink SHARP, nvidia-nvswitch3-blog): every GPU sends its S bytes into the NVSwitch, which adds them, and
  the switch sends the sum S back to every GPU: 2 steps, S out and S in per GPU instead of the ring's 2(p − 1)/p · S.

Bytes in B; ranks are 0..p−1, the switch is :data:`SWITCH`. Used in: book/03-interconnects-and-topology.md.
"""
from __future__ import annotations

import dataclasses
import math

from x4lib.network.clusters import Cluster

ALGORITHMS = ("ring", "tree", "nvls")
#: the NVSwitch as the sender or receiver of a move
SWITCH = -1


@dataclasses.dataclass(frozen=True)
class Move:
    """One transfer: in ``step`` (1-based) of ``phase``, ``src`` sends ``bytes_B`` [B] to ``dst``."""
    step: int
    phase: str
    src: int
    dst: int
    bytes_B: float


@dataclasses.dataclass(frozen=True)
class Schedule:
    """The moves of one AllReduce of ``size_B`` bytes on ``n_ranks`` ranks."""
    algorithm: str
    n_ranks: int
    size_B: float
    moves: tuple[Move, ...]

    @property
    def steps(self) -> int:
        return max((m.step for m in self.moves), default=0)

    @property
    def phases(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.phase for m in self.moves))

    def sent_B(self, rank: int) -> float:
        """Bytes ``rank`` sends over the whole AllReduce [B]."""
        return sum(m.bytes_B for m in self.moves if m.src == rank)

    def received_B(self, rank: int) -> float:
        return sum(m.bytes_B for m in self.moves if m.dst == rank)

    def edges(self) -> list[tuple[int, int]]:
        """The (src, dst) pairs that carry data, in first-use order."""
        return list(dict.fromkeys((m.src, m.dst) for m in self.moves))


def _check(n_ranks: int, size_B: float) -> None:
    if int(n_ranks) != n_ranks or n_ranks < 2:
        raise ValueError(f"an AllReduce needs a whole number of ranks >= 2, got {n_ranks}")
    if not (math.isfinite(size_B) and size_B > 0):
        raise ValueError(f"the size must be > 0 B, got {size_B}")


def ring(n_ranks: int, size_B: float) -> Schedule:
    """Reduce-scatter then all-gather around the ring 0 → 1 → … → p−1 → 0: one chunk of S/p per rank per step."""
    _check(n_ranks, size_B)
    p, chunk = int(n_ranks), size_B / n_ranks
    moves = [Move(phase * (p - 1) + s, name, r, (r + 1) % p, chunk)
             for phase, name in enumerate(("reduce-scatter", "all-gather"))
             for s in range(1, p) for r in range(p)]
    return Schedule("ring", p, size_B, tuple(moves))


def tree_depth(n_ranks: int) -> int:
    """Levels below the root of a heap-ordered binary tree of ``n_ranks`` ranks: ⌊log2 p⌋."""
    return int(n_ranks).bit_length() - 1


def tree(n_ranks: int, size_B: float) -> Schedule:
    """Reduce up a heap-ordered binary tree (deepest level first), then broadcast down; each move carries S."""
    _check(n_ranks, size_B)
    p, depth = int(n_ranks), tree_depth(n_ranks)
    level = {r: tree_depth(r + 1) for r in range(p)}
    up = [Move(depth - level[r] + 1, "reduce", r, (r - 1) // 2, size_B)
          for lvl in range(depth, 0, -1) for r in range(p) if level[r] == lvl]
    down = [Move(depth + level[r], "broadcast", (r - 1) // 2, r, size_B)
            for lvl in range(1, depth + 1) for r in range(p) if level[r] == lvl]
    return Schedule("tree", p, size_B, tuple(up + down))


def nvls(n_ranks: int, size_B: float) -> Schedule:
    """Every GPU sends S into the switch, which reduces; the switch multicasts the sum S to every GPU."""
    _check(n_ranks, size_B)
    p = int(n_ranks)
    moves = [Move(1, "reduce in the switch", r, SWITCH, size_B) for r in range(p)]
    moves += [Move(2, "multicast", SWITCH, r, size_B) for r in range(p)]
    return Schedule("nvls", p, size_B, tuple(moves))


def schedule(algorithm: str, n_ranks: int, size_B: float) -> Schedule:
    """One of :data:`ALGORITHMS`."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"unknown algorithm {algorithm!r}; known: {', '.join(ALGORITHMS)}")
    return {"ring": ring, "tree": tree, "nvls": nvls}[algorithm](n_ranks, size_B)


def in_one_node(cluster: Cluster, size_B: float) -> dict[str, Schedule]:
    """The schedules on one node of ``cluster`` (its GPUs per node); NVLS only where its switch can reduce."""
    algs = [a for a in ALGORITHMS if a != "nvls" or cluster.intra.in_network]
    return {a: schedule(a, cluster.gpus_per_node, size_B) for a in algs}
