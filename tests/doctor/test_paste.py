"""x4lib.doctor.paste and the doctor on pasted text: fragments found inside bug reports (quotes, fences, tables,
launcher prefixes) with their line numbers, the named cause and the next command, ``--from -``, the expected
figures beside the reported ones, and bounded time on hostile input. The texts here are built by these tests from
line formats of the stored corpus (tests/data/doctor/corpus/, provenance in tests/data/README.md)."""
import io
import json
import os
import subprocess
import sys
import time

import jsonschema
import pytest

from conftest import load_schema, run_cli
from x4lib.doctor import diagnose as doctor, paste
from x4lib.network import clusters, collectives, topo
from x4lib.catalog import specs


def run(text: str, name: str = "paste.md"):
    report, found = doctor.diagnose_text(text, name)
    return report, {f.rule.id: f for f in found}


def test_quoted_and_prefixed_nccl_lines_are_read_with_their_line_numbers():
    text = ("We see low bandwidth, logs below\n\n"
            "> > [0] NCCL INFO NET/Socket : Using [0]bond0:200.8.184.2<0>\n"
            "(RayWorkerWrapper pid=593, ip=10.5.6.103) host:1:2 [1] NCCL INFO Using network Socket\n")
    report, got = run(text)
    assert report.kind == "nccl-debug" and report.named_cause["category"] == "tcp-fallback"
    # "Using network" decides and comes first; the pasted NET/Socket line that shows it is quoted too
    assert [e.line for e in got["net-socket-nodes-unknown"].evidence] == [4, 3] and report.named_cause["line"] == 4
    report, got = run(text.replace("Using network Socket", "Init COMPLETE"))
    assert [e.line for e in got["net-socket-nodes-unknown"].evidence] == [3] and report.named_cause["line"] == 3


def test_text_with_nothing_recognised_is_exit_2_and_any_fragment_is_read():
    with pytest.raises(doctor.DoctorError, match="not a file the doctor recognises"):
        doctor.diagnose_text("just some notes\nabout my weekend\n", "notes.txt")
    report, got = run("Here is what I measured:\n\n| size | busbw |\n|---|---|\n| 1 GB | busbw 18.9 GB/s |\n")
    assert report.kind == "pasted-text" and got == {} and report.named_cause is None
    assert report.next_command.startswith("NCCL_DEBUG=INFO")


def test_a_pcie_table_gets_the_line_rates_per_direction_of_both_links():
    _, got = run("| | before | after |\n|---|---|---|\n| GPU 1 PCIe | **Gen 2 ×4** | **Gen 3 ×16** |\n")
    f = got["pcie-link-below-another"]
    assert f.evidence[0].line == 3
    assert f.measured.value == pytest.approx(2.0) and f.expected.value == pytest.approx(15.75, abs=0.01)
    assert paste.pcie_GBps(4, 16) == pytest.approx(31.51, abs=0.01)


def test_a_line_rate_expectation_gets_ncclss_achievable_busbw_from_the_model():
    text = ("We test all_reduce_perf on H100, the algbw is about 250GB/S.\n"
            "But NV officials claim that the bandwidth of all reduce can reach 450GB/S.\n")
    report, got = run(text)
    f = got["line-rate-expected"]
    dev = specs.get("h100-sxm")
    link = dev.get("scaleup_bw_gb_s_per_direction")
    c = clusters.custom_cluster(1, 8, link.si, intra_kind="nvlink", cluster_id="1x8-h100-sxm")
    ring = collectives.bandwidth_limit_busbw_Bps("all_reduce", c, algorithm="ring") / 1e9
    assert f.expected.value == pytest.approx(round(ring, 1)) and f.expected.value < link.value
    assert f.measured.value == 250 and f.severity == "note" and report.named_cause["line"] == 2


def test_a_sparse_figure_is_set_beside_the_dense_peak():
    _, got = run("The H100 datasheet says BFLOAT16 Tensor Core 1,979 TFLOPS but the table says 989.\n")
    f = got["sparse-peak-expected"]
    dense = specs.get("h100-sxm").get("bf16_dense_tflops").value
    assert f.expected.value == dense and f.measured.value == pytest.approx(2 * dense, rel=0.01)


