"""x4lib.network.topo: the nvidia-smi topo -m reader on stored real outputs (complete and cut), on garbled inputs, and the
ibstat / ibv_devinfo essentials; the topo and ib-ports contracts."""
import json
import os

import jsonschema
import pytest

from conftest import ROOT, load_schema, run_cli
from x4lib.network import topo

DATA = ROOT / "tests" / "data" / "topo"
TOPOS = sorted(DATA.glob("topo_*.txt"))


def read(name):
    t, notes = topo.read_topo(DATA / name)
    return t, topo.topo_doc(t, notes)


def codes(doc):
    return [f["code"] for f in doc["findings"]]


@pytest.mark.parametrize("path", TOPOS, ids=lambda p: p.name)
def test_every_stored_output_reads_and_matches_the_contract(path):
    t, notes = topo.read_topo(path)
    doc = topo.topo_doc(t, notes)
    jsonschema.validate(doc, load_schema("topo_output.schema.json"))
    assert doc["gpus"] and doc["matrix"]["GPU0"]["GPU0"] == "X"
    for a, row in doc["matrix"].items():   # the diagonal is X and only the diagonal
        assert all((v == "X") == (b == a) for b, v in row.items())


def test_h100_hgx_complete_rows():
    t, doc = read("topo_hgx-h100-10nic_nvidia-nccl-1264.txt")
    assert len(doc["gpus"]) == 8 and len(doc["nics"]) == 10
    assert {doc["matrix"]["GPU0"][f"GPU{i}"] for i in range(1, 8)} == {"NV18"}
    g3 = doc["gpus"][3]
    assert g3["nearest_nics"] == ["NIC5"] and g3["nearest_nic_path"] == "PIX"   # GPU3 is not on NIC3
    assert doc["cpu_affinity"]["GPU4"] == "56-111,168-223" and doc["numa_affinity"]["GPU4"] == "1"
    nonlocal_ = [f["message"] for f in doc["findings"] if f["code"] == "nic-not-gpu-local"]
    assert [m.split()[0] for m in nonlocal_] == ["NIC3", "NIC4"]
    assert any("NIC3 ends after 9 of 18" in w for w in doc["warnings"])  # the excerpt is cut there
    assert all(p["nccl_p2p_by_default"] for p in doc["pairs"]) and len(doc["pairs"]) == 28


def test_cross_socket_nic_is_flagged():
    _, doc = read("topo_h100-8gpu-socket0-nics-only_derived-from-nccl-1453.txt")
    cross = [f["message"].split("'")[0] for f in doc["findings"] if f["code"] == "gpu-nic-cross-socket"]
    assert cross == ["GPU4", "GPU5", "GPU6", "GPU7"]
    assert doc["gpus"][0]["nearest_nic_path"] == "PIX"


def test_nic_rows_without_nic_columns_and_a_pasted_cut():
    _, doc = read("topo_h800-8gpu-4nic_liguodongiot-llm-action.txt")
    assert [n["name"] for n in doc["nics"]] == ["NIC0", "NIC1", "NIC2", "NIC3"]
    assert doc["nics"][0]["device"] == "mlx5_0" and doc["nics"][0]["nearest_gpus"] == ["GPU1"]
    no_gdr = [f["message"].split("'")[0] for f in doc["findings"] if f["code"] == "gpu-nic-no-gdr"]
    assert no_gdr == ["GPU0", "GPU2", "GPU4", "GPU5", "GPU6"]  # NODE: beyond PXB
    assert any("'-31,64-95' is not a CPU list" in w for w in doc["warnings"])


def test_old_style_mlx5_columns_and_a_cell_cut_in_half():
    t, doc = read("topo_a100-xl675d-10nic_nccl-tests-152.txt")
    assert doc["nics"][0]["name"] == "mlx5_0" and doc["nics"][0]["device"] == "mlx5_0"
    assert doc["gpus"][0]["nearest_nics"] == ["mlx5_0", "mlx5_1"] and doc["gpus"][0]["nearest_nic_path"] == "PXB"
    assert any("'SY' (cut?)" in w for w in doc["warnings"])
    assert "gpu-nic-cross-socket" not in codes(doc)  # the cut GPU6 row is not judged
    assert "cut" in codes(doc)


def test_no_nvlink_and_sys_between_gpus():
    _, doc = read("topo_8gpu-nvlink-not-shown-10nic_deepseek-deepep-128.txt")
    assert "no-nvlink" in codes(doc) and "no-p2p" in codes(doc)
    assert not any(p["nccl_p2p_by_default"] for p in doc["pairs"])


