"""nccl-tests' conventions: the collectives' names, their nccl-tests binaries and spellings, and the bus-bandwidth
factor.

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
Standard library only, so the collective benchmark runs on a bare PyTorch pod.
"""
from __future__ import annotations

import difflib
from types import MappingProxyType
from typing import Mapping

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce", "sendrecv")

#: the one map of names: each collective's nccl-tests binary (``alltoall_perf`` has no underscore)...
NCCL_TESTS_BINARY: Mapping[str, str] = MappingProxyType({
    "all_reduce": "all_reduce_perf", "all_gather": "all_gather_perf", "reduce_scatter": "reduce_scatter_perf",
    "all_to_all": "alltoall_perf", "broadcast": "broadcast_perf", "reduce": "reduce_perf",
    "sendrecv": "sendrecv_perf"})
#: nccl-tests binaries of collectives the models here have no factor for
OTHER_NCCL_TESTS_BINARIES = ("alltoallv_perf", "gather_perf", "scatter_perf", "hypercube_perf")
#: ...and the spellings logs, binaries and file names use for it (lower case, without separators)
_SPELLINGS: Mapping[str, str] = MappingProxyType({
    **{c.replace("_", ""): c for c in COLLECTIVES}, "alltoall": "all_to_all", "a2a": "all_to_all"})


def canonical(name: str) -> str | None:
    """The book's name of a collective from any common spelling (``AllReduce``, ``all-reduce``, ``alltoall``,
    ``all_reduce_perf``), or None."""
    key = "".join(ch for ch in name.lower() if ch.isalnum())
    key = key[:-4] if key.endswith("perf") else key
    return _SPELLINGS.get(key)


def find_in_text(text: str) -> str | None:
    """The collective named in a file name or a line (longest spelling first, so ``reduce_scatter`` is not
    ``reduce``), or None."""
    flat = "".join(ch for ch in text.lower() if ch.isalnum())
    for spelling in sorted(_SPELLINGS, key=len, reverse=True):
        if spelling in flat:
            return _SPELLINGS[spelling]
    return None


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


def busbw_Bps(collective: str, algbw_Bps: float, n_ranks: int) -> float:
    """busbw = algbw × F(n), both in B/s (nccl-tests convention, nccl-tests-performance).
    Used in: book/lab-01-collectives.md"""
    return algbw_Bps * busbw_factor(collective, n_ranks)


def check_collective(collective: str) -> None:
    if collective not in COLLECTIVES:
        close = difflib.get_close_matches(collective, COLLECTIVES, n=1, cutoff=0.5)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown collective {collective!r}{hint}; known: {', '.join(COLLECTIVES)}")
