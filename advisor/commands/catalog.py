"""`advisor hardware` and `advisor models`: what the catalog knows, with where each entry came from."""

from __future__ import annotations

import json
from typing import Any, Optional

import typer
from rich.table import Table

from advisor.output import console, fail, fail_input

PLATFORM_FILE_EXAMPLE = '{"gpu": "rtx4090", "count": 2, "interconnect": "pcie", "host_ram_gib": 64, "cpu_cores": 16}'


def gpu_rows() -> list[dict[str, Any]]:
    from knowledge.catalog import gpus

    rows = []
    for g in sorted({g.id: g for g in gpus().values()}.values(), key=lambda g: g.id):
        rows.append({
            "id": g.id, "name": g.name, "aliases": g.aliases, "memory_gib": g.memory_gib,
            "memory_bandwidth_gbs": g.memory_bandwidth_gbs, "matmul_tflops": g.matmul_tflops,
            "bf16": g.supports_bf16, "nvlink_gbs": g.nvlink_gbs, "pcie_gbs": g.pcie_gbs, "p2p_over_pcie": g.p2p_over_pcie,
            "sources": g.sources,
        })
    return rows


def platform_rows() -> list[dict[str, Any]]:
    from knowledge.catalog import named_platforms, resolve_platform

    rows = []
    for pid in sorted(named_platforms()):
        p = resolve_platform(pid)
        rows.append({"id": p.id, "gpu": p.gpu.id, "count": p.count, "interconnect": p.interconnect, "link_gbs": p.link_gbs,
                     "host_ram_gib": p.host.host_ram_gib, "swap_gib": p.host.swap_gib, "swap_source": p.host.swap_source,
                     "cpu_cores": p.host.cpu_cores, "source": p.host.source, "notes": p.notes})
    return rows


def fabric_rows() -> list[dict[str, Any]]:
    from knowledge.fabrics import fabrics

    return [f.model_dump() for f in sorted({f.id: f for f in fabrics().values()}.values(), key=lambda f: f.id)]


def model_rows() -> list[dict[str, Any]]:
    from knowledge.catalog import models
    from models.architecture import param_counts

    rows = []
    for m in sorted({m.name: m for m in models().values()}.values(), key=lambda m: m.name):
        rows.append({
            "name": m.name, "aliases": m.aliases, "params_b": (m.param_count or param_counts(m).total) / 1e9,
            "layers": m.num_hidden_layers, "hidden_size": m.hidden_size, "heads": m.num_attention_heads,
            "kv_heads": m.num_key_value_heads, "experts": m.num_local_experts, "vocab_size": m.vocab_size,
            "source": m.source,
        })
    return rows


def _short_source(sources: dict[str, str]) -> str:
    first = sources.get("memory_bandwidth_gbs") or sources.get("bf16_tflops") or next(iter(sources.values()), "")
    return first.split(": ")[0].split(", Appendix")[0]  # the citation, without the value it gives (whole, wrapped)


def citation(source: str) -> str:
    """The citation of a source without the figures it gives ('measured with `advisor probe` on 1x H100 SXM,
    2026-11-23'; 'NVIDIA DGX-2 datasheet (2018)'): short enough to stay whole; --json has every word."""
    return source.split(": ")[0].strip()


