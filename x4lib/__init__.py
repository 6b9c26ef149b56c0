"""x4lib: the helper package of the X4 book on AI hardware.

Concept modules (the models; one hop from a number on a page to the code that made it):

    specs        the spec catalog (x4lib/data/devices/*.yaml), every value with its source
    kernels      the dtype vocabulary; FLOP and bytes of a matmul and of the STREAM kernels
    roofline     attainable rate = min(peak, intensity × bandwidth)
    matmul       achievable rate of an m×n×k matmul: tiles, waves, sustained clock, per-call overhead, roofline
    mfu          where the peak goes in a training run: the MFU budget, term by term
    economics    time, cost and power of a training run
    memory       bytes of training state
    bench        the timing harness (CPU and CUDA)            } measuring: standard library + torch only,
    device       what we are running on                       } so they run on a bare PyTorch pod
    commbench    the collective benchmark (nccl-tests' table) }
    sizes        message sizes as nccl-tests writes them
    collectives  nccl-tests' bandwidth conventions and the α–β collective models
    clusters     two-level cluster presets for the collective models
    fitting      t(S) = α + β·S fits
    nccl_log     the one reader of nccl-tests / rccl-tests logs
    published    measurements published by others, and dated rental listings
    runs         lab runs as data (book/runs/<lab>/<run-id>/results.json)
    tables       the book's table helper (no index, units in headers, one format per column)
    plots        the book's figures
    bib          the bibliography's keys
    claims       the check that every number in the prose is glued or cited
    nbtools      the jupytext pairs book/*.md ↔ notebooks/*.ipynb
    cli          ``python -m x4lib``: the command line's framework

Page helpers (what one page draws, apart from the models): ``x4lib.pages.ch00``, ``x4lib.pages.lab00``,
``x4lib.pages.lab01``.

Inside x4lib every quantity is in SI base units with the unit in its name (``memory_bw_Bps``,
``peak_flop_per_s``, ``tdp_W``); display units (TFLOP/s, GB/s) appear only in the data files, the command-line
edges and the book's tables. Submodules are imported on first use (``x4.specs`` works after
``import x4lib as x4``), so the measuring modules run where only the standard library and torch are installed.
"""
import importlib

__version__ = "0.2.0"
__all__ = ["bench", "bib", "claims", "cli", "clusters", "collectives", "commbench", "device", "economics", "fitting",
           "kernels", "memory", "nbtools", "nccl_log", "pages", "plots", "published", "roofline", "runs", "sizes",
           "specs", "tables"]
__all__ += ["matmul", "mfu"]  # issue 12: achievable matmul rates and the MFU budget


def __getattr__(name: str):
    if name in __all__:
        return importlib.import_module(f"x4lib.{name}")
    raise AttributeError(f"module 'x4lib' has no attribute {name!r}")
