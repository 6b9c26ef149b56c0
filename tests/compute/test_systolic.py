"""x4lib.compute.systolic: the weight-stationary simulator against numpy and against cycles counted by hand."""
import json

import jsonschema
import numpy as np
import pytest

from conftest import load_schema, run_cli
from test_cli import check_usage_error
from x4lib.compute import systolic


def test_one_row_through_a_2x2_array_by_hand():
    # weights load in cycles 0-1; a[0,0] enters PE(0,0) at cycle 2 and a[0,1] PE(1,0) at 3;
    # c[0,0] leaves the bottom of column 0 at cycle 3, c[0,1] of column 1 at cycle 4: 5 cycles in all
    a, b = np.array([[1.0, 2.0]]), np.array([[1.0, 2.0], [3.0, 4.0]])
    run = systolic.simulate(a, b, 2, trace=True)
    assert run.cycles == 5 and np.array_equal(run.product, a @ b)
    outs = {f["cycle"]: f["outputs"] for f in run.trace if f["outputs"]}
    assert outs == {3: [(0, 0)], 4: [(0, 1)]}
    assert run.trace[2]["a_row"][0][0] == 0 and run.trace[2]["a_row"][1][0] == -1   # the skew
    assert run.utilisation == pytest.approx(4 / (4 * 5))


def test_three_rows_through_a_4x4_array_by_hand():
    # one tile: load 4, stream 3 rows, fill/drain 4 + 4 - 2: 4 + 3 + 6 = 13 cycles
    rng = np.random.default_rng(1)
    a, b = rng.integers(-3, 4, (3, 4)).astype(float), rng.integers(-3, 4, (4, 4)).astype(float)
    run = systolic.simulate(a, b, 4)
    assert run.cycles == 13 == systolic.cycles_formula(3, 4, 4, 4)
    assert np.array_equal(run.product, a @ b)
    assert run.pe_busy_cycles == 3 * 16       # every PE sees each of the 3 rows once


@pytest.mark.parametrize("rows,cols,m,n,k,overlap", [
    (4, 4, 5, 7, 9, True), (4, 4, 5, 7, 9, False), (3, 5, 2, 11, 4, True), (4, 4, 1, 4, 4, True),
    (8, 8, 30, 17, 25, True), (2, 3, 6, 5, 7, False), (5, 5, 1, 1, 1, True)])
def test_the_simulator_multiplies_correctly_and_obeys_the_formula(rows, cols, m, n, k, overlap):
    rng = np.random.default_rng(m * 100 + n)
    a, b = rng.normal(size=(m, k)), rng.normal(size=(k, n))
    run = systolic.simulate(a, b, rows, cols, overlap)
    assert np.allclose(run.product, a @ b)
    assert run.cycles == systolic.cycles_formula(m, n, k, rows, cols, overlap)
    assert run.tiles == -(-k // rows) * -(-n // cols)


def test_padding_and_fill_lower_utilisation():
    assert systolic.padding_efficiency(128, 128, 128) == 1.0
    assert systolic.padding_efficiency(4096, 80, 128) == pytest.approx(80 / 128)
    big = systolic.formula(4096, 4096, 4096, 128).utilisation
    decode = systolic.formula(8, 4096, 4096, 128).utilisation
    assert big > 0.99 and decode == pytest.approx(8 / 128, rel=0.01)
    assert systolic.formula(8, 4096, 4096, 128, overlap=False).utilisation < decode


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="do not multiply"):
        systolic.simulate(np.ones((2, 3)), np.ones((4, 2)), 2)
    with pytest.raises(ValueError, match="whole number"):
        systolic.cycles_formula(0, 4, 4, 4)


def test_systolic_json_matches_its_contract():
    r = run_cli("systolic", "--array", "4", "--m", "5", "--n", "7", "--k", "9", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, load_schema("systolic_output.schema.json"))
    assert (doc["cycles"], doc["macs"], doc["correct"]) == (40, 315, True)
    assert doc["utilisation"] == pytest.approx(315 / (16 * 40))


@pytest.mark.parametrize("args,needles", [
    (["systolic", "--array", "0", "--m", "2", "--n", "2", "--k", "2"], ["must be >= 1"]),
    (["systolic", "--array", "4", "--m", "2.5", "--n", "2", "--k", "2"], ["not a whole number"]),
    (["systolic", "--array", "4", "--m", "nan", "--n", "2", "--k", "2"], ["not a finite number"]),
    (["systolic", "--array", "512", "--m", "65536", "--n", "7000", "--k", "9000"], ["PE-cycles"]),
    (["systolic", "--array", "4", "--m", "2", "--n", "2"], ["--k"]),
])
def test_bad_systolic_input_exits_2_with_one_line(args, needles):
    check_usage_error(run_cli(*args), *needles)
