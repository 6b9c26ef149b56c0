"""Collective operations: nccl-tests' bandwidth conventions and α–β cost models.

algbw and busbw follow nccl-tests exactly (NVIDIA/nccl-tests doc/PERFORMANCE.md; references.bib:
nccl-tests-performance):

    algbw [B/s] = S / t      where S is the collective's "size" as nccl-tests prints it
                             (for AllGather, ReduceScatter and AllToAll, the whole array: count·typesize·n)
    busbw [B/s] = algbw × F(n)

    F(n) = 2(n−1)/n   AllReduce: each rank must receive n−1 pieces and send n−1 reduced pieces
                      (a reduce-scatter followed by an all-gather), i.e. 2(n−1)/n of the data per rank
    F(n) = (n−1)/n    AllGather, ReduceScatter, AllToAll: each rank receives (or sends) the n−1 pieces it
                      does not own
    F(n) = 1          Broadcast, Reduce, SendRecv: the data crosses the bottleneck link once

The factor makes busbw comparable with the bottleneck link's per-direction bandwidth whatever n is.
Other tools use other conventions (e.g. 2·S/t for AllReduce "throughput"): only busbw is comparable.
Used in: book/lab-01-collectives.md.
"""
from __future__ import annotations

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce", "sendrecv")


def busbw_factor(collective: str, n_ranks: int) -> float:
    """nccl-tests' bus-bandwidth factor F(n) for ``collective`` over ``n_ranks`` ranks."""
    if collective not in COLLECTIVES:
        raise ValueError(f"unknown collective {collective!r}; use one of: {', '.join(COLLECTIVES)}")
    if int(n_ranks) != n_ranks or n_ranks < 1:
        raise ValueError(f"n_ranks must be a whole number >= 1, got {n_ranks}")
    n = n_ranks
    if collective == "all_reduce":
        return 2 * (n - 1) / n
    if collective in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    return 1.0
