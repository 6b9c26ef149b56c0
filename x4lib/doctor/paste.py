"""What people paste: tool fragments and the sentences around them, found inside any text (a bug report in markdown,
code fences, quoted replies ``> >``, tables, logs behind launcher prefixes), each read into the doctor's findings
with the line that proves it.

:func:`scan` reads the text line by line. Every line is first cleaned of what wraps it in a paste (quote markers,
list bullets, backticks, a Ray worker prefix ``(RayWorkerWrapper pid=593, ip=...)``) and cut to
:data:`MAX_LINE` characters; then each pattern of :data:`SIGNALS` runs on it only when the pattern's literal cue is
in the line, so the time is linear in the text's length whatever the text is. A signal is either a **tool
fragment** (an NCCL/RCCL INFO or WARN line, an nccl-tests row or its ``# Avg bus bandwidth`` line, ``nvidia-smi``
query fields, ``lspci`` ``LnkSta``, ``dmesg`` Xid/AER/DMAR lines, ``numactl``/``lscpu`` NUMA lines, PyTorch's TF32
messages...) or a **sentence** the reporter wrote that states a fact a rule needs ("NCCL was using socket",
"connected via PCIe riser", "throttles ... at 84 degrees"). Findings quote the line and its number in the pasted
text. Sentences are read as the reporter's statement, never as proof from a tool: their rules say so in their
title ("the report says ...").

:func:`findings` turns the signals into findings of the rules of x4lib/data/doctor_rules.yaml, with the expected
figure from the book's models where the paste gives a number: a PCIe link's line rate per direction
(``x4lib.network.links``), NVLink's line rate per direction and NCCL's achievable ring busbw
(``x4lib.network.collectives``), a GPU's dense peak beside the sparse datasheet figure (the catalog).
:func:`next_command` names the one command that would decide when the paste holds no cause.

Nothing in a paste is executed. Used by :mod:`x4lib.doctor.diagnose` (``doctor --from``, ``--from -``).
"""
from __future__ import annotations

import dataclasses
import re

from x4lib.doctor.findings import MAX_LINE, Finding, Lines, Quantity, new_finding
from x4lib.doctor.paste_figures import (busbw_hit, dtype_not_native, first_busbw, fp32_ratio, line_rate_expectation,
                                       sparse_expectation)

#: most lines kept per signal
MAX_HITS = 16
#: most lines whose cues send them to the patterns (a bound on the time a hostile text can take: about 10 s on a
#: slow shared core); the lines after it are still read by the tool readers, and the report says where it stopped
MAX_CANDIDATES = 50_000
#: most characters the patterns may read in all (line length × patterns tried, summed): the other bound, for texts of
#: long lines full of cues; a real paste uses well under a tenth of it
MAX_WORK_CHARS = 40_000_000

_I = re.IGNORECASE
_QUOTE_RE = re.compile(r"^[ \t]*(?:>[ \t]?){1,16}")
_RAY_RE = re.compile(r"^\(\w{1,60} pid=[0-9]{1,9}(?:, ip=[0-9A-Fa-f.:]{1,45})?\)[ \t]*")
_BULLET_RE = re.compile(r"^(?:[-*+][ \t]+|[0-9]{1,3}\.[ \t]+)")


def clean(line: str) -> str:
    """A pasted line without what wraps it: quote markers, a Ray prefix, a list bullet, backticks; cut to
    MAX_LINE characters."""
    s = _QUOTE_RE.sub("", line[:MAX_LINE])
    s = _RAY_RE.sub("", s.strip())
    s = _BULLET_RE.sub("", s).strip().strip("`").strip()
    return s


@dataclasses.dataclass(frozen=True)
class Signal:
    """One pattern: its id, the fragment kind it proves was pasted, the literal cue (lower case) that must be in
    the line before the regex runs, and the regex."""
    id: str
    fragment: str
    cue: tuple[str, ...]
    regex: re.Pattern


def _s(sid, fragment, cue, pattern, flags=_I):
    return Signal(sid, fragment, tuple(c.lower() for c in ((cue,) if isinstance(cue, str) else cue)),
                  re.compile(pattern, flags))