def test_the_cause_outranks_a_note_and_p2p_through_the_cpu_outranks_a_sentence():
    report, got = run("GPU 1 clock dropped from 1725 MHz idle to 1365 MHz at 91°C\nTheoretical peak: 68.5 TPS\n")
    assert report.named_cause["rule"] == "report-says-thermal" and "line-rate-expected" in got
    report, _ = run("It's good when set NCCL_P2P_LEVEL=SYS on allreduce\nin alltoall, compared to SHM, got 18 -> 2\n"
                    "we normally disable P2P and bounce via host\n")
    assert report.named_cause["rule"] == "p2p-through-cpu"


def test_dmesg_and_numactl_and_torch_fragments():
    text = ("[  12.3] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.\n"
            "[  13.0] pcieport 0000:00:01.0: AER: Corrected error received: 0000:3b:00.0\n"
            "[  14.0] DMAR: DRHD: handling fault status reg 2\n"
            "NUMA node0 CPU(s): 0-31\n"
            "torch.backends.cuda.matmul.allow_tf32 = False\n")
    report, got = run(text)
    assert {"gpu-xid", "pcie-aer-errors", "iommu-in-paste", "tf32-not-enabled"} <= set(got)
    assert "numactl/lscpu lines (1)" in report.summary


def test_from_stdin_reads_a_paste_and_json_keeps_its_contract():
    data = b"> NCCL INFO NET/IB : No device found.\n> NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
    rep = doctor.diagnose_files(["-"], stdin=io.BytesIO(data))
    assert rep.inputs[0].file == "<stdin>" and rep.exit_code == 1
    r = subprocess.run([sys.executable, "-m", "x4lib", "doctor", "--from", "-", "--json"], input=data,
                       capture_output=True, cwd="/", env={**os.environ, "PYTHONWARNINGS": "ignore"}, timeout=120)
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, load_schema("doctor_output.schema.json"))
    # the Socket line names the cause
    assert doc["inputs"][0]["named_cause"] == {"category": "tcp-fallback", "rule": "net-socket-nodes-unknown",
                                               "line": 2}
    with pytest.raises(doctor.DoctorError, match="binary"):
        doctor.diagnose_files(["-"], stdin=io.BytesIO(b"\0\1\2" * 100))


def test_cli_text_names_the_cause_and_the_next_command(tmp_path):
    p = tmp_path / "report.md"
    p.write_text("## Bug\nbusbw: 18.973 GBps on our cluster, expected more\n")
    r = run_cli("doctor", "--from", str(p))
    assert r.returncode == 0 and "next, to decide: NCCL_DEBUG=INFO" in r.stdout


def test_hostile_text_is_read_in_bounded_time():
    """About 4 MiB of lines that carry every cue, and one 1 MiB line: linear, and the evidence is capped."""
    cues = " ".join(sorted({c for s in paste.SIGNALS for c in s.cue}))
    line = ("> " * 40 + "NCCL INFO Channel 00 : " + "via SHM/" * 20 + cues + " Gen 2 x4 " * 30)[:3000]
    text = "\n".join([line] * 1400) + "\n" + "(" * 2**20 + "\n"
    t0 = time.perf_counter()
    report, found = doctor.diagnose_text(text, "hostile.txt")
    assert time.perf_counter() - t0 < 60
    assert all(len(f.evidence) <= 8 for f in found) and report.named_cause is not None


