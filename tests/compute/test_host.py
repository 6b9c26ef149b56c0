"""x4lib.compute.host: the input-pipeline model and PCIe per direction, by hand."""
import pytest

from x4lib.compute import host


def test_pcie_per_direction_by_hand():
    assert host.pcie_Bps_per_direction(32, 16) == pytest.approx(32e9 * 16 * 128 / 130 / 8)   # 63.0 GB/s
    assert host.pcie_Bps_per_direction(16, 16) / 1e9 == pytest.approx(31.5, abs=0.01)
    with pytest.raises(ValueError):
        host.pcie_Bps_per_direction(16, 0)


def test_the_host_bound_and_the_gpu_bound():
    # G = 0.5 x 1e15 / 1e10 = 5e4 samples/s; 10 cores at 1 ms each prepare 1e4/s: host-bound, 50 cores needed
    p = host.input_pipeline(1e10, 1e15, 0.5, 1e-3, 10, 1000, 1e10)
    assert p.gpu_samples_per_s == pytest.approx(5e4) and p.host_samples_per_s == pytest.approx(1e4)
    assert p.bound == "host CPU" and p.cores_needed_per_gpu == pytest.approx(50)
    assert p.achieved_mfu_fraction == pytest.approx(0.2) and p.link_utilisation == pytest.approx(1e7 / 1e10)
    q = host.input_pipeline(1e10, 1e15, 0.5, 1e-5, 10, 1000, 1e10)
    assert q.bound == "GPU" and q.samples_per_s == pytest.approx(5e4)
    with pytest.raises(ValueError, match="mfu"):
        host.input_pipeline(1e10, 1e15, 1.5, 1e-3, 10, 1000, 1e10)
