"""Failures, checkpoints and goodput: what a large training run loses to interruptions.

Model (times in seconds; failures independent and memoryless, i.e. a Poisson process):

    failure rate per GPU   λ = interruptions / (days · 86400 · GPUs)          [1/(GPU·s)], from a training report
    cluster MTBF           M(n) = 1 / (n · λ)                                  [s]  (every GPU can stop the job)
    Young (1974)           τ = √(2 δ M)                                        [s]  δ: time to write one checkpoint
    Daly (2006)            τ = √(2δM) · [1 + ⅓·√(δ/2M) + ⅑·(δ/2M)] − δ   for δ < 2M;  τ = M otherwise
    segment time           E[t] = M · e^{R/M} · (e^{(τ+δ)/M} − 1)             [s]  expected wall time to finish τ
                                                                                   of work plus its checkpoint, when
                                                                                   a failure costs the restart R and
                                                                                   the work since the last checkpoint
    goodput                G = τ / E[t]                                        [–]  useful fraction of wall time

τ is the compute time between checkpoints. Young's first-order interval minimises the lost time when δ ≪ M;
Daly's higher-order estimate is within a few per cent of the optimum of the segment-time model up to δ ≈ M, and
Daly (2006) checks it against simulation (M = 24 h, 6 h, 15 min with δ = 5 min, R = 10 min give τ = 117, 57 and
9.1 min). Sources: young-1974, daly-2006, llama3-2024 (interruption counts). Used in: book/04-datacenter-economics.md.
"""
from __future__ import annotations

import dataclasses
import math

FORMULAS = ("daly", "young")
SECONDS_PER_DAY = 86400.0


def failure_rate_per_gpu_s(interruptions: float, days: float, gpus: float) -> float:
    """λ = interruptions / (days · 86400 · GPUs), failures per GPU-second, from a report of one run."""
    for name, v in (("interruptions", interruptions), ("days", days), ("gpus", gpus)):
        if not math.isfinite(v) or v <= 0:
            raise ValueError(f"{name} must be > 0, got {v}")
    return interruptions / (days * SECONDS_PER_DAY * gpus)


def cluster_mtbf_s(rate_per_gpu_s: float, n_gpus: float) -> float:
    """M(n) = 1/(n·λ): mean time between failures of a job spread over ``n_gpus``, any of which can stop it."""
    if not math.isfinite(rate_per_gpu_s) or rate_per_gpu_s <= 0:
        raise ValueError(f"failure rate must be > 0, got {rate_per_gpu_s}")
    if not math.isfinite(n_gpus) or n_gpus < 1:
        raise ValueError(f"gpus must be >= 1, got {n_gpus}")
    return 1.0 / (n_gpus * rate_per_gpu_s)


def _check_times(mtbf_s: float, checkpoint_s: float, restart_s: float = 0.0) -> None:
    if not math.isfinite(mtbf_s) or mtbf_s <= 0:
        raise ValueError(f"MTBF must be > 0 s, got {mtbf_s}")
    if not math.isfinite(checkpoint_s) or checkpoint_s <= 0:
        raise ValueError(f"checkpoint time must be > 0 s, got {checkpoint_s}")
    if not math.isfinite(restart_s) or restart_s < 0:
        raise ValueError(f"restart time must be >= 0 s, got {restart_s}")


def young_interval_s(mtbf_s: float, checkpoint_s: float) -> float:
    """Young (1974): τ = √(2 δ M), compute time between checkpoints [s]."""
    _check_times(mtbf_s, checkpoint_s)
    return math.sqrt(2.0 * checkpoint_s * mtbf_s)


def daly_interval_s(mtbf_s: float, checkpoint_s: float) -> float:
    """Daly (2006): τ = √(2δM)·[1 + ⅓√(δ/2M) + ⅑(δ/2M)] − δ for δ < 2M, else τ = M [s]."""
    _check_times(mtbf_s, checkpoint_s)
    if checkpoint_s >= 2.0 * mtbf_s:
        return mtbf_s
    x = checkpoint_s / (2.0 * mtbf_s)
    return math.sqrt(2.0 * checkpoint_s * mtbf_s) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - checkpoint_s


def segment_time_s(interval_s: float, mtbf_s: float, checkpoint_s: float, restart_s: float = 0.0) -> float:
    """E[t] = M·e^{R/M}·(e^{(τ+δ)/M} − 1): expected wall time to complete τ of work and its checkpoint [s]."""
    _check_times(mtbf_s, checkpoint_s, restart_s)
    if not math.isfinite(interval_s) or interval_s <= 0:
        raise ValueError(f"checkpoint interval must be > 0 s, got {interval_s}")
    return mtbf_s * math.exp(restart_s / mtbf_s) * math.expm1((interval_s + checkpoint_s) / mtbf_s)


