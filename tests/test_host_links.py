"""The PCIe server as wired (models.host_links), the links probe on CPU, and per-class error bars."""

import pytest

from knowledge.catalog import resolve_platform
from knowledge.platform_class import class_rel_error, platform_class
from knowledge.schema import LinksProbe, Profile
from models.host_links import concurrent_copy_bps, gpu_link_bps, ring_link_bps


def test_geforce_box_stages_through_host_memory_and_unmeasured_priors_stay_off():
    p = resolve_platform("rtx4090x8")
    # no P2P: every hop crosses PCIe twice through host memory (the catalog's ring before host_links)
    assert ring_link_bps(p, 8) == p.gpu.pcie_gbs * 1e9 / 2 == p.link_gbs * 1e9
    # the Gen3 root ports and the DRAM prior are not applied (they made the held-out error worse)
    assert concurrent_copy_bps(p, 8) == gpu_link_bps(p) == p.gpu.pcie_gbs * 1e9
    # a measured DRAM bandwidth does cap the eight staged rings and copies
    measured = p.model_copy(update={"host": p.host.model_copy(update={"dram_measured": True})})
    assert ring_link_bps(measured, 8) < ring_link_bps(p, 8)
    # two GPUs behind one switch (an HGX A100 board) share its uplink when all copy at once
    a800 = resolve_platform("a800x8")
    hgx = a800.model_copy(update={"host": a800.host.model_copy(update={"gpus_per_uplink": 2})})
    assert concurrent_copy_bps(a800, 8) == gpu_link_bps(a800)
    assert concurrent_copy_bps(hgx, 8) == gpu_link_bps(a800) / 2


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


def _measured_links():
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "knowledge/measurements/own/logs/h200x2-links-2026-11-23.json"
    return LinksProbe.model_validate(json.loads(path.read_text()))


def test_p2p_off_collectives_match_the_h200_measurement():
    """NCCL_P2P_DISABLE=1 on the two H200s (a GeForce box's path through host memory): the ring's ceiling
    from the catalog's topology, times the copy engine's achieved fraction of a link (the same probe's
    single-GPU pinned copy), is each collective's measured bus bandwidth at >= 64 MiB within 25%."""
    links = _measured_links()
    p = resolve_platform("h200x2")
    copy_frac = links.single_h2d_gbs * 1e9 / gpu_link_bps(p)
    predicted_gbs = ring_link_bps(p, 2, p2p=False) * copy_frac / 1e9
    big = [c for c in links.collectives if not c.p2p and c.size_bytes >= 64 * 2**20]
    assert {c.op for c in big} == {"all_reduce", "all_gather", "reduce_scatter"}
    for c in big:
        assert abs(predicted_gbs - c.busbw_gbs) / c.busbw_gbs <= 0.25, (c.op, c.size_bytes, predicted_gbs, c.busbw_gbs)
    # and P2P on is NVLink, an order of magnitude above: the model must not confuse the two
    on = links.large_busbw_gbs(p2p=True)
    assert on > 5 * predicted_gbs


def test_concurrent_copies_as_measured_on_the_h200s():
    """probes/links.py reports each GPU's share with every GPU copying at once: on the H200 host that is
    the single-GPU rate (own uplinks), and the model's concurrent ceiling says the same."""
    links = _measured_links()
    p = resolve_platform("h200x2")
    copy_frac = links.single_h2d_gbs * 1e9 / gpu_link_bps(p)
    per_gpu_gbs = concurrent_copy_bps(p, 2) * copy_frac / 1e9
    assert abs(per_gpu_gbs - links.concurrent_h2d_gbs) / links.concurrent_h2d_gbs <= 0.25


