"""Hostile input, bounded (issue 34): broken data files, escaped text, bounded time and memory. Each test runs in
well under a few seconds."""
import ast
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from x4lib import cli
from x4lib.catalog import specs

ROOT = Path(__file__).resolve().parents[1]
# the runs and pages these cases reuse live in the test modules of those parts: importable when this file runs alone
sys.path[:0] = [str(ROOT / "tests" / "pages"), str(ROOT / "tests" / "runners")]


# ------------------------------------------------------------------------ data files: one bounded reader

def test_every_yaml_data_file_goes_through_the_one_reader():
    """No module parses YAML itself: specs.read_yaml is the only reader (non-finite, aliases, size, UTF-8)."""
    offenders = []
    for path in list((ROOT / "x4lib").rglob("*.py")) + list((ROOT / "runners").rglob("*.py")):
        if path.name == "specs.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "yaml"
                    and node.attr in ("safe_load", "load", "full_load", "unsafe_load", "load_all")):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders


def test_non_finite_number_is_refused_naming_file_and_field(tmp_path):
    f = tmp_path / "economics.yaml"
    f.write_text("prices:\n  h100:\n    value: .nan\n", encoding="utf-8")
    with pytest.raises(specs.DataFileError, match=r"economics.yaml: prices/h100/value: nan is not a finite"):
        specs.read_yaml(f)
    assert specs.DataFileError.exit_code == 1


def test_alias_bomb_is_refused_quickly(tmp_path):
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 10)]
    f = tmp_path / "bomb.yaml"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(specs.DataFileError, match=r"bomb.yaml: .*more than 8 aliases"):
        specs.read_yaml(f)


def test_a_few_aliases_still_read(tmp_path):
    f = tmp_path / "ok.yaml"
    f.write_text("a: &x {v: 1}\nb: *x\nc: *x\n", encoding="utf-8")
    assert specs.read_yaml(f) == {"a": {"v": 1}, "b": {"v": 1}, "c": {"v": 1}}


def test_nan_threshold_in_doctor_rules_is_refused(tmp_path):
    from x4lib.doctor import findings
    text = findings.RULES_PATH.read_text(encoding="utf-8")
    broken = text.replace("thresholds:\n  below_model_fraction:\n    value: 0.5",
                          "thresholds:\n  below_model_fraction:\n    value: .nan", 1)
    assert broken != text
    f = tmp_path / "doctor_rules.yaml"
    f.write_text(broken, encoding="utf-8")
    with pytest.raises(findings.RulesError, match=r"doctor_rules.yaml: thresholds/below_model_fraction/value: nan"):
        findings.load_rules(f)


def _main(argv, monkeypatch, capsys):
    with pytest.raises(SystemExit) as exc:
        sys.exit(cli.main(argv))
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def test_a_broken_catalog_stops_only_the_commands_that_need_it(monkeypatch, capsys):
    def broken(*_a, **_k):
        raise specs.CatalogError("h100-sxm.yaml: values/tf32_dense_tflops/value: nan is not a finite number")
    monkeypatch.setattr(specs, "load_catalog", broken)
    code, out, _ = _main(["--help"], monkeypatch, capsys)
    assert code == 0 and "specs" in out
    code, out, err = _main(["kv-cache", "--model", "llama2-7b", "--context", "10"], monkeypatch, capsys)
    assert code == 0 and "KV cache" in out
    for argv in (["specs"], ["tco"], ["comm-estimate", "--strategy", "dp", "--cluster", "2x8-h100-ib400",
                                      "--params", "1e9"]):
        code, out, err = _main(argv, monkeypatch, capsys)
        lines = err.strip().splitlines()
        assert code == 1 and len(lines) == 1 and "h100-sxm.yaml: values/tf32_dense_tflops/value" in lines[0], err


def test_data_files_read_in_a_c_locale():
    env = dict(os.environ, LC_ALL="C", LANG="C", PYTHONUTF8="0", PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "x4lib", "specs", "h100-sxm"], capture_output=True, text=True,
                       env=env, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr


