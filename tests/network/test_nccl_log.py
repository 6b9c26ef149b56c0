"""x4lib.network.nccl_log on real public nccl-tests / rccl-tests logs (tests/data/README.md) and on our broken ones."""
import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from conftest import load_schema
from x4lib.network import nccl_log, nccl_rows
from x4lib.network.nccl_tests import busbw_factor

DATA = Path(__file__).parents[1] / "data" / "nccl"
BROKEN = DATA / "broken"
SHORTENED = DATA / "shortened"
A3MEGA = DATA / "nccl-tests_h100-80gb-x16_2node_all_reduce_a3mega.log"
MI300X_8 = DATA / "rccl-tests_mi300x-x8_1node_all_reduce_hisohara.log"

# file: (tool, format, collective, n_ranks, nhosts, printed avg busbw in GB/s, rows, [what each warning says])
NO_LIST, SRUN, BARE, CUT = "no rank list", "launcher's prefix", "no leading '#'", "without the '# Avg bus bandwidth'"
REAL = {
    "nccl-tests-old_a100-sxm4-40gb-x8_all_gather_superbench.log": ("nccl-tests", "old", "all_gather", 8, 1, 58.2651, 34, []),
    "nccl-tests-old_a100-sxm4-40gb-x8_all_reduce_superbench.log": ("nccl-tests", "old", "all_reduce", 8, 1, 68.4048, 34, []),
    "nccl-tests-old_a100-sxm4-40gb-x8_alltoall_superbench.log": ("nccl-tests", "old", "all_to_all", 8, 1, 58.6481, 34, []),
    "nccl-tests-old_a100-sxm4-40gb-x8_broadcast_superbench.log": ("nccl-tests", "old", "broadcast", 8, 1, 64.8653, 34, []),
    "nccl-tests-old_a100-sxm4-40gb-x8_reduce_superbench.log": ("nccl-tests", "old", "reduce", 8, 1, 65.018, 34, []),
    "nccl-tests-old_a100-x16_2node_all_reduce_deepops-k8s.log": ("nccl-tests", "old", "all_reduce", 16, None, 53.7098, 30, [NO_LIST]),
    "nccl-tests-old_a100-x32_4node_all_reduce_deepops-slurm.log": ("nccl-tests", "old", "all_reduce", 32, None, 113.289, 13, [NO_LIST]),
    "nccl-tests_a100-x16_2node_all_reduce_awsome-p4de.log": ("nccl-tests", "current", "all_reduce", 16, None, None, 29, [CUT, SRUN, NO_LIST]),
    "nccl-tests_b200-x16_2node_all_reduce_dstack-gcp-a4.log": ("nccl-tests", "current", "all_reduce", 16, None, 165.789, 11, [BARE, NO_LIST, "rows were cut"]),
    "nccl-tests_b200-x16_2node_all_reduce_dstack-lambda.log": ("nccl-tests", "current", "all_reduce", 16, None, 137.179, 29, [BARE, NO_LIST]),
    "nccl-tests_h100-80gb-x16_2node_all_reduce_a3mega.log": ("nccl-tests", "current", "all_reduce", 16, 2, 70.742, 31, []),
    "nccl-tests_h100-80gb-x16_2node_all_reduce_nccltests290-ring.log": ("nccl-tests", "current", "all_reduce", 16, 2, 85.5294, 11, [SRUN]),
    "nccl-tests_h100-80gb-x16_2node_all_reduce_nccltests290.log": ("nccl-tests", "current", "all_reduce", 16, 2, 142.735, 11, [SRUN]),
    "nccl-tests_h100-80gb-x16_2node_all_reduce_nccltests309-gjaion-ring.log": ("nccl-tests", "current", "all_reduce", 16, 2, 248.186, 14, []),
    "nccl-tests_h100-80gb-x16_2node_all_reduce_nccltests309-gjaion.log": ("nccl-tests", "current", "all_reduce", 16, 2, 276.999, 14, []),
    "nccl-tests_h100-80gb-x16_2node_all_reduce_nccltests309-qoofyk.log": ("nccl-tests", "current", "all_reduce", 16, 2, 139.56, 32, []),
    "nccl-tests_h100-80gb-x16_2node_all_reduce_ocitutorials.log": ("nccl-tests", "current", "all_reduce", 16, 2, 458.452, 5, []),
    "nccl-tests_h100-80gb-x32_4node_all_reduce_nccltests309-gjaion.log": ("nccl-tests", "current", "all_reduce", 32, 4, 191.212, 14, []),
    "nccl-tests_h100-80gb-x64_8node_all_reduce_nccltests309-gjaion-minctas24.log": ("nccl-tests", "current", "all_reduce", 64, 8, 192.573, 14, []),
    "nccl-tests_h100-80gb-x64_8node_all_reduce_nccltests309-gjaion.log": ("nccl-tests", "current", "all_reduce", 64, 8, 183.055, 14, []),
    "nccl-tests_h100-80gb-x8_1node_all_reduce_nccltests290.log": ("nccl-tests", "current", "all_reduce", 8, 1, 439.369, 6, []),
    "nccl-tests_a100-sxm4-40gb-x8_1node_all_reduce_ocitutorials-jp.log": ("nccl-tests", "current", "all_reduce", 8, 1, 81.112, 28, []),
    "nccl-tests_h100-80gb-x8_1node_all_reduce_dgxc.log": ("nccl-tests", "current", "all_reduce", 8, 1, 159.151, 32, []),
    "nccl-tests_h100-x8_1node_all_reduce_awsome-p5-batch.log": ("nccl-tests", "current", "all_reduce", 8, None, 156.742, 32, [SRUN, NO_LIST]),
    "nccl-tests_h100-x16_2node_all_reduce_awsome-p5-eks.log": ("nccl-tests", "current", "all_reduce", 16, None, 52.9753, 7, [SRUN, NO_LIST, "rows were left out"]),
    "nccl-tests_h100-x16_2node_all_reduce_awsome-p5.log": ("nccl-tests", "current", "all_reduce", 16, None, None, 32, [CUT, SRUN, NO_LIST]),
    "rccl-tests_mi300x-x16_2node_all_reduce_hisohara.log": ("rccl-tests", "current", "all_reduce", 16, 2, 92.3318, 32, []),
    "rccl-tests_mi300x-x8_1node_all_reduce_hisohara.log": ("rccl-tests", "current", "all_reduce", 8, 1, 110.464, 31, []),
    "rccl-tests_mi300x-x8_1node_all_reduce_rocmblogs.log": ("rccl-tests", "current", "all_reduce", 8, 1, 116.669, 32, []),
}