def test_second_table_is_not_read_as_the_matrix():
    _, doc = read("topo_2x5090-phb-p2p-gns_club-3090-1133.txt")
    assert doc["matrix"] == {"GPU0": {"GPU0": "X", "GPU1": "PHB"}, "GPU1": {"GPU0": "PHB", "GPU1": "X"}}
    assert "no-p2p" in codes(doc) and doc["warnings"] == []


def test_fenced_output_with_prompt_and_two_matrices():
    _, doc = read("topo_2gpu-nv2-and-phb_stas00-ml-engineering.txt")
    assert doc["matrix"]["GPU0"]["GPU1"] == "NV2"  # the first matrix only
    assert doc["findings"][0]["code"] == "nvlink-all-pairs" and "bridge" in doc["findings"][0]["message"]


def test_explain_uses_the_link_data():
    assert "450 GB/s per direction at NVLink 4" == topo.explain("NV18", 4).split("(")[1].rstrip(")")
    assert "900" in topo.explain("NV18", 5) and "UPI" in topo.explain("SYS")
    with pytest.raises(ValueError):
        topo.explain("FOO")


def test_nccl_path_order():
    assert [topo.rank(w) for w in ("X", "NV18", "PIX", "PXB", "PHB", "NODE", "SYS")] == [0, 1, 4, 5, 8, 8, 9]


# --- garbled and cut inputs -------------------------------------------------------------------------------------

GOOD = (DATA / "topo_a100-8gpu_stas00-ml-engineering.txt").read_text()


@pytest.mark.parametrize("text,needle,code", [
    ("hello world\n", "no nvidia-smi topo -m matrix", 2),
    ("", "no nvidia-smi topo -m matrix", 2),
    (GOOD.replace("NV12   X    NV12", "NV12   NV5X NV12", 1), "is not a path", 2),
    (GOOD.replace("GPU1  NV12   X ", "GPU1  NV12   NV12", 1), "own column", 2),
    (GOOD.replace("GPU0   X    NV12", "GPU0   X    X   ", 1), "X outside the diagonal", 2),
    ("\tGPU0\tGPU1\tCPU Affinity\n", "nothing usable", 1),
    ("\tGPU0\tGPU1\nrandom words here\n", "expected a device row", 2),
    (GOOD.replace("GPU3  NV12", "GPU2  NV12", 1), "a second row for GPU2", 2),
])
def test_garbled_matrices_are_refused(tmp_path, text, needle, code):
    with pytest.raises(topo.TopoError, match=needle) as e:
        topo.parse_topo(text, "x")
    assert e.value.exit_code == code


def test_cut_file_reads_as_far_as_complete():
    cut = GOOD[:GOOD.index("\nGPU5") + 1] + "GPU5  NV12  NV"
    t = topo.parse_topo(cut, "x")
    assert t.rows["GPU5"] == {"GPU0": "NV12"} and "GPU5" in t.cut_rows
    assert any("'NV' (cut?)" in w for w in t.warnings)
    assert any("rows missing for GPU6, GPU7" in w for w in t.warnings)


def test_a_cut_that_looks_valid_shows_as_asymmetry():
    t = topo.parse_topo(GOOD[:GOOD.index("\nGPU5") + 1] + "GPU5  NV12  NV1", "x")  # NV12 cut to NV1
    assert any("GPU5-GPU1 is NV1 but GPU1-GPU5 is NV12" in w for w in t.warnings)


def test_a_hundred_thousand_character_line_is_cheap():
    t = topo.parse_topo("\tGPU0\tGPU1\nGPU0\t X \tNV2 " + " " * 100_000 + "x" * 100_000 + "\n", "x")
    assert t.rows["GPU0"]["GPU1"] == "NV2"


@pytest.mark.parametrize("make,needle", [
    (lambda p: p.mkdir(), "is a directory"),
    (lambda p: os.mkfifo(p), "not a regular file"),
    (lambda p: p.write_bytes(b"\x00\x01\x02binary" * 100), "binary file"),
    (lambda p: p.write_bytes(b" " * (topo.MAX_BYTES + 1)), "limit"),
    (lambda p: None, "no such file"),
])
def test_refused_files(tmp_path, make, needle):
    p = tmp_path / "topo.txt"
    make(p)
    with pytest.raises(topo.TopoError, match=needle):
        topo.read_text(p)