# ------------------------------------------------------------------ item 1: a run's text is text, never markup

EVIL = "NVIDIA <script>alert(1)</script> **H100** [x](javascript:1) {eval}`1` $x$"


def _html_and_text(md: str):
    from markdown_it import MarkdownIt
    tokens = MarkdownIt("commonmark").parse(md)
    kinds, text = set(), []
    for t in tokens:
        for c in [t, *(t.children or [])]:
            kinds.add(c.type)
            if c.type in ("text", "code_inline"):
                text.append(c.content)
    return kinds, "".join(text)


def _assert_literal(md: str):
    kinds, text = _html_and_text(md)
    assert not kinds & {"html_inline", "html_block", "link_open"}, md
    assert "<script>alert(1)</script>" in text and "**H100**" in text, text


def test_lab_pages_escape_a_device_name_and_warnings():
    from test_pages_lab00 import cpu_run
    from test_pages_lab01 import measured
    from x4lib.pages import lab00, lab01
    run = cpu_run()
    doc = dict(run.results, device={**run.results["device"], "detected_name": EVIL}, warnings=[EVIL])
    evil = type(run)(run.run_id, run.path, run.lab, doc, run.committed)
    _assert_literal(lab00.summary_markdown(evil))
    _assert_literal(lab00.warnings_markdown(evil))
    results = measured({2**10: [10.0], 2**16: [20.0]})
    results["device"]["detected_name"] = EVIL
    _assert_literal(lab01.run_markdown(results))


def test_md_helpers():
    from x4lib.book.tables import md_code, md_text
    _assert_literal(md_text(EVIL))
    kinds, text = _html_and_text(md_code("a`<b>`c"))
    assert "html_inline" not in kinds and text == "a`<b>`c"


# ------------------------------------------------------------------------------- item 4, 11: logs bounded

def test_an_imported_log_named_like_a_run_file_keeps_its_copy(tmp_path):
    from conftest import run_cli
    from test_runners_lab01 import H100_LOG
    src = tmp_path / "in"
    src.mkdir()
    log = src / "results.json"
    log.write_bytes(H100_LOG.read_bytes())
    r = run_cli("lab01", "--profile", "cluster-2x8", "--import-log", str(log), "--runs-dir", str(tmp_path / "runs"),
                module="runners")
    assert r.returncode == 0, r.stderr
    run = next((tmp_path / "runs" / "lab01").iterdir())
    assert (run / "imported-nccl-tests.log").read_bytes() == H100_LOG.read_bytes()
    assert '"schema_version"' in (run / "results.json").read_text(encoding="utf-8")


def test_import_log_empty_path_says_so():
    from conftest import run_cli
    r = run_cli("lab01", "--profile", "cluster-2x8", "--import-log", "", module="runners")
    assert r.returncode == 2 and "empty path" in r.stderr and "directory" not in r.stderr


def test_a_log_of_too_many_rows_is_refused_in_bounded_time():
    import time
    from x4lib.network import nccl_log
    from test_runners_lab01 import H100_LOG
    lines = H100_LOG.read_text(encoding="utf-8").splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.strip()[:1].isdigit())
    text = "\n".join(lines[:i] + [lines[i]] * (nccl_log.MAX_TABLE_LINES + 5) + lines[i:]) + "\n"
    t0 = time.perf_counter()
    with pytest.raises(nccl_log.NcclLogError, match="more than 10,000 result lines"):
        nccl_log.read_log(text, "big.log")
    assert time.perf_counter() - t0 < 5
    with pytest.raises(nccl_log.NcclLogError, match="more than 1,000,000 lines"):
        nccl_log.read_log("x\n" * (nccl_log.MAX_LOG_LINES + 1), "long.log")


