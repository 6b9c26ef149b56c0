"""A GPU's state as a user can paste it: ``nvidia-smi -q`` (clocks and throttle reasons, power limit against its
default, PCIe link now against its maximum, ECC and retired or remapped rows, MIG mode) and ``lspci -vv`` excerpts
(link capability against status), each read into the doctor's findings with the line that shows it.

Every input is untrusted text: read line by line, never executed. Used by :mod:`x4lib.doctor.diagnose`.
"""
from __future__ import annotations

import dataclasses
import re

from x4lib.doctor.findings import KIND_NAMES, RULE_IDS, Finding, InputReport, Lines, new_finding, threshold

# -------------------------------------------------------------------------------------------------- nvidia-smi -q

_GPU_HEADER_RE = re.compile(r"GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$")
_REASON_SECTIONS = ("Clocks Throttle Reasons", "Clocks Event Reasons")
_WATTS_RE = re.compile(r"([0-9]{1,6}(\.[0-9]{1,3})?) ?W$")


@dataclasses.dataclass(frozen=True)
class SmiEntry:
    path: tuple[str, ...]  # section names, then the key
    value: str
    line: int


def parse_smi(text: str) -> list[list[SmiEntry]]:
    """``nvidia-smi -q`` as key/value entries per GPU (the path of section names by indentation). Lines before
    the first ``GPU xxxx:xx:xx.x`` header (or all of an excerpt without one) form one GPU."""
    gpus: list[list[SmiEntry]] = [[]]
    stack: list[tuple[int, str]] = []
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.expandtabs(4)
        body = line.strip()
        if not body or body.startswith("="):
            continue
        indent = len(line) - len(line.lstrip())
        if indent == 0 and _GPU_HEADER_RE.match(body):
            if gpus[-1]:
                gpus.append([])
            stack = []
            continue
        key, sep, value = body.partition(" :") if " :" in body else body.partition(":")
        key = key.strip()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if sep and key:
            gpus[-1].append(SmiEntry(tuple(s for _, s in stack) + (key,), value.strip(), i))
        stack.append((indent, key or body))
    if len(gpus) > 1 and not any(_GPU_HEADER_RE.match(ln.strip()) for ln in text.splitlines()[:1]):
        gpus = gpus[1:]  # the lines before the first GPU header (timestamp, driver) describe no GPU
    return [g for g in gpus if g]


def _smi_get(gpu: list[SmiEntry], key: str, *within: str) -> SmiEntry | None:
    """The first entry named ``key`` whose path contains every section in ``within`` (any of the names given as
    a tuple element)."""
    for e in gpu:
        if e.path[-1] == key and all(any(s in e.path[:-1] for s in (w if isinstance(w, tuple) else (w,)))
                                     for w in within):
            return e
    return None


def _watts(entry: SmiEntry | None) -> float | None:
    m = _WATTS_RE.search(entry.value) if entry else None
    return float(m.group(1)) if m else None


def _int_value(text: str) -> int | None:
    t = text.strip().rstrip("x").strip()
    return int(t) if t.isdigit() and len(t) < 10 else None