_GBPS = r"([0-9]{1,5}(?:\.[0-9]{1,4})?) ?(?:GB/s|GBps|GB/S|GB/sec)"
SIGNALS: tuple[Signal, ...] = (
    # -- NCCL / RCCL lines
    _s("nccl-socket", "nccl-line", ("net/socket", "network socket"),
       r"NET/Socket ?: ?Using|Using (?:internal )?network Socket|via NET/Socket/"),
    _s("nccl-ib-nodevice", "nccl-line", ("no device found", "libibverbs"),
       r"NET/IB ?: ?No device found|Failed to open libibverbs|NET/OFI.{0,60}(?:fail|No .{0,20}found)"),
    _s("nccl-ib-used", "nccl-line", ("net/ib", "network ib", "libfabric"),
       r"Using network (?:IB|AWS Libfabric)|via NET/IB|via NET/AWS"),
    _s("nccl-ib-disable", "nccl-env", "nccl_ib_disable", r"NCCL_IB_DISABLE\s*(?:=|set by environment to)\s*1\b"),
    _s("nccl-net-socket-env", "nccl-env", "nccl_net", r"NCCL_NET\s*(?:=|set by environment to)\s*\"?Socket\b"),
    _s("nccl-cumem-off", "nccl-env", "nccl_cumem_enable",
       r"NCCL_CUMEM_ENABLE\s*(?:=|set by environment to)\s*0\b"),
    _s("nccl-no-p2p", "nccl-line", "could not enable p2p", r"Could not enable P2P between dev [0-9]"),
    _s("nccl-via-shm", "nccl-line", ("via shm", "via direct shared memory"),
       r"Channel [0-9]{1,3}.{0,120}via (?:SHM/|direct shared memory)"),
    _s("nccl-via-p2p", "nccl-line", ("via p2p", "isalldirectp2p 1"), r"via P2P/|isAllDirectP2p 1"),
    _s("nccl-p2p-level-loc", "nccl-env", "nccl_p2p_level",
       r"NCCL_P2P_LEVEL\s*(?:=|set by environment to)\s*(?:LOC|0)\b"),
    _s("nccl-p2p-level-sys", "nccl-env", "nccl_p2p_level",
       r"NCCL_P2P_LEVEL\s*(?:=|set by environment to)\s*(?:SYS|PHB|NODE)\b"),
    _s("nccl-p2p-disable", "nccl-env", "nccl_p2p_disable",
       r"NCCL_P2P_DISABLE\s*(?:=|set by environment to)\s*1\b"),
    _s("nccl-gdr-distance", "nccl-line", "gpu direct rdma disabled",
       r"GPU Direct RDMA Disabled for GPU .{0,40}\(distance [0-9] ?> ?[0-9]\)"),
    _s("gpu-name-no-p2p", "nccl-line", "geforce",
       r"(?:Rank\s+[0-9]{1,4}\b.{0,80}|GPU [0-9]{1,3}: |\|\s+[0-9]{1,2}\s+)NVIDIA GeForce RTX [45]0[0-9]0"),
    _s("nccl-gdr-level", "nccl-env", "nccl_net_gdr_level",
       r"NCCL_NET_GDR_LEVEL\s*(?:=|set by environment to)\s*(?:SYS|PHB|NODE|[3-9])\b"),
    _s("mnnvl", "sentence", ("gb200", "gb300", "nvl72", "mnnvl", "multi-node nvlink", "imex"),
       r"\bGB[23]00\b|NVL72|MNNVL|multi-node NVLink|IMEX"),
    _s("nccl-topo-file", "nccl-env", ("nccl_topo_file", "nccl_top_file"), r"NCCL_TOPO?_FILE"),
    _s("nccl-affinity", "nccl-line", "setting affinity for gpu", r"Setting affinity for GPU"),
    _s("nccl-iommu-pt", "nccl-line", "iommu=pt", r"Missing \"iommu=pt\""),
    # the network plugin (aws-ofi-nccl for EFA, the TCPX/TCPXO plugins on GCP) that NCCL could not load
    _s("nccl-net-plugin-missing", "nccl-line", "net/plugin",
       r"NET/Plugin ?: ?(?:No plugin found|Plugin load (?:\(\S{1,60}\) )?returned|Could not find)"),
    _s("net-plugin-prose", "sentence", ("plugin", "aws-ofi-nccl", "libnccl-net", "ofi"),
       # the reporter's words, not NCCL's own plugin lines (read above, where a fabric needs the plugin)
       r"^(?!.{0,200}(?:NCCL (?:INFO|WARN)|/Plugin ?:))(?:.*?)(?:\b(?:OFI|aws-ofi-nccl|libnccl-net\S{0,20}|(?:NCCL |net(?:work)? |EFA |TCPXO? )plugin)\b.{0,60}?\b(?:not (?:found|"
       r"loaded|installed|present|included|in)|missing|fail\w{0,3}|cannot|can'?t|could not|couldn'?t)\b"
       r"|\b(?:cannot|can'?t|could not|couldn'?t|fail\w{0,3} to|does not|doesn'?t) (?:find|load|include|open)\b.{0,40}?"
       r"(?:\bOFI\b|aws-ofi-nccl|libnccl-net|\bnet(?:work)? plugin\b|\bTCPXO? plugin\b))"),
    # the reporter asks for the cloud fabric's own transport to be turned on ("We'd need to enable GPUDirect-TCPx",
    # a title "[GCP] enable GPUDirect-TCPX"): until it is, NCCL runs without its plugin, over sockets
    _s("fabric-off-prose", "sentence", ("tcpx", "efa"),
       r"\b(?:need\w{0,2} to|ha(?:ve|s) to|must|should|in order to)\s+(?:enable|use|install|configure|set ?up)\s+"
       r"(?:the\s+)?\[?(?:GPUDirect[- ]TCPXO?|TCPXO?|EFA)\b|^\W{0,3}(?:\[[^\]]{1,20}\]\s*)?(?:enable|support)\s+\[?"
       r"(?:GPUDirect[- ]TCPXO?|TCPXO?|EFA)\b"),
    _s("plugin-fabric", "sentence", ("efa", "tcpx", "p4d", "p5", "a3-"),
       r"\bEFA\b|\bTCPXO?\b|\bp4de?\b|\bp5(?:e|en)?\b|\ba3-(?:high|mega|ultra)"),
    # GPUDirect RDMA: NCCL's line for an HCA without the peer-memory module, and the reporter's words
    _s("nccl-gdr-off", "nccl-line", "gpu direct rdma disabled for hca",
       r"NET/(?:IB|UCX|OFI|AWS Libfabric)\s*:\s*GPU Direct RDMA Disabled for HCA"),
    _s("nccl-gdr-on", "nccl-line", ("gpu direct rdma enabled", "/gdrdma"),
       r"GPU Direct RDMA (?:\(DMABUF\) )?Enabled for HCA|via NET/\S{1,40}/GDRDMA"),
    # a receiving channel over the IB transport without "/GDRDMA": that connection stages through host memory. Only
    # receives: NCCL sends with GPUDirect only where GDR reads are on (NCCL_NET_GDR_READ), so a plain send is normal
    _s("nccl-net-ib-no-gdr", "nccl-line", "via net/ib/", r"\[receive\] via NET/IB/[0-9]{1,3}(?:/Shared)?\s*$"),
    _s("gdr-prose", "sentence", ("gdr", "gpudirect", "gpu direct", "peermem", "peer_mem", "peer mem", "dma"),
       # GPUDirect-TCPX(O) is GCP's socket transport, not RDMA
       r"\b(?:GPU ?Direct(?! ?-?TCPX)(?: RDMA)?|GDR(?:DMA)?)\b.{0,40}?\b(?:not (?:enabled|used|working|supported|active|on|"
       r"available)|disabled|off)\b|\b(?:enabl\w{1,3}|turn\w{0,3} on|load\w{0,3}|install\w{0,3})\b.{0,20}?\b(?:the )?(?:GPU ?Direct"
       r"(?! ?-?TCPX)(?: RDMA)?|GDR(?:DMA)?|nvidia[-_]peermem|nv_peer_mem)\b"
       # turned on, and faster for it: it was off ("a significant increase with GDRDMA enabled")
       r"|\b(?:with|after) (?:GPU ?Direct(?! ?-?TCPX)(?: RDMA)?|GDR(?:DMA)?) (?:enabled|on|turned on)\b"
       r"|\b(?:nvidia[-_]peermem|nv_peer_mem)\b.{0,30}?\b(?:not "
       r"(?:loaded|found|installed|present)|missing)\b"
       # the NIC's DMA to and from GPU memory said to be off ("DMA transfers between the GPU and NIC are disabled")
       r"|\bDMA\b.{0,20}?\bbetween (?:the )?GPUs? and (?:the )?NICs?\b.{0,30}?\b(?:disabled|not (?:enabled|working|possible))\b"),
    _s("nccl-info", "nccl-line", ("nccl info", "nccl warn"), r"NCCL (?:INFO|WARN)\b", 0),
    # the two-node tree named as the reason a busbw beats the network (NCCL prices the tree on two nodes at the
    # node's inner bandwidth: tuning.cc, "nNodes <= 2 ? bwIntra : bwInter")
    _s("two-node-tree-prose", "sentence", ("tree", "network bottleneck"),
       r"\b(?:two|2) nodes?\b.{0,80}?\b(?:tree|NVLS ?Tree)\b|\b(?:tree|NVLS ?Tree)\b.{0,80}?\b(?:two|2)[- ]nodes?\b"
       r"|\bbeyond the network (?:bottleneck|bandwidth|line rate)\b|\bfewer inter-?node (?:data )?transm\w{1,10}\b"),
    # -- nccl-tests
    _s("nccltests-row", "nccl-tests-row", ("sum", "prod", "max", "min", "avg", "none"),
       r"^[0-9]{1,12}\s+[0-9]{1,12}\s+(?:float|half|bfloat16|double|u?int(?:8|32|64))\s+(?:sum|prod|max|min|avg|none)"
       r"\s+-?[0-9]{1,3}\s+[0-9.]{1,14}\s+([0-9]{1,9}(?:\.[0-9]{1,4})?)\s+([0-9]{1,9}(?:\.[0-9]{1,4})?)\b"),
    _s("nccltests-avg", "nccl-tests-row", "avg bus bandwidth",
       r"# ?Avg bus bandwidth\s*:\s*([0-9]{1,9}(?:\.[0-9]{1,6})?)\b"),
    _s("busbw-prose", "busbw-figure", ("busbw", "bus bandwidth", "algbw"),
       r"(?:busbw|bus ?bandwidth|algbw)\D{0,30}" + _GBPS),
    # -- InfiniBand port rates: ibstat/ibstatus "rate:", a rate the reporter states, "4X EDR" in words
    _s("ibstat-rate", "ibstat", "rate:",
       r"^rate:\s*([0-9]{1,4}) Gb/sec \(([0-9]{1,2})X ?([A-Z]{3})?\)|^Rate:\s*([0-9]{1,4})$", 0),
    _s("ib-rate-stated", "sentence", ("gb/s", "gbps", "gbit", "gb/sec"),
       # bits, not bytes: the unit is read case-sensitively (Gb/s, Gbps; not GB/s)
       r"\b([0-9]{2,4}) ?(?:Gb/s(?:ec)?|Gbps|gbps|Gbit/s)(?![\w/])(?:.{0,40}?\b(?:[Ii]nfini[Bb]and|IB|[Bb]andwidth|[Nn]etwork"
       r"|NICs?|HCAs?|[Ll]inks?|[Cc]ables?|[Pp]orts?)\b)|\b(?:[Ii]nfini[Bb]and|IB|[Nn]etwork|NICs?|HCAs?)\b.{0,40}?\b"
       r"([0-9]{2,4}) ?(?:Gb/s(?:ec)?|Gbps|gbps|Gbit/s)(?![\w/])", 0),
    _s("ib-width-prose", "sentence", ("edr", "hdr", "ndr", "fdr", "xdr", "qdr"),
       r"(?<![(\w])4 ?[xX×] ?(?:QDR|FDR|EDR|HDR|NDR|XDR)\b"),
    # -- nvidia-smi, power and clocks
    _s("smi-reason-active", "nvidia-smi", ("power cap", "slowdown", "power_cap", "thermal", "nvmlclocks"),
       r"(?:SW Power Cap|HW Slowdown|HW Thermal Slowdown|HW Power Brake Slowdown|SW Thermal Slowdown)\s*:\s*Active"
       r"|clocks_(?:event|throttle)_reasons\.(?:sw_power_cap|hw_slowdown|hw_thermal_slowdown|hw_power_brake"
       r"_slowdown|sw_thermal_slowdown)\b(?!\s*\[)|\bsw_power_cap\b.{0,40}\bactive\b"
       # NVML's own names, as a program that asked NVML prints them
       r"|nvmlClocks(?:Throttle|Event)Reason(?:SwPowerCap|HwSlowdown|HwThermalSlowdown|HwPowerBrakeSlowdown"
       r"|SwThermalSlowdown)\b"),
    _s("power-limit-set", "sentence", ("-pl", "power-limit", "power limit", "power cap", "capped"),
       r"nvidia-smi\b.{0,20}\s(?:-pl|--power-limit)[= ]?[0-9]{2,4}\b|\bpower[- ](?:limit|cap)\w{0,2}\b.{0,30}"
       r"\b(?:set|lowered|reduced|capped|limited)\b.{0,20}\b[0-9]{2,4} ?W\b|\b(?:capped|limited) (?:at|to) [0-9]{2,4} ?W\b"),
    _s("power-limit-default", "nvidia-smi", "default",
       r"limit\s*[=:]\s*([0-9]{1,4}(?:\.[0-9]{1,2})?) ?W\W{0,4}default\s*[=:]\s*([0-9]{1,4}(?:\.[0-9]{1,2})?) ?W"),
    # clocks locked by hand: nvidia-smi's lock options or NVML's calls behind them (a locked range holds the clocks)
    _s("clock-lock", "sentence", ("-lgc", "-lmc", "lock-gpu-clocks", "lock-memory-clocks", "lockedclocks",
                                  "applications-clocks", "locked clock", "locked-clock"),
       r"nvidia-smi\b.{0,40}?\s(?:-lgc|-lmc|--lock-gpu-clocks|--lock-memory-clocks|--applications-clocks)\b"
       r"|\bnvmlDeviceSet(?:Gpu|Memory)LockedClocks\b|\bnvmlDeviceSetApplicationsClocks\b"
       r"|\b(?:memory|GPU|graphics|SM) locked[- ]clocks?\b"),
    _s("smi-summary", "nvidia-smi", ("nvidia-smi", "pwr:usage/cap", "perf  pwr"),
       r"NVIDIA-SMI [0-9]{3}|Pwr:Usage/Cap"),
    _s("thermal-prose", "sentence", ("overheat", "throttl", "degrees", "°c", "stuck at", "mhz", "exceed", "bit flip",
                                     "bit-flip", "bitflip", "power budget"),
       # power set by the data: fewer bits flipping draw less power within the same budget (random vs. zero inputs)
       r"\bbit[- ]?flip\w{0,4}\b.{0,120}?\bpower\b|\bpower budget\b.{0,80}?\b(?:bits?|data|inputs?|values?)\b"
       r"|\b(?:clocks?|frequenc\w{1,3}|freq)\b.{0,60}?\b(?:reduc\w{1,5}|drop\w{0,3}|decreas\w{1,3}|lower\w{0,3}|fall\w{0,3}|fell)"
       r"\b.{0,60}?[0-9]{3,4} ?MHz|\bpower\b.{0,40}?\b(?:exceed\w{0,3}|over|above|hit\w{0,3}|reach\w{0,3})\b.{0,20}?"
       r"\b(?:power )?(?:limit|cap|TDP)\b|overheat|\bthrottl\w{0,5}\b.{0,80}(?:[0-9]{2,3} ?(?:°C|degrees)|clock)|clock\w{0,2} (?:dropped|drops|fell)"
       r".{0,60}MHz|stuck at [0-9]{1,4} ?W\b|\bclocks?\b.{0,40}\b(?:stuck|locked|pinned|capped|never (?:goes|rises|leaves|"
       r"exceeds))\b.{0,40}\b[0-9]{2,4} ?MHz|\b(?:9[0-9]|8[5-9]) ?(?:°C|degrees)"),
    # -- PCIe
    _s("lspci-lnksta", "lspci", "lnksta", r"LnkSta:\s*Speed ([0-9.]{1,5})GT/s"),
    _s("lspci-acs-on", "lspci", "acsctl",
       r"ACSCtl:\s*(?:SrcValid\+|0x0*[1-9a-fA-F][0-9a-fA-F]{0,3}\b)"),
    _s("lspci-lnkcap", "lspci", "lnkcap", r"LnkCap:.{0,40}Speed ([0-9.]{1,5})GT/s, Width x([0-9]{1,2})"),
    _s("lspci-lnksta-full", "lspci", "lnksta", r"LnkSta:\s*Speed ([0-9.]{1,5})GT/s( \(downgraded\))?, Width x([0-9]{1,2})"
       r"( \(downgraded\))?"),
    _s("pcie-table", "sentence", ("gen", "pcie"),
       r"Gen ?([1-6])\W{0,3}[x×] ?([0-9]{1,2})\b.{1,60}?Gen ?([1-6])\W{0,3}[x×] ?([0-9]{1,2})\b"),
    _s("pcie-lanes-report", "sentence", "lanes negotiated",
       r"x([0-9]{1,2}) lanes negotiated \(GPU max x([0-9]{1,2})"),
    _s("pcie-prose", "sentence", ("riser", "chipset", "downgraded", "downtrained", "x16", "x8", "x4", "x1", "gen",
                                  "gt/s"),
       r"\briser\b|\bvia (?:the )?chipset\b|\bchipset[- ]attached\b|\bdown(?:graded|trained)\b"
       r"|\b(?:x1|x4|x8)\b.{0,30}\b(?:instead of|rather than|not|but|of a possible|vs\.?)\b.{0,20}\bx16\b"
       r"|\b(?:only|runs? at|running at|stuck at|negotiat\w{0,3} (?:at|to)?)\s*(?:PCIe )?(?:x[148]|Gen ?[12]\b|2\.5 ?GT/s)"
       r"|\b(?:actual|real|negotiated) (?:connection|link|lane)\w{0,1}(?: (?:speed|width))?\b.{0,30}\b(?:is|at) x[148]\b"
       r"|(?<![-0-9.])2\.5 ?GT/s(?![-0-9])"
       # the reporter's rule of thumb: the card should run at x16, anything lower is the slot
       r"|\bshould (?:be|run at|run in) (?:PCIe )?x16\b|\b(?:anything|something) (?:lower|less|below)\b.{0,20}\bx16\b"
       r"|\bx16\b.{0,40}\b(?:anything|something) (?:lower|less)\b"),
    # the link said to slow down at idle ("a resting low power state when it's not being used ... 2.5 GT/s")
    _s("pcie-idle-prose", "sentence", ("idle", "resting", "low power", "low-power", "not being used", "not in use"),
       r"\b(?:idle|resting|low[- ]power (?:state|mode)|(?:not being|not in) use\w?)\b.{0,100}?(?:\b2\.5 ?GT/s\b|\bGen ?1\b|"
       r"\blink (?:speed|gen\w{0,8})\b|\b(?:jumps?|goes|rises|switch\w{0,3}) (?:up )?to (?:8|16|32) ?GT/s\b)"
       r"|(?:\b2\.5 ?GT/s\b|\bGen ?1\b|\blink (?:speed|gen\w{0,8})\b).{0,100}?\b(?:(?:when|while) (?:it'?s |the GPU is )?"
       r"(?:idle|not (?:being )?used|not in use)|at idle|idles?)\b"),
    _s("dmesg-aer", "dmesg", "aer", r"\bAER: .{0,40}(?:Corrected|Uncorrected|error)"),
    # -- virtualisation, ACS, IOMMU
    _s("vm-prose", "sentence", ("virtual machine", "sr-iov", "pass-through", "passthrough", "qemu", "kvm",
                                "hypervisor", "vfio", "vmware", "esxi", "hyper-v", "proxmox", "vm"),
       r"virtual machine|SR-IOV|pass-?through|\bQEMU\b|\bKVM\b|hypervisor|\bvfio(?:-pci)?\b|VMware|ESXi|Hyper-V"
       r"|Proxmox|\b(?:a|the|our|my|in|inside|on|cloud|guest) VMs?\b"),
    _s("dmesg-iommu", "dmesg", ("dmar", "amd-vi", "io_page_fault", "iommu", "acs"),
       r"DMAR: \[?DMA|DMAR:.{0,40}fault|AMD-Vi: .{0,40}IO_PAGE_FAULT|intel_iommu=on|\b(?:amd_)?iommu=on\b"
       r"|DMAR: IOMMU enabled|\bIOMMU\b.{0,30}\b(?:enabled?|is on|turned on)\b|pci=noacs|\bACS\b.{0,40}\b(?:enabled|"
       r"disabl\w{1,3}|on)\b"),
    _s("iommu-off-prose", "sentence", "iommu", r"\b(?:intel_|amd_)?iommu=(?:off|pt)\b|\b(?:disabl\w{1,3}|turn\w{0,3} off)"
       r"\b.{0,20}\bIOMMU\b|\bIOMMU\b.{0,20}\b(?:disabled|off)\b|\bIOMMU\s*=\s*Disabled?\b"),
    _s("dmesg-xid", "dmesg", "xid", r"NVRM: Xid \(.{0,40}\): ([0-9]{1,4})"),
    # -- NUMA, binding
    _s("numa-prose", "sentence", ("bind", "nps", "numa", "numa node", "unbound", "socket"),
       r"\bunbound\b|cpu[_-]bind\S{0,3}\s*=?\s*\"?(?:verbose,)?none|--bind-to (?:socket|none)|\bNPS ?[124]\b"
       r"|NUMA nodes? per socket|\b(?:different|other|remote|opposite|wrong)\s+(?:NUMA(?: nodes?)?|(?:CPU )?sockets?)\b"
       r"|cross[- ](?:socket|NUMA)|across (?:the )?(?:two |both )?(?:CPU )?sockets|--cpunodebind|--membind"),
    _s("numactl", "numactl", ("numa node", "available:"),
       r"^NUMA node[0-9]{1,3} CPU\(s\):|^available: [0-9]{1,3} nodes|^node [0-9]{1,3} cpus:"),
    _s("nic-pairing-prose", "sentence", "nic", r"same NIC|wrong NIC|NIC ?[0-9]? is closer"),
    # one queue pair per connection on a bonded (LAG) port: each QP is carried by one physical port of the bond
    _s("bond-single-qp", "sentence", ("qp", "queue pair", "qps_per_connection"),
       r"\b(?:single|one|1) (?:QP|queue pair)\b.{0,80}?\b(?:one|single|1) (?:port|link)\b"
       r"|\b(?:one|single|1) (?:port|link)\b.{0,80}?\b(?:single|one|1) (?:QP|queue pair)\b"
       r"|\bNCCL_IB_QPS_PER_CONNECTION\b.{0,60}?\b(?:bond\w{0,3}|LAG|both ports|two ports)\b"
       r"|\b(?:bond\w{0,3}|LAG)\b.{0,80}?\b(?:QPs?|queue pairs?)\b"),
    # the reporter says traffic crosses the link between CPU sockets (QPI/UPI, the I/O hubs of older Intel servers)
    _s("cross-socket-prose", "sentence", ("qpi", "upi", "ioh", "i/o hub", "inter-socket", "intersocket", "smp interconnect",
                                          "cross numa", "cross-numa", "cross socket", "cross-socket"),
       r"\b(?:over|across|through|via|crossing|cross) (?:the )?(?:QPI|UPI|inter-?socket (?:link|bus)|SMP interconnect)\b"
       r"|\b(?:QPI|UPI)\b.{0,60}?\b(?:slow|low|limit\w{0,3}|bottleneck)\b|\bdifferent (?:I/O ?Hubs?|IOHs?)\b"
       # a problem the reporter names as cross-NUMA or cross-socket traffic (not a binding setting: cpu-binding)
       r"|\bcross[- ](?:NUMA|socket)\b.{0,30}?\b(?:issues?|problems?|traffic|penalty|communication|bottleneck)\b"),
    # -- P2P stated in prose, AMD peers
    _s("p2p-prose", "sentence", ("p2p", "peer"),
       r"\bp2p\b.{0,40}\b(?:disabled?|can'?t be enabled|cannot be enabled|not (?:supported|enabled|capable))"
       r"|\b(?:disabl\w{0,3}|override\w?)\b.{0,30}\bp2p\b|chipset not supported|not P2P-capable"
       r"|CANNOT Access Peer|Peer access .{0,60}: ?No\b|can_?access_?peer\w{0,10}\W{0,6}(?:0|False)\b"
       r"|\bpeer[- ]to[- ]peer\b.{0,40}\b(?:disabled?|not (?:supported|enabled|available))"
       # RCCL skips its P2P transport across a PCIe switch unless fine-grained PCIe memory is forced
       r"|\b(?:skip\w{0,3}|not use\w?|disabl\w{1,3})\b.{0,20}?\bp2p ?Trans?port\b|\bp2p ?Trans?port\b.{0,10}\bis skipped\b"
       r"|\b(?:don'?t|do not|doesn'?t|does not|can'?t|cannot) (?:support|use|do) (?:GPU ?Direct )?(?:P2P|peer[- ]to[- ]peer)\b"
       # P2P turned back on, and the figure rose: it was off ("export NCCL_P2P_DISABLE=0, bandwidth has reached 220GB/s")
       r"|(?:NCCL_P2P_DISABLE\s*=\s*0\b|\bunset\w{0,3}\s+NCCL_P2P_(?:LEVEL|DISABLE)\b|\b(?:enabl\w{1,3}|turn\w{0,3} on)"
       r"\s+(?:the\s+)?(?:P2P|peer[- ]to[- ]peer)\b).{0,80}(?:\breach\w{0,3}\b|\bfaster\b|\bimprov\w{0,5}\b"
       r"|\bspeed ?up\b|[0-9] ?GB/s)"),
    _s("amd-no-peers", "rocm-tool", ("peers:false", "no peers found"), r"peers:false|No peers found"),
    _s("transport-prose", "sentence", ("socket", "instead of", "not us", "without", "fall", "no infiniband", "no ib",
                                       "no rdma", "ofed", "rdma-core", "libibverbs"),
       r"\b(?:NCCL|nccl)\b.{0,80}?\b(?:using|used|uses|fell back to|falls back to|fallback to)\b.{0,24}?\bsocket"
       r"|\bIB (?:wasn'?t|was not|is not|isn'?t) being used|instead of (?:InfiniBand|IB|RDMA|RoCE|EFA)\b"
       r"|\b(?:TCP|sockets?|ethernet)\b.{0,30}\binstead of\b|\bnot (?:using|use|used) (?:InfiniBand|IB|RDMA|RoCE|EFA|"
       r"GPUDirect|TCPX)\b|\bwithout (?:RDMA|InfiniBand|EFA|GPUDirect|TCPXO?)\b|\bfalls? back to (?:TCP|sockets?)\b"
       # the RDMA stack missing, or the reporter's finding that there was no InfiniBand
       r"|\bno (?:InfiniBand|IB|RDMA)\b(?! ?(?:device|port)s? (?:found|detected))|\binstall\w{0,3}\s+(?:the\s+)?(?:MOFED|"
       r"MLNX_OFED|OFED|rdma-core|libibverbs)\b"),
    _s("p2p-cpu-prose", "sentence", ("root port", "pci switch", "pcie switch", "compared to shm", "p2p"),
       r"separate (?:CPU )?root ports|(?:don'?t|do not) have (?:a )?PCIe? switch|compared to SHM"
       # P2P said to go through the CPU ("I'm surprised to see NCCL use P2P through the CPU")
       r"|\bP2P\b.{0,20}?\b(?:through|via|over|across) (?:the )?(?:CPU|root complex|host bridge)\b"),
    # -- expectations
    # the sparse figure named as such ("the reported number you have is "sparsity" number ... doubled")
    _s("sparse-prose", "sentence", ("sparsity", "sparse"),
       r"\bsparsity\b\W{0,3}.{0,60}?\b(?:number|figure|peak|T?FLOPS|spec\w{0,9}|doubled?|twice)\b"
       r"|\b(?:number|figure|peak|T?FLOPS|spec\w{0,9})\b.{0,40}?\b(?:with|assum\w{1,3}|includ\w{1,4}) (?:2:4 |structured )?"
       r"sparsity\b|\bsparse (?:number|figure|peak|T?FLOPS|spec\w{0,9})\b"),
    _s("expectation-prose", "sentence", ("line rate", "theor", "claim", "datasheet", "total", "bi-direc",
                                         "bidirec", "advertised", "spec", "peak", "nominal", "rated", "direction",
                                         "algbw", "% of", "instead of", "according to", "capable of", "aggregate",
                                         "should", "max", "expect", "双向", "单向", "both directions", "sum of"),
       r"line rate|theor\w{0,6}\b|\bclaim\w{0,2}\b|datasheet|\btotal bandwidth\b|\bbi-?directional\b"
       # a figure said to add both directions ("900 GB/s is the sum of both directions")
       r"|\b(?:sum|total) of (?:the )?(?:both|two) directions\b|\bboth directions (?:added|combined|summed|together)\b"
       # the same words in Chinese: bidirectional (双向) against unidirectional (单向), as a figure's label
       r"|双向.{0,20}?单向|单向.{0,20}?双向|[0-9] ?(?:GB/s|TB/s)\s*(?:是|为)?\s*双向"
       r"|\b(?:is|are) (?:exactly |just )?what (?:we|you|I|one)(?:'d| would) expect\b"
       r"|\b(?:advertised|spec(?:ification)?s?|peak|nominal|rated|max(?:imum)?)\b.{0,40}\b(?:[0-9]{2,5} ?(?:GB/s|TB/s|TFLOPS|Gb/s|Gbps)"
       r"|bandwidth|TFLOPS)|\bper direction\b|\buni-?directional\b|\b(?:busbw|algbw)\b.{0,30}\b(?:vs\.?|versus|instead of|compared|rather than|not)\b.{0,20}\b(?:busbw|algbw)\b"
       r"|\b(?:only|just) (?:get(?:ting)? |reach(?:ing)? |achiev\w{1,3} )?(?:about |around |~)?[0-9]{1,3} ?% of\b"
       r"|\binstead of (?:the )?(?:expected )?(?:about |around |~)?[0-9]{1,5}(?:\.[0-9]{1,2})? ?(?:GB/s|GB|Gb/s|Gbps|TB/s)"
       r"|\b(?:capable of|aggregate (?:bandwidth )?of|should (?:be|get|reach|achieve) (?:at least )?)\s*(?:about |around |~)?"
       r"[0-9]{1,5}(?:\.[0-9]{1,2})? ?(?:GB/s|TB/s|Gb/s|Gbps)"
       r"|\baccording to (?:the )?(?:official |vendor'?s? |NVIDIA'?s? |AMD'?s? )?(?:documentation|docs|spec\w{0,9}|datasheet)"),
    _s("tflops-figure", "sentence", ("tflop", "tf/s", "tensor core", "flops"), r"TFLOPS|TF/s|Tensor Core|FLOPS"),
    _s("fabric-prose", "sentence", ("fabric", "between nodes"),
       # not nvidia-smi -q's own "Fabric" section header or "GPU Fabric GUID" line, which are no reporter's words, nor
       # AMD's "Infinity Fabric" (the name of its GPU-to-GPU and in-package links, xGMI: no network fabric)
       r"(?<!infinity )\bfabric\b(?!\s*(?:GUID|State|Status|:|$))|between nodes? [0-9]{1,3} ?(?:\+|and|&) ?[0-9]{1,3}"),
    # -- software: a version, a regression, a library swapped
    _s("software-prose", "sentence", ("regress", "bisect", "revert", "downgrad", "upgrad", "roll", "symlink",
                                      "bundled", "version", "restor", "driver update", "release", "optimiz", "optimis",
                                      "fixed", "resolved", "solved"),
       r"\bregress(?:ion|ions|es|ed)?\b|\bbisect\w{0,3}\b|\b(?:revert\w{0,3}|downgrad\w{1,3}|upgrad\w{1,3}|roll\w{0,3} "
       r"back)\b.{0,60}\b(?:NCCL|RCCL|driver|CUDA|PyTorch|torch|ROCm|firmware|kernel|version|v?[0-9]{1,2}\.[0-9]{1,3})"
       r"|\bsymlink\w{0,3}\b.{0,40}\blib(?:nccl|rccl)|\bbundled (?:NCCL|RCCL|libnccl)"
       r"|\b(?:older|newer|previous|earlier|different) (?:NCCL|RCCL|driver|CUDA|PyTorch|torch|ROCm) versions?\b"
       # a fix that ships in a release ("This will be fixed in a future cublas release", "resolved after ROCm 6.0")
       r"|\b(?:fixed|resolved|addressed|solved)\b.{0,20}?\b(?:in|with|by|after|since) (?:a |the )?(?:future|later|newer|next|"
       r"upcoming|latest)?\s?(?:[\w.-]{1,20} )?(?:release|version)\b"
       r"|\b(?:fixed|resolved|solved|gone|works?)\b.{0,20}?\b(?:after|in|with|since)\b.{0,12}?\b(?:ROCm|CUDA|NCCL|RCCL|cuBLAS"
       r"|cuDNN|PyTorch|torch|JAX|driver|Tensile|hipBLASLt|rocBLAS)\s?v?[0-9]{1,3}(?:\.[0-9]{1,3}){0,2}\b"
       # a move to another release ("Moving to a newer version and some driver updates helped a lot")
       r"|\b(?:mov\w{1,3}|switch\w{0,3}|updat\w{1,3}|upgrad\w{1,3}|go\w{0,3}) (?:back )?to (?:a |the )?(?:newer|latest|older"
       r"|previous|earlier) (?:version|release)\b|\bdriver updates?\b"
       # a workaround that gives back an earlier version's behaviour ("UCX_RC_ECE=0 restores the 1.20.0 ...")
       r"|\brestor\w{1,3}\b (?:the )?(?:v|version )?[0-9]{1,3}\.[0-9]{1,3}(?:\.[0-9]{1,3})?\b"
       # a build that lacks the optimisations of a later one ("our dev branch does not have all the recent
       # optimizations on DDP and FSDP")
       r"|\b(?:branch|build|version|release|fork)\b.{0,30}?\b(?:does not|doesn'?t|did not|didn'?t|do not|don'?t) (?:yet )?"
       r"(?:have|include|contain)\b.{0,40}?\boptimi[sz]ations?\b|\bmissing (?:the |all the )?(?:recent |latest |upstream )"
       r"optimi[sz]ations?\b"),
    # -- a reply that names the cause ("that is likely the reason", "usually due to", "that's because"): a finding
    # quoting it names the cause the thread established, after a reported fix
    _s("cause-prose", "sentence", ("reason", "due to", "caused by", "because", "the cause", "root cause"),
       r"\b(?:is|are|was|were)\s+(?:likely |probably |usually |most likely |simply |mainly |mostly |often )?(?:due to|"
       r"caused by|because)\b|\b(?:the|a) (?:likely |real |root |main )?(?:reason|cause)\b.{0,20}?\b(?:is|was|why|for)\b"
       r"|\bthat'?s (?:because|why)\b|\bthis is (?:because|why)\b|\broot cause\b"),
    # -- what the reporter says fixed it (read with the line's other signals: the fix names the cause)
    _s("fix-prose", "sentence", ("fix", "resolv", "solv", "work", "help", "better", "restor", "no longer",
                                 "went away", "gone", "increase", "improvement", "boost", "gain", "speedup", "speed-up"),
       # advice ("usually helps", "should fix") is not a reported fix: no hedge before the verb
       r"(?<!usually )(?<!may )(?<!might )(?<!could )(?<!would )(?<!should )(?<!can )(?<!will )(?<!often )"
       r"\b(?:fixe[sd]|fixing|the fix (?:was|is)|resolv(?:e[sd]?|ing)|solv(?:e[sd]|ing)|(?:it|this|that|everything) "
       r"works?|works? (?:now|fine|well|like a charm|by|with|after|once|when)|worked|helps?|helped|got (?:a |much )?"
       r"better|restor(?:e[sd]?|ing)|no longer|went away|is gone)\b"
       # a change confirmed by its gain ("I just tested and can confirm a significant increase with GDRDMA enabled")
       r"|\b(?:significant|big|large|huge|nice|noticeable|substantial|clear) (?:increase|improvement|boost|gain|speed-?up)\b"),
    # -- dtype, shape, cache
    _s("tf32-off", "pytorch", ("tensorfloat32", "float32_matmul_precision", "allow_tf32", "highest", "tf32",
                               "fp32", "float32"),
       r"TensorFloat32 tensor cores|set_float32_matmul_precision|allow_tf32\W{0,2}\s*(?:=|is set to|set to|defaults? to"
       r"|is)\s*`?False\b|\bhighest\b\s*\(default\)"
       # JAX/XLA: float32 matmuls at precision HIGHEST do not use the tensor cores' TF32 mode
       r"|\bprecision\b\W{0,3}\s*(?:=|:)?\s*(?:jax\.lax\.Precision\.|lax\.Precision\.|Precision\.)?[\"']?HIGHEST\b"
       r"|\bTF32\b.{0,30}\b(?:off|disabled|not enabled|False)\b"
       r"|\bTF32\b.{0,40}?\bonly (?:enabled|on|used|turned on)\b.{0,40}?\bnot\b|\b(?:fp32|float32)\b.{0,40}\b(?:instead of|rather than"
       r"|not)\b.{0,20}\b(?:tf32|bf16|fp16|half)\b"
       # a benchmark or burn that computes in FP32 by default ("burns using FP32 as a default")
       r"|\b(?:burn\w{0,3}|runs?|computes?|benchmarks?)\s+(?:using|with|in)\s+(?:FP32|float32)\b.{0,20}\bdefault\b"),
    _s("fp32-slow-prose", "sentence", ("fp32", "float32", "full precision", "single precision"),
       r"\b(?:FP32|float32|full precision|single precision)\b.{0,80}?(?:\b[0-9]{1,3}(?:\.[0-9])? ?(?:x|×|times) slower\b"
       r"|\bslower\b.{0,30}?\b(?:FP16|BF16|half|TF32)\b|\bmuch (?:more time|longer|slower)\b|\(x ?[0-9]{1,3}\))"),
    # a dtype said to be slow, no faster, or unsupported (the GPU's compute capability decides, dtype_not_native)
    _s("dtype-slow-prose", "sentence", ("bf16", "bfloat16", "fp8", "float8", "e4m3", "e5m2", "fp16", "float16"),
       r"\b(?:BF16|bfloat16|FP8|float8\w{0,12}|e4m3\w{0,6}|e5m2\w{0,6}|FP16|float16)\b.{0,120}?(?:\bslow\w{0,3}\b"
       r"|\bhalf the speed\b|\bno (?:speed-?up|faster|gain|improvement)\b|\bnot (?:any )?faster\b|\bsame speed\b"
       r"|\bnot supported\b|\bunsupported\b|\bemulat\w{1,5}\b)"
       r"|(?:\bslow\w{0,3}\b|\bno (?:speed-?up|gain)\b|\bnot supported\b|\bemulat\w{1,5}\b"
       r"|\b(?:does not|doesn'?t|do not|don'?t) support\b).{0,80}?"
       r"\b(?:BF16|bfloat16|FP8|float8\w{0,12}|e4m3\w{0,6}|e5m2\w{0,6}|FP16|float16)\b"),
    # a library without fast kernels for a dtype on this GPU ("FP16 ..., for which MIOpen doesn't have optimized
    # convolution kernels for GFX900 GPUs")
    _s("dtype-no-kernels-prose", "sentence", ("optimized", "optimised", "kernels for"),
       r"\b(?:BF16|bfloat16|FP8|float8\w{0,12}|FP16|float16|half|INT8|int8)\b.{0,120}?\b(?:doesn'?t|does not|don'?t|do not|"
       r"no|lacks?|without)\s(?:have\s)?(?:any\s)?(?:optimi[sz]ed|fast|tuned)\s(?:[\w-]{1,20}\s){0,2}kernels?\b"
       r"|\b(?:doesn'?t|does not|don'?t|do not|no|lacks?)\s(?:have\s)?(?:any\s)?(?:optimi[sz]ed|fast|tuned)\s(?:[\w-]{1,20}\s)"
       r"{0,2}kernels?\b.{0,60}?\b(?:BF16|bfloat16|FP8|FP16|float16|half|INT8)\b"),
    # a package's figure against one of its dies: "measured on a single GCD, while the 383 TFLOPs ... is for 2 GCDs"
    _s("package-prose", "sentence", ("gcd", "die"),
       r"\b(?:a single|one|per|each|1)\s+(?:GCD|die)\b.{0,160}?\b(?:2|two|both)\s+(?:GCDs|dies)\b"
       r"|\b(?:2|two|both)\s+(?:GCDs|dies)\b.{0,160}?\b(?:a single|one|per|each|1)\s+(?:GCD|die)\b"),
    _s("fp16-compute-gemm", "sentence", ("hgemm", "compute_type", "computetype"),
       r"\b(?:hipblas|rocblas_)hgemm\b|--compute_type\s+(?:h|f16_r)\b"
       r"|compute_?type\s*[=:]\s*(?:h|f16_r|HIPBLAS_R_16F|HIPBLAS_COMPUTE_16F|rocblas_datatype_f16_r)\b"),
    _s("cache-flattered", "sentence", ("l2", "cache"),
       r"\b(?:L2|cache\w?)\b.{0,80}\b(?:inflat\w{0,4}|overstat\w{0,6}|higher than (?:the )?peak|above (?:the )?peak)"
       r"|\b(?:inflat\w{0,4}|higher than (?:the )?peak|above (?:the )?peak)\b.{0,80}\b(?:L2|cache)\b"
       r"|\bfits? (?:in|into) (?:the )?(?:L2|LLC|Infinity Cache|cache)\b|\b(?:without|no) (?:flushing|flush\w{0,3})\b"
       r".{0,20}\b(?:L2|cache)|\b(?:L2|cache) (?:flush|effects?|hits?)\b"),
    _s("shape-kernel", "sentence", ("align", "% 16", "%16", "multiple", "odd", "small", "awkward"),
       r"(?:gemm|Kernel2?|cutlass)\w{0,80}.{0,40}_align[0-9]|\bN ?% ?16 ?== ?8"
       r"|\bnot (?:a )?multiples? of (?:8|16|32|64|128)\b|\b(?:odd|unaligned|misaligned|awkward) (?:shapes?|sizes?|"
       r"dimensions?)\b|\bsmall (?:matri(?:x|ces)|GEMMs?|shapes?|problem sizes?|batch(?:es| sizes?)?)\b"),
)

