"""Interactive explorers (ipywidgets). In JupyterLab they recompute on every change; in the built
book no kernel runs, so each chapter also shows a static table or figure from the same x4lib call.
Used in: book/00-motivation.md.
"""
from __future__ import annotations

from x4lib import economics, specs


def training_explorer():
    """Sliders for the quiz's givens → the estimate table (economics.summary_row)."""
    import ipywidgets as w
    import pandas as pd
    from IPython.display import display

    g = economics.quiz_givens()
    gpu_ids = [d.id for d in specs.load_catalog().values() if "bf16_dense_tflops" in d.values and "tdp_w" in d.values]

    def show(params_b, tokens_t, n_gpus, device, mfu, usd_per_gpu_hour):
        try:
            est = economics.estimate_quiz(params=params_b * 1e9, tokens=tokens_t * 1e12, n_gpus=n_gpus,
                                          device=device, mfu=mfu, usd_per_gpu_hour=usd_per_gpu_hour)
        except ValueError as exc:
            print(f"cannot estimate: {exc}")
            return
        display(pd.DataFrame([economics.summary_row("explorer", est)]).set_index("scenario").T)

    return w.interactive(
        show,
        params_b=w.FloatLogSlider(value=g["params"] / 1e9, base=10, min=0, max=4, description="params (B)"),
        tokens_t=w.FloatLogSlider(value=g["tokens"] / 1e12, base=10, min=-1, max=2, description="tokens (T)"),
        n_gpus=w.IntText(value=g["n_gpus"], description="GPUs"),
        device=w.Dropdown(options=gpu_ids, value=g["device"], description="device"),
        mfu=w.FloatSlider(value=g["mfu"], min=0.05, max=1.0, step=0.05, description="MFU"),
        usd_per_gpu_hour=w.FloatText(value=g["usd_per_gpu_hour"], description="USD/GPU-h"),
    )


def roofline_explorer():
    """Pick a catalog device and dtype → its roofline with the model's prediction for square matmuls."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    from x4lib import lab00, plots
    from x4lib import roofline as rl

    ids = [d.id for d in specs.load_catalog().values() if "memory_bw_gb_s" in d.values and d.dtypes()]

    def show(device, dtype):
        dev = specs.get(device)
        if dtype not in dev.dtypes():
            print(f"{device} has no published {dtype} peak; it has: {', '.join(dev.dtypes())}")
            return
        roof = rl.for_device(dev, dtype)
        fig, ax = plots.new_axes()
        plots.roofline_panel(ax, [roof], [("prediction", f"{dtype} model prediction (n³ sweep)",
                                           lab00.predicted_points(roof))])
        plt.show()

    return w.interactive(show, device=w.Dropdown(options=ids, value="h100-sxm", description="device"),
                         dtype=w.Dropdown(options=list(specs.DTYPE_BYTES), value="bf16", description="dtype"))


def collective_explorer():
    """Pick a cluster preset, a collective and in-network reduction → busbw against size (model)."""
    import ipywidgets as w
    import matplotlib.pyplot as plt

    from x4lib import collectives as coll
    from x4lib import lab01, plots

    def show(cluster, collective, in_network):
        try:
            curve = lab01.model_curve(cluster, collective, in_network=in_network)
        except ValueError as exc:
            print(f"cannot model this: {exc}")
            return
        fig, ax = plots.new_axes()
        plots.busbw_vs_size(ax, [("prediction", f"model: {collective} on {cluster}", curve)])
        plt.show()

    return w.interactive(show, cluster=w.Dropdown(options=coll.cluster_ids(), description="cluster"),
                         collective=w.Dropdown(options=[c for c in coll.COLLECTIVES if c != "sendrecv"],
                                               value="all_reduce", description="collective"),
                         in_network=w.Checkbox(value=False, description="in-network reduction"))