def test_topo_reads_bonded_nics_the_legend_and_gpu_numa_ids():
    text = ("\tGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
            "GPU0\t X \tNV18\tPIX\tSYS\t0-55\t0\tN/A\n"
            "GPU1\tNV18\t X \tSYS\tSYS\t56-111\t1\tN/A\n"
            "NIC0\tPIX\tSYS\t X \tSYS\n"
            "NIC1\tSYS\tSYS\tSYS\t X \n\n"
            "NIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_bond_0\n")
    t = topo.parse_topo(text)
    assert t.nic_names == {"NIC0": "mlx5_0", "NIC1": "mlx5_bond_0"} and t.gpu_numa_id == {"GPU0": "N/A", "GPU1": "N/A"}
    msgs = [f["message"] for f in topo.findings(t)]
    assert any("GPU1's nearest NIC (NIC0 (mlx5_0), NIC1 (mlx5_bond_0)) is SYS" in m for m in msgs)
    bonded = text.replace("NIC0", "mlx5_bond_0").replace("NIC1", "mlx5_bond_1").split("\n\nNIC Legend")[0]
    t = topo.parse_topo(bonded)
    assert t.nics == ["mlx5_bond_0", "mlx5_bond_1"]


def test_a_flat_phb_topology_in_a_vm_is_named_as_virtualisation():
    rows = "\n".join(f"GPU{i}\t" + "\t".join("X" if j == i else "PHB" for j in range(4)) + "\t0-191\t0-1"
                     for i in range(4))
    text = "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\n" + rows + "\n"
    report, got = run(text, "topo.txt")
    assert report.kind == "nvidia-smi-topo" and report.named_cause["rule"] == "topo-flat-virtual"
    assert "topo-no-p2p" in got


def test_acsctl_in_hex_is_read():
    _, got = run("GPUs behind bridges with ACS enabled (ACSCtl: 0x001d = SrcValid+, ReqRedir+)\n"
                 "ACSCtl: 0x0000\n")
    assert [e.line for e in got["acs-enabled"].evidence] == [1]


