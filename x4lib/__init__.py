"""x4lib: the helper package of the X4 book on AI hardware.

Concept modules (the models; one hop from a number on a page to the code that made it):

    specs        the spec catalog (x4lib/data/devices/*.yaml), every value with its source
    kernels      the dtype vocabulary; FLOP and bytes of a matmul and of the STREAM kernels
    roofline     attainable rate = min(peak, intensity × bandwidth)
    matmul       achievable rate of an m×n×k matmul: tiles, waves, sustained clock, per-call overhead, roofline
    mfu          where the peak goes in a training run: the MFU budget, term by term
    economics    time, cost and power of a training run
    datacenter   the power chain from chip to grid, and chapter 04's sourced data (prices, racks, electricity)
    tco          owning against renting: cost per GPU-hour and the break-even utilisation
    reliability  failure rates, cluster MTBF, Young/Daly checkpoint intervals and goodput
    storage      the read and checkpoint-write bandwidth a training run needs
    carbon       emissions of a run from energy and grid carbon intensity
    serving      the cost of a token served: memory-bound decode, compute-bound prefill
    runcost      one cost model of a training run: time, capital, facility, failures, energy, carbon
    memory       bytes of training state; per-GPU training and inference memory plans
    formats      FP8/FP6/FP4 number formats from their bit fields; MX and NVFP4 block scaling, emulated
    inference    KV-cache bytes, parameter counts of published models, the decode roofline
    mig          MIG profiles of the H100 80 GB and a packer for them
    nvlink       NVLink generations, NVSwitch systems, DGX H100 as built, the NVL72 domain
    bench        the timing harness (CPU and CUDA)            } measuring: standard library + torch only,
    device       what we are running on                       } so they run on a bare PyTorch pod
    commbench    the collective benchmark (nccl-tests' table) }
    sizes        message sizes as nccl-tests writes them
    collectives  nccl-tests' bandwidth conventions and the α–β collective models
                 and NCCL's own cost model (x4lib/data/nccl_tuning.yaml): algorithm and protocol per size
    nccl_tuner   NCCL's tuner as data and arithmetic: constants, the graph it searches, each (algorithm, protocol) option
    clusters     two-level cluster presets for the collective models
    links        the link hierarchy (PCIe, NVLink, NVSwitch, InfiniBand, Ethernet, ICI), per direction and both
    topology     fat tree, rail-optimised fat tree, torus and dragonfly as computable objects
    parallelism  bytes and time per step of dp, ZeRO/FSDP, tp, cp, pp and ep on a cluster
    topo         reading a machine: nvidia-smi topo -m, ibstat and ibv_devinfo
    fitting      t(S) = α + β·S fits
    nccl_log     the one reader of nccl-tests / rccl-tests logs
    nccl_rows    one line of such a log parsed strictly (rank, header, result row) and the checks a row can fail
    doctor       "is my number right?": findings with evidence, from this machine or from pasted files
    findings     the doctor's rule book (data/doctor_rules.yaml), findings with evidence, reports
    gpu_state    nvidia-smi -q and lspci -vv read into findings (clocks, power, PCIe link, ECC, MIG, ACS)
    rate_check   is a measured rate right: the expected matmul rate of a shape, checks of a lab's results.json
    published    measurements published by others, and dated rental listings
    runs         lab runs as data (book/runs/<lab>/<run-id>/results.json)
    tables       the book's table helper (no index, units in headers, one format per column)
    plots        the book's figures
    bib          the bibliography's keys
    claims       the check that every number in the prose is glued or cited
    myst_blocks  a MyST page read as prose blocks, roles and code masked (the claims checker's reader)
    nbtools      the jupytext pairs book/*.md ↔ notebooks/*.ipynb
    peaks        peak rates from first principles: units × FLOP per clock × clock, this CPU detected from its flags
    systolic     a cycle-level weight-stationary systolic-array simulator and its cycle formula
    landscape    every accelerator on one basis (dense, per chip, per direction, GB = 1e9 B), price per PFLOP-hour
    choose       rank the catalog's accelerators for a workload and name the constraint that decided
    simt         SIMT on a GPU SM: occupancy, divergent branches, Little's law for bytes in flight
    host         the host's job in a GPU server: input pipeline against GPU rate, PCIe per direction
    facts        sourced values that are not catalog devices (x4lib/data/facts/*.yaml)
    planner      a training-run planner: layouts that fit, step time, MFU, days, cost, energy; checked on published runs
    cli          ``python -m x4lib``: the command line's framework

Page helpers (what one page draws, apart from the models): ``x4lib.pages.<page>`` — ``ch00``, ``ch01``, ``ch02``,
``ch01_memory``, ``ch03``, ``ch04``, ``ch05``, ``capstone``, ``lab00``, ``lab00_model``, ``lab01``, and
``doctor_cases`` (the stored cases the labs show).

Inside x4lib every quantity is in SI base units with the unit in its name (``memory_bw_Bps``,
``peak_flop_per_s``, ``tdp_W``); display units (TFLOP/s, GB/s) appear only in the data files, the command-line
edges and the book's tables. Submodules are imported on first use (``x4.specs`` works after
``import x4lib as x4``), so the measuring modules run where only the standard library and torch are installed.
"""
import importlib

__version__ = "0.2.0"
__all__ = ["bench", "bib", "claims", "cli", "clusters", "collectives", "commbench", "device", "economics", "fitting",
           "kernels", "memory", "nbtools", "nccl_log", "pages", "plots", "published", "roofline", "runs", "sizes",
           "specs", "tables",
           "links", "topology", "parallelism", "topo", "doctor", "formats", "inference", "mig", "nvlink",
           "carbon", "datacenter", "reliability", "runcost", "serving", "storage", "tco",
           "peaks", "systolic", "simt", "host", "facts", "matmul", "mfu", "planner",
           "landscape", "choose", "nccl_tuner", "myst_blocks", "nccl_rows", "findings", "gpu_state", "rate_check"]


def __getattr__(name: str):
    if name in __all__:
        return importlib.import_module(f"x4lib.{name}")
    raise AttributeError(f"module 'x4lib' has no attribute {name!r}")