def cli(*args):
    return subprocess.run([sys.executable, "-m", "x4lib", "nccl-parse", *map(str, args)],
                          capture_output=True, text=True, cwd="/", timeout=60)


def strict_json(text: str):
    """json.loads that fails on NaN / Infinity (not JSON, though Python's json writes them by default)."""
    def refuse(constant):
        raise AssertionError(f"{constant} in --json output")
    return json.loads(text, parse_constant=refuse)


def test_every_stored_log_is_listed_with_its_provenance():
    stored = {p.name for p in DATA.glob("*.log")}
    assert stored == set(REAL)
    readme = (DATA.parent / "README.md").read_text()
    for name in stored | {p.name for p in BROKEN.iterdir()} | {p.name for p in SHORTENED.iterdir()}:
        assert f"`{name}`" in readme, f"{name} has no provenance line in tests/data/README.md"


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_log_reads_and_checks(name):
    tool, fmt, coll, n_ranks, nhosts, avg, nrows, warned = REAL[name]
    log = nccl_log.read_path(DATA / name)
    assert (log.tool, log.format, log.collective, log.n_ranks, log.nhosts) == (tool, fmt, coll, n_ranks, nhosts)
    assert len(log.rows) == nrows
    assert log.checks_ok, log.warnings
    assert len(log.warnings) == len(warned) and all(w in got for w, got in zip(warned, log.warnings)), log.warnings
    assert log.avg_busbw_gb_s == avg
    if avg is not None and not any("rows" in w for w in warned):
        # nccl-tests averages every out-of-place and in-place busbw; printed values are rounded to 0.01 GB/s
        assert log.rows_avg_busbw_gb_s == pytest.approx(avg, abs=0.006)
    assert all(r.out_of_place and r.in_place for r in log.rows)


def test_launcher_prefixes_are_read_away():
    # Slurm's srun --label ("0: ") on every line of the NVIDIA/nccl-tests#290 ring log
    log = nccl_log.read_path(DATA / "nccl-tests_h100-80gb-x16_2node_all_reduce_nccltests290-ring.log")
    assert log.n_ranks == 16 and log.nhosts == 2 and log.rows[0].size_B == 8 * 2**20
    assert log.rows[-1].out_of_place.busbw_gb_s == 89.90
    # Open MPI's --tag-output ("[1,0]<stdout>:") with a '...' line standing for the rows cut from 0 B to 64 MiB
    eks = nccl_log.read_path(DATA / "nccl-tests_h100-x16_2node_all_reduce_awsome-p5-eks.log")
    assert [r.size_B for r in eks.rows][:2] == [0, 64 * 2**20] and eks.checks_ok
    assert any("left out" in w and "not checked" in w for w in eks.warnings)


def test_a_prefix_does_not_hide_a_bad_row(tmp_path):
    text = (DATA / "nccl-tests_h100-80gb-x16_2node_all_reduce_nccltests290-ring.log").read_text()
    bad = text.replace("  99.88    N/A", "  79.88    N/A", 1)
    assert bad != text
    (tmp_path / "bad.log").write_text(bad)
    log = nccl_log.read_path(tmp_path / "bad.log")
    assert not log.checks_ok and any("busbw 79.88" in w for w in log.warnings)