@pytest.mark.parametrize("lines, rule", [
    # the transport NCCL was told to use (NCCL env docs: NCCL_NET); inside NCCL_DEBUG output the nccl-debug reader
    # decides the transport instead
    (["We launch every rank with NCCL_NET=Socket exported."], "net-socket-nodes-unknown"),
    # P2P turned off by a setting, or refused by the peer-access test (CUDA sample p2pBandwidthLatencyTest)
    (["export NCCL_P2P_DISABLE=1"], "p2p-disabled-by-env"),
    (["Device=0 CANNOT Access Peer Device=1"], "report-says-p2p-off"),
    (["GPU 0: NVIDIA GeForce RTX 4090 (UUID: GPU-1)", "GPU 1: NVIDIA GeForce RTX 4090 (UUID: GPU-2)"],
     "geforce-no-p2p"),
    # old lspci without "(downgraded)": LnkSta below the LnkCap just above it
    (["\t\tLnkCap:\tPort #0, Speed 8GT/s, Width x16, ASPM L0s L1", "\t\tLnkSta:\tSpeed 8GT/s, Width x8,"],
     "pcie-width-downgraded"),
    (["\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16, ASPM L1", "\t\tLnkSta:\tSpeed 2.5GT/s, Width x16,"],
     "pcie-speed-downgraded-check-load"),
    (["The card runs at x8 instead of x16 in the second slot."], "report-says-pcie-slot"),
    # power and clocks
    (["sudo nvidia-smi -i 0 -pl 250"], "power-limit-lowered"),
    (["the SM clock is stuck at 1005 MHz under load"], "report-says-thermal"),
    # IOMMU/ACS, NUMA, NIC distance
    (["[    0.1] DMAR: IOMMU enabled"], "iommu-in-paste"),
    (["The GPU and the NIC are on different NUMA nodes."], "cpu-binding"),
    (["h:1:2 [0] NCCL INFO GPU Direct RDMA Disabled for GPU ca000 / HCA 0 (distance 7 > 4)"], "topo-gpu-nic-no-gdr"),
    # expectations, dtype and shape
    (["I expected the advertised 900 GB/s but get 370"], "line-rate-expected"),
    (["torch.backends.cuda.matmul.allow_tf32 = False"], "tf32-not-enabled"),
    (["The benchmark uses small matrices (M=64)"], "shape-kernel-choice"),
    # a software version: a regression found by bisecting, a library swapped
    (["AllGather regressed by 40 % after upgrading NCCL to 2.29.7; bisected to one commit."],
     "report-says-software-version"),
    (["Fixed it by symlinking to /usr/lib/libnccl.so instead of the bundled NCCL."], "report-says-software-version"),
    # turning the IOMMU off is evidence only where the reporter says it fixed the problem
    (["Booting with intel_iommu=off fixed the hang."], "iommu-in-paste"),
    # the network plugin (aws-ofi-nccl on EFA): NCCL's own line counts where the paste names such a fabric
    (["Two p5 nodes over EFA.", "h:1:1 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal "
      "implementation"], "net-plugin-missing"),
    (["The image does not include /opt/amazon/aws-ofi-nccl/lib in LD_LIBRARY_PATH."], "net-plugin-missing"),
    # the reporter asks for the cloud fabric's own transport: until it is on, NCCL runs without its plugin
    (["We'd need to enable GPUDirect-TCPx to reach the advertised bandwidth."], "net-plugin-missing"),
    (["[GCP] enable GPUDirect-TCPX for H100s"], "net-plugin-missing"),
    # GPUDirect RDMA: NCCL's line for an HCA without the module, a receive without /GDRDMA, the reporter's words
    (["h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)"], "gdr-not-enabled"),
    (["a:1:2 [0] NCCL INFO Channel 00 : 0[7000] -> 8[7000] [receive] via NET/IB/0"], "gdr-not-enabled"),
    (["nvidia-peermem is not loaded on the second node"], "gdr-not-enabled"),
    # InfiniBand: a port below the stated rate, and 4X as a width
    (["We have 400 Gb/s of bandwidth between the nodes.", "        rate:            100 Gb/sec (4X EDR)"],
     "ib-port-rate-below-stated"),
    (["The servers are connected by 4xEDR 100Gbps InfiniBand."], "ib-width-not-adapters"),
    # across sockets; clocks from NVML and in words; FP32 against FP16; capability figures; the RDMA stack
    (["P2P between GPUs over QPI is very slow on this server."], "report-says-cross-socket"),
    (["Multi-node NCCL performance drop due to cross numa issues"], "report-says-cross-socket"),
    (["nvml returns nvmlClocksThrottleReasonSwPowerCap while the kernel runs"], "clock-reason-in-paste"),
    (["the GPU core frequency drops from 1980 MHz to 1575 MHz when power exceeds the limit"], "report-says-thermal"),
    (["The FP32 kernel is 10 times slower than the FP16 one."], "tf32-not-enabled"),
    (["Each NVLink is capable of 600 GB/s, but busbw is ~200 GB/s."], "line-rate-expected"),
    (["After installing MOFED in the container NCCL uses RDMA."], "report-says-socket"),
    (["BIOS: IOMMU=Disable, and then it worked"], "iommu-in-paste"),
    (["It looks like the actual connection speed of GPU 0 is x4."], "report-says-pcie-slot"),
    # RTX 40-series ranks in an nccl-tests header (the log reader decides, as for the 50 series); P2P refused in words
    (["#  Rank  0 Group  0 Pid  13582 on    host device  0 [0x34] NVIDIA GeForce RTX 4090",
      "#  Rank  1 Group  0 Pid  13582 on    host device  1 [0x35] NVIDIA GeForce RTX 4090"], "geforce-no-p2p"),
    (["GeForce cards don't support GPU Direct P2P, as far as I know."], "report-says-p2p-off"),
    # the sparse figure named in words; a reply that the figure is the expected one; JAX's HIGHEST precision
    (["the reported number you have is \"sparsity\" number which is doubled from the actual bf16 speed"],
     "sparse-peak-expected"),
    (["360 GB/s is exactly what we'd expect on H100."], "line-rate-expected"),
    (["jnp.einsum('bqhd,bkhd->bhqk', q, k, precision=jax.lax.Precision.HIGHEST)"], "tf32-not-enabled"),
    (["In PyTorch 1.12, torch.backends.cuda.matmul.allow_tf32 is set to False."], "tf32-not-enabled"),
    # a workaround that gives back an earlier version; DMA between GPU and NIC off
    (["Workaround: `UCX_RC_ECE=0` restores the 1.20.0 bandwidth."], "report-says-software-version"),
    (["Moving to a newer version and some driver updates helped a lot, thanks!"], "report-says-software-version"),
    (["On kernel 6.8 DMA transfers between the GPU and NIC are disabled."], "gdr-not-enabled"),
    # a package's peak against one of its devices (two GCDs per MI250X)
    (["The MAMF is measured on a single GCD, while the 383 TFLOPs as specified is for 2 GCDs."],
     "package-peak-per-device"),
    # a dtype the GPU's tensor cores cannot multiply: BF16 below compute capability 8.0, FP8 below 8.9
    (["BF16 matmul is about half the speed of FP32 on our T4."], "dtype-not-native"),
    (["We run on a V100.", "Training in bfloat16 gives no speedup over float32."], "dtype-not-native"),
    (["torch._scaled_mm with float8_e4m3fn is not supported on the A100."], "dtype-not-native"),
    # the seventh set's misses: FP16 on compute capability 6.1 (1/64 of FP32's rate), clocks locked by hand, a run
    # that computes in FP32 by default, a bidirectional figure named in Chinese
    (["I use a Tesla P40 and it does not support float16 well."], "dtype-not-native"),
    (["sudo nvidia-smi -i 0 -lgc 1200,1200 before the benchmark"], "clocks-locked"),
    (["The drop follows nvmlDeviceSetMemoryLockedClocks(); resetting them gives it back."], "clocks-locked"),
    (["The benchmark runs using FP32 by default for compatibility."], "tf32-not-enabled"),
    (["400GB/s 是双向理论值，160GB/s 是单向实测"], "line-rate-expected"),
    (["This was because our dev branch does not have all the recent optimizations on FSDP yet."],
     "report-says-software-version"),
    # the eighth set's misses: the two-node tree and a both-directions figure in words, a link slow at idle, one
    # queue pair on a bond, a fix in a later release, TF32 for one library only, power that follows the data,
    # RCCL's P2P transport skipped, GPUDirect RDMA "not available"
    (["On two nodes NCCL uses the tree, which can go beyond the network bottleneck."], "two-node-tree"),
    (["900 GB/s is the sum of both directions, at the wire speed."], "line-rate-expected"),
    (["The GPU stays in a low power state when it's not being used, at 2.5 GT/s; under load it jumps to 8 GT/s."],
     "pcie-idle-link-speed"),
    (["With a single QP (the default) only one port of the bond will be used."], "report-says-bond-single-qp"),
    (["This will be fixed in a future cuBLAS release."], "report-says-software-version"),
    (["The issue is resolved after ROCm 6.0, thanks!"], "report-says-software-version"),
    (["TF32 was only enabled for cuBLASLt and not cuBLAS by mistake."], "tf32-not-enabled"),
    (["With less bit flipping the chip draws less power, so it clocks higher within the same power budget."],
     "report-says-thermal"),
    (["You need a flag in order to not skip p2pTransport on this PCIe switch."], "report-says-p2p-off"),
    (["If GPU Direct RDMA is not available, traffic goes through host memory."], "gdr-not-enabled"),
    (["The workload uses FP16, for which MIOpen doesn't have optimized convolution kernels for gfx900."],
     "dtype-kernels-missing"),
])
def test_general_signals_name_their_rule(lines, rule):
    text = "Some context first.\n\n" + "\n".join(lines) + "\n"
    report, got = run(text)
    assert rule in got, sorted(got)
    assert {e.line for e in got[rule].evidence} <= set(range(3, 3 + len(lines)))


