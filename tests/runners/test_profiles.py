"""Runner device profiles: schema, catalog ids and the refusal of unknown names."""
import json

import jsonschema
import pytest

from conftest import ROOT, run_cli
from runners import profiles
from x4lib.book import bib
from x4lib.catalog import specs

SCHEMA = json.loads((ROOT / "runners" / "profile.schema.json").read_text())


@pytest.mark.parametrize("name", profiles.names())
def test_profile_is_valid_and_names_known_devices(name):
    data = profiles.load(name)
    jsonschema.validate(data, SCHEMA)
    for dev_id in data["expects"]["catalog_ids"]:
        specs.get(dev_id)


def test_the_decided_profiles_exist():
    assert {"local-cpu", "i5-8250u", "a100", "h100", "h200", "cluster-2x8"} <= set(profiles.names())


def test_unknown_profile_is_refused():
    with pytest.raises(profiles.ProfileError, match="known profiles"):
        profiles.load("tpu-pod")


def test_profiles_cli_lists_them():
    r = run_cli("profiles", "--json", module="runners")
    assert r.returncode == 0 and {p["name"] for p in json.loads(r.stdout)} == set(profiles.names())


def fake_dev(kind, name, catalog_id=None, count=1):
    return {"kind": kind, "detected_name": name, "catalog_id": catalog_id, "count": count,
            "cpu": {"model_name": "AMD EPYC"}}


@pytest.mark.parametrize("profile,dev", [
    ("h100", fake_dev("cpu", "AMD EPYC")),
    ("h100", fake_dev("gpu", "NVIDIA A100-SXM4-80GB", "a100-sxm-80gb")),
    ("a100", fake_dev("gpu", "NVIDIA H100 80GB HBM3", "h100-sxm")),
    ("i5-8250u", fake_dev("cpu", "AMD EPYC")),
])
def test_a_profile_refuses_the_wrong_device(profile, dev):
    with pytest.raises(profiles.WrongDevice, match="expects"):
        profiles.check_device(profiles.load(profile), dev)


def test_a_profile_accepts_a_variant_by_name():
    profiles.check_device(profiles.load("a100"), fake_dev("gpu", "NVIDIA A100-PCIE-40GB", None))
    profiles.check_device(profiles.load("local-cpu"), fake_dev("cpu", "AMD EPYC"))


def test_rental_prices_are_referenced_not_copied():
    from x4lib.training import economics
    for name in profiles.names():
        rental = profiles.load(name).get("rental")
        if rental:
            assert economics.sourced_value("usd_per_gpu_hour", rental["price_key"])["value"] > 0
            assert rental["source"] in bib.book_keys()