#: every fragment kind a signal can prove (what the doctor says it read)
FRAGMENTS = {"nccl-line": "NCCL/RCCL lines", "nccl-env": "NCCL_* variables", "nccl-tests-row": "nccl-tests rows",
             "busbw-figure": "busbw figures", "nvidia-smi": "nvidia-smi output", "lspci": "lspci lines",
             "dmesg": "dmesg lines", "numactl": "numactl/lscpu lines", "rocm-tool": "ROCm tool lines",
             "pytorch": "PyTorch settings", "ibstat": "ibstat lines", "sentence": "the reporter's sentences"}


@dataclasses.dataclass(frozen=True)
class Scan:
    """What :func:`scan` found: signal id -> [(line number, match)], and the cleaned lines."""
    hits: dict
    lines: Lines
    stopped_at: int | None = None  # the last line sent to the patterns (MAX_CANDIDATES, MAX_WORK_CHARS), if stopped

    def has(self, *sids: str) -> bool:
        return any(self.hits.get(s) for s in sids)

    def lines_of(self, *sids: str) -> list[int]:
        return sorted({i for s in sids for i, _ in self.hits.get(s, ())})

    def fix_lines(self) -> frozenset[int]:
        """The lines where the reporter says a change fixed or helped (``fix-prose``): a finding quoting one of them
        names the cause the thread established (x4lib.doctor.findings.named_cause)."""
        return frozenset(i for i in self.lines_of("fix-prose")
                         if not clean(self.lines.lines[i - 1]).endswith("?"))   # a question proposes, it does not report

    def cause_lines(self) -> frozenset[int]:
        """The lines where a reply names a cause (``cause-prose``: "that is likely the reason", "usually due to"):
        after a reported fix, a finding quoting one of them names the cause (x4lib.doctor.findings.named_cause)."""
        return frozenset(self.lines_of("cause-prose"))

    def fragments(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in SIGNALS:
            if self.hits.get(s.id):
                out[s.fragment] = out.get(s.fragment, 0) + len(self.hits[s.id])
        return out


#: most lines kept for a signal that a rule reads as a table (nccl-tests rows: the best row is wanted)
_LIMITS = {"nccltests-row": 4096}
_BY_CUE: dict[str, tuple[Signal, ...]] = {}
for _sig in SIGNALS:
    for _c in _sig.cue:
        _BY_CUE[_c] = _BY_CUE.get(_c, ()) + (_sig,)
_CUE_RE = re.compile("|".join(re.escape(c) for c in sorted(_BY_CUE, key=len, reverse=True)))
#: each cue with the shorter cues inside it: the search takes the longest cue at a position ("nccl_p2p_disable"),
#: and the signals cued by a cue within it ("p2p") must still be tried
_WITHIN = {c: frozenset(d for d in _BY_CUE if d in c) for c in _BY_CUE}


#: a line of tool output that no prose signal reads: nvidia-smi -q's "Key    : value" (spaces before the colon) and
#: its indented section headers ("    Fabric")
_TOOL_LINE = re.compile(r"^\s*[A-Z][\w .()/+-]*?\s+:(?:\s|$)|^\s{4,}[A-Z][\w ]{0,40}$")


def scan(text: str, name: str) -> Scan:
    """Every signal of :data:`SIGNALS` on every line (module docstring): one search for the cues per line, then
    only the patterns whose cue is in it, each until it has its most lines; linear in the text's length."""
    L = Lines(name, text)
    hits: dict[str, list] = {}
    full: set[str] = set()
    candidates, work, stopped = 0, 0, None
    for i, raw in enumerate(L.lines, 1):
        low = raw[:MAX_LINE].lower()
        cues = {d for c in _CUE_RE.findall(low) for d in _WITHIN[c]}
        if not cues:
            continue
        todo = {s.id: s for c in cues for s in _BY_CUE[c] if s.id not in full}
        if not todo:
            continue
        candidates += 1
        line = clean(raw)
        work += len(line) * len(todo)
        if candidates > MAX_CANDIDATES or work > MAX_WORK_CHARS:
            stopped = i - 1
            break
        tool_line = bool(_TOOL_LINE.match(raw))
        for s in todo.values():
            if tool_line and s.fragment == "sentence":  # a tool's "Key   : value" line or section header is no
                continue                                # reporter's sentence (nvidia-smi -q's Fabric, Pass-Through)
            m = s.regex.search(line)
            if m:
                got = hits.setdefault(s.id, [])
                got.append((i, m))
                if len(got) >= _LIMITS.get(s.id, MAX_HITS):
                    full.add(s.id)
        if len(full) == len(SIGNALS):
            break
    return Scan(hits, L, stopped)


# ------------------------------------------------------------------------------------------ expected figures

_PCIE_GTS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}


