"""The trace a training prediction uses: which variant a case needs, and where its trace comes from.

Traces are looked up, in order, in this process's memory, the package's bundled traces
(``knowledge/data/traces/<config hash>.json``: the catalog's models and the architectures we measured) and the
user's own (``ADVISOR_HOME/traces/``); a miss runs ``probes.trace`` (about a second per variant; the first import of
transformers and PEFT takes longer) and keeps the result under ADVISOR_HOME, written atomically. Models given by
their own config.json (a path or a hub id) are traced; the catalog's decoders, and a config.json describing one of
them, keep the hand count. A trace depends on the config and the variant only, so a cached one is exact for that
model whatever the hardware.
"""

from __future__ import annotations

import json
import sys
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from knowledge.errors import AdvisorError
from knowledge.paths import BUNDLED, advisor_home
from knowledge.schema import ModelArch, TrainCase
from knowledge.traces import TRACE_SCHEMA, ArchTrace, TraceVariant

BUNDLED_TRACES = BUNDLED / "data" / "traces"
WINDOW = "_sliding_window"  # a trace file's entry for its config's window (not a variant)
LORA_DEFAULT = "_lora_default_targets"  # and for the LoRA targets a case that names none gets (None: the schema's)
# and for its KV cache's layout (probes.cache_trace.cache_layout; None: every layer, every KV head); "_kv_groups" before
# 2026-12-07 read every layer of a hybrid as an attention layer, "_kv_layout" until 2026-12-07 (twenty-ninth session)
# had no state as an engine keeps it (KVGroup.vllm_state_bytes): a file keeping an older key is read again
KV_GROUPS = "_kv_layout_2"
USUAL_LORA_TARGETS = TrainCase.model_fields["lora_targets"].default
# the variant serving reads projections from: a full bf16 step with SDPA, as DeepSpeed runs it (bundled for the catalog)
SERVING_VARIANT = TraceVariant(trains="all", attention="sdpa", autocast=False)


def sliding_window(config: dict[str, Any]) -> int | None:
    """The attention window some layer uses, as transformers reads the config (None: every layer sees it all)."""
    from probes.hf_model import config_from_dict

    cfg = config_from_dict(config)  # the whole model: a cut may be one transformers refuses (OLMo-Hybrid's one kind)
    window = getattr(cfg, "sliding_window", None)
    types = getattr(cfg, "layer_types", None) or []
    if not isinstance(window, int) or window <= 0:
        return None
    return window if not types or any("sliding" in t for t in config.get("layer_types") or types) else None


def hand_counted(arch: ModelArch) -> bool:
    """Is ``arch`` predicted by the hand count of a Llama decoder (``models.architecture``, fitted on our runs)? The
    catalog's and inline architectures are, and so is a config.json that describes a catalog model's very computation
    (``catalog_twin``); any other model given by its own config (a config.json, a hub id) is traced, its family
    whatever: the hand count misses what a config changes (SmolLM2-1.7B, a Llama config.json, PyTorch full training on
    two H200s: 15-18% optimistic by hand, 1.5-2.2% traced; tests/benchmarks/new_fam_2gpu.py)."""
    return arch.hf_config is None or catalog_twin(arch) is not None


# config keys that change neither a step's work nor its memory: token ids, initialisation, norms' epsilon, the rotary
# base and the longest position (rotary angles are computed per step), the file's own bookkeeping
_INERT_KEYS = frozenset({
    "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "norm_eps", "initializer_range", "bos_token_id",
    "eos_token_id", "pad_token_id", "max_position_embeddings", "rope_theta", "transformers_version", "architectures",
    "dtype", "torch_dtype", "use_cache", "_name_or_path", "id2label", "label2id", "output_attentions",
    "output_hidden_states", "return_dict", "tokenizer_class", "name_or_path",
})  # fmt: skip


def _computation(config: Any) -> dict[str, Any]:
    """A transformers config as the step it builds: every key but the inert ones (the rotary base inside its dict too)."""
    out = {k: v for k, v in config.to_dict().items() if k not in _INERT_KEYS and not k.startswith("_")}
    for k in ("rope_parameters", "rope_scaling"):
        if isinstance(out.get(k), dict):
            out[k] = {kk: vv for kk, vv in out[k].items() if kk != "rope_theta"}
    return out