def test_a_header_without_its_hash_marks_is_read_and_a_cut_sweep_is_named():
    # dstack's documentation shows terminal output with the leading '#' stripped; the A4 table also lost its
    # rows below 8 MiB, so the printed average (over all of them) cannot be checked against the rows shown
    log = nccl_log.read_path(DATA / "nccl-tests_b200-x16_2node_all_reduce_dstack-gcp-a4.log")
    assert log.checks_ok and log.n_ranks == 16 and log.rows[0].size_B == 8 * 2**20
    assert any("20 more sizes" in w for w in log.warnings)
    full = nccl_log.read_path(DATA / "nccl-tests_b200-x16_2node_all_reduce_dstack-lambda.log")
    assert full.checks_ok and not any("sweep" in w for w in full.warnings)  # 8 B to 2 GiB: nothing missing


def test_in_place_and_out_of_place_are_read_apart():
    log = nccl_log.read_path(DATA / "nccl-tests_h100-80gb-x16_2node_all_reduce_a3mega.log")
    last = log.rows[-1]
    assert (last.size_B, last.count, last.type, last.redop, last.root) == (8589934592, 2147483648, "float", "sum", -1)
    assert (last.out_of_place.time_us, last.out_of_place.algbw_gb_s, last.out_of_place.busbw_gb_s) == (47535, 180.71, 338.82)
    assert (last.in_place.time_us, last.in_place.algbw_gb_s, last.in_place.busbw_gb_s) == (47743, 179.92, 337.35)
    assert last.in_place.busbw_gb_s == pytest.approx(last.in_place.algbw_gb_s * busbw_factor("all_reduce", 16), abs=0.01)


def test_old_format_columns():
    bcast = nccl_log.read_path(DATA / "nccl-tests-old_a100-sxm4-40gb-x8_broadcast_superbench.log")
    assert bcast.rows[-1].root == 0 and bcast.rows[-1].redop is None
    # -c 0: the old 'error' column reads N/A, which is neither a count nor a deviation
    assert (bcast.rows[-1].in_place.wrong, bcast.rows[-1].in_place.max_error) == (None, None)
    a2a = nccl_log.read_path(DATA / "nccl-tests-old_a100-sxm4-40gb-x8_alltoall_superbench.log")
    assert a2a.rows[-1].redop is None and a2a.rows[-1].size_B == 8 * 4 * a2a.rows[-1].count


