"""Expert parallelism (EP) for a mixture-of-experts layer: the all-to-all it sends, where it runs, and how it compares
with tensor parallelism (TP) of the same experts.

A token routed to ``k`` of the experts is sent to the GPUs that hold them (dispatch) and its k outputs come back
(combine): two all-to-alls per MoE layer in the forward pass (Lepikhin et al. 2020, lepikhin-2020), and the same
two again in the backward pass. With hidden width h and β bytes per element, per token and MoE layer, forward:

    all-to-all bytes       A = k · h · β · 2                 [B]  (dispatch + combine), per direction
    leaving its GPU        A · (ep − 1)/ep                    [B]  (the expert may sit on the sender, 1/ep of the time)

Tensor parallelism of the experts instead splits every expert's FFN over t GPUs, each of which sees every token of
its group, and sums the partial outputs with one all-reduce of h·β per token (forward). Summed over the t GPUs of the
group, a ring all-reduce sends 2(t − 1)/t · h · β per GPU, that is

    TP bytes per token      2 (t − 1) · h · β                  [B]  (all GPUs of the group together)

against EP's k · h · β · 2 · (ep − 1)/ep, so at equal degrees EP sends less whenever k (ep − 1)/ep < t − 1, and it
keeps each expert's GEMMs whole (TP makes them t times thinner). Where the all-to-all runs decides its price: inside
the scale-up domain (NVLink, ep ≤ the domain's GPUs) at the per-GPU NVLink rate, beyond it at the per-GPU share of
the node's NICs. Counts and SI units (B, B/s, s). Used in: book/capstone-8-to-1024.md ("Variants").
"""
from __future__ import annotations

import dataclasses
import math

LINKS = ("nvlink", "network")


def _whole(name: str, v, low: int = 1) -> None:
    if isinstance(v, bool) or int(v) != v or v < low:
        raise ValueError(f"{name} must be a whole number >= {low}, got {v}")


def _positive(name: str, v: float) -> None:
    if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be > 0, got {v}")


def all_to_all_bytes_per_token_per_layer(top_k: int, hidden: int, bytes_per_element: float = 2) -> float:
    """A = k · h · β · 2 [B]: dispatch and combine of one token in one MoE layer, forward, per direction."""
    _whole("top_k", top_k)
    _whole("hidden", hidden)
    _positive("bytes per element", bytes_per_element)
    return top_k * hidden * bytes_per_element * 2


def ep_bytes_sent_per_token(top_k: int, hidden: int, ep: int, bytes_per_element: float = 2) -> float:
    """A · (ep − 1)/ep [B]: the part of the all-to-all that leaves the token's GPU (forward, one MoE layer)."""
    _whole("ep", ep)
    return all_to_all_bytes_per_token_per_layer(top_k, hidden, bytes_per_element) * (ep - 1) / ep


def tp_bytes_sent_per_token(hidden: int, tp: int, bytes_per_element: float = 2) -> float:
    """2 (t − 1) · h · β [B]: one ring all-reduce of a token's output, summed over the t GPUs of the group (forward,
    one MoE layer); at equal work per GPU, also what one GPU sends per token it would own under EP."""
    _whole("hidden", hidden)
    _whole("tp", tp)
    _positive("bytes per element", bytes_per_element)
    return 2 * (tp - 1) * hidden * bytes_per_element


def ep_link(ep: int, domain: int) -> str:
    """"nvlink" when the EP group fits in one scale-up domain of ``domain`` GPUs, else "network"."""
    _whole("ep", ep)
    _whole("domain", domain)
    return "nvlink" if ep <= domain else "network"


def ep_sends_less(top_k: int, ep: int, tp: int) -> bool:
    """EP's all-to-all sends fewer bytes per token than TP's all-reduce: k (ep − 1)/ep < t − 1."""
    _whole("top_k", top_k)
    _whole("ep", ep)
    _whole("tp", tp)
    return top_k * (ep - 1) / ep < tp - 1