def test_an_idle_link_at_full_width_and_tool_legends_are_not_findings():
    _, got = run("\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16\n\t\tLnkSta:\tSpeed 16GT/s, Width x16\n"
                 "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0\n")
    assert not {"pcie-width-downgraded", "pcie-speed-downgraded-check-load"} & set(got)
    _, got = run("  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n"
                 "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0\n")
    assert "cpu-binding" not in got


def test_the_fix_the_reporter_states_names_the_cause_and_a_question_or_advice_does_not():
    base = ("[    0.1] DMAR: IOMMU enabled\n"
            "Training hangs with 4 GPUs.\n")
    # the IOMMU line alone: the IOMMU leads
    report, got = run(base)
    assert report.named_cause["rule"] == "iommu-in-paste"
    # the reporter says turning P2P off made it work: that setting's finding names the cause
    report, got = run(base + "I confirmed that it works by setting NCCL_P2P_DISABLE=1.\n")
    assert report.named_cause["rule"] == "p2p-disabled-by-env" and report.named_cause["line"] == 3
    assert "iommu-in-paste" in got
    # a question proposing the same setting, or advice hedged with "usually", is no reported fix
    for line in ("Does setting NCCL_P2P_DISABLE=1 fix it?\n", "NCCL_P2P_DISABLE=1 usually helps on such boards.\n"):
        report, _ = run(base + line)
        assert report.named_cause["rule"] == "iommu-in-paste", line
    # "iommu=off" without a fix is no evidence of an IOMMU problem
    _, got = run("We boot with iommu=off already.\nbusbw 10 GB/s\n")
    assert "iommu-in-paste" not in got


