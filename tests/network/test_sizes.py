"""x4lib.network.sizes: nccl-tests' suffixes, the book's labels and the nearest-row lookup."""
import pytest

from x4lib.network import sizes


@pytest.mark.parametrize("text,expected", [
    ("1048576", 1048576), ("1M", 2**20), ("1m", 2**20), ("1MB", 10**6), ("1MiB", 2**20), ("100M", 100 * 2**20),
    ("100MB", 10**8), ("1GB", 10**9), ("1G", 2**30), ("1GiB", 2**30), ("4K", 4096), ("1kB", 1000),
    ("1.5M", 1572864), ("8B", 8), (" 2 GB ", 2 * 10**9), (4096, 4096),
])
def test_parse_size(text, expected):
    assert sizes.parse_size(text) == expected


@pytest.mark.parametrize("text", ["12XB", "-1MB", "0", "", "MB", "1.5", "1mb", "1Mb", "abc", "1e6",
                                  "9" * 400, "2048T", True, -5])
def test_parse_size_rejects(text):
    with pytest.raises(ValueError):
        sizes.parse_size(text)


def test_labels_name_the_convention():
    assert sizes.format_size(2**20) == "1MiB" and sizes.format_size(10**6) == "1MB"
    assert sizes.format_size(7) == "7B" and sizes.format_size(3 * 2**30) == "3GiB"
    assert sizes.label(2**30) == "1 GiB" and sizes.label(100 * 2**20) == "100 MiB" and sizes.label(3) == "3 B"


def test_nearest_is_on_a_log_scale():
    rows = [2**k for k in range(20, 31)]
    assert sizes.nearest(rows, 100 * 2**20) == 128 * 2**20  # a 100 MiB question gets the 128 MiB row
    assert sizes.nearest([{"s": 10}, {"s": 1000}], 99, key=lambda r: r["s"]) == {"s": 10}
    with pytest.raises(ValueError):
        sizes.nearest([], 1)


# --- nccl-tests' own size loop (src/common.cu at v2.19.6) ----------------------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("1M", 2**20), ("1m", 2**20), ("1MB", 2**20), ("1 G", 2**30), ("100M", 100 * 2**20), ("0.5M", 2**19),
    ("8", 8), ("1.5K", 1536), ("1e3", 1000), ("2.7", 2),
])
def test_nccl_tests_parsesize(text, expected):
    # "1MB" is 2^20 in nccl-tests: sscanf("%lf %1s") sees only the 'M'; a fraction of a byte is truncated
    assert sizes.nccl_tests_parsesize(text) == expected


@pytest.mark.parametrize("text", ["1X", "-1M", "M", "", "1T"])
def test_nccl_tests_parsesize_rejects_what_nccl_tests_rejects(text):
    with pytest.raises(ValueError):
        sizes.nccl_tests_parsesize(text)


def test_a_factor_sweep_stops_at_or_below_the_maximum():
    # the page's old command: -f 100 multiplies 1 MiB by 100 and stops before 1 GiB
    assert sizes.nccl_tests_sizes("1M", "1G", "100") == [2**20, 100 * 2**20]
    assert sizes.nccl_tests_sizes("8", "100M", "2")[-1] == 64 * 2**20
    sweep = sizes.nccl_tests_sizes("8", "8G", "2")
    assert len(sweep) == 31 and sweep[0] == 8 and sweep[-1] == 8 * 2**30


def test_without_a_factor_the_step_is_additive():
    sweep = sizes.nccl_tests_sizes("1M", "1G")  # -i defaults to 1M
    assert len(sweep) == 1024 and sweep[:2] == [2**20, 2**21] and sweep[-1] == 2**30
    assert sizes.nccl_tests_sizes("1M", "3M", "1", "512K") == [2**20, 1.5 * 2**20, 2**21, 2.5 * 2**20, 3 * 2**20]
    assert sizes.nccl_tests_sizes() == [32 * 2**20]  # defaults: -b 32M -e 32M
    assert sizes.nccl_tests_sizes("100M", "100M") == [100 * 2**20]


def test_the_factor_is_read_like_strtol():
    assert sizes.nccl_tests_sizes("1", "64", "2.5") == [1, 2, 4, 8, 16, 32, 64]  # strtol("2.5") = 2
    assert sizes.nccl_tests_sizes("1", "64", "0x4") == [1, 4, 16, 64]
    assert sizes.nccl_tests_sizes("1", "3", "x", "1") == [1, 2, 3]  # strtol("x") = 0: additive steps of -i


@pytest.mark.parametrize("args,needle", [
    (("1G", "1M"), "above"), (("0", "1M", "2"), "never ends"), (("1", "2", "1", "0"), "never ends"),
    (("1", "1G", "1", "1"), "more than"), (("1", "2", "-2"), "negative"),
])
def test_impossible_sweeps_are_refused(args, needle):
    with pytest.raises(ValueError, match=needle):
        sizes.nccl_tests_sizes(*args)


def test_command_lines_are_read_like_the_binary_reads_them():
    cmd = ("mpirun -np 16 -H node1:8,node2:8 -x NCCL_DEBUG=INFO \\\n"
           "  ./build/all_reduce_perf -b 1M -e 1M -g 1 -c 1 -n 50 -w 10 | tee ar.log  # 1 MiB only")
    assert sizes.nccl_tests_command_sizes(cmd) == [2**20]
    assert sizes.nccl_tests_command_sizes("all_gather_perf --minbytes=8 --maxbytes 64 -f2 | grep -e x") == [8, 16, 32, 64]
    with pytest.raises(ValueError, match="_perf"):
        sizes.nccl_tests_command_sizes("ls -b 1M")
