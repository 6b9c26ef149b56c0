"""runners/rundir.py: unique run ids, a private staging folder per run, one rename into book/runs, failures kept
out of it, stale staging swept, and the destination checked before anything is measured."""
import json
import os
import subprocess
import sys

import pytest

from runners import rundir


def test_run_ids_are_unique_even_within_one_second():
    ids = {rundir.new_run_id("local-cpu", "AMD EPYC 9B14") for _ in range(200)}
    assert len(ids) == 200
    rid = next(iter(ids))
    assert rid.startswith("local-cpu-amd-epyc-9b14-") and rid.endswith(rid[-4:])


def test_slug_is_lower_case_ascii_with_dashes():
    assert rundir.slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"
    assert rundir.slug("$(rm -rf /)\x1b[31m") == "rm-rf-31m"
    assert rundir.slug("") == "device"


def test_a_staged_run_is_published_in_one_rename(tmp_path):
    staging, dest = tmp_path / "out" / "partial", tmp_path / "runs" / "lab00"  # dest is created on publishing
    with rundir.Staged("r1", staging, tmp_path / "failed") as st:
        assert (st.path / ".pid").read_text() == str(os.getpid())
        rundir.write_json(st.path / "results.json", {"a": 1})
        final = st.publish(dest)
    assert final == dest / "r1" and json.loads((final / "results.json").read_text()) == {"a": 1}
    assert not (final / ".pid").exists() and not list(staging.iterdir())


def test_a_failed_run_leaves_nothing_complete_looking(tmp_path):
    staging, dest, failed = tmp_path / "partial", tmp_path / "runs" / "lab00", tmp_path / "failed"
    dest.mkdir(parents=True)
    st = rundir.Staged("r2", staging, failed)
    with pytest.raises(RuntimeError):
        with st:
            rundir.write_json(st.path / "results.json", {"lab": "lab00"})
            raise RuntimeError("the notebook failed")
    assert not list(dest.iterdir()) and st.moved_to == failed / "r2"
    assert (failed / "r2" / "results.incomplete.json").exists() and not (failed / "r2" / "results.json").exists()


def test_an_empty_failed_run_is_not_moved_anywhere(tmp_path):
    st = rundir.Staged("r3", tmp_path / "partial", tmp_path / "failed")
    with pytest.raises(RuntimeError):
        with st:
            raise RuntimeError("measuring failed before writing")
    assert st.moved_to is None and not (tmp_path / "failed").exists()


def test_nan_is_never_written_as_json(tmp_path):
    with pytest.raises(ValueError):
        rundir.write_json(tmp_path / "results.json", {"time_us": float("nan")})
    assert not (tmp_path / "results.json").exists()


def test_stale_staging_of_a_killed_run_is_swept(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    (tmp_path / "killed").mkdir()
    (tmp_path / "killed" / ".pid").write_text(dead)
    (tmp_path / "killed" / "results.json").write_text("{}")
    (tmp_path / "alive").mkdir()
    (tmp_path / "alive" / ".pid").write_text(str(os.getpid()))
    assert rundir.sweep_stale(tmp_path) == [tmp_path / "killed"]
    assert (tmp_path / "alive").exists()


def _file(p):
    (p / "file").write_text("x")
    return p / "file"


def _under_a_file(p):
    return _file(p) / "runs"


@pytest.mark.parametrize("make,needle", [(lambda p: "", "empty"), (lambda p: "   ", "empty"), (_file, "is a file"),
                                         (_under_a_file, "cannot write")])
def test_the_destination_is_checked_first(tmp_path, make, needle):
    with pytest.raises(rundir.DestinationError, match=needle):
        rundir.check_destination(make(tmp_path), "lab00")


def test_publishing_across_file_systems_copies_then_renames(tmp_path, monkeypatch):
    calls = []
    real = os.replace

    def cross_device(src, dst):
        calls.append((src, dst))
        if len(calls) == 1:
            raise OSError(18, "Invalid cross-device link")
        return real(src, dst)
    monkeypatch.setattr(rundir.os, "replace", cross_device)
    dest = tmp_path / "runs"
    dest.mkdir()
    with rundir.Staged("r4", tmp_path / "partial", tmp_path / "failed") as st:
        (st.path / "results.json").write_text("{}")
        final = st.publish(dest)
    assert (final / "results.json").exists() and str(calls[1][0]).endswith(f".r4.{os.getpid()}.partial")
    assert not (tmp_path / "partial" / "r4").exists()


def test_runs_started_together_prove_the_same_new_folder_writable(tmp_path):
    """Two runs started at once create, probe and remove the same new --runs-dir: neither may fail on the other's
    folders (a fresh clone's CI once saw 'cannot write there (File exists)')."""
    import threading
    errors = []

    def prove(dest):
        try:
            rundir.prove_writable(dest)
        except OSError as exc:
            errors.append(exc)
    for i in range(30):
        dest = tmp_path / f"round{i}" / "a" / "b"
        threads = [threading.Thread(target=prove, args=(dest,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors[:3]