def test_the_new_signals_stay_quiet_where_nothing_is_wrong():
    """Built by this test: NCCL's "No plugin found" on an InfiniBand cluster or a single host (NCCL then uses its own
    IB transport), a send without GDRDMA (GDR reads are off by default on many systems), ports that add up to the
    stated rate, GCP's GPUDirect-TCPX (not RDMA), and an ibstat rate line's own "(4X EDR)"."""
    _, got = run("h:1:1 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so), using internal implementation\n"
                 "h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0\n"
                 "h:1:2 [0] NCCL INFO Channel 00 : 0[7000] -> 8[7000] [send] via NET/IB/0\n"
                 "h:1:2 [0] NCCL INFO Channel 00 : 8[7000] -> 0[7000] [receive] via NET/IB/0/GDRDMA\n")
    assert not {"net-plugin-missing", "gdr-not-enabled"} & set(got), sorted(got)
    _, got = run("Two ports, 400 Gb/s of bandwidth per node.\n        rate:            200 Gb/sec (4X HDR)\n"
                 "        rate:            200 Gb/sec (4X HDR)\nWe want to enable GPUDirect-TCPX on GCP.\n")
    assert not {"ib-port-rate-below-stated", "ib-width-not-adapters", "gdr-not-enabled"} & set(got), sorted(got)


def test_a_fabric_already_enabled_is_no_missing_plugin_and_busbw_is_read_before_algbw():
    _, got = run("We enabled EFA on both p5 nodes and busbw rose to 90 GB/s.\n")
    assert "net-plugin-missing" not in got, sorted(got)
    # the symptom the missing plugin explains is the bus bandwidth, reported after the algorithm bandwidth here
    _, got = run("We'd need to enable GPUDirect-TCPX on these A3 nodes.\n"
                 "algbw: 11.396 GBps (91.2 Gbps)\nbusbw: 18.973 GBps (151.8 Gbps)\n")
    f = got["net-plugin-missing"]
    assert f.measured.value == 18.973 and {e.line for e in f.evidence} == {1, 3}


