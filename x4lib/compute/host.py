"""The host's job in a GPU server: does input processing on the CPUs keep up with the GPUs?

A GPU that could train on G samples per second at a given MFU,

    G [samples/s] = MFU · P [FLOP/s] / F [FLOP/sample],

needs the host to prepare G samples per second. With c [s] of CPU time per sample on one core and H cores per
GPU, the host prepares at most H / c samples per second, so the step rate is min(G, H / c) and the host is the
bottleneck when c · G > H: it would need c · G cores per GPU. The prepared samples cross PCIe at G · b [B/s]
(b bytes per sample), to compare with the link's rate per direction.

Pure arithmetic on stated inputs; the inputs of the chapter's example are givens
(``x4lib/data/facts/host_pipeline_givens.yaml``). Used in: book/01-cpu-vs-gpu-vs-tpu-vs-trn1.md.
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class InputPipeline:
    """What one GPU could consume, what its share of the host can prepare, and which one limits."""
    gpu_samples_per_s: float          # G: what the GPU could train on at the given MFU
    host_samples_per_s: float         # H / c: what its share of the host cores can prepare
    cores_needed_per_gpu: float       # c · G
    cores_per_gpu: float              # H
    link_Bps_needed: float            # G · b, host -> GPU
    link_Bps: float                   # the link's rate per direction

    @property
    def samples_per_s(self) -> float:
        """The step rate: min(G, H / c)."""
        return min(self.gpu_samples_per_s, self.host_samples_per_s)

    @property
    def bound(self) -> str:
        return "host CPU" if self.host_samples_per_s < self.gpu_samples_per_s else "GPU"

    @property
    def achieved_mfu_fraction(self) -> float:
        """The fraction of the GPU's rate left once the host is accounted for (1 when the GPU is the bound)."""
        return self.samples_per_s / self.gpu_samples_per_s

    @property
    def link_utilisation(self) -> float:
        """Host-to-GPU traffic at the achieved rate over the link's rate per direction."""
        return self.samples_per_s * self.link_Bps_needed / self.gpu_samples_per_s / self.link_Bps


def input_pipeline(flop_per_sample: float, peak_flop_per_s: float, mfu: float, cpu_s_per_sample: float,
                   cores_per_gpu: float, bytes_per_sample: float, link_Bps: float) -> InputPipeline:
    """The model of the module docstring, for one GPU and its share of the host."""
    for name, v in (("flop_per_sample", flop_per_sample), ("peak_flop_per_s", peak_flop_per_s),
                    ("cpu_s_per_sample", cpu_s_per_sample), ("cores_per_gpu", cores_per_gpu),
                    ("bytes_per_sample", bytes_per_sample), ("link_Bps", link_Bps)):
        if not v > 0:
            raise ValueError(f"{name} must be positive, got {v}")
    if not 0 < mfu <= 1:
        raise ValueError(f"mfu must be in (0, 1], got {mfu}")
    g = mfu * peak_flop_per_s / flop_per_sample
    return InputPipeline(gpu_samples_per_s=g, host_samples_per_s=cores_per_gpu / cpu_s_per_sample,
                         cores_needed_per_gpu=cpu_s_per_sample * g, cores_per_gpu=cores_per_gpu,
                         link_Bps_needed=g * bytes_per_sample, link_Bps=link_Bps)


def pcie_Bps_per_direction(gt_per_s: float, lanes: int, encoding: float = 128 / 130) -> float:
    """Payload rate of a PCIe link per direction in B/s: GT/s per lane × lanes × line-code efficiency / 8 bits.
    Gen 3 to 5 use 128b/130b; a figure that counts both directions is twice this."""
    if gt_per_s <= 0 or lanes < 1 or not 0 < encoding <= 1:
        raise ValueError("transfer rate, lanes and encoding must be positive (encoding <= 1)")
    return gt_per_s * 1e9 * lanes * encoding / 8
