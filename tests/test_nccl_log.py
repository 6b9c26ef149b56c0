"""x4lib.nccl_log on real public nccl-tests / rccl-tests logs (tests/data/README.md) and on our broken ones."""
import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from conftest import load_schema
from x4lib import nccl_log
from x4lib.collectives import busbw_factor

DATA = Path(__file__).parent / "data" / "nccl"
BROKEN = DATA / "broken"

# file: (tool, format, collective, nranks, nhosts, printed avg busbw in GB/s, rows)
REAL = {
    "nccl-tests-old_a100-sxm4-40gb-x8_all_gather_superbench.log": ("nccl-tests", "old", "all_gather", 8, 1, 58.2651, 34),
    "nccl-tests-old_a100-sxm4-40gb-x8_alltoall_superbench.log": ("nccl-tests", "old", "all_to_all", 8, 1, 58.6481, 34),
    "nccl-tests-old_a100-sxm4-40gb-x8_broadcast_superbench.log": ("nccl-tests", "old", "broadcast", 8, 1, 64.8653, 34),
    "nccl-tests-old_a100-sxm4-40gb-x8_reduce_superbench.log": ("nccl-tests", "old", "reduce", 8, 1, 65.018, 34),
    "nccl-tests_h100-80gb-x16_2node_all_reduce_a3mega.log": ("nccl-tests", "current", "all_reduce", 16, 2, 70.742, 31),
    "rccl-tests_mi300x-x8_1node_all_reduce_hisohara.log": ("rccl-tests", "current", "all_reduce", 8, 1, 110.464, 31),
    "rccl-tests_mi300x-x16_2node_all_reduce_hisohara.log": ("rccl-tests", "current", "all_reduce", 16, 2, 92.3318, 32),
}


def cli(*args):
    return subprocess.run([sys.executable, "-m", "x4lib", "nccl-parse", *map(str, args)],
                          capture_output=True, text=True, cwd="/", timeout=60)


def test_every_stored_log_is_listed_with_its_provenance():
    stored = {p.name for p in DATA.glob("*.log")}
    assert stored == set(REAL)
    readme = (DATA.parent / "README.md").read_text()
    for name in stored | {p.name for p in BROKEN.iterdir()}:
        assert f"`{name}`" in readme, f"{name} has no provenance line in tests/data/README.md"


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_log_reads_and_checks(name):
    tool, fmt, coll, nranks, nhosts, avg, nrows = REAL[name]
    log = nccl_log.read_path(DATA / name)
    assert (log.tool, log.format, log.collective, log.nranks, log.nhosts) == (tool, fmt, coll, nranks, nhosts)
    assert len(log.rows) == nrows
    assert log.checks_ok and log.warnings == (), log.warnings
    assert log.avg_busbw_gb_s == avg
    # nccl-tests averages every out-of-place and in-place busbw; printed values are rounded to 0.01 GB/s
    assert log.rows_avg_busbw_gb_s == pytest.approx(avg, abs=0.006)
    assert all(r.out_of_place and r.in_place for r in log.rows)


def test_in_place_and_out_of_place_are_read_apart():
    log = nccl_log.read_path(DATA / "nccl-tests_h100-80gb-x16_2node_all_reduce_a3mega.log")
    last = log.rows[-1]
    assert (last.size_bytes, last.count, last.type, last.redop, last.root) == (8589934592, 2147483648, "float", "sum", -1)
    assert (last.out_of_place.time_us, last.out_of_place.algbw_gb_s, last.out_of_place.busbw_gb_s) == (47535, 180.71, 338.82)
    assert (last.in_place.time_us, last.in_place.algbw_gb_s, last.in_place.busbw_gb_s) == (47743, 179.92, 337.35)
    assert last.in_place.busbw_gb_s == pytest.approx(last.in_place.algbw_gb_s * busbw_factor("all_reduce", 16), abs=0.01)


def test_old_format_columns():
    bcast = nccl_log.read_path(DATA / "nccl-tests-old_a100-sxm4-40gb-x8_broadcast_superbench.log")
    assert bcast.rows[-1].root == 0 and bcast.rows[-1].redop is None and bcast.rows[-1].in_place.wrong == "N/A"
    a2a = nccl_log.read_path(DATA / "nccl-tests-old_a100-sxm4-40gb-x8_alltoall_superbench.log")
    assert a2a.rows[-1].redop is None and a2a.rows[-1].size_bytes == 8 * 4 * a2a.rows[-1].count


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
    assert nccl_log.half_ulp("12.34") == pytest.approx(0.005)
    assert nccl_log.half_ulp("47535") == pytest.approx(0.5)
    assert nccl_log.half_ulp("1.2e+04") == pytest.approx(500)


def test_per_iteration_columns_and_collective_test_starting_line():
    h = ("#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max"
         "    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%\n")
    row = ("     1048576        262144     float     sum      -1    20.00   52.43   91.75       0    19.00    21.00"
           "    21.00     1.20    20.00   52.43   91.75       0    19.00    21.00    21.00     1.20\n")
    ranks = "".join(f"#  Rank {i:2d} Group  0 Pid 1 on {'ab'[i // 4]} device {i % 4:2d} [0x0{i}] G\n" for i in range(8))
    log = nccl_log.read_log("# Collective test starting: all_reduce_perf\n" + ranks + h + row
                            + "# Avg bus bandwidth    : 91.75\n")
    assert (log.collective, log.nranks, log.nhosts, log.checks_ok) == ("all_reduce", 8, 2, True)
    assert log.rows[0].in_place.busbw_gb_s == 91.75