@dataclasses.dataclass(frozen=True)
class Placement:
    """EP groups of ``ep`` GPUs laid over ``gpus`` GPUs in scale-up domains of ``domain`` GPUs."""
    ep: int
    gpus: int
    domain: int
    groups: int          # gpus // ep (the data-parallel replicas of the experts)
    domains_per_group: int
    link: str            # "nvlink" or "network"


def placement(ep: int, gpus: int, domain: int) -> Placement:
    """Where the EP groups sit: ``gpus``/ep groups, each spanning ⌈ep/domain⌉ scale-up domains. ``ep`` must divide
    ``gpus``, and a group larger than a domain must fill whole domains (ep a multiple of domain)."""
    _whole("gpus", gpus)
    _whole("ep", ep)
    _whole("domain", domain)
    if gpus % ep:
        raise ValueError(f"ep = {ep} must divide the {gpus} GPUs")
    if ep > domain and ep % domain:
        raise ValueError(f"an EP group of {ep} larger than a domain of {domain} GPUs must fill whole domains")
    return Placement(ep, gpus, domain, gpus // ep, math.ceil(ep / domain), ep_link(ep, domain))


def layer_comm_s(bytes_per_token: float, tokens: float, link_Bps: float) -> float:
    """t = bytes per token × tokens / link rate [s]: one GPU's share of a layer's traffic at its link's rate (per
    direction, no latency, no overlap: a lower bound)."""
    _positive("tokens", tokens)
    _positive("link rate", link_Bps)
    if not (math.isfinite(bytes_per_token) and bytes_per_token >= 0):
        raise ValueError(f"bytes per token must be >= 0, got {bytes_per_token}")
    return bytes_per_token * tokens / link_Bps


@dataclasses.dataclass(frozen=True)
class EpVsTp:
    """One MoE layer, forward, per GPU that holds ``tokens`` tokens: EP of degree ``degree`` against TP of the same
    degree (bytes per token are per GPU: EP's all-to-all share, TP's all-reduce share of its group's tokens)."""
    degree: int
    ep_link: str
    ep_bytes_per_token: float
    tp_bytes_per_token: float
    ep_s: float
    tp_s: float
    ep_expert_width: int     # the FFN width of one expert's GEMM on a GPU
    tp_expert_width: int

    @property
    def ep_wins(self) -> bool:
        return self.ep_s < self.tp_s


def compare(top_k: int, hidden: int, moe_ffn: int, degree: int, domain: int, tokens: float, nvlink_Bps: float,
            network_Bps: float, bytes_per_element: float = 2) -> EpVsTp:
    """EP against TP of ``degree`` GPUs for one MoE layer (module docstring). TP runs inside the scale-up domain
    (its group must fit: ``degree`` ≤ ``domain``); EP runs at ``nvlink_Bps`` inside it and at ``network_Bps`` (one
    GPU's share of its node's NICs) beyond. Every GPU holds ``tokens`` tokens: with EP it sends its own tokens'
    all-to-all share; with TP its group of ``degree`` GPUs shares ``degree`` × ``tokens`` tokens, and each GPU sends
    2 (t − 1)/t of them in the all-reduce."""
    _whole("moe_ffn", moe_ffn)
    if degree > domain:
        raise ValueError(f"TP of {degree} does not fit a scale-up domain of {domain} GPUs")
    _positive("network rate", network_Bps)
    ep_B = ep_bytes_sent_per_token(top_k, hidden, degree, bytes_per_element)
    # TP: the GPU sends 2(t − 1)/t · h · β for each of its group's t · tokens tokens = 2 (t − 1) · h · β per own token
    tp_B = tp_bytes_sent_per_token(hidden, degree, bytes_per_element)
    link = ep_link(degree, domain)
    ep_s = layer_comm_s(ep_B, tokens, nvlink_Bps if link == "nvlink" else network_Bps)
    tp_s = layer_comm_s(tp_B, tokens, nvlink_Bps)
    return EpVsTp(degree, link, ep_B, tp_B, ep_s, tp_s, moe_ffn, moe_ffn // degree)