def goodput(interval_s: float, mtbf_s: float, checkpoint_s: float, restart_s: float = 0.0) -> float:
    """G = τ / E[t]: the fraction of wall-clock time spent on work that is kept. Computed in logarithms, so that a
    restart or a segment many MTBFs long gives a goodput that underflows to 0, not an overflow."""
    _check_times(mtbf_s, checkpoint_s, restart_s)
    if not math.isfinite(interval_s) or interval_s <= 0:
        raise ValueError(f"checkpoint interval must be > 0 s, got {interval_s}")
    x = (interval_s + checkpoint_s) / mtbf_s
    log_expm1 = math.log(math.expm1(x)) if x < 700 else x + math.log1p(-math.exp(-x))
    log_g = math.log(interval_s) - math.log(mtbf_s) - restart_s / mtbf_s - log_expm1
    return math.exp(log_g) if log_g > -745 else 0.0


@dataclasses.dataclass(frozen=True)
class CheckpointPlan:
    """The checkpoint interval chosen by ``formula`` and the goodput it gives (seconds inside)."""
    formula: str
    interval_s: float
    goodput: float
    mtbf_s: float
    checkpoint_s: float
    restart_s: float

    @property
    def young_interval_s(self) -> float:
        return young_interval_s(self.mtbf_s, self.checkpoint_s)

    @property
    def checkpoint_overhead(self) -> float:
        """δ/(τ+δ): share of failure-free time spent writing checkpoints."""
        return self.checkpoint_s / (self.interval_s + self.checkpoint_s)

    def to_json(self) -> dict:
        """The ``checkpoint-interval --json`` contract (x4lib/schemas/checkpoint_interval_output.schema.json)."""
        return {"interval_s": self.interval_s, "goodput": self.goodput, "formula": self.formula,
                "inputs": {"mtbf_hours": self.mtbf_s / 3600.0, "checkpoint_seconds": self.checkpoint_s,
                           "restart_seconds": self.restart_s},
                "young_interval_s": self.young_interval_s,
                "goodput_model": "tau / (M exp(R/M) (exp((tau+delta)/M) - 1)) (exponential failures)"}


def checkpoint_plan(mtbf_s: float, checkpoint_s: float, restart_s: float = 0.0,
                    formula: str = "daly") -> CheckpointPlan:
    """Interval by Daly's (default) or Young's formula, and its goodput under the segment-time model."""
    if formula not in FORMULAS:
        raise ValueError(f"formula must be one of {', '.join(FORMULAS)}, got {formula!r}")
    _check_times(mtbf_s, checkpoint_s, restart_s)
    tau = daly_interval_s(mtbf_s, checkpoint_s) if formula == "daly" else young_interval_s(mtbf_s, checkpoint_s)
    return CheckpointPlan(formula, tau, goodput(tau, mtbf_s, checkpoint_s, restart_s), mtbf_s, checkpoint_s,
                          restart_s)


def best_interval_s(mtbf_s: float, checkpoint_s: float, restart_s: float = 0.0) -> float:
    """The interval that maximises :func:`goodput`, found numerically (golden-section search on log τ);
    used to check the closed forms."""
    _check_times(mtbf_s, checkpoint_s, restart_s)
    lo, hi = math.log(checkpoint_s * 1e-3), math.log(mtbf_s * 50.0)
    phi = (math.sqrt(5.0) - 1.0) / 2.0
    f = lambda x: -goodput(math.exp(x), mtbf_s, checkpoint_s, restart_s)  # noqa: E731
    a, b = lo, hi
    c, d = b - phi * (b - a), a + phi * (b - a)
    for _ in range(200):
        if f(c) < f(d):
            b, d = d, c
            c = b - phi * (b - a)
        else:
            a, c = c, d
            d = a + phi * (b - a)
    return math.exp((a + b) / 2.0)


# ----------------------------------------------------------- command line: python -m x4lib checkpoint-interval

def cli_arguments(p) -> None:
    from x4lib import cli
    p.description = ("Checkpoint interval (Daly 2006, or Young 1974) and goodput for a job whose mean time "
                     "between failures is --mtbf-hours.")
    p.add_argument("--mtbf-hours", required=True, type=cli.number("MTBF hours", 0, 1e7, low_open=True),
                   help="mean time between failures of the whole job, hours")
    p.add_argument("--checkpoint-seconds", required=True, type=cli.number("checkpoint seconds", 0, 1e7, low_open=True),
                   help="time to write one checkpoint, seconds")
    p.add_argument("--restart-seconds", default=0.0, type=cli.number("restart seconds", 0, 1e7),
                   help="time from a failure to training again, seconds (default 0)")
    p.add_argument("--formula", default="daly", type=cli.choice_of("formula", FORMULAS))
    p.add_argument("--json", action="store_true",
                   help="machine-readable output (schemas/checkpoint_interval_output.schema.json)")


def cli_main(args) -> int:
    from x4lib import cli
    plan = checkpoint_plan(args.mtbf_hours * 3600.0, args.checkpoint_seconds, args.restart_seconds, args.formula)
    cli.emit(plan.to_json(), "\n".join([
        f"MTBF            {args.mtbf_hours:g} h; checkpoint {args.checkpoint_seconds:g} s; "
        f"restart {args.restart_seconds:g} s",
        f"interval        {plan.interval_s:,.0f} s ({plan.interval_s / 60:,.1f} min) of compute between checkpoints "
        f"({plan.formula}; Young: {plan.young_interval_s / 60:,.1f} min)",
        f"goodput         {plan.goodput:.4f} of wall-clock time is kept work",
    ]), as_json=args.json)
    return 0
