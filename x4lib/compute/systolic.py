"""A cycle-level simulator of a weight-stationary systolic array, and the cycle formula it obeys.

C[m, n] = A[m, k] · B[k, n] on an array of R × C processing elements (PEs). Each PE does one multiply-add per
clock. Weight-stationary dataflow (TPU MXU, Trainium's Tensor Engine, Gaudi's MME work this way):

- B is cut into tiles of R × C (k rows by n columns, zero-padded at the edges); a tile is loaded into the
  array, PE(i, j) holding B[i, j] (a weight load takes R cycles, one row per cycle);
- the m rows of A stream in from the left: element A[r, i] enters array row i at cycle s + r + i (the skew lets
  each partial sum meet its operands), and moves one PE to the right per cycle;
- partial sums move one PE down per cycle; PE(i, j) adds A[r, i] · B[i, j] to the sum coming from above; the
  sum for C[r, j] leaves the bottom of column j at cycle s + r + (R − 1) + j, and is accumulated over the
  k-tiles outside the array (TPU accumulators, Trainium PSUM).

One tile therefore takes m + R + C − 2 cycles from its first input to its last output: m cycles of streaming
plus R + C − 2 cycles of fill and drain. With T = ⌈k/R⌉ · ⌈n/C⌉ tiles,

    one tile at a time (no overlap):         cycles = T · (R + m + R + C − 2)
    weights double-buffered (overlap=True):  cycles = R + (T − 1) · max(m, R) + m + R + C − 2

(with overlap, the next tile's weights load while the current tile streams, so a tile can start every
max(m, R) cycles; the simulator lets each PE keep the weights of every tile still in flight, an idealisation).
Utilisation U = m·n·k / (R · C · cycles): fill/drain, weight loads and the zero padding of shapes that are not
multiples of R and C all lower it.

Used in: book/01-cpu-vs-gpu-vs-tpu-vs-trn1.md; ``python -m x4lib systolic``.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

#: the longest simulation the command line runs, estimated on one idle core from the cost of a simulated cycle
#: (numpy calls whatever the array's size) and of a PE-cycle; a 1 × 1 array of 200³ is 8 million cycles
MAX_SIM_SECONDS = 60
SECONDS_PER_CYCLE = 40e-6
SECONDS_PER_PE_CYCLE = 0.15e-6
MAX_PE_CYCLES = MAX_SIM_SECONDS / SECONDS_PER_PE_CYCLE


def estimated_seconds(rows: int, cols: int, m: int, n: int, k: int, overlap: bool = True) -> float:
    """About how long :func:`simulate` takes on one idle core: cycles × a per-cycle cost + PE-cycles × a per-PE
    cost (the guard of :func:`random_check`, which keeps the command line bounded)."""
    cycles = cycles_formula(m, n, k, rows, cols, overlap)
    return cycles * SECONDS_PER_CYCLE + rows * cols * cycles * SECONDS_PER_PE_CYCLE


@dataclasses.dataclass(frozen=True)
class SystolicRun:
    """What a simulation (or the formula) gives for one product."""
    rows: int
    cols: int
    m: int
    n: int
    k: int
    overlap: bool
    cycles: int
    tiles: int
    macs: int                 # useful multiply-adds, m·n·k
    pe_busy_cycles: int       # PE-cycles holding data, padding included (0 when from the formula)
    product: np.ndarray | None = dataclasses.field(default=None, repr=False, compare=False)
    trace: tuple = dataclasses.field(default=(), repr=False, compare=False)

    @property
    def utilisation(self) -> float:
        """U = m·n·k / (R · C · cycles)."""
        return self.macs / (self.rows * self.cols * self.cycles)

    @property
    def padding_efficiency(self) -> float:
        return padding_efficiency(self.n, self.k, self.rows, self.cols)


def _check(rows: int, cols: int, m: int, n: int, k: int) -> None:
    for name, v in (("rows", rows), ("cols", cols), ("m", m), ("n", n), ("k", k)):
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {v}")


def tile_count(n: int, k: int, rows: int, cols: int) -> int:
    """T = ⌈k / R⌉ · ⌈n / C⌉ weight tiles."""
    _check(rows, cols, 1, n, k)
    return math.ceil(k / rows) * math.ceil(n / cols)


def stream_starts(m: int, tiles: int, rows: int, cols: int, overlap: bool = True) -> list[int]:
    """The cycle at which each tile's first row of A enters the array (see the module docstring)."""
    starts: list[int] = []
    for t in range(tiles):
        if t == 0:
            starts.append(rows)                                        # the first weight load
        elif overlap:
            starts.append(starts[-1] + max(m, rows))                   # next load hidden behind streaming
        else:
            starts.append(starts[-1] + (m + rows + cols - 2) + rows)   # drain, then load, then stream
    return starts