def pcie_GBps(gen: int, width: int) -> float:
    """Line rate per direction [GB/s] of a PCIe link (x4lib.network.links.lane_rate_Bps; 8b/10b to Gen 2,
    128b/130b for Gen 3-5, Gen 6 FLIT counted at 242/256)."""
    from x4lib.network import links
    payload, total = (8, 10) if gen <= 2 else ((128, 130) if gen <= 5 else (242, 256))
    return links.lane_rate_Bps(_PCIE_GTS[gen], "GT/s", width, payload, total)[0] / 1e9


# ------------------------------------------------------------------------------------------------- findings

def findings(sc: Scan, skip: frozenset = frozenset()) -> list[Finding]:
    """The rules that the signals of one paste satisfy (rule ids in ``skip`` are left out: a tool reader already
    gave them)."""
    L, name, out = sc.lines, sc.lines.name, []

    def add(rule_id, line_nos, detail="", measured=None, expected=None):
        if rule_id in skip or not line_nos:
            return
        out.append(new_finding(rule_id, name, [L.ev(i) for i in sorted(dict.fromkeys(line_nos))], detail,
                               measured, expected))

    p2p_on = sc.has("nccl-via-p2p")
    # transport
    if sc.has("nccl-socket", "nccl-ib-nodevice", "nccl-net-socket-env") and not sc.has("nccl-ib-used"):
        add("net-socket-nodes-unknown", sc.lines_of("nccl-ib-nodevice", "nccl-socket", "nccl-net-socket-env"),
            measured=first_busbw(sc))
    add("ib-disabled-by-env", sc.lines_of("nccl-ib-disable"))
    if sc.has("mnnvl"):  # NCCL_CUMEM_ENABLE=0 costs NVLink only where NVLink spans nodes
        add("cumem-disabled-no-mnnvl", sc.lines_of("nccl-cumem-off"))
    if not sc.has("nccl-socket", "nccl-ib-nodevice", "nccl-ib-disable", "nccl-net-socket-env"):
        add("report-says-socket", sc.lines_of("transport-prose"))
    # the network plugin NCCL could not load: NCCL then tries its own IB transport, then sockets (init.cc). Harmless
    # on an InfiniBand cluster or a single host, so NCCL's own "No plugin found" line counts only where the paste
    # names a fabric that needs a plugin (AWS EFA, GCP TCPX/TCPXO); the reporter's words count alone
    plugin = sc.lines_of("net-plugin-prose", "fabric-off-prose") + (sc.lines_of("nccl-net-plugin-missing")
                                                                    if sc.has("plugin-fabric") else [])
    if plugin:  # with the first busbw figure the paste reports: the symptom the missing plugin explains
        add("net-plugin-missing", plugin + sc.lines_of("nccl-socket", "nccl-net-socket-env", "transport-prose")
            + ([busbw_hit(sc)[0]] if busbw_hit(sc) else []), measured=first_busbw(sc))
    # GPUDirect RDMA off: the NIC reads and writes host memory, and every transfer is staged through it
    # (a transport fallback; where the report ties it to a software version, the version is the cause: "other")
    if not sc.has("nccl-socket", "nccl-ib-nodevice"):
        gdr = sc.lines_of("nccl-gdr-off", "gdr-prose", "nccl-net-ib-no-gdr")
        some = "some HCAs have it (GPU Direct RDMA Enabled / GDRDMA lines too)" if sc.has("nccl-gdr-on") else ""
        if gdr and sc.has("software-prose"):
            add("gdr-disabled-by-version", gdr + sc.lines_of("software-prose"), some)
        else:
            add("gdr-not-enabled", gdr, some)
    _ib_rates(sc, add)
    add("report-says-bond-single-qp", sc.lines_of("bond-single-qp"))
    # P2P through the CPU (enabled, but across root ports)
    # P2P was on where the reporter says turning it off helped (a fix line setting NCCL_P2P_DISABLE)
    p2p_off_fixed = bool(set(sc.lines_of("nccl-p2p-disable")) & sc.fix_lines())
    if (p2p_on or p2p_off_fixed or sc.has("nccl-p2p-level-sys")) and sc.has("p2p-cpu-prose", "nccl-p2p-level-sys"):
        add("p2p-through-cpu", sc.lines_of("nccl-via-p2p", "nccl-p2p-level-sys", "p2p-cpu-prose", "nccl-p2p-disable"))
    # P2P off
    if sc.has("nccl-no-p2p") or (sc.has("nccl-via-shm") and not p2p_on):
        add("p2p-not-supported", sc.lines_of("nccl-no-p2p", "nccl-via-shm"))
    add("amd-no-peers", sc.lines_of("amd-no-peers"))
    add("p2p-disabled-by-env", sc.lines_of("nccl-p2p-disable"))
    geforce = sc.lines_of("gpu-name-no-p2p")
    if len(geforce) >= 2 and not p2p_on:  # two or more GeForce RTX 40/50 GPUs in one collective: no P2P
        add("geforce-no-p2p", geforce[:2], f"{len(geforce)} GeForce RTX 40/50-series GPUs listed")
    add("p2p-level-loc", sc.lines_of("nccl-p2p-level-loc"))
    if not p2p_on:
        add("report-says-p2p-off", sc.lines_of("p2p-prose"))
    # PCIe
    for i, m in sc.hits.get("pcie-table", ()):
        g1, w1, g2, w2 = (int(x) for x in m.groups())
        if g1 not in _PCIE_GTS or g2 not in _PCIE_GTS or not (1 <= w1 <= 32 and 1 <= w2 <= 32):
            continue
        lo, hi = sorted(((pcie_GBps(g1, w1), g1, w1), (pcie_GBps(g2, w2), g2, w2)))
        if lo[0] < 0.9 * hi[0]:
            add("pcie-link-below-another", [i], f"Gen {lo[1]} x{lo[2]} beside Gen {hi[1]} x{hi[2]}",
                Quantity(round(lo[0], 2), "GB/s", f"line rate per direction of Gen {lo[1]} x{lo[2]}"),
                Quantity(round(hi[0], 2), "GB/s", f"line rate per direction of Gen {hi[1]} x{hi[2]} "
                                                 "(x4lib.network.links)"))
            break
    for i, m in sc.hits.get("pcie-lanes-report", ()):
        now, cap = int(m.group(1)), int(m.group(2))
        if now < cap:
            add("pcie-width-downgraded", [i], f"x{now} of a possible x{cap}")
            break
    idle = sc.lines_of("pcie-idle-prose")
    add("pcie-idle-link-speed", idle)
    if not idle:  # a slow link the report itself explains by idling is no slot problem
        add("report-says-pcie-slot", [i for i in sc.lines_of("pcie-prose") if "LnkSta" not in L.lines[i - 1]])
    add("pcie-aer-errors", sc.lines_of("dmesg-aer"))
    caps = sc.hits.get("lspci-lnkcap", ())
    for i, m in sc.hits.get("lspci-lnksta-full", ()):
        cap = next((c for j, c in reversed(caps) if j < i), None)  # the LnkCap of the same device, just above
        gts, width = float(m.group(1)), int(m.group(3))
        cap_gts, cap_w = (float(cap.group(1)), int(cap.group(2))) if cap else (None, None)
        if m.group(4) or (cap_w and width < cap_w):
            add("pcie-width-downgraded", [i], f"x{width}" + (f" of a possible x{cap_w}" if cap_w else " (downgraded)"))
            break
        if m.group(2) or (cap_gts and gts < cap_gts):
            add("pcie-speed-downgraded-check-load", [i], f"{gts:g} GT/s" + (f" of {cap_gts:g} GT/s" if cap_gts else ""))
            break
    # power and clocks
    add("clock-reason-in-paste", sc.lines_of("smi-reason-active"))
    add("power-limit-lowered", sc.lines_of("power-limit-set")[:1], "a power limit set below the card's default")
    for i, m in sc.hits.get("power-limit-default", ()):
        lim, default = float(m.group(1)), float(m.group(2))
        if lim < 0.99 * default:
            add("power-limit-lowered", [i], f"{lim:g} W of a default {default:g} W",
                Quantity(lim, "W", f"power limit, line {i}"), Quantity(default, "W", "default power limit"))
            break
    add("report-says-thermal", sc.lines_of("thermal-prose"))
    add("clocks-locked", sc.lines_of("clock-lock"), "clocks locked by nvidia-smi or NVML")
    # ACS, IOMMU, VMs
    add("acs-enabled", sc.lines_of("lspci-acs-on"))
    add("rccl-iommu-pt-missing", sc.lines_of("nccl-iommu-pt"))
    fixes = sc.fix_lines()
    # "booted with intel_iommu=off and it works": turning the IOMMU off is evidence only where the reporter says it fixed
    add("iommu-in-paste", sc.lines_of("dmesg-iommu") + [i for i in sc.lines_of("iommu-off-prose") if i in fixes])
    add("vm-topology", sc.lines_of("vm-prose", "nccl-topo-file"))
    # NUMA and affinity
    add("gdr-level-forced", sc.lines_of("nccl-gdr-level"))
    add("topo-gpu-nic-no-gdr", sc.lines_of("nccl-gdr-distance"))
    add("cpu-binding", sc.lines_of("numa-prose"))
    add("report-says-cross-socket", sc.lines_of("cross-socket-prose"))
    add("report-says-nic-pairing", sc.lines_of("nic-pairing-prose"))
    # expectations
    sparse_words = sc.lines_of("sparse-prose")
    if sc.has("expectation-prose") or sparse_words:
        ev = sc.lines_of("expectation-prose")
        measured, expected, detail = sparse_expectation(sc, ev)
        if expected is not None or sparse_words:
            add("sparse-peak-expected", (ev if expected is not None else []) + sparse_words, detail, measured,
                expected)
        else:
            measured, expected, detail = line_rate_expectation(sc, ev)
            add("line-rate-expected", ev, detail, measured, expected)
    add("package-peak-per-device", sc.lines_of("package-prose"))
    add("two-node-tree", sc.lines_of("two-node-tree-prose"), "the report names the two-node tree")
    rows = [(i, float(m.group(2))) for i, m in sc.hits.get("nccltests-row", ())]
    for i, m in sc.hits.get("nccltests-avg", ()):
        avg = float(m.group(1))
        peak = max(rows, key=lambda r: r[1]) if rows else None
        if peak and peak[1] > 1.05 * avg:
            add("avg-busbw-not-peak", [i, peak[0]], f"average {avg:g} GB/s over all sizes; largest row {peak[1]:g}",
                Quantity(avg, "GB/s", f"# Avg bus bandwidth, line {i}"),
                Quantity(peak[1], "GB/s", f"busbw of the best row (line {peak[0]})"))
            break
    # dtype, shape, cache
    add("tf32-not-enabled", sc.lines_of("tf32-off", "fp32-slow-prose"), *fp32_ratio(sc))
    native = dtype_not_native(sc)
    if native:
        add("dtype-not-native", native[0], native[1])
    add("dtype-kernels-missing", sc.lines_of("dtype-no-kernels-prose"))
    add("fp16-accumulate-gemm", sc.lines_of("fp16-compute-gemm"))
    add("cache-flattered", sc.lines_of("cache-flattered"))
    add("shape-kernel-choice", sc.lines_of("shape-kernel"))
    # other
    add("gpu-xid", sc.lines_of("dmesg-xid"))
    add("report-says-fabric", sc.lines_of("fabric-prose"))
    add("report-says-software-version", sc.lines_of("software-prose"))
    return out