def test_an_imported_log_too_large_to_copy_keeps_the_lines_read(tmp_path):
    """Item 11: a run stores what it needs: a log over STORE_WHOLE_LOG_BYTES is kept as the excerpt the reader
    used (original hash and size recorded), a small one whole and byte for byte."""
    import hashlib
    import json
    from runners import lab01
    from test_runners_lab01 import H100_LOG
    lines = H100_LOG.read_text(encoding="utf-8").splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.strip()[:1].isdigit()) - 2
    big = tmp_path / "debug.log"
    big.write_text("\n".join(lines[:i] + ["h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"]
                             * (lab01.STORE_WHOLE_LOG_BYTES // 60) + lines[i:]) + "\n", encoding="utf-8")
    for log, kind in ((big, "excerpt"), (H100_LOG, "whole")):
        out = tmp_path / kind
        r = subprocess.run([sys.executable, "-m", "runners", "lab01", "--profile", "cluster-2x8", "--import-log",
                            str(log), "--runs-dir", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert r.returncode == 0, r.stderr
        run = next((out / "lab01").iterdir())
        doc = json.loads((run / "results.json").read_text(encoding="utf-8"))
        copy = run / doc["log_copy"]["file"]
        assert doc["log_copy"]["kind"] == kind and doc["log_sha256"] == hashlib.sha256(log.read_bytes()).hexdigest()
        assert sum(f.stat().st_size for f in run.iterdir()) < 200_000
        if kind == "whole":
            assert copy.read_bytes() == log.read_bytes()
        else:
            assert copy.name == "debug.excerpt.log" and doc["log_copy"]["original_bytes"] == big.stat().st_size
            assert "NCCL INFO" not in copy.read_text(encoding="utf-8")


# ------------------------------------------------------------------- items 9, 13, 14, 15: bounded answers

def test_systolic_guards_on_estimated_time_not_pe_cycles():
    from x4lib.compute import systolic
    with pytest.raises(ValueError, match=r"1x1 array, 200x200x200: .* would take about \d+ s"):
        systolic.random_check(1, 200, 200, 200)
    assert systolic.estimated_seconds(1, 1, 200, 200, 200) > systolic.MAX_SIM_SECONDS
    run, ok = systolic.random_check(4, 8, 8, 8)
    assert ok


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_render_reads_results_json_bounded(tmp_path):
    from x4lib.harness import runs
    fifo, zero, deep = (tmp_path / n for n in ("fifo", "zero", "deep"))
    for d in (fifo, zero, deep):
        d.mkdir()
    os.mkfifo(fifo / "results.json")
    (zero / "results.json").symlink_to("/dev/zero")
    (deep / "results.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    for d, needle in ((fifo, "not a regular file"), (zero, "not a regular file"), (deep, "nested")):
        with pytest.raises(runs.RunError, match=needle):
            runs.load_run(d, "lab00")
    (deep / "results.json").write_text('{"a":' * 40 + "1" + "}" * 40, encoding="utf-8")
    with pytest.raises(runs.RunError, match="nested more than 16 levels"):
        runs.load_run(deep, "lab00")


def test_in_range_numbers_give_finite_answers():
    from x4lib.datacenter import reliability, tco
    assert reliability.goodput(1.0, 0.72, 20.0, 600.0) == 0.0
    assert reliability.goodput(1187.0, 36000.0, 20.0, 600.0) == pytest.approx(0.9511, abs=1e-4)
    assert tco.capital_recovery_factor(1e-16, 5) == pytest.approx(0.2)
    assert math.isfinite(tco.capital_recovery_factor(0.08, 1e-15))
    assert tco.capital_recovery_factor(0.08, 5) == pytest.approx(0.08 * 1.08**5 / (1.08**5 - 1))


@pytest.mark.parametrize("argv", [["tco", "--utilisation=5e-324"], ["train-estimate", "--mfu=1e-300"]])
def test_ranges_exclude_values_that_only_overflow(argv, monkeypatch, capsys):
    code, out, err = _main(argv, monkeypatch, capsys)
    assert code == 2 and "must be >=" in err and "inf" not in out


# ------------------------------------------------------------------------------ item 10: check-claims linear

@pytest.mark.parametrize("page", [
    "# T\n\n" + "A 5 W lamp, 6 W bulb, " * 5000 + "\n",          # 10k claims in one sentence
    "# T\n\n" + "A 5 W lamp. " * 5000 + "\n",                     # 5k sentences in one paragraph
    "# T\n\n<div>\n" + "<!-- x " * 40000 + "\n</div>\n",           # 40k unclosed comments in raw HTML
])
def test_check_claims_is_linear(page):
    import time
    from x4lib.book import claims
    t0 = time.perf_counter()
    claims.check_text(page, "p.md", frozenset())
    assert time.perf_counter() - t0 < 5


def test_check_claims_refuses_a_huge_page_and_names_a_fifo(tmp_path):
    from x4lib.book import claims
    big = tmp_path / "big.md"
    big.write_bytes(b"x" * (claims.MAX_PAGE_BYTES + 1))
    with pytest.raises(claims.UsageError, match="larger than 1 MiB"):
        claims.read_page(big)
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "f.md"
        os.mkfifo(fifo)
        with pytest.raises(claims.UsageError, match="not a regular file"):
            claims.collect([str(fifo)])


# ------------------------------------------------------------------------ item 16: values in physical sense

def test_a_schema_valid_time_of_5e_324_s_is_refused_naming_the_field():
    from test_pages_lab00 import cpu_run
    from x4lib.harness import runs
    doc = dict(cpu_run().results)
    doc["matmul"] = [dict(doc["matmul"][0], best_s=5e-324)] + list(doc["matmul"][1:])
    with pytest.raises(runs.RunError, match=r"results.json: matmul/0/best_s: 4.94066e-324 s is not a time"):
        runs.validate(doc, "lab00")
    doc["matmul"] = [dict(doc["matmul"][0], best_s=0.002, times_s=[0.002, 2e5])] + list(doc["matmul"][1:])
    with pytest.raises(runs.RunError, match=r"matmul/0/times_s/1"):
        runs.validate(doc, "lab00")


def test_ib_ports_leaves_out_rates_without_physical_sense(tmp_path):
    text = "".join(f"CA 'mlx5_{i}'\n\tPort 1:\n\t\tState: Active\n\t\tRate: {r}\n\t\tLink layer: InfiniBand\n"
                   for i, r in enumerate(["1e999", "nan", "-400", "400"]))
    f = tmp_path / "ibstat.txt"
    f.write_text(text, encoding="utf-8")
    code = subprocess.run([sys.executable, "-m", "x4lib", "ib-ports", str(f)], capture_output=True, text=True,
                          cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=60)
    out = code.stdout + code.stderr
    assert code.returncode == 0 and "inf Gb/s" not in out and "nan Gb/s" not in out, out
    assert out.count("- Gb/s") == 3 and "400.0 Gb/s" in out and out.count("not a port's rate") == 3


# --------------------------------------------------------------- item 5: a missed wake-up costs a slice, not 300 s

def test_a_kernel_reply_missed_by_one_poll_is_read_by_the_next():
    """The mechanism of the 300 s render stall: the first poll of the shell socket misses its wake-up and would
    sleep out its whole timeout; sliced waits poll afresh and read the queued reply within a slice."""
    import asyncio
    import time
    from queue import Empty

    from jupyter_client.channels import AsyncZMQSocketChannel
    from runners.core import sliced_kernel_waits

    calls = []

    async def missed_once(self, timeout=None):
        calls.append(timeout)
        if len(calls) == 1:  # the missed edge: nothing wakes this poll before its timeout
            await asyncio.sleep(timeout)
            raise Empty
        return {"msg_type": "execute_reply"}

    original = AsyncZMQSocketChannel.get_msg
    AsyncZMQSocketChannel.get_msg = missed_once
    try:
        with sliced_kernel_waits(0.05):
            t0 = time.perf_counter()
            msg = asyncio.run(AsyncZMQSocketChannel.get_msg(object.__new__(AsyncZMQSocketChannel), timeout=300))
            elapsed = time.perf_counter() - t0
        assert AsyncZMQSocketChannel.get_msg is missed_once          # restored after the render
    finally:
        AsyncZMQSocketChannel.get_msg = original
    assert msg["msg_type"] == "execute_reply" and elapsed < 2 and calls[0] == 0.05


def test_sliced_waits_keep_the_total_timeout():
    import asyncio
    import time
    from queue import Empty

    from jupyter_client.channels import AsyncZMQSocketChannel
    from runners.core import sliced_kernel_waits

    async def never(self, timeout=None):
        await asyncio.sleep(timeout)
        raise Empty

    original = AsyncZMQSocketChannel.get_msg
    AsyncZMQSocketChannel.get_msg = never
    try:
        with sliced_kernel_waits(0.05):
            t0 = time.perf_counter()
            with pytest.raises(Empty):
                asyncio.run(AsyncZMQSocketChannel.get_msg(object.__new__(AsyncZMQSocketChannel), timeout=0.3))
            assert 0.25 < time.perf_counter() - t0 < 2
    finally:
        AsyncZMQSocketChannel.get_msg = original


# ---------------------------------------------------------------------- items 7, 8: destinations and partials

@pytest.mark.parametrize("where", ["/proc/x34", "/tmp/" + "a" * 300])
def test_an_unwritable_runs_dir_is_refused_before_measuring(where):
    from runners import rundir
    with pytest.raises(rundir.DestinationError, match="cannot write there"):
        rundir.check_destination(where, "lab00")
    assert rundir.DestinationError.exit_code == 2


def test_check_destination_leaves_no_folders_behind(tmp_path):
    from runners import rundir
    dest = rundir.check_destination(tmp_path / "a" / "b", "lab00")
    assert dest == tmp_path / "a" / "b" / "lab00" and not (tmp_path / "a").exists()


def test_a_partial_publish_of_a_dead_process_is_swept(tmp_path):
    from runners import rundir
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    stale = tmp_path / f".run-1.{dead}.partial"
    live = tmp_path / f".run-2.{os.getpid()}.partial"
    for d in (stale, live):
        d.mkdir()
    assert rundir.sweep_partial(tmp_path) == [stale]
    assert live.exists() and not stale.exists()


# ------------------------------------------------------------------- item 6: a render in progress is kept

def test_a_render_folder_is_private_and_survives_another_runs_sweep(tmp_path, monkeypatch):
    from runners import core, rundir
    monkeypatch.setattr(rundir, "STAGING", tmp_path / "partial")
    seen = {}

    def fake_execute(notebook, out, parameters, cell_timeout_s=core.CELL_TIMEOUT_S):
        assert rundir.sweep_stale(rundir.STAGING) == []          # another run sweeps while this one renders
        seen["dir"] = out.parent
        out.write_text("{}", encoding="utf-8")

    monkeypatch.setattr(core, "execute_notebook", fake_execute)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    lab = type("Lab", (), {"NOTEBOOK": "notebooks/lab-00-roofline.ipynb"})
    final = core.render(lab, run_dir)
    assert final.exists() and seen["dir"].name.endswith(f"-{os.getpid()}") and not seen["dir"].exists()


def test_the_book_build_slices_its_kernel_waits_too():
    """The pages are executed inside Sphinx (myst-nb's cache mode): the book's extension installs the same waits."""
    import importlib.util

    from jupyter_client.channels import AsyncZMQSocketChannel
    spec = importlib.util.spec_from_file_location("x4_pagefix", ROOT / "book" / "_ext" / "x4_pagefix.py")
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    original = AsyncZMQSocketChannel.get_msg

    class App:
        def __getattr__(self, name):
            return lambda *a, **k: None
    try:
        ext.setup(App())
        ext.setup(App())  # once only: not sliced twice
        assert AsyncZMQSocketChannel.get_msg.x4_sliced and AsyncZMQSocketChannel.get_msg is not original
        assert AsyncZMQSocketChannel.get_msg.__wrapped_original__ is original
    finally:
        AsyncZMQSocketChannel.get_msg = original