def catalog_twin(arch: ModelArch) -> ModelArch | None:
    """The catalog model whose computation ``arch``'s own config.json describes (its shape, family and every key that
    changes the work, read through transformers' config class), or None. A Llama-2-7B config.json is Llama-2-7B: it
    keeps the hand count fitted on that model's runs, as its catalog name and hub id do (over the catalog's measured
    runs the trace is 20% off where the hand count is 14%, all of it on the study's servers:
    tests/benchmarks/trace_on_catalog.py)."""
    if arch.hf_config is None:
        return None
    return _twin(json.dumps(arch.hf_config, sort_keys=True, default=str))


@lru_cache(maxsize=64)
def _twin(config_json: str) -> ModelArch | None:
    from knowledge.catalog import models
    from probes.hf_model import config_from_dict, hf_config

    mine = json.loads(config_json)
    shape = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    same_shape = {m.name: m for m in models().values() if all(mine.get(k) == getattr(m, k) for k in shape)}
    if not same_shape:
        return None
    try:
        own = _computation(config_from_dict(mine, None))
    except Exception:  # noqa: BLE001 - a config its class refuses is no catalog model; the trace names what it lacks
        return None
    return next((m for m in same_shape.values() if _computation(hf_config(m)) == own), None)


def variant_for(case: TrainCase, window: int | None = None) -> TraceVariant:
    """What the trace of ``case`` must run: what trains, the attention kernel, recomputation, the weights' dtype, and
    past a sliding ``window`` lengths beyond it (a real run then builds the window's mask and leaves FlashAttention)."""
    adapters = case.method in ("lora", "qlora")
    if adapters:
        trains = "adapters"
    elif case.quantization != "none":
        trains = "non-projections"  # the published "Q" rows: a quantized frozen base, the rest trains
    else:
        trains = "all"
    targets = case.lora_targets if adapters else []
    return TraceVariant(
        trains=trains, lora_targets=targets if isinstance(targets, str) else sorted(targets),
        lora_rank=case.lora_rank if adapters else 0, attention="sdpa" if case.flash_attention else "eager",
        recompute=case.recompute, fp32_weights=case.engine == "pytorch" and trains == "all",
        bnb_base=case.quantization in ("nf4", "int8"), autocast=case.engine == "pytorch",
        min_seq=window if window and case.seq_len >= window else 0,  # transformers masks from kv_length >= window on
        zero3=case.engine == "deepspeed" and case.zero_stage == 3 and case.method == "lora" and case.quantization == "none",
    )


def _user_dir() -> Path:
    return advisor_home() / "traces"


