"""Page helpers of chapter 03's diagrams (book/03-interconnects-and-topology.md): the DGX H100 board, a
rail-optimised fat tree and the AllReduce data movement, each drawn by ``x4lib.book.diagrams_chip`` or
``x4lib.book.diagrams_network`` from the objects these helpers build once from the ids a page names (a cluster
preset, a GPU count, a link id).
"""
from __future__ import annotations

from x4lib.book import diagram_parts, diagrams_chip, diagrams_network
from x4lib.catalog import facts
from x4lib.network import allreduce_moves, clusters, links, topology

BOARD = "dgx_h100_board"


def draw_board(cluster_id: str = "2x8-h100-ib400", pcie_id: str = "pcie-gen5-x16"):
    """One server of the preset ``cluster_id`` as a DGX H100 board (facts ``dgx_h100_board``); returns the Axes."""
    _, ax = diagram_parts.new_axes()
    return diagrams_chip.dgx_board(ax, clusters.get(cluster_id), facts.group(BOARD), links.get(pcie_id))


def board_numbers(cluster_id: str = "2x8-h100-ib400") -> dict:
    """What the prose beside the board quotes: the link split, links per GPU, switch chips, rate per link
    [GB/s per direction], NICs and their rate [Gb/s per direction]."""
    c, board = clusters.get(cluster_id), facts.group(BOARD)
    split = diagrams_chip.board_links(board)
    return {"split": " + ".join(map(str, split)), "links": sum(split), "switches": len(split),
            "per_link_gb_s": c.intra.bw_Bps / sum(split) / 1e9, "per_gpu_gb_s": c.intra.bw_Bps / 1e9,
            "nics": c.nics_per_node, "nic_gbit_s": c.nic.bw_Bps * 8 / 1e9, "cpus": int(board.facts["cpus"].value)}


def fat_tree(gpus: int = 1024, radix: int | None = None, gpus_per_node: int = 8) -> topology.Topology:
    """The rail-optimised fat tree of chapter 03's model (64-port NDR switches and NDR links by default)."""
    return topology.rail_fat_tree(gpus, radix or topology.default_radix(), topology.default_link_Bps(), gpus_per_node)


def draw_fat_tree(gpus: int = 1024, radix: int | None = None, gpus_per_node: int = 8):
    """The rail-optimised fat tree of ``gpus`` GPUs, as the topology model counts it; returns the Axes."""
    _, ax = diagram_parts.new_axes()
    return diagrams_network.rail_fat_tree(ax, fat_tree(gpus, radix, gpus_per_node))


def draw_allreduce(cluster_id: str = "2x8-h100-ib400", where: str = "one node of the preset"):
    """Ring, tree and (where the preset's switch reduces) NVLS AllReduce moves on one node; returns the Axes."""
    _, ax = diagram_parts.new_axes()
    scheds = allreduce_moves.in_one_node(clusters.get(cluster_id), 1.0)
    return diagrams_network.allreduce_moves(ax, scheds, where)


def allreduce_numbers(cluster_id: str = "2x8-h100-ib400") -> dict:
    """Steps and bytes per GPU (as multiples of S) of each algorithm on one node, for the prose."""
    out = {}
    for alg, s in allreduce_moves.in_one_node(clusters.get(cluster_id), 1.0).items():
        out[alg] = {"steps": s.steps, "sent": s.sent_B(0), "n": s.n_ranks}
    return out