def cycles_formula(m: int, n: int, k: int, rows: int, cols: int = None, overlap: bool = True) -> int:
    """Cycles from the first weight load to the last output (module docstring). ``cols`` defaults to ``rows``."""
    cols = rows if cols is None else cols
    _check(rows, cols, m, n, k)
    tiles = tile_count(n, k, rows, cols)
    stream = m + rows + cols - 2
    if overlap:
        return rows + (tiles - 1) * max(m, rows) + stream
    return tiles * (rows + stream)


def padding_efficiency(n: int, k: int, rows: int, cols: int = None) -> float:
    """(k · n) / (⌈k/R⌉R · ⌈n/C⌉C): the fraction of loaded weights that are not zero padding."""
    cols = rows if cols is None else cols
    _check(rows, cols, 1, n, k)
    return (k * n) / (math.ceil(k / rows) * rows * math.ceil(n / cols) * cols)


def formula(m: int, n: int, k: int, rows: int, cols: int = None, overlap: bool = True) -> SystolicRun:
    """The cycle formula as a :class:`SystolicRun` (no product, no PE count): for arrays too large to simulate."""
    cols = rows if cols is None else cols
    return SystolicRun(rows, cols, m, n, k, overlap, cycles_formula(m, n, k, rows, cols, overlap),
                       tile_count(n, k, rows, cols), m * n * k, 0)


def simulate(a: np.ndarray, b: np.ndarray, rows: int, cols: int = None, overlap: bool = True,
             trace: bool = False) -> SystolicRun:
    """Run C = A · B cycle by cycle on an R × C weight-stationary array.

    Every cycle: activations move one PE right (column 0 takes the skewed input), partial sums one PE down,
    each PE holding data adds its activation times its weight to the sum from above, and the bottom row's sums
    leave the array into the output accumulators. ``trace=True`` records, per cycle, which A element (row of
    A, or -1) sits in each PE and which outputs left: the 4 × 4 drawing of the chapter."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"shapes do not multiply: A {a.shape} · B {b.shape}")
    cols = rows if cols is None else cols
    m, k = a.shape
    n = b.shape[1]
    _check(rows, cols, m, n, k)
    kt, nt = math.ceil(k / rows), math.ceil(n / cols)
    ap = np.zeros((m, kt * rows))
    ap[:, :k] = a
    bp = np.zeros((kt * rows, nt * cols))
    bp[:k, :n] = b
    order = [(ti, tj) for tj in range(nt) for ti in range(kt)]       # accumulate over k, then next columns
    weights = np.stack([bp[ti * rows:(ti + 1) * rows, tj * cols:(tj + 1) * cols] for ti, tj in order])
    starts = np.array(stream_starts(m, len(order), rows, cols, overlap))
    horizon = int(starts[-1] + m + 2 * (rows + cols))     # a bound: the loop stops at the last output
    expected_outputs = len(order) * m * cols
    outputs, last_output = 0, -1
    kidx = np.array([ti for ti, _ in order])
    out = np.zeros((m, nt * cols))
    act = np.zeros((rows, cols))
    tag = np.full((rows, cols), -1)           # which tile the data in each PE belongs to (-1: empty)
    arow = np.full((rows, cols), -1)          # which row of A
    psum = np.zeros((rows, cols))
    ii = np.arange(rows)[:, None] * np.ones((1, cols), dtype=int)
    jj = np.ones((rows, 1), dtype=int) * np.arange(cols)[None, :]
    busy = 0
    frames = []
    for cyc in range(horizon):
        # inputs of this cycle: row i takes A[r, ti*R + i] of the tile t with s_t <= cyc - i < s_t + m
        t_in = np.searchsorted(starts, cyc - np.arange(rows), side="right") - 1
        r_in = cyc - np.arange(rows) - starts[np.clip(t_in, 0, None)]
        live = (t_in >= 0) & (r_in >= 0) & (r_in < m)
        x_in = np.zeros(rows)
        if live.any():
            ti_in = np.array([order[t][0] for t in np.where(live, t_in, 0)])
            x_in[live] = ap[r_in[live], ti_in[live] * rows + np.arange(rows)[live]]
        act = np.concatenate([x_in[:, None], act[:, :-1]], axis=1)
        tag = np.concatenate([np.where(live, t_in, -1)[:, None], tag[:, :-1]], axis=1)
        arow = np.concatenate([np.where(live, r_in, -1)[:, None], arow[:, :-1]], axis=1)
        valid = tag >= 0
        w = weights[np.clip(tag, 0, None), ii, jj]
        above = np.vstack([np.zeros((1, cols)), psum[:-1, :]])
        psum = np.where(valid, above + act * w, 0.0)
        busy += int(valid.sum())
        leaving = np.where(valid[-1])[0]
        for j in leaving:
            tj = order[tag[-1, j]][1]
            out[arow[-1, j], tj * cols + j] += psum[-1, j]
        if len(leaving):
            outputs += len(leaving)
            last_output = cyc
        if trace:
            frames.append({"cycle": cyc, "a_row": arow.copy(), "tile": tag.copy(),
                           "k_index": np.where(valid, kidx[np.clip(tag, 0, None)] * rows + ii, -1),
                           "outputs": [(int(arow[-1, j]), int(order[tag[-1, j]][1] * cols + j)) for j in leaving]})
        if outputs == expected_outputs:
            break
    return SystolicRun(rows, cols, m, n, k, overlap, last_output + 1, len(order), m * n * k, busy,
                       product=out[:, :n], trace=tuple(frames))


def random_check(rows: int, m: int, n: int, k: int, cols: int = None, overlap: bool = True,
                 seed: int = 0) -> tuple[SystolicRun, bool]:
    """Simulate A · B for seeded random integer matrices (exact in float64) and compare with numpy's A @ B."""
    cols = rows if cols is None else cols
    _check(rows, cols, m, n, k)
    est = estimated_seconds(rows, cols, m, n, k, overlap)
    if est > MAX_SIM_SECONDS:
        cycles = cycles_formula(m, n, k, rows, cols, overlap)
        raise ValueError(f"{rows}x{cols} array, {m}x{n}x{k}: {cycles:,} cycles ({rows * cols * cycles:.2g} PE-cycles) "
                         f"would take about {est:,.0f} s to simulate here (limit {MAX_SIM_SECONDS} s); use a smaller "
                         f"shape, a larger array, or the formula (x4lib.compute.systolic.formula)")
    rng = np.random.default_rng(seed)
    a = rng.integers(-3, 4, size=(m, k)).astype(float)
    b = rng.integers(-3, 4, size=(k, n)).astype(float)
    run = simulate(a, b, rows, cols, overlap)
    return run, bool(np.array_equal(run.product, a @ b))


