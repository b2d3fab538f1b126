"""The PCIe server as wired (models.host_links), the links probe on CPU, and per-class error bars."""

from knowledge.catalog import resolve_platform
from knowledge.platform_class import class_rel_error, platform_class
from knowledge.schema import LinksProbe, Profile
from models.host_links import concurrent_copy_bps, gpu_link_bps, ring_link_bps


def test_geforce_box_on_a_gen3_host_runs_at_gen3_and_shares_uplinks():
    p = resolve_platform("rtx4090x8")
    assert gpu_link_bps(p) == 15.75e9  # Gen4 card in a Cascade Lake (Gen3) host
    # no P2P: 2 GPUs send and receive through one Gen3 uplink at once
    assert ring_link_bps(p, 8) == 15.75e9 / 2
    assert concurrent_copy_bps(p, 8) == 15.75e9 / 2


def test_p2p_off_is_slower_than_on_and_nvswitch_unchanged():
    p = resolve_platform("h200x2")
    assert ring_link_bps(p, 2) == p.gpu.nvlink_gbs * 1e9
    assert ring_link_bps(p, 2, p2p=False) < ring_link_bps(p, 2) / 5


def test_platform_classes_and_their_error():
    assert platform_class(resolve_platform("rtx4090x8")) == "PCIe consumer"
    assert platform_class(resolve_platform("rtx3090x8")) == "PCIe consumer"
    assert platform_class(resolve_platform("a800x8")) == "NVLink/NVSwitch"
    assert platform_class(resolve_platform("l40sx4")) == "PCIe datacenter"
    assert platform_class(resolve_platform("h100x1")) == "single GPU"
    assert platform_class(resolve_platform("h100x8"), nodes=4) == "multi-node"
    table = {"PCIe consumer": {"mape": 0.6, "n": 10}, "NVLink/NVSwitch": {"mape": 0.2, "n": 5}}
    assert class_rel_error(table, "NVLink/NVSwitch") == 0.2
    assert class_rel_error(table, "multi-node") == 0.6  # unmeasured: the widest measured class


def test_links_probe_runs_on_cpu_and_old_profiles_still_load(tmp_path):
    from probes.links import concurrent_copies, cpu_adam_concurrent

    single, h2d, d2h = concurrent_copies(2**16, toy=True, repeats=2)
    assert single > 0 and h2d > 0 and d2h > 0
    pt = cpu_adam_concurrent(2, 50_000, 1)
    assert pt.processes == 2 and pt.gparams_per_s > 0
    probe = LinksProbe(gpus=0, single_h2d_gbs=single, concurrent_h2d_gbs=h2d, cpu_adam=[pt])
    assert LinksProbe.model_validate_json(probe.model_dump_json()).cpu_adam[0].processes == 2
    assert "links" not in Profile.model_fields or Profile.model_fields["links"].default is None