@pytest.mark.parametrize("name", sorted(REAL))
def test_cli_json_meets_its_schema(name):
    r = cli(DATA / name, "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    jsonschema.validate(data, load_schema("nccl_parse_output.schema.json"))
    assert data["method_version"] == nccl_log.METHOD_VERSION
    assert data["convention"] == "nccl-tests: algbw = size/time, busbw = algbw × factor; GB/s = 1e9 B/s"
    assert data["nranks"] == REAL[name][3] and data["avg_busbw_gb_s"] == REAL[name][5]


def test_cli_csv_has_a_header_and_one_line_per_row_and_placement():
    r = cli(DATA / "rccl-tests_mi300x-x8_1node_all_reduce_hisohara.log", "--csv")
    assert r.returncode == 0, r.stderr
    rows = list(csv.reader(io.StringIO(r.stdout)))
    assert rows[0] == list(nccl_log.CSV_FIELDS)
    assert len(rows) == 1 + 2 * 31
    assert {row[6] for row in rows[1:]} == {"out_of_place", "in_place"}


def test_truncated_log_is_read_as_far_as_complete():
    r = cli(BROKEN / "truncated_mid_table.log", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    jsonschema.validate(data, load_schema("nccl_parse_output.schema.json"))
    assert len(data["rows"]) == 22 and data["rows"][-1]["line"] == 53
    assert data["avg_busbw_gb_s"] is None
    assert any(w.startswith("line 54: incomplete result line") for w in data["warnings"])
    assert any("without the '# Avg bus bandwidth' footer" in w for w in data["warnings"])


def test_inconsistent_row_is_named_and_fails():
    r = cli(BROKEN / "inconsistent_busbw.log", "--json")
    assert r.returncode == 1
    data = json.loads(r.stdout)
    jsonschema.validate(data, load_schema("nccl_parse_output.schema.json"))
    assert not data["checks_ok"]
    assert any(w.startswith("line 43: out_of_place busbw 239.50") for w in data["warnings"])
    assert any(w.startswith("line 52: printed Avg bus bandwidth") for w in data["warnings"])


def test_average_mismatch_fails():
    log = nccl_log.read_path(BROKEN / "avg_mismatch.log")
    assert not log.checks_ok
    assert [w[:8] for w in log.warnings] == ["line 52:"]


def test_wrong_collective_override_fails_the_busbw_check():
    r = cli(DATA / "nccl-tests_h100-80gb-x16_2node_all_reduce_a3mega.log", "--collective", "all_gather", "--json")
    assert r.returncode == 1
    assert json.loads(r.stdout)["collective_from"] == "user"


@pytest.mark.parametrize("path,code,needle", [
    (BROKEN / "not_nccl.txt", 2, "not_nccl.txt:1: not an nccl-tests/rccl-tests log"),
    (BROKEN / "empty_table.log", 2, "empty_table.log:33: empty results table"),
    (BROKEN / "truncated_before_rows.log", 1, "truncated_before_rows.log:31: truncated before the first"),
    (BROKEN / "does-not-exist.log", 2, "does-not-exist.log: no such file"),
    (BROKEN, 2, "is a directory"),
])
def test_bad_input_gives_one_error_line_and_its_exit_code(path, code, needle):
    r = cli(path, "--json")
    assert r.returncode == code
    assert r.stdout == "" and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert "error:" in lines[-1] and needle in lines[-1], r.stderr


def test_usage_error_exits_2():
    r = cli(DATA / "rccl-tests_mi300x-x8_1node_all_reduce_hisohara.log", "--json", "--csv")
    assert r.returncode == 2 and "usage:" in r.stderr and "Traceback" not in r.stderr


def test_collective_from_columns_when_the_log_does_not_name_it():
    text = (DATA / "nccl-tests_h100-80gb-x16_2node_all_reduce_a3mega.log").read_text()
    # drop the echoed command: the columns (redop sum, root -1, size = count × 4) say AllReduce
    log = nccl_log.read_log("\n".join(ln for ln in text.splitlines() if "_perf" not in ln))
    assert (log.collective, log.collective_from, log.checks_ok) == ("all_reduce", "columns", True)


def test_current_format_all_gather_and_all_to_all_cannot_be_told_apart():
    header = ("#  Rank  0 Group  0 Pid 1 on h device  0 [0x01] GPU\n#  Rank  1 Group  0 Pid 1 on h device  1 [0x02] GPU\n"
              "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
              "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n")
    row = "     1048576        131072     float    none      -1    20.00   52.43   26.21      0    20.00   52.43   26.21      0\n"
    log = nccl_log.read_log(header + row + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 26.21\n")
    assert log.collective is None and log.checks_ok  # both have F = (n-1)/n, so busbw is still checked
    assert any("pass --collective" in w for w in log.warnings)


def test_half_ulp_follows_the_printed_digits():
    assert nccl_rows.half_ulp("12.34") == pytest.approx(0.005)
    assert nccl_rows.half_ulp("47535") == pytest.approx(0.5)
    assert nccl_rows.half_ulp("1.2e+04") == pytest.approx(500)


def test_per_iteration_columns_and_collective_test_starting_line():
    h = ("#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max"
         "    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%\n")
    row = ("     1048576        262144     float     sum      -1    20.00   52.43   91.75       0    19.00    21.00"
           "    21.00     1.20    20.00   52.43   91.75       0    19.00    21.00    21.00     1.20\n")
    ranks = "".join(f"#  Rank {i:2d} Group  0 Pid 1 on {'ab'[i // 4]} device {i % 4:2d} [0x0{i}] G\n" for i in range(8))
    log = nccl_log.read_log("# Collective test starting: all_reduce_perf\n" + ranks + h + row
                            + "# Avg bus bandwidth    : 91.75\n")
    assert (log.collective, log.n_ranks, log.nhosts, log.checks_ok) == ("all_reduce", 8, 2, True)
    assert log.rows[0].in_place.busbw_gb_s == 91.75


# ---------------------------------------------------------------- ranks

def test_rank_lines_are_exposed_as_printed():
    log = nccl_log.read_path(A3MEGA)
    assert [r.rank for r in log.ranks] == list(range(16))
    assert log.ranks[8] == nccl_rows.Rank(line=20, rank=8, group=0, pid=6733, host="ztan-mig-gq73", device=0,
                                         bus_id="0000:04:00", name="NVIDIA H100 80GB HBM3")
    old = nccl_log.read_path(DATA / "nccl-tests-old_a100-sxm4-40gb-x8_reduce_superbench.log")
    assert (old.ranks[7].group, old.ranks[7].pid, old.ranks[7].bus_id, old.ranks[7].name) == \
        (None, 112476, "0x00", "A100-SXM4-40GB")
    rccl = nccl_log.read_path(DATA / "rccl-tests_mi300x-x16_2node_all_reduce_hisohara.log")
    assert {r.host for r in rccl.ranks} == {"gpu-53", "gpu-56"} and rccl.nhosts == 2
    assert (rccl.ranks[15].device, rccl.ranks[15].bus_id) == (7, "0000:e5:00.0")
    data = nccl_log.to_json(rccl)
    assert data["ranks"][9] == {"line": 19, "rank": 9, "group": None, "pid": 366642, "host": "gpu-56", "device": 1,
                                "bus_id": "0000:25:00.0", "name": "AMD Instinct MI300X"}


def test_rank_line_without_pid_and_split_groups():
    """NCCL_TESTS_SPLIT: the list shows every rank, busbw uses the ranks of rank 0's group (nccl-tests
    src/common.cu: args.nProcs is the size of the split communicator)."""
    text = MI300X_8.read_text()  # 8 ranks, busbw = algbw × 2·7/8
    lines = text.splitlines()
    ranks = [ln for ln in lines if "Rank" in ln and "Group" in ln]
    more = [re.sub(r"Rank  (\d) Group  0", lambda m: f"Rank {int(m[1]) + 8:2d} Group  1", ln) for ln in ranks]
    at = lines.index(ranks[-1]) + 1
    log = nccl_log.read_log("\n".join(lines[:at] + more + lines[at:]))
    assert (len(log.ranks), log.n_ranks, log.checks_ok) == (16, 8, True)
    assert any("split into 2 groups" in w for w in log.warnings)
    no_pid = nccl_rows.parse_rank("#  Rank  3 on node7 device  3 [0x1a] Tesla V100-SXM2-32GB", 1)
    assert (no_pid.rank, no_pid.pid, no_pid.host, no_pid.device, no_pid.name) == (3, None, "node7", 3,
                                                                                  "Tesla V100-SXM2-32GB")


# ---------------------------------------------------------------- shortened rank lists (issue 11 §4)

@pytest.mark.parametrize("name,n_ranks,shown,needle", [
    ("h100-x16_all_reduce_ellipsis.log", 16, 8, "line 16 stands for left-out lines"),
    ("h100-x16_all_reduce_first8.log", 16, 8, "the rank list shows 8 ranks but busbw/algbw of the rows needs more"),
    ("mi300x-x16_all_reduce_gap.log", 16, 6, "ranks 3-12 missing"),
    ("mi300x-x8_all_reduce_first2.log", 8, 2, "the rank list shows 2 ranks but busbw/algbw"),
    ("a100-x8_all_gather_ellipsis.log", 8, 2, "line 6 stands for left-out lines"),
])
def test_shortened_rank_list_infers_the_count_from_busbw(name, n_ranks, shown, needle):
    r = cli(SHORTENED / name, "--json")
    assert r.returncode == 0, r.stderr
    data = strict_json(r.stdout)
    jsonschema.validate(data, load_schema("nccl_parse_output.schema.json"))
    assert (data["nranks"], len(data["ranks"]), data["nhosts"], data["checks_ok"]) == (n_ranks, shown, None, True)
    [warning] = data["warnings"]
    assert needle in warning and f"inferred from busbw/algbw: {n_ranks}" in warning


def test_infer_nranks_on_every_real_log():
    for name, (_, _, coll, n_ranks, *_rest) in REAL.items():
        log = nccl_log.read_path(DATA / name)
        fits = nccl_log.consistent_nranks(coll, log.rows)
        assert n_ranks in fits
        # F = 1 for Broadcast and Reduce whatever n is: busbw/algbw cannot tell n
        assert nccl_log.infer_nranks(coll, log.rows) == (None if coll in ("broadcast", "reduce") else n_ranks)


def test_shortened_list_of_a_broadcast_keeps_checking_busbw():
    text = (DATA / "nccl-tests-old_a100-sxm4-40gb-x8_broadcast_superbench.log").read_text()
    cut = "\n".join(ln for ln in text.splitlines() if not re.match(r"#\s+Rank\s+[2-7]\b", ln))
    log = nccl_log.read_log(cut.replace("#   Rank  1 ", "#   ...\n#   Rank  1 ", 1))
    assert log.n_ranks is None and log.checks_ok
    assert "unknown (busbw/algbw fits any of 2 to" in log.warnings[0]
    bad = nccl_log.read_log(cut.replace("    97.20   86.30   86.30", "    97.20   86.30   96.30"))
    assert not bad.checks_ok and any("busbw 96.30 GB/s != algbw × 1" in w for w in bad.warnings)


def test_shortened_list_still_names_an_inconsistent_row():
    text = (SHORTENED / "mi300x-x8_all_reduce_first2.log").read_text()
    log = nccl_log.read_log(text.replace("   -1    84.78   98.95  173.16", "   -1    84.78   98.95  183.16"))
    assert log.n_ranks == 8 and not log.checks_ok  # the largest row tells n when one row disagrees
    assert "line 33: out_of_place busbw 183.16 GB/s != algbw × 1.75 = 173.2 GB/s" in log.warnings
    # a rank number the rows cannot have: checked with the least count the list allows, so the rows fail
    odd = nccl_log.read_log(MI300X_8.read_text().replace("#  Rank  7 Group  0", "#  Rank 999999999 Group  0"))
    assert odd.n_ranks == 10**9 and not odd.checks_ok
    assert odd.warnings[0].startswith("the rank list is shortened (ranks 7-999999998 missing; 8 ranks shown): "
                                      "busbw/algbw of the rows fits only 8 ranks, fewer than shown")


@pytest.mark.parametrize("line,cut", [
    ("#  ...", True), ("...", True), ("# …", True), ("#   [...]", True), ("<snip>", True), ("# . . .", True),
    ("#  Rank 12 Group  0 Pi...", True),  # nccl-tests' own cut at its 2048-character buffer
    ("#", False), ("# Using devices", False), (".", False), ("RCCL version : 2.22.3-HEAD:7d8d67c", False),
])
def test_elision_marks(line, cut):
    assert nccl_rows.is_elision(line) is cut


# ---------------------------------------------------------------- linear-time patterns

def test_patterns_are_linear_on_stripped_lines():
    """Lines are stripped before matching, so no pattern needs leading or trailing whitespace runs; a lazy
    quantifier followed by a trailing-whitespace run ('(.*?)\\s*$') is quadratic in the line length."""
    patterns = {k: v.pattern for mod in (nccl_log, nccl_rows) for k, v in vars(mod).items()
                if isinstance(v, re.Pattern)}
    assert {"_RANK_RE", "_AVG_RE", "_OOB_RE", "_ROW_RE", "_BINARY_RE"} <= set(patterns)
    for name, pattern in patterns.items():
        assert not re.search(r"[*+?}]\?", pattern), f"{name} has a lazy quantifier"
        assert not re.search(r"\\s[*+]\$|^\^?\\s[*+]", pattern), f"{name} matches leading/trailing whitespace"


def test_huge_lines_are_read_not_choked_on():
    spaces = "#  Rank  0 Group  0 Pid 1 on h device  0 [0000:04:00] A" + " " * 100_000 + "B"
    assert nccl_rows.parse_rank(spaces, 1).name == "A" + " " * 100_000 + "B"
    lines = A3MEGA.read_text().splitlines()
    junk = [" " * 100_000, "#" + " " * 100_000 + "x", "1 " * 50_000, "# Avg bus bandwidth" + " " * 100_000,
            "#  Rank 99 on " + "x" * 100_000, "# ." + "." * 100_000 + " x"]
    at = lines.index(next(ln for ln in lines if ln.startswith("#  Rank  3")))
    log = nccl_log.read_log("\n".join(lines[:at] + junk + lines[at:]))
    assert (len(log.rows), log.n_ranks, log.checks_ok) == (31, 16, True)


# ---------------------------------------------------------------- what the file is

def _bad_file(tmp_path, kind):
    if kind == "fifo":
        os.mkfifo(tmp_path / "fifo")  # reading it would block until a writer came
        return tmp_path / "fifo", "a FIFO (named pipe), not a regular file"
    if kind == "device":
        return Path("/dev/zero"), "a character device, not a regular file"  # endless zero bytes
    if kind == "oversized":
        with open(tmp_path / "big.log", "wb") as f:
            f.truncate(nccl_log.MAX_LOG_BYTES + 1)  # sparse: no disk used
        return tmp_path / "big.log", "over the 64 MiB limit for a log"
    if kind == "empty path":
        return "", "the log path is empty"
    (tmp_path / "bin.log").write_bytes(bytes(range(256)) * 4)
    return tmp_path / "bin.log", "binary file"


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not Path("/dev/zero").exists(), reason="POSIX only")
@pytest.mark.parametrize("kind", ["fifo", "device", "oversized", "empty path", "binary"])
def test_files_that_are_not_logs_are_refused_before_reading(tmp_path, kind):
    path, needle = _bad_file(tmp_path, kind)
    r = cli(path)
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr
    assert needle in r.stderr.strip().splitlines()[-1], r.stderr


@pytest.mark.parametrize("encoding,bom,note", [
    ("utf-16-le", b"\xff\xfe", None), ("utf-16-be", b"\xfe\xff", None), ("utf-32-le", b"\xff\xfe\x00\x00", None),
    ("utf-16-le", b"", "read as UTF-16-LE"), ("utf-16-be", b"", "read as UTF-16-BE"),
    ("utf-8", b"\xef\xbb\xbf", None),
])
def test_utf16_and_other_unicode_logs_are_read(tmp_path, encoding, bom, note):
    """Windows PowerShell's '>' writes UTF-16 LE with a byte-order mark."""
    text = MI300X_8.read_text().replace("\n", "\r\n")
    (tmp_path / "ps.log").write_bytes(bom + text.encode(encoding))
    log = nccl_log.read_path(tmp_path / "ps.log")
    plain = nccl_log.read_path(MI300X_8)
    assert (log.rows, log.ranks, log.n_ranks, log.checks_ok, log.encoding) == \
        (plain.rows, plain.ranks, plain.n_ranks, True, encoding)
    assert log.warnings == ((f"line 1: no byte-order mark; {note} (every other byte is zero)",) if note else ())


def test_8bit_text_is_read_with_a_warning(tmp_path):
    (tmp_path / "latin1.log").write_bytes(MI300X_8.read_bytes().replace(b"<snip>", b"<snip> caf\xe9"))
    log = nccl_log.read_path(tmp_path / "latin1.log")
    assert log.checks_ok and log.n_ranks == 8 and log.encoding == "utf-8"
    assert log.warnings == ("line 2: not valid UTF-8 (byte 0xe9 at offset 116); undecodable bytes replaced "
                            "with U+FFFD",)


# ---------------------------------------------------------------- numbers

def _edit_row(text: str, size: str, column: int, value: str) -> str:
    """The log with token ``column`` of the row of ``size`` bytes replaced."""
    def edit(line):
        tokens = line.split()
        if tokens[:1] != [size]:
            return line
        tokens[column] = value
        return "  ".join(tokens)
    return "\n".join(edit(ln) for ln in text.splitlines()) + "\n"


@pytest.mark.parametrize("column,value,needle", [
    (5, "nan", "out_of_place time nan is not a finite number >= 0"),
    (6, "inf", "out_of_place algbw inf is not a finite number >= 0"),
    (9, "-1.5", "in_place time -1.5 is not a finite number >= 0"),
    (11, "1e999", "in_place busbw 1e999 is not a finite number >= 0"),
    (8, "-nan", "out_of_place #wrong -nan is not a finite whole number >= 0"),
    (8, "0.5", "out_of_place #wrong 0.5 is not a finite whole number >= 0"),
    (0, "9" * 400, "size 999999999999…(400 characters) is over 2^64-1 (size_t)"),
    (1, "9" * 5000, "count 999999999999…(5000 characters) is over 2^64-1 (size_t)"),  # past int()'s 4300-digit limit
])
def test_unusable_numbers_fail_the_row_and_never_reach_json(tmp_path, column, value, needle):
    (tmp_path / "x.log").write_text(_edit_row(MI300X_8.read_text(), "1048576", column, value))
    r = cli(tmp_path / "x.log", "--json")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    data = strict_json(r.stdout)
    jsonschema.validate(data, load_schema("nccl_parse_output.schema.json"))
    assert f"line 36: rejected result line: {needle}" in data["warnings"]
    assert 1048576 not in [row["size_bytes"] for row in data["rows"]] and len(data["rows"]) == 30
    assert not data["checks_ok"]


def test_unreadable_average_and_all_rows_rejected():
    text = MI300X_8.read_text()
    log = nccl_log.read_log(text.replace("# Avg bus bandwidth    : 110.464", "# Avg bus bandwidth    : nan"))
    assert not log.checks_ok and log.avg_busbw_gb_s is None
    assert "line 52: unreadable average 'nan'" in log.warnings
    json.dumps(nccl_log.to_json(log), allow_nan=False)
    only = "\n".join(ln for ln in text.splitlines() if "float" not in ln or ln.split()[0] == "8388608")
    with pytest.raises(nccl_log.NcclLogError, match=r"no usable result row: line \d+: rejected") as exc:
        nccl_log.read_log(_edit_row(only, "8388608", 5, "inf"))
    assert exc.value.code == 1


def test_a_nonzero_wrong_count_fails():
    log = nccl_log.read_log(_edit_row(MI300X_8.read_text(), "1048576", 12, "1e+06"))
    assert not log.checks_ok and log.rows[17].in_place.wrong == 1_000_000
    assert log.warnings == ("line 36: in_place reports 1000000 wrong elements (nccl-tests data check)",)


# ---------------------------------------------------------------- the error column: a count or a deviation

OLD_HEADER = ("#   Rank  0 Pid 1 on h device  0 [0x00] GPU\n#   Rank  1 Pid 1 on h device  1 [0x00] GPU\n"
              "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n"
              "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n")


def test_old_error_column_is_a_max_error_not_a_count():
    row = "     1048576        262144   float     sum    20.00   52.43   52.43  2e-07    20.00   52.43   52.43  0e+00\n"
    log = nccl_log.read_log(OLD_HEADER + row + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 52.43\n")
    assert (log.format, log.collective, log.checks_ok) == ("old", "all_reduce", True)
    out, inp = log.rows[0].out_of_place, log.rows[0].in_place
    assert (out.wrong, out.max_error, inp.wrong, inp.max_error) == (None, 2e-07, None, 0.0)
    data = nccl_log.to_json(log)
    jsonschema.validate(data, load_schema("nccl_parse_output.schema.json"))
    assert data["rows"][0]["out_of_place"] == {"time_us": 20.0, "algbw_gb_s": 52.43, "busbw_gb_s": 52.43,
                                               "wrong": None, "max_error": 2e-07}
    rows = list(csv.DictReader(io.StringIO(nccl_log.to_csv(log))))
    assert [(r["wrong"], r["max_error"]) for r in rows] == [("", "2e-07"), ("", "0.0")]


def test_old_rccl_tests_star_marks_an_error_over_the_threshold():
    """Old rccl-tests printed '%5.0le*' for an error over its threshold (ROCm/rccl-tests 924521f)."""
    row = "     1048576        262144   float     sum    20.00   52.43   52.43  3e-02*    20.00   52.43   52.43  0e+00\n"
    log = nccl_log.read_log(OLD_HEADER + row + "# Avg bus bandwidth    : 52.43\n")
    assert log.rows[0].out_of_place.max_error == 0.03 and not log.checks_ok
    assert log.warnings == ("line 5: out_of_place error 0.03 is marked '*': over the tool's threshold (data check)",)


def test_current_wrong_column_is_a_count():
    log = nccl_log.read_path(MI300X_8)
    assert {(p.wrong, p.max_error) for r in log.rows for _, p in r.placements()} == {(0, None)}
    rows = list(csv.DictReader(io.StringIO(nccl_log.to_csv(log))))
    assert {(r["wrong"], r["max_error"]) for r in rows} == {("0", "")}
    old = nccl_log.read_path(DATA / "nccl-tests-old_a100-sxm4-40gb-x8_all_gather_superbench.log")
    assert {(p.wrong, p.max_error) for r in old.rows for _, p in r.placements()} == {(None, None)}  # -c 0: N/A


def test_mutated_logs_give_a_log_error_or_a_valid_result():
    """Seeded mutations of every stored log (hostile tokens, deleted lines): nothing escapes but NcclLogError,
    and every result meets the JSON schema without NaN or Infinity."""
    import random
    rng = random.Random(21)
    validator = jsonschema.Draft202012Validator(load_schema("nccl_parse_output.schema.json"))
    texts = [p.read_text() for p in sorted(DATA.rglob("*.log"))]
    hostile = ["nan", "inf", "-inf", "1e999", "-1", "9" * 30, "9" * 5000, "N/A", "*", "...", "#", "Rank", "0e999",
               "1e-320", "", "\x00", "\u00b2", "\u0663", "1_0", "Group", "Pid"]
    for _ in range(300):
        lines = rng.choice(texts).splitlines()
        for _ in range(rng.randint(1, 4)):
            j = rng.randrange(len(lines))
            words = lines[j].split(" ")
            words[rng.randrange(len(words))] = rng.choice(hostile)
            lines[j] = " ".join(words) if rng.random() < 0.8 else ""
        try:
            log = nccl_log.read_log("\n".join(lines), collective=rng.choice([None, None, "all_gather", "broadcast"]))
        except nccl_log.NcclLogError:
            continue
        data = nccl_log.to_json(log)
        validator.validate(data)
        strict_json(json.dumps(data, allow_nan=False))


@pytest.mark.parametrize("name", sorted(REAL))
def test_the_excerpt_of_a_log_reads_as_the_log(name):
    """What a run keeps of a large log (the lines the reader used) gives the same rows, ranks and collective."""
    log, text = nccl_log.read_data(nccl_log.read_bytes(DATA / name), name)
    again = nccl_log.read_log(nccl_log.excerpt(text, log), "excerpt")
    def key(p):
        return ([(r.size_B, r.count, r.type, r.redop, r.root, r.out_of_place, r.in_place) for r in p.rows],
                [(k.rank, k.host, k.device, k.name) for k in p.ranks], p.n_ranks, p.nhosts, p.collective, p.tool,
                p.avg_busbw_gb_s, p.checks_ok, p.iters)
    assert key(again) == key(log)


def test_the_excerpt_of_a_padded_log_is_bounded_by_what_was_read():
    lines = A3MEGA.read_text(encoding="utf-8").splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.strip()[:1].isdigit()) - 2
    padding = ["host:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"] * 20_000 + ["# x"] * 20_000
    text = "\n".join(lines[:i] + padding + lines[i:]) + "\n"
    log = nccl_log.read_log(text, "padded.log")
    part = nccl_log.excerpt(text, log)
    assert len(part) < len(A3MEGA.read_bytes()) and "NCCL INFO" not in part and "# x\n" not in part
    assert [r.line for r in log.rows][0] > 40_000  # the rows keep the original line numbers
    assert [r.size_B for r in nccl_log.read_log(part, "part").rows] == [r.size_B for r in log.rows]
