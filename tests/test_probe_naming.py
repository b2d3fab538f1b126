"""A profile measured without a GPU is named for what it is (cpu-<host>), never '<gpu>x0'."""

from __future__ import annotations

from types import SimpleNamespace

from advisor.commands.probe import default_profile_path


def test_a_cpu_profile_is_named_cpu_host(monkeypatch, tmp_path):
    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path))
    import socket

    monkeypatch.setattr(socket, "gethostname", lambda: "My_Laptop.local")
    cpu = SimpleNamespace(gpu_id=None, gpu_name="cpu", gpu_count=0, quick=True)
    assert default_profile_path(cpu).name == "cpu-mylaptoplocal-quick.json"
    gpu = SimpleNamespace(gpu_id="h100", gpu_name="NVIDIA H100 80GB HBM3", gpu_count=1, quick=False)
    assert default_profile_path(gpu).name == "h100x1.json"


def test_the_summary_names_the_machine_honestly():
    from advisor.commands.probe import summary_title

    cpu = SimpleNamespace(gpu_name="cpu", gpu_count=0, quick=True)
    assert "x0" not in summary_title(cpu) and "no GPU" in summary_title(cpu)
    gpu = SimpleNamespace(gpu_name="NVIDIA H100 80GB HBM3", gpu_count=1, quick=False)
    assert summary_title(gpu) == "Profile of 1x NVIDIA H100 80GB HBM3"


def test_quick_probe_on_the_cpu_is_quiet_and_honestly_named(tmp_path, monkeypatch):
    import pytest

    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the CPU naming is tested above")
    from typer.testing import CliRunner

    from advisor import cli

    monkeypatch.setenv("ADVISOR_HOME", str(tmp_path))
    cli._register()
    r = CliRunner().invoke(cli.app, ["probe", "--quick", "--budget", "0"])
    assert r.exit_code == 0, r.output
    assert "FutureWarning" not in r.output and "DeprecationWarning" not in r.output
    written = [p.name for p in (tmp_path / "profiles").iterdir()]
    assert len(written) == 1 and written[0].startswith("cpu-") and "x0" not in written[0]