def _ib_rates(sc: Scan, add) -> None:
    """InfiniBand port rates. An ``ibstat`` port that negotiated below the rate the report states (with fewer ports
    shown than would add up to it) is a cable or configuration problem; "4X EDR" in words is one port's width (four
    lanes), not four adapters (IBTA: HDR is four lanes of 50 Gb/s)."""
    rates = [(i, int(m.group(1) or m.group(4)), m.group(2), m.group(3)) for i, m in sc.hits.get("ibstat-rate", ())]
    said = [(i, int(m.group(1) or m.group(2))) for i, m in sc.hits.get("ib-rate-stated", ())
            if i not in {r[0] for r in rates}]
    if rates and said:
        j, claim = max(said, key=lambda x: x[1])
        low = min(rates, key=lambda r: r[1])
        if low[1] < claim and len({r[0] for r in rates}) * low[1] < claim:
            add("ib-port-rate-below-stated", [low[0], j],
                f"{len(rates)} port rate(s) shown, the lowest {low[1]} Gb/s"
                + (f" ({low[2]}X {low[3]})" if low[3] else "") + f"; the report states {claim} Gb/s",
                Quantity(low[1] / 8, "GB/s", f"line rate per direction of the port on line {low[0]}"),
                Quantity(claim / 8, "GB/s", f"the {claim} Gb/s stated on line {j}, per direction"))
    for i, m in sc.hits.get("ib-width-prose", ())[:1]:
        gbps = [int(x) for x in re.findall(r"\b([0-9]{2,4}) ?(?:Gb/s|Gbps|gbps|Gbit)", sc.lines.lines[i - 1][:MAX_LINE])]
        add("ib-width-not-adapters", [i], f"{m.group(0)}: one port of four lanes"
            + (f", {gbps[0]} Gb/s = {gbps[0] / 8:g} GB/s per direction" if gbps else ""),
            first_busbw(sc), Quantity(gbps[0] / 8, "GB/s", "line rate per direction of one such port") if gbps else None)


def next_command(sc: Scan) -> str:
    """The one command whose output would decide, for a paste without a cause: chosen by what was pasted."""
    if sc.has("nccltests-row", "nccltests-avg", "busbw-prose", "nccl-info", "nccl-ib-used"):
        return ("NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH <the same command> 2>&1 | "
                "grep -E 'NET/|via |P2P|Using network'")
    if sc.has("smi-summary", "thermal-prose", "tflops-figure"):
        return "nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE   (while the job runs)"
    if sc.has("lspci-lnksta", "pcie-prose"):
        return "sudo lspci -vv -d 10de: | grep -E 'LnkCap:|LnkSta:'   (while the job runs)"
    return "nvidia-smi topo -m"
