"""x4lib.datacenter.runcost: the one cost model of a training run, checked against its parts."""
import pytest

from x4lib.training import economics
from x4lib.datacenter import reliability, runcost, storage, tco

G = economics.quiz_givens()


def quiz(**over):
    kw = {"dtype": G["dtype"], "mfu": G["mfu"], **over}
    return runcost.run_cost(G["params"], G["tokens"], G["device"], G["n_gpus"], **kw)


def test_ideal_time_is_chapter_00s_and_failures_stretch_it():
    r = quiz()
    base = economics.estimate_training(G["params"], G["tokens"], G["device"], G["n_gpus"], mfu=G["mfu"])
    assert r.ideal_s == pytest.approx(base.wall_clock_s)
    assert 0 < r.goodput < 1
    assert r.wall_clock_s == pytest.approx(r.ideal_s / r.goodput)
    assert r.gpu_hours == pytest.approx(G["n_gpus"] * r.wall_clock_s / 3600)


def test_checkpoint_time_comes_from_storage():
    r = quiz(checkpoint_write_Bps=100e9)
    assert r.plan.checkpoint_s == pytest.approx(storage.checkpoint_bytes(G["params"]) / 100e9)


def test_rent_is_gpu_hours_times_price():
    r = quiz(mode="rent", usd_per_gpu_hour=2.0)
    assert r.total_usd == pytest.approx(r.gpu_hours * 2.0)
    assert r.electricity_usd > 0 and set(r.costs_usd) == {"rental"}


def test_own_adds_up_from_the_tco():
    r = quiz(mode="own", fleet_utilisation=1.0)
    t = tco.tco(G["device"], G["n_gpus"], utilisation=1.0)
    fixed_per_gpu_hour = t.fixed_usd_per_year / (t.n_gpus * tco.HOURS_PER_YEAR)
    assert r.total_usd - r.costs_usd["electricity"] == pytest.approx(r.gpu_hours * fixed_per_gpu_hour)
    assert r.costs_usd["electricity"] == pytest.approx(r.gpu_hours * t.electricity_usd_per_busy_gpu_hour)
    assert r.failure_overhead_usd == pytest.approx(r.total_usd * (1 - r.goodput))


def test_energy_share_solver_finds_the_price():
    run = lambda **o: quiz(fleet_utilisation=1.0, **o)  # noqa: E731
    p = runcost.solve_for_energy_share(0.6, "usd_per_kwh", 0.01, 100.0, run)
    assert run(usd_per_kwh=p).energy_share == pytest.approx(0.6, abs=1e-6)
    # electricity is a few per cent at today's price, far from 60 %
    assert run().energy_share < 0.1 and p > 10 * run().assumptions["usd_per_kwh"]
    # no hardware price makes energy 60 % while the facility is paid for
    assert runcost.solve_for_energy_share(0.6, "server_usd", 1.0, 3e5, run) is None


def test_shorter_mtbf_costs_more():
    lam = runcost.defaults()["failure_rate_per_gpu_s"]
    assert quiz(failure_rate_per_gpu_s=lam * 6).total_usd > quiz().total_usd
    assert reliability.cluster_mtbf_s(lam, G["n_gpus"]) == pytest.approx(quiz().plan.mtbf_s)


def test_sensitivity_rows():
    rows = runcost.sensitivity(quiz, {"usd_per_kwh": (0.05, 0.2), "mfu": (0.4, 0.6)})
    by = {r["input"]: r for r in rows}
    assert by["usd_per_kwh"]["usd_low"] < by["usd_per_kwh"]["usd_base"] < by["usd_per_kwh"]["usd_high"]
    assert by["mfu"]["usd_low"] > by["mfu"]["usd_high"]


def test_bad_mode():
    with pytest.raises(ValueError):
        quiz(mode="lease")