# ----------------------------------------------------------------- command line: python -m x4lib systolic

def cli_arguments(p) -> None:
    from x4lib import cli
    p.add_argument("--array", required=True, type=cli.number("array rows", 1, 512, integer=True),
                   help="rows R of the array (processing elements; --cols defaults to the same)")
    p.add_argument("--cols", type=cli.number("array columns", 1, 512, integer=True),
                   help="columns C of the array (default: R)")
    p.add_argument("--m", required=True, type=cli.number("rows of A (m)", 1, 65536, integer=True))
    p.add_argument("--n", required=True, type=cli.number("columns of B (n)", 1, 65536, integer=True))
    p.add_argument("--k", required=True, type=cli.number("inner dimension (k)", 1, 65536, integer=True))
    p.add_argument("--no-overlap", action="store_true",
                   help="load each tile's weights only after the previous tile has drained")
    p.add_argument("--seed", type=cli.number("seed", 0, 2**31, integer=True), default=0)
    p.add_argument("--json", action="store_true",
                   help="machine-readable output (schemas/systolic_output.schema.json)")


def cli_main(args) -> int:
    from x4lib import cli
    overlap = not args.no_overlap
    cols = args.cols or args.array
    run, ok = random_check(args.array, args.m, args.n, args.k, cols, overlap, args.seed)
    expected = cycles_formula(args.m, args.n, args.k, args.array, cols, overlap)
    doc = {"cycles": run.cycles, "macs": run.macs, "utilisation": run.utilisation, "correct": ok,
           "rows": run.rows, "cols": run.cols, "m": run.m, "n": run.n, "k": run.k, "tiles": run.tiles,
           "overlap": overlap, "formula_cycles": expected, "padding_efficiency": run.padding_efficiency,
           "pe_busy_cycles": run.pe_busy_cycles}
    text = (f"{run.rows} x {run.cols} weight-stationary array, C[{run.m}x{run.n}] = A[{run.m}x{run.k}] · "
            f"B[{run.k}x{run.n}], {run.tiles} weight tile(s), weights {'double-buffered' if overlap else 'loaded one tile at a time'}\n"
            f"  cycles: {run.cycles:,} (formula: {expected:,})\n"
            f"  useful MACs: {run.macs:,}; utilisation {100 * run.utilisation:.1f} % "
            f"(padding keeps {100 * run.padding_efficiency:.1f} % of the loaded weights useful)\n"
            f"  product equals numpy's A @ B: {'yes' if ok else 'NO'}")
    cli.emit(doc, text, as_json=args.json)
    if not ok or run.cycles != expected:
        raise cli.CheckFailed("the simulated product or cycle count disagrees with numpy / the formula")
    return 0