def _read(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


class TraceBook:
    """Traces by (config hash, variant): one per entry point, like the calibration it sits beside."""

    def __init__(self, on_trace: Callable[[str], None] | None = None) -> None:
        self._kept: dict[tuple[str, str], ArchTrace] = {}
        # variants the model's code cannot run (OLMoE's grouped-GEMM experts on fp32 weights): traced once, the reason
        # kept for every case that needs them
        self._failed: dict[tuple[str, str], AdvisorError] = {}
        self._files: dict[Path, dict[str, Any]] = {}
        self._windows: dict[str, int | None] = {}
        self._lora: dict[str, list[str] | None] = {}
        self._kv: dict[str, list[dict[str, Any]] | None] = {}
        self._versions: dict[str, str | None] | None = None
        self.on_trace = on_trace  # told before a trace runs (a progress line for the CLI)

    def _file(self, path: Path) -> dict[str, Any]:
        if path not in self._files:
            self._files[path] = _read(path) if path.is_file() else {}
        return self._files[path]

    def _current(self, record: dict[str, Any]) -> bool:
        """A record traced by this tracer with the installed transformers and PEFT: the code a run will execute
        (transformers 5.17 runs Gemma-2 with SDPA, 5.23 eager only). Read from the packages' metadata, no import."""
        if self._versions is None:
            from importlib.metadata import PackageNotFoundError, version

            def installed(name: str) -> str | None:
                try:
                    return version(name)
                except PackageNotFoundError:
                    return None

            self._versions = {k: installed(k) for k in ("transformers", "peft")}
        got = record.get("versions") or {}
        return record.get("schema_version") == TRACE_SCHEMA and all(
            want is None or got.get(k) == want for k, want in self._versions.items())

    def _config(self, arch: ModelArch) -> tuple[dict[str, Any], str, tuple[Path, Path]]:
        from probes.hf_model import config_dict
        from probes.trace import config_hash

        config = config_dict(arch)
        h = config_hash(config)
        return config, h, (BUNDLED_TRACES / f"{h}.json", _user_dir() / f"{h}.json")

    def default_lora_targets(self, arch: ModelArch) -> list[str] | None:
        """The LoRA targets of a case that names none, where this model lacks the usual q/k/v/o projections (PEFT's
        default for its type, ``probes.trace.default_lora_targets``); None: the schema's default. Kept beside the
        traces, so a cached model needs no import of transformers."""
        if hand_counted(arch):
            return None
        config, h, files = self._config(arch)
        if h not in self._lora:
            known = [self._file(p)[LORA_DEFAULT] for p in files if LORA_DEFAULT in self._file(p)]
            if known:
                self._lora[h] = known[0]
            else:
                from probes.trace import default_lora_targets

                self._lora[h] = default_lora_targets(config, list(USUAL_LORA_TARGETS))
        return self._lora[h]

    def kv_groups(self, arch: ModelArch) -> list[dict[str, Any]] | None:
        """The KV cache's layout of ``arch``'s config (``probes.cache_trace.cache_layout``: sliding windows, latent KV,
        a hybrid's recurrent layers and their states), kept beside its traces: a cached model needs no import of
        transformers (5 s on two cores)."""
        config, h, files = self._config(arch)
        if h not in self._kv:
            known = [self._file(p)[KV_GROUPS] for p in files if KV_GROUPS in self._file(p)]
            if known:
                self._kv[h] = known[0]
            else:
                from probes.cache_trace import cache_layout

                self._kv[h] = cache_layout(arch.hf_config or config)
                remember(files[1], KV_GROUPS, self._kv[h])
                self._files.pop(files[1], None)
        return self._kv[h]

    def with_default_lora_targets(self, arch: ModelArch, case: TrainCase) -> TrainCase:
        """``case`` with the model's own default LoRA targets where it names none and lacks the usual ones."""
        if case.method not in ("lora", "qlora") or "lora_targets" in case.model_fields_set:
            return case
        own = self.default_lora_targets(arch)
        return case if own is None else case.model_copy(update={"lora_targets": own})

    def trace(self, arch: ModelArch, case: TrainCase) -> ArchTrace | None:
        """The trace of ``arch`` under ``case``; None for the catalog's and inline architectures and a config.json of
        one of them (``hand_counted``), whose hand count (models.architecture) was fitted and validated on their runs."""
        return None if hand_counted(arch) else self.own_code(arch, case)

    def own_code(self, arch: ModelArch, case: TrainCase) -> ArchTrace:
        """The trace of ``arch``'s own code under ``case``, whether or not a prediction takes it (a catalog model's
        config is its hub config.json as transformers builds it)."""
        config, h, files = self._config(arch)
        return self._traced(arch, config, h, files, variant_for(case, self._window(config, h, files)))

    def forward_trace(self, arch: ModelArch) -> ArchTrace | None:
        """The trace serving reads a model's projections from (``ArchTrace.projections``): any variant's forward has
        them; the full-model bf16 one is bundled for every catalog config. None for a hand-counted architecture."""
        if hand_counted(arch):
            return None
        config, h, files = self._config(arch)
        self._window(config, h, files)
        for path in files:  # a forward is a forward: any full-model variant without recomputation will do
            for key, record in self._file(path).items():
                if key.startswith(SERVING_VARIANT.key.split("|fp32")[0]) and isinstance(record, dict) and self._current(record):
                    return self._held(h, TraceVariant.model_validate(record["variant"]), files)
        return self._traced(arch, config, h, files, SERVING_VARIANT)

    def _traced(self, arch: ModelArch, config: dict[str, Any], h: str, files: tuple[Path, Path], v: TraceVariant) -> ArchTrace:
        found = self._held(h, v, files)
        if found is not None:
            return found
        if self.on_trace:
            self.on_trace(f"tracing {arch.name} ({v.key}) on fake tensors")
        from advisor.progress import interactive, timed_run

        if (h, v.key) in self._failed:
            raise self._failed[(h, v.key)]
        # a bar on a terminal (the first trace of a model imports transformers and PEFT: ~10 s on two cores)
        try:
            t = timed_run(lambda: run_trace(config, v), f"tracing {Path(arch.name).stem} on fake tensors", 15.0,
                          disable=not interactive())
        except AdvisorError as e:
            self._failed[(h, v.key)] = e
            raise
        self._keep(arch, h, t)
        return t

    def prefetch(self, arch: ModelArch, cases: list[TrainCase]) -> None:
        """Trace at once, one process per core, every variant ``cases`` need that no file holds: a new architecture's
        first search (Gemma-3's 12 variants take 33 s one after another on two cores, 25 s in the pool). A variant that fails here is
        left to ``trace``, which reports it where the case is predicted."""
        if hand_counted(arch):
            return
        import os

        config, h, files = self._config(arch)
        window = self._window(config, h, files)
        wanted = {v.key: v for v in (variant_for(c, window) for c in cases) if self._held(h, v, files) is None}
        if sys.platform != "linux" or threading.current_thread() is not threading.main_thread():
            return  # fork only where it is safe: Linux, the main thread (not a server's worker); trace() runs each
        workers = min(len(wanted), len(os.sched_getaffinity(0)))
        if workers < 2:
            return  # one variant or one core: trace() runs it when it is needed
        import multiprocessing

        import probes.trace  # noqa: F401  (imported before the fork: a child never takes the import lock)
        from concurrent.futures import ProcessPoolExecutor, as_completed

        from advisor.progress import interactive, steps

        self.default_lora_targets(arch)  # before the pool: saved with every trace
        label = f"tracing {Path(arch.name).stem} on fake tensors ({len(wanted)} variants, {workers} processes)"
        # forked: the children inherit the imported torch, transformers and PEFT (Gemma-3's 12 variants on two cores:
        # 48 s; spawned, each importing them again, 54 s; one after another, 70 s). A child runs fake tensors only, no
        # CPU kernel, so it never enters the OpenMP pool a fork could leave locked
        with steps(label, len(wanted), disable=not interactive()) as update, \
                ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            runs = {pool.submit(run_trace, config, v): v for v in wanted.values()}
            for done, run in enumerate(as_completed(runs), 1):
                try:
                    self._keep(arch, h, run.result())
                except AdvisorError as e:  # trace() raises it again, one line, for every case that needs it
                    self._failed[(h, runs[run].key)] = e
                except Exception:  # noqa: BLE001 - the variant is traced again where a case needs it
                    pass
                update(label, done / len(wanted))

    def _window(self, config: dict[str, Any], h: str, files: tuple[Path, Path]) -> int | None:
        if h not in self._windows:  # kept beside the traces: a cached model needs no import of transformers
            known = [self._file(p)[WINDOW] for p in files if WINDOW in self._file(p)]
            self._windows[h] = known[0] if known else sliding_window(config)
        return self._windows[h]

    def _held(self, h: str, v: TraceVariant, files: tuple[Path, Path]) -> ArchTrace | None:
        """The trace of variant ``v`` from memory or a current file, or None."""
        key = (h, v.key)
        if key not in self._kept:
            for path in files:
                found = self._file(path).get(v.key)
                if found and self._current(found):
                    self._kept[key] = ArchTrace.model_validate(found)
                    break
        return self._kept.get(key)

    def _keep(self, arch: ModelArch, h: str, t: ArchTrace) -> None:
        self._kept[(h, t.variant.key)] = t
        save(_user_dir() / f"{h}.json", t, self._windows[h], self.default_lora_targets(arch))
        self._files.pop(_user_dir() / f"{h}.json", None)


def run_trace(config: dict[str, Any], variant: TraceVariant) -> ArchTrace:
    from probes.trace import trace_model

    try:
        return trace_model(config, variant)
    except AdvisorError:
        raise
    except ImportError as e:
        raise AdvisorError(f"tracing needs torch, transformers and peft: {e}") from None


def remember(path: Path, key: str, value: Any) -> None:
    """Set one entry of a config's trace file (a fact about the config, not a variant), atomically."""
    from knowledge.store import atomic_write_json

    data = _read(path) if path.is_file() else {}
    data[key] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, data)


def save(path: Path, trace: ArchTrace, window: int | None = None, lora_default: list[str] | None = None) -> None:
    """Add ``trace`` to the file of its config, atomically, keeping the variants already there (and the config's
    sliding window, under ``WINDOW``, and its default LoRA targets, under ``LORA_DEFAULT``)."""
    from knowledge.store import atomic_write_json

    data = _read(path) if path.is_file() else {}
    data[trace.variant.key] = trace.model_dump(mode="json")
    data[WINDOW] = window
    data[LORA_DEFAULT] = lora_default
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, data)