def test_class_error_comes_from_the_held_out_predictions():
    from types import SimpleNamespace as NS

    from advisor.validation import held_out_by_class

    a800, g4090 = resolve_platform("a800x8"), resolve_platform("rtx4090x8")
    row = lambda p: NS(platform=p, case=NS(nodes=1))  # noqa: E731
    held = [NS(row=row(g4090), predicted=150.0, measured=100.0), NS(row=row(g4090), predicted=50.0, measured=100.0),
            NS(row=row(a800), predicted=110.0, measured=100.0)]
    got = held_out_by_class(held)
    assert got == {"PCIe consumer": {"mape": 0.5, "n": 2}, "NVLink/NVSwitch": {"mape": 0.1, "n": 1}}


def test_bundled_interval_of_rtx4090x8_covers_its_class_held_out_error():
    """The bundled fit carries per-class figures (written by ``advisor calibrate``), and a prediction on the
    study's GeForce box gets an interval at least as wide as its class's held-out MAPE."""
    from advisor.predictor import Predictor
    from knowledge.efficiency import load_held_out_by_class
    from knowledge.schema import TrainCase

    table = load_held_out_by_class("fitted")
    consumer = table["train"]["PCIe consumer"]
    assert consumer["n"] >= 10
    case = TrainCase(id="c", model="llama2-7b", hardware="rtx4090x8", task="pretrain", zero_stage=3, seq_len=512)
    pred = Predictor().predict(case)
    lo, hi = pred.interval["tokens_per_s"]
    assert hi / pred.tokens_per_s - 1 >= consumer["mape"] - 1e-9
    assert 1 - lo / pred.tokens_per_s < hi / pred.tokens_per_s - 1  # the band is (x/(1+e), x(1+e))


def test_a_profile_carrying_links_makes_predictions_use_the_measured_busbw():
    import json
    from pathlib import Path

    from advisor.predictor import calibration_for

    root = Path(__file__).resolve().parents[1] / "knowledge/measurements"
    prof = Profile.model_validate(json.loads((root / "profiles/h200x2.json").read_text()))
    links = _measured_links()
    p = resolve_platform("h200x2")
    without = calibration_for(p, prof.model_copy(update={"links": None}))
    with_links = calibration_for(p, prof.model_copy(update={"links": links}))
    assert abs(with_links.ceilings.link_bps - links.large_busbw_gbs(p2p=True) * 1e9) < 1e3
    assert abs(with_links.ceilings.pcie_bps - links.concurrent_h2d_gbs * 1e9) < 1e3
    assert with_links.ceilings.link_bps != without.ceilings.link_bps


def test_probe_links_flag_refuses_a_machine_without_two_gpus():
    from typer.testing import CliRunner

    from advisor import cli

    if not cli.app.registered_commands:
        cli._register()
    res = CliRunner().invoke(cli.app, ["probe", "--device", "cpu", "--links", "--budget", "0", "--out", "/tmp/never-written.json"])
    assert res.exit_code != 0
    assert "--links needs 2 or more GPUs" in res.output and "Traceback" not in res.output


def test_cpu_adam_ranks_share_the_node_cap_as_measured_on_the_h200_host():
    """CPU Adam of several single-threaded ranks: the node's cap (the catalog's 5.56 Gparam/s on 32 threads)
    is shared by the ranks stepping at once. From the one-process rate alone the model gives the measured
    two-process rate within 10% (0.64 vs 0.612; a cap each rank had to itself gave 0.70, +14%)."""
    from knowledge.efficiency import Efficiencies
    from models.roofline import ceilings
    from models.step_time import cpu_adam_gparams_per_s

    links = _measured_links()
    one = next(pt for pt in links.cpu_adam if pt.processes == 1 and pt.threads == 1)
    two = next(pt for pt in links.cpu_adam if pt.processes == 2 and pt.threads == 1)
    p = resolve_platform("h200x2")
    eff = Efficiencies().model_copy(update={"cpu_adam_thread_gparams_s": one.gparams_per_s})
    c = ceilings(p, eff)
    assert c.cpu_adam_gparams_s and c.cpu_adam_threads == 32 and not c.cpu_adam_concurrent
    model_two = cpu_adam_gparams_per_s(1, eff, c, ranks_on_node=2)
    assert abs(model_two / two.gparams_per_s - 1) <= 0.10, (model_two, two.gparams_per_s)
    # more ranks, less each; the node's total still rises and never passes its measured cap
    rates = [cpu_adam_gparams_per_s(1, eff, c, ranks_on_node=n) for n in (1, 2, 4, 8)]
    assert all(b < a for a, b in zip(rates, rates[1:]))
    totals = [r * n for r, n in zip(rates, (1, 2, 4, 8))]
    assert all(b > a for a, b in zip(totals, totals[1:])) and totals[-1] < c.cpu_adam_gparams_s


