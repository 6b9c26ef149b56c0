"""x4lib: the helper package of the X4 book on AI hardware, in folders that mirror the book's parts.

    catalog     the devices and their sources: specs, peaks from first principles, number formats, facts, others'
                published measurements, the landscape normaliser and the chooser
    compute     what a chip does: kernels and dtypes, the roofline, achievable matmul rates, systolic and SIMT models,
                MIG, the host's share of a server
    network     how chips talk: links, NVLink, topologies and machine readers, clusters, collectives and NCCL's tuner,
                nccl-tests logs, message sizes, the collective benchmark
    training    a training run: memory, parallelism, the MFU budget, time and cost (6ND), the planner
    serving     serving a model: KV cache, the decode roofline, the cost of a token
    datacenter  around the chips: power chain, TCO, carbon, reliability and checkpoints, storage, a run's whole cost
    doctor      "is my number right?": inputs recognised, the rule book, GPU state, rate checks, the command
    harness     measuring: device detection, the timing harness, fits, lab runs as data
    book        the book's tooling: the claims checker, bibliography, tables, plots, jupytext pairs
    pages       page helpers: what one page draws, apart from the models
    cli         ``python -m x4lib``: the command line's framework (each command lives in its concept module)

``import x4lib as x4`` imports nothing else: ``x4.network.collectives`` imports that module on first use, so the
measuring modules run where only the standard library and torch are installed. Inside x4lib every quantity is in SI
base units with the unit in its name (``memory_bw_Bps``, ``peak_flop_per_s``, ``tdp_W``); display units appear only in
the data files, the command-line edges and the book's tables. Model functions take objects (a catalog ``Device``, a
``Cluster``); ids are resolved once, at the command line and in the page helpers.
"""
from x4lib._lazy import submodules

__version__ = "0.3.0"
__all__ = ["catalog", "compute", "network", "training", "serving", "datacenter", "doctor", "harness", "book",
           "pages", "cli", "paths"]
__getattr__, __dir__ = submodules(__name__, __all__)
