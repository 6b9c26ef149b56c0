"""x4lib.compute.simt: occupancy from the H100's per-SM limits, divergent branches, Little's law (hand-checked)."""
import pytest

from x4lib.compute import simt


def test_the_h100_limits_come_from_the_sourced_facts():
    lim = simt.h100_limits()
    assert (lim.max_warps, lim.max_threads, lim.max_blocks, lim.registers) == (64, 2048, 32, 65536)
    assert lim.shared_memory_B == 228 * 1024 and lim.shared_memory_reserved_per_block_B == 1024


def test_occupancy_by_hand():
    o = simt.occupancy(256, 32)                    # 8 warps per block; 32 x 256 = 8192 registers per block
    assert o.blocks_by_limit["warps"] == 8 and o.blocks_by_limit["registers"] == 8 and o.occupancy == 1.0
    o = simt.occupancy(256, 128)                   # 32768 registers per block: 2 blocks, 16 warps
    assert (o.blocks_per_sm, o.active_warps, o.limiter) == (2, 16, "registers") and o.occupancy == 0.25
    o = simt.occupancy(256, 64, 64 * 1024)         # (64 + 1) KiB per block: 3 blocks in 228 KiB
    assert (o.blocks_per_sm, o.limiter) == (3, "shared memory")
    o = simt.occupancy(32, 16)                     # one warp per block: the 32-block limit binds
    assert (o.blocks_per_sm, o.occupancy, o.limiter) == (32, 0.5, "blocks")


def test_launches_that_cannot_run_are_refused():
    with pytest.raises(ValueError, match="threads per block"):
        simt.occupancy(2048, 32)
    with pytest.raises(ValueError, match="registers per thread"):
        simt.occupancy(128, 256)
    with pytest.raises(ValueError, match="shared memory"):
        simt.occupancy(128, 32, 228 * 1024)


def test_divergent_branches_by_hand():
    assert simt.branch([(16, 10), (16, 10)]).efficiency == 0.5
    assert simt.branch([(32, 10), (0, 50)]).efficiency == 1.0           # a path no lane takes costs nothing
    d = simt.branch([(1, 100), (31, 0)], common_instructions=10)
    assert (d.issued, d.useful_lane_instructions) == (110, 32 * 10 + 100)
    tid = range(256)
    assert simt.block_branch_efficiency([t % 2 == 0 for t in tid], 20, 20) == 0.5
    assert simt.block_branch_efficiency([(t // 32) % 2 == 0 for t in tid], 20, 20) == 1.0
    with pytest.raises(ValueError):
        simt.branch([(20, 1), (20, 1)])


def test_littles_law_by_hand():
    L = simt.littles_law(3.2e12, 500e-9, 100, bytes_per_thread_load=4)
    assert L.bytes_in_flight_B == pytest.approx(1.6e6)
    assert L.per_sm_B == pytest.approx(16e3) and L.warps_per_sm == pytest.approx(125)
    assert L.occupancy_needed == pytest.approx(125 / 64)
    with pytest.raises(ValueError):
        simt.littles_law(0, 1e-7, 100)