def test_server_hold_out_keeps_a_boxs_variants_together():
    """The RTX 3090 box with and without its NVLink bridges is one machine: holding out by server removes
    both from the fit (by platform, one variant taught the fit the other's host)."""
    from advisor.evaluation import GROUPINGS, server_id

    assert "server" in GROUPINGS
    assert server_id("rtx3090x8-pcie") == server_id("rtx3090x8") == "rtx3090x8"
    assert server_id("rtx4090x8") == "rtx4090x8" and server_id("a800x8") != server_id("rtx3090x8")


def test_cpu_adam_with_more_threads_than_cores_as_measured_on_the_h200_host():
    """DeepSpeed CPU Adam run by 1-8 processes with 1, cores/P and every core each on the one-H200 host
    (knowledge/measurements/own/logs/h200x1-host-contention-2026-11-26.jsonl). From the 1 x 1 and 1 x 16 points
    alone (the per-thread rate and the node's cap) the model gives the other nine within 25% each and 12% on
    average; ranks with every core each (the DeepSpeed launcher's default) time-share them."""
    import json
    from dataclasses import replace
    from pathlib import Path

    from knowledge.efficiency import Efficiencies
    from models.roofline import ceilings
    from models.step_time import cpu_adam_gparams_per_s, effective_threads

    path = Path(__file__).parents[1] / "knowledge/measurements/own/logs/h200x1-host-contention-2026-11-26.jsonl"
    pts = [r for r in map(json.loads, path.read_text().splitlines()) if r["kind"] == "cpu_adam"]
    one = next(r for r in pts if (r["processes"], r["threads"]) == (1, 1))
    node = next(r for r in pts if (r["processes"], r["threads"]) == (1, 16))
    eff = Efficiencies().model_copy(update={"cpu_adam_thread_gparams_s": one["gparams_per_s"]})
    c = replace(ceilings(resolve_platform("h200x1"), eff), cpu_adam_gparams_s=node["gparams_per_s"], cpu_adam_threads=16)
    assert c.cpu_cores == 16
    errors = [cpu_adam_gparams_per_s(r["threads"], eff, c, r["processes"]) / r["gparams_per_s"] - 1
              for r in pts if r is not one and r is not node]
    assert len(errors) == 9 and max(map(abs, errors)) <= 0.25 and sum(map(abs, errors)) / 9 <= 0.12, errors
    # oversubscribed: no more than the rank's share of the cores, at less than the bound rate
    assert effective_threads(16, 8, 16) < effective_threads(2, 8, 16) == 2.0
    assert effective_threads(4, 4, 16) == 4.0 and effective_threads(1, 8, 16) == 1.0