def test_a_dtype_the_gpu_multiplies_natively_is_no_finding():
    # BF16 on an A100 (8.0) and on an H100 (not a GPU the rule lists: 9.0), FP8 on an L4 (8.9), a T4 without a
    # dtype complaint
    for text in ("BF16 is slower than FP16 on our A100 for this shape.\n", "BF16 is slower than FP16 on H100.\n",
                 "FP8 gives no speedup on the L4 for small batches.\n", "On the T4 the FP32 kernel is 8 times slower than the FP16 one.\n"):
        _, got = run(text)
        assert "dtype-not-native" not in got, (text, sorted(got))
    _, got = run("BF16 matmul is about half the speed of FP32 on our T4.\n")
    assert "compute capability 7.5" in got["dtype-not-native"].detail
    # FP16 is named only on 6.1, whose FP16 is slower than its FP32: not on a P100 (6.0) nor a V100 (7.0)
    for text in ("FP16 gives no speedup on our P100.\n", "FP16 is not faster than FP32 on the V100 here.\n"):
        _, got = run(text)
        assert "dtype-not-native" not in got, (text, sorted(got))
    _, got = run("FP16 training is four times slower on our P40.\n")
    assert "compute capability 6.1" in got["dtype-not-native"].detail


def test_clocks_locked_is_read_from_the_lock_not_from_a_reset_or_a_clock_reading():
    for text in ("sudo nvidia-smi -rgc\n", "Clocks: Graphics 1980 MHz, Memory 2619 MHz\n",
                 "We read the clock with nvidia-smi -q -d CLOCK.\n"):
        _, got = run(text + "busbw 10 GB/s\n")
        assert "clocks-locked" not in got, (text, sorted(got))


def test_gcd_words_without_a_package_against_a_device_are_no_finding():
    for text in ("Each GCD has 110 compute units and 64 GB of HBM2e; busbw 150 GB/s.\n",
                 "We ran on both GCDs and busbw was 150 GB/s.\n"):
        _, got = run(text)
        assert "package-peak-per-device" not in got, (text, sorted(got))


def test_amds_infinity_fabric_is_a_gpu_link_not_a_network_fabric():
    _, got = run("Eight MI100 in two hives, all GPUs of a hive connected by Infinity Fabric; busbw 50 GB/s.\n")
    assert "report-says-fabric" not in got, sorted(got)
    _, got = run("The fabric between nodes 3 and 7 is congested; busbw 50 GB/s.\n")
    assert "report-says-fabric" in got


def test_p2p_through_the_cpu_named_where_turning_p2p_off_helped():
    said = "I'm surprised to see NCCL use P2P through the CPU; recent Intel CPUs have horrible P2P performance.\n"
    report, got = run(said + "I set NCCL_P2P_DISABLE=1 and got a better result.\n")
    assert report.named_cause["rule"] == "p2p-through-cpu" and {2} <= {e.line for e in got["p2p-through-cpu"].evidence}
    # the words alone, with nothing saying P2P was on: no finding
    _, got = run(said + "busbw 5 GB/s\n")
    assert "p2p-through-cpu" not in got


def test_a_reply_that_names_a_cause_leads_after_a_reported_fix():
    # two findings of equal severity: the VM is mentioned, the ACS line is what a reply names as the cause
    text = ("We run the nodes as VMs on Proxmox.\n"
            "IB error 4 is usually due to ACS being enabled and breaking GPU Direct RDMA.\n")
    report, got = run(text)
    assert {"vm-topology", "iommu-in-paste"} <= set(got)
    assert report.named_cause["rule"] == "iommu-in-paste"


def test_gpudirect_rdma_off_is_a_transport_fallback_unless_the_report_names_a_version():
    _, got = run("NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'\n")
    assert got["gdr-not-enabled"].category == "tcp-fallback" and "gdr-disabled-by-version" not in got
    _, got = run("NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'\n"
                 "It broke after we upgraded the driver to 570.\n")
    assert got["gdr-disabled-by-version"].category == "other" and "gdr-not-enabled" not in got
    assert {e.line for e in got["gdr-disabled-by-version"].evidence} == {1, 2}


def test_a_link_the_report_says_is_slow_only_at_idle_is_no_slot_problem():
    _, got = run("The card runs at 2.5 GT/s while it is idle.\n")
    assert "pcie-idle-link-speed" in got and "report-says-pcie-slot" not in got
    _, got = run("The card runs at 2.5 GT/s even under load, on a riser.\n")
    assert "report-says-pcie-slot" in got and "pcie-idle-link-speed" not in got