def test_utf16_with_bom_and_bad_utf8(tmp_path):
    p = tmp_path / "t.txt"
    p.write_bytes(GOOD.encode("utf-16"))
    assert topo.parse_topo(topo.read_text(p)[0]).rows["GPU7"]["GPU0"] == "NV12"
    p.write_bytes(GOOD.encode() + b"\xff\xfe tail\n")
    text, notes = topo.read_text(p)
    assert notes and "not valid UTF-8" in notes[0]


# --- ibstat / ibv_devinfo ----------------------------------------------------------------------------------------

def test_ibstat_roce_ports():
    text, _ = topo.read_text(DATA / "ibstat_cx7-roce-200g_kvcache-ai-mooncake-1999.txt")
    tool, ports, warns = topo.parse_ib(text)
    assert tool == "ibstat" and [p.ca for p in ports] == ["mlx5_0", "mlx5_1", "mlx5_10"]
    assert (ports[0].state, ports[0].rate_gbit_s, ports[0].link_layer, ports[0].ca_type) == \
        ("Active", 200.0, "Ethernet", "MT4129")
    doc = topo.ib_doc(tool, ports, warns)
    assert doc["ports"][0]["rate_gb_s_per_direction"] == 25.0
    assert [f["code"] for f in doc["findings"]] == ["roce", "roce", "port-down"]


def test_ibstat_infiniband_port_and_a_tool_error_line():
    text, _ = topo.read_text(DATA / "ibstat_ib-200g_leptonai-gpud-752.txt")
    tool, ports, warns = topo.parse_ib(text)
    assert ports[0].link_layer == "InfiniBand" and ports[0].sm_lid == 1 and ports[0].base_lid == 13305
    assert warns and "ibpanic" in warns[0]


def test_ibv_devinfo():
    text, _ = topo.read_text(DATA / "ibv_devinfo_cx6dx-and-cx7_deepseek-deepep-60.txt")
    tool, ports, _ = topo.parse_ib(text)
    assert tool == "ibv_devinfo" and ports[0].ca == "mlx5_12" and ports[0].active_mtu == "1024 (3)"
    assert topo.ib_findings(ports)[0]["code"] == "port-down"


def test_slow_port_and_missing_lid():
    text = ("CA 'mlx5_0'\n\tPort 1:\n\t\tState: Active\n\t\tRate: 400\n\t\tBase lid: 3\n\t\tLink layer: InfiniBand\n"
            "CA 'mlx5_1'\n\tPort 1:\n\t\tState: Active\n\t\tRate: 200\n\t\tBase lid: 0\n\t\tLink layer: InfiniBand\n")
    _, ports, _ = topo.parse_ib(text)
    assert [f["code"] for f in topo.ib_findings(ports)] == ["no-lid", "slow-port"]


@pytest.mark.parametrize("text,needle", [("nothing here\n", "neither ibstat"), ("CA 'mlx5_0'\n\tCA type: x\n", "no port"),
                                         ("\tGPU0\tGPU1\n", "nvidia-smi topo")])
def test_bad_ib_inputs(text, needle):
    with pytest.raises(topo.TopoError, match=needle):
        topo.parse_ib(text)


# --- command line ------------------------------------------------------------------------------------------------

def test_topo_cli_contract():
    r = run_cli("topo", str(DATA / "topo_h100-8gpu-9nic_nvidia-nccl-1453.txt"), "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    jsonschema.validate(d, load_schema("topo_output.schema.json"))
    assert d["matrix"]["GPU0"]["GPU1"] == "NV18" and d["gpus"][0]["nearest_nics"] == ["NIC8"]


def test_ib_ports_cli_contract():
    r = run_cli("ib-ports", str(DATA / "ibstat_cx7-roce-200g_kvcache-ai-mooncake-1999.txt"), "--json")
    assert r.returncode == 0, r.stderr
    jsonschema.validate(json.loads(r.stdout), load_schema("ib_ports_output.schema.json"))


@pytest.mark.parametrize("cmd,content,needle,code", [
    ("topo", None, "no such file", 2),
    ("topo", b"GPU0 X\x00\x00\x00", "binary", 2),
    ("topo", b"not a matrix\n", "no nvidia-smi topo -m matrix", 2),
    ("topo", b"\tGPU0\tGPU1\n", "nothing usable", 1),
    ("ib-ports", b"random\n", "neither ibstat", 2),
])
def test_cli_bad_input_one_line(tmp_path, cmd, content, needle, code):
    p = tmp_path / "in.txt"
    if content is not None:
        p.write_bytes(content)
    r = run_cli(cmd, str(p))
    assert r.returncode == code and "Traceback" not in r.stderr, r.stderr
    assert needle in r.stderr.strip().splitlines()[-1]