def test_host_contention_probe_runs_every_path_on_the_cpu(tmp_path):
    """``python -m probes.host_contention --toy``: the launcher's default threads, pinned / pageable copies (host to
    host on the CPU) and CPU Adam by processes x threads, one JSON line each."""
    import json

    from probes.host_contention import main, thread_counts

    assert thread_counts(16, 8) == [1, 2, 16] and thread_counts(16, 1) == [1, 16]
    assert main(["--out", str(tmp_path), "--toy", "--procs", "2", "--copy-procs", "2"]) == 0
    recs = [json.loads(x) for x in (tmp_path / "host_contention.jsonl").read_text().splitlines()]
    kinds = [r["kind"] for r in recs]
    assert kinds[:3] == ["host", "copies", "concurrent_copies"] and "cpu_adam" in kinds
    both = recs[2]  # two processes copying at once: each one's rate, and the node's sum (at least twice the slower)
    assert both["processes"] == 2 and all(both[f"{k}_gbs_node"] >= 2 * both[f"{k}_gbs_per_proc"] > 0
                                          for k in ("pageable_d2h", "pageable_h2d", "pinned_h2d"))
    assert recs[0]["default_threads"] >= 1 and all(r["gparams_per_s"] > 0 for r in recs if r["kind"] == "cpu_adam")


def test_host_contention_times_dispatch_by_processes_with_and_without_a_group(tmp_path):
    """``--dispatch-procs 1,2``: one line per process count, two processes without and with a process group (gloo on
    the CPU, NCCL on GPUs), each process's microseconds per small autograd step."""
    import json

    from probes.host_contention import main

    assert main(["--out", str(tmp_path), "--toy", "--copies-only", "--dispatch-procs", "1,2"]) == 0
    recs = [json.loads(x) for x in (tmp_path / "host_contention.jsonl").read_text().splitlines()]
    dispatch = [(r["processes"], r["group"], r) for r in recs if r["kind"] == "dispatch"]
    assert [(p, g) for p, g, _ in dispatch] == [(1, False), (2, False), (2, True)]
    for p, _, r in dispatch:
        assert len(r["us_per_step_per_proc"]) == p and 0 < min(r["us_per_step_per_proc"]) <= r["us_per_step_max"] < 1e5


def test_host_contention_refuses_bad_process_counts_before_measuring(tmp_path, capsys):
    """A bad --procs / --copy-procs / --dispatch-procs is one argparse line and exit 2, with nothing measured or written."""
    from probes.host_contention import main

    for flag, value in (("--dispatch-procs", "x"), ("--copy-procs", "0"), ("--procs", "2,-1")):
        with pytest.raises(SystemExit) as e:
            main(["--out", str(tmp_path), "--toy", flag, value])
        assert e.value.code == 2
        assert f"{value!r} is not a comma-separated list of process counts" in capsys.readouterr().err
    assert not (tmp_path / "host_contention.jsonl").exists()


def test_offload_copies_are_timed_in_the_phase_that_waits_for_them():
    """ZeRO-Offload's gradient copies to the host run inside the backward and ZeRO-3's parameter copies inside the
    forward and backward (measured: a Llama-3.2-3B ZeRO-2 offload step's backward 0.42 s against ~0.13 s of compute,
    whatever CPU Adam's threads, grid h200-omp-threads); the phases the fit compares still add up to the step."""
    from advisor.cases import parse_case
    from advisor.predictor import calibration_for
    from knowledge.catalog import resolve_model
    from models.setup import derive
    from models.step_time import training_step_time

    platform, arch = resolve_platform("h200x1"), resolve_model("llama3.2-3b")
    cal = calibration_for(platform)
    for offload, in_forward in (("optimizer", False), ("optimizer+params", True)):
        case = parse_case({"id": "x", "hardware": "h200x1", "model": "llama3.2-3b", "task": "pretrain", "zero_stage": 2 + in_forward,
                           "offload": offload, "micro_batch_size": 2})
        t = training_step_time(derive(case, arch, platform), cal.eff, cal.ceilings)
        fwd, bwd, opt = t.phases
        assert abs(fwd + bwd + opt - t.total) < 1e-9 * t.total
        assert t.backward_offload > 0 and bwd >= t.backward + t.communication + t.backward_offload - 1e-12
        assert (t.forward_offload > 0) == in_forward and opt >= t.optimizer + t.offload - t.forward_offload - t.backward_offload - 1e-12
