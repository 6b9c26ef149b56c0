"""x4lib.compute.mig: the H100 80 GB MIG geometry, NVIDIA's documented configurations, combinations the placement rule
forbids, and the packer."""
import pytest

from x4lib.compute import mig


def test_profiles_fill_the_gpu_exactly_once_at_most():
    g = mig.geometry()
    assert (g.memory_slices, g.compute_slices, g.max_instances) == (8, 7, 7)
    for p in g.profiles.values():
        assert max(p.starts) + p.memory_slices <= g.memory_slices
        assert p.memory_gib * 8 / p.memory_slices <= 80            # never more than its share of "80GB"


@pytest.mark.parametrize("name", list(mig.geometry().documented_configs))
def test_every_configuration_nvidia_ships_can_be_placed(name):
    counts = mig.geometry().documented_configs[name]
    placed = mig.place(counts)
    assert placed is not None and mig.is_valid(placed)
    assert sorted(i.profile for i in placed) == sorted(p for p, n in counts.items() for _ in range(n))


# Valid by the placement rule, written out with starts (the research note's list; seven 1g.10gb is also a real
# nvidia-smi -lgi capture).
VALID = ["7g.80gb@0", "4g.40gb@0, 3g.40gb@4", "3g.40gb@0, 3g.40gb@4", "3g.40gb@4, 2g.20gb@0, 2g.20gb@2",
         "3g.40gb@4, 2g.20gb@0, 1g.10gb@2, 1g.10gb@3", "4g.40gb@0, 2g.20gb@4, 1g.10gb@6",
         "4g.40gb@0, 1g.10gb@4, 1g.10gb@5, 1g.10gb@6", ", ".join(f"1g.10gb@{i}" for i in range(7)),
         "1g.20gb@0, 1g.20gb@2, 1g.20gb@4, 1g.20gb@6", "2g.20gb@0, 2g.20gb@2, 2g.20gb@4, 1g.10gb@6",
         "1g.10gb+me@0, 1g.10gb@1"]


@pytest.mark.parametrize("text", VALID)
def test_valid_combinations(text):
    assert mig.problems(mig.parse(text)) == []


@pytest.mark.parametrize("text,needle", [
    ("4g.40gb@0, 4g.40gb@4", "may start only at memory slice 0"),
    ("2g.20gb@6", "may start only"),
    ("1g.10gb@7", "may start only"),
    ("3g.40gb@2", "may start only at memory slice 0, 4"),
    ("4g.40gb@0, 3g.40gb@0", "overlaps"),
    ("3g.40gb@4, 1g.20gb@4", "overlaps"),
    ("7g.80gb@0, 1g.10gb@0", "overlaps"),
    ("1g.10gb+me@0, 1g.10gb+me@1", "at most 1 per GPU"),
    ("3g.40gb@0, 2g.20gb@4, 1g.10gb@6, 1g.10gb@7", "may start only"),
    ("5g.50gb@0", "unknown profile"),
])
def test_invalid_combinations_say_why(text, needle):
    found = mig.problems(mig.parse(text))
    assert found and any(needle in p for p in found), found


def test_parse_refuses_a_missing_start():
    with pytest.raises(ValueError, match="PROFILE@START"):
        mig.parse("3g.40gb")


def test_placement_order_matters_for_the_balanced_layout():
    # with 3g.40gb at slice 0 and 2g.20gb at 4, only slice 6 is left for a 1g.10gb: a second one cannot go in
    assert mig.problems(mig.parse("3g.40gb@0, 2g.20gb@4, 1g.10gb@6, 1g.10gb@7"))
    assert mig.is_valid(mig.place({"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}))


def test_pack_picks_the_smallest_profiles_that_fit():
    p = mig.pack([mig.Workload("llm", 35.0), mig.Workload("embed", 15.0), mig.Workload("ocr", 8.0, 2)])
    assert p.ok
    got = {w: i.profile for w, i in p.assignments}
    assert got == {"llm": "3g.40gb", "embed": "1g.20gb", "ocr": "2g.20gb"}
    assert mig.is_valid(i for _, i in p.assignments)


@pytest.mark.parametrize("workloads,needle", [
    ([mig.Workload("big", 90.0)], "the largest profile, 7g.80gb"),
    ([mig.Workload("a", 45.0), mig.Workload("b", 45.0)], "at least 16 memory slices"),
    ([mig.Workload("a", 30.0, 4), mig.Workload("b", 30.0, 4)], "at least 8 compute slices"),
    ([mig.Workload(str(i), 5.0) for i in range(8)], "at least 8 compute slices"),
])
def test_pack_explains_why_it_cannot(workloads, needle):
    p = mig.pack(workloads)
    assert not p.ok and needle in p.reason


def test_pack_finds_layouts_that_need_the_right_starts():
    # 4g + 2g + 1g: only the order 4g@0, 2g@4, 1g@6 works
    p = mig.pack([mig.Workload("a", 8.0), mig.Workload("b", 30.0, 4), mig.Workload("c", 18.0, 2)])
    assert p.ok and {str(i) for _, i in p.assignments} == {"4g.40gb@0", "2g.20gb@4", "1g.10gb@6"}
    with pytest.raises(ValueError):
        mig.pack([mig.Workload("zero", 0.0)])