def diagnose_smi(text: str, name: str) -> tuple[InputReport, list[Finding]]:
    L = Lines(name, text)
    gpus = parse_smi(text)
    per_rule: dict[str, list] = {}

    def add(rule_id, entries, detail=""):
        per_rule.setdefault(rule_id, []).append(([L.ev(e.line) for e in entries if e], detail))

    products = []
    for g in gpus:
        product = _smi_get(g, "Product Name")
        products.append(product.value if product else "GPU")
        pstate = _smi_get(g, "Performance State")
        idle_reason = _smi_get(g, "Idle", _REASON_SECTIONS)
        pnum = _int_value(pstate.value.lstrip("P")) if pstate and pstate.value.startswith("P") else None
        idle = (pnum is not None and pnum >= 8) or (idle_reason is not None and idle_reason.value == "Active")
        if idle:
            add("captured-idle", [pstate, idle_reason if idle_reason and idle_reason.value == "Active" else None],
                f"performance state {pstate.value if pstate else '?'}"
                + (", clock-event reason Idle active" if idle_reason and idle_reason.value == "Active" else ""))
        for key in ("HW Slowdown", "HW Thermal Slowdown", "HW Power Brake Slowdown"):
            e = _smi_get(g, key, _REASON_SECTIONS)
            if e and e.value == "Active":
                add("hw-slowdown", [e], key)
        e = _smi_get(g, "SW Thermal Slowdown", _REASON_SECTIONS)
        if e and e.value == "Active":
            add("sw-thermal-slowdown", [e])
        e = _smi_get(g, "SW Power Cap", _REASON_SECTIONS)
        if e and e.value == "Active" and not idle and pstate is not None:
            add("sw-power-cap-busy", [e, pstate])
        limit = next((x for k in ("Current Power Limit", "Enforced Power Limit", "Power Limit")
                      if (x := _smi_get(g, k)) and _watts(x)), None)
        default = _smi_get(g, "Default Power Limit")
        if _watts(limit) and _watts(default) and \
                _watts(limit) < (1 - threshold("power_limit_tolerance")) * _watts(default):
            add("power-limit-lowered", [limit, default], f"{_watts(limit):g} W of a default {_watts(default):g} W")
        gen_max, gen_cur = (_smi_get(g, k, "GPU Link Info", "PCIe Generation") for k in ("Max", "Current"))
        w_max, w_cur = (_smi_get(g, k, "GPU Link Info", "Link Width") for k in ("Max", "Current"))
        gm, gc = (_int_value(e.value) if e else None for e in (gen_max, gen_cur))
        wm, wc = (_int_value(e.value) if e else None for e in (w_max, w_cur))
        slow = gm is not None and gc is not None and gc < gm
        narrow = wm is not None and wc is not None and wc < wm
        if idle and (slow or narrow):
            add("pcie-speed-downgraded-check-load", [gen_cur if slow else None, gen_max if slow else None,
                                                     w_cur if narrow else None, w_max if narrow else None],
                "captured at idle")
        else:
            if slow:
                add("pcie-gen-below-max-busy", [gen_cur, gen_max], f"Gen {gc} of a possible Gen {gm}")
            if narrow:
                add("pcie-width-downgraded", [w_cur, w_max], f"x{wc} of a possible x{wm}")
        pending = _smi_get(g, "Pending", "Remapped Rows")
        if pending and pending.value == "Yes":
            add("remapped-rows-pending", [pending] + [_smi_get(g, k, "Remapped Rows") for k in
                                                      ("Correctable Error", "Uncorrectable Error")])
        failure = _smi_get(g, "Remapping Failure Occurred", "Remapped Rows")
        if failure and failure.value == "Yes":
            add("remapping-failed", [failure])
        ecc = [e for e in g if "ECC Errors" in e.path and "Volatile" in e.path and
               ("Uncorrectable" in e.path[-1] or ("Double Bit" in e.path and e.path[-1] == "Total")) and
               (_int_value(e.value) or 0) > 0]
        if ecc:
            add("ecc-uncorrectable", ecc[:2])
        mig = _smi_get(g, "Current", "MIG Mode")
        if mig and mig.value == "Enabled":
            add("mig-enabled", [mig])
    found = []
    for rule_id in RULE_IDS:
        if rule_id in per_rule:
            hits = per_rule[rule_id]
            ev = [e for evs, _ in hits for e in evs]
            details = sorted({d for _, d in hits if d})
            count = f"{len(hits)} of {len(gpus)} GPUs" if len(gpus) > 1 else ""
            found.append(new_finding(rule_id, name, ev, "; ".join(x for x in [count] + details if x)))
    names = sorted(set(products))
    summary = f"{KIND_NAMES['nvidia-smi-q']}: {len(gpus)} GPU block(s)" + (f", {', '.join(names)}" if names else "")
    return InputReport(name, "nvidia-smi-q", summary), found


# --------------------------------------------------------------------------------------------------------- lspci

_LSPCI_DEV_RE = re.compile(r"([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7] ")
_LNKCAP_RE = re.compile(r"LnkCap:\s*(Port #[0-9]{1,4}, )?Speed ([0-9]{1,3}(\.[0-9]{1,2})?)GT/s[^,]{0,20}, "
                        r"Width x([0-9]{1,2})")
_LNKSTA_RE = re.compile(r"LnkSta:\s*Speed ([0-9]{1,3}(\.[0-9]{1,2})?)GT/s( \((ok|downgraded)\))?, "
                        r"Width x([0-9]{1,2})( \((ok|downgraded)\))?")
_ACSCTL_RE = re.compile(r"ACSCtl:\s*(?:SrcValid([+-])|0x([0-9a-fA-F]{1,4})\b)")


def diagnose_lspci(text: str, name: str) -> tuple[InputReport, list[Finding]]:
    """LnkSta against LnkCap (and lspci's own "(downgraded)" marks), and ACSCtl, device by device."""
    L = Lines(name, text)
    cap = None
    width, speed, acs, links = [], [], [], 0
    for i, raw in enumerate(L.lines, 1):
        line = raw.strip().lstrip("> ").strip()
        if _LSPCI_DEV_RE.match(line):
            cap = None
            continue
        if m := _LNKCAP_RE.search(line):
            cap = (float(m.group(2)), int(m.group(4)), i)
            continue
        if m := _ACSCTL_RE.search(line):
            # hex form: SrcValid 0x01 | ReqRedir 0x04 | CmpltRedir 0x08 | UpstreamFwd 0x10
            if m.group(1) == "+" or (m.group(2) and int(m.group(2), 16) & 0x1d):
                acs.append(i)
            continue
        m = _LNKSTA_RE.search(line)
        if not m:
            continue
        sta_speed, sta_width = float(m.group(1)), int(m.group(5))
        if sta_width == 0:  # no link (an empty slot's port)
            continue
        links += 1
        ev = [i] + ([cap[2]] if cap else [])
        if m.group(7) == "downgraded" or (cap and sta_width < cap[1]):
            width.append((ev, f"x{sta_width}" + (f" of x{cap[1]}" if cap else " (downgraded)")))
        elif m.group(4) == "downgraded" or (cap and sta_speed < cap[0]):
            speed.append((ev, f"{sta_speed:g} GT/s" + (f" of {cap[0]:g} GT/s" if cap else " (downgraded)")))
    found = []
    for rule_id, hits in (("acs-enabled", [([i], "") for i in acs]), ("pcie-width-downgraded", width),
                          ("pcie-speed-downgraded-check-load", speed)):
        if hits:
            found.append(new_finding(rule_id, name, [L.ev(i) for ev, _ in hits for i in ev],
                                  "; ".join(d for _, d in hits if d)))
    summary = f"{KIND_NAMES['lspci']}: {links} link status line(s), {len(acs)} bridge(s) with ACS source validation on"
    return InputReport(name, "lspci", summary), found