def hardware(
    as_json: bool = typer.Option(False, "--json", help="Every GPU and named server with all its sources."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="Show one GPU with the source of every number."),
) -> None:
    """The GPUs and servers the advisor knows, with their sources; how to describe your own server."""
    from knowledge.catalog import resolve_gpu
    from knowledge.errors import AdvisorError

    if gpu:
        try:
            g = resolve_gpu(gpu)
        except AdvisorError as e:
            fail_input(e)
        if as_json:
            print(g.model_dump_json(indent=2))
            return
        t = Table(title=f"{g.id}: {g.name}", title_justify="left")
        t.add_column("field")
        t.add_column("value", justify="right")
        t.add_column("source", overflow="fold")
        for k, v in g.model_dump(exclude={"sources", "aliases", "id", "name"}).items():
            t.add_row(k, str(v), g.sources.get(k, ""))
        console.print(t)
        return
    gpus, platforms = gpu_rows(), platform_rows()
    if as_json:
        print(json.dumps({"gpus": gpus, "platforms": platforms, "fabrics": fabric_rows()}, indent=2))
        return
    t = Table(title="GPUs (use as <id>x<count>[-pcie|-nvlink], e.g. rtx4090x8)", title_justify="left")
    for col, just in (("id", "left"), ("GiB", "right"), ("GB/s", "right"), ("TFLOP/s", "right"), ("links", "left"), ("source", "left")):
        t.add_column(col, justify=just, overflow="fold")
    for r in gpus:
        links = (f"NVLink {r['nvlink_gbs']:.0f}" if r["nvlink_gbs"] else "PCIe" + ("" if r["p2p_over_pcie"] else ", no P2P"))
        t.add_row(r["id"], f"{r['memory_gib']:.0f}", f"{r['memory_bandwidth_gbs']:,.0f}",
                  f"{r['matmul_tflops']:.0f}" + ("" if r["bf16"] else " fp16"), links, _short_source(r["sources"]))
    console.print(t)
    t = Table(title="Servers described in the catalog (host RAM and cores; other ids get defaults)", title_justify="left",
              caption="each source in full: advisor hardware --json", caption_justify="left")
    for col, just in (("id", "left"), ("link", "left"), ("host GiB", "right"), ("cores", "right"), ("source", "left")):
        t.add_column(col, justify=just, no_wrap=col == "id")
    for r in platforms:
        host = f"{r['host_ram_gib']:,.0f}" + (f" + {r['swap_gib']:,.0f} swap" if r["swap_gib"] else "")
        t.add_row(r["id"], r["interconnect"], host, str(r["cpu_cores"]), citation(r["source"]))
    console.print(t)
    t = Table(title="Networks between nodes (--nodes N --network NAME[:NICs per node])", title_justify="left",
              caption="line rates are standards; efficiency (NCCL busbw / line rate) and latency are priors until "
                      "`advisor probe` runs on several nodes; sources: advisor hardware --json", caption_justify="left")
    for col, just in (("name", "left"), ("kind", "left"), ("per NIC", "right"), ("NICs", "right"), ("per node", "right"),
                      ("eff.", "right"), ("latency", "right")):
        t.add_column(col, justify=just, overflow="fold")
    for r in fabric_rows():
        t.add_row(r["id"], r["transport"], f"{r['nic_gbps']:g} Gb/s", str(r["nics"]), f"{r['nic_gbps'] * r['nics']:,.0f} Gb/s",
                  f"{r['efficiency']:.0%}", f"{r['latency_us']:g} µs")
    console.print(t)
    console.print(f"Your own server: save {PLATFORM_FILE_EXAMPLE} as box.json and pass --hardware box.json; "
                  "--host-ram-gib / --cpu-cores override any server's host. `advisor hardware --gpu ID` lists every source.",
                  highlight=False, soft_wrap=False)


def models_cmd(as_json: bool = typer.Option(False, "--json", help="Every catalog model with its architecture and source.")) -> None:
    """The model architectures the advisor knows, with their sources; how to use any other."""
    rows = model_rows()
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    t = Table(title="Models (Llama-style decoders)", title_justify="left")
    for col, just in (("name", "left"), ("aliases", "left"), ("params", "right"), ("layers", "right"), ("hidden", "right"),
                      ("heads/kv", "right")):
        t.add_column(col, justify=just, no_wrap=col == "name")
    for r in rows:
        heads = f"{r['heads']}/{r['kv_heads']}" + (f" ×{r['experts']}E" if r["experts"] > 1 else "")
        t.add_row(r["name"], ", ".join(r["aliases"]), f"{r['params_b']:.1f} B", str(r["layers"]), str(r["hidden_size"]), heads)
    console.print(t)
    # hub ids below the table, one a line, never broken: they are meant to be copied
    console.print("Sources (the config.json of each hub id):", highlight=False)
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        hub, _, note = r["source"].partition(" config.json")
        console.print(f"  {r['name']:<{width}}  {hub}{note}", highlight=False, soft_wrap=True, markup=False)
    console.print("Any other model: a hub id (Qwen/Qwen2.5-7B, read from the local Hugging Face cache or the hub), "
                  "a config.json path, or inline JSON with hidden_size, intermediate_size, num_hidden_layers, "
                  "num_attention_heads, num_key_value_heads, vocab_size.", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("hardware")(hardware)
    app.command("models")(models_cmd)
