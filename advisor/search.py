"""The Optuna search over training configurations.

The objective only calls the predictor: memory first (a configuration that cannot fit is pruned before
its time is predicted), then the step time. Small spaces are enumerated exhaustively and recorded in
the Optuna study; larger ones use a seeded TPE sampler. Storage follows Optuna: in memory by default,
an RDB URL (``sqlite:///study.db``, ``postgresql://…``) lets several workers share one study, bound to
its job (``advisor.storage``).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from advisor.storage import open_study, resolve_storage, storage_lock
from knowledge.catalog import resolve_model, resolve_platform
from knowledge.efficiency import Efficiencies
from knowledge.errors import AdvisorError
from knowledge.schema import ModelArch, PlatformSpec, Profile, TrainCase, TrainPrediction
from knowledge.units import GiB
from models.memory import training_memory, usable_gib
from models.setup import derive
from models.training import predict_training

from advisor.space import (
    MICRO_BATCHES, accum_dtype_variants, comm_variants, methods_for, offloads_for, quantizations_for, training_knobs, zero_stages_for,
)

BRUTE_FORCE_MAX = 4000  # configurations; above this the TPE sampler samples instead


@dataclass(frozen=True)
class SearchSpec:
    """What the user asked for; every other knob is searched."""

    hardware: str
    model: str | dict
    task: Literal["pretrain", "finetune"]
    gpus: int | None = None
    seq_len: int = 2048
    global_batch: int | None = None  # sequences per optimizer step, over all GPUs
    methods: tuple[str, ...] | None = None  # default: by task
    engines: tuple[str, ...] = ("deepspeed",)
    headroom: float = 0.0  # fraction of usable GPU memory to leave free
    lora_rank: int = 64
    lora_targets: tuple[str, ...] | str | None = None  # PEFT's target_modules (names, or "all-linear"); None: the model's
    micro_batches: tuple[int, ...] = MICRO_BATCHES
    nodes: int = 1  # identical servers joined by a network
    network: str | None = None  # fabric name[:NICs]; default: the server's usual fabric
    inter_node_gbps: float | None = None  # each node's network, Gb/s one direction (overrides the fabric's)

    def method_choices(self) -> tuple[str, ...]:
        return self.methods or methods_for(self.task)


@dataclass
class Candidate:
    case: TrainCase
    prediction: TrainPrediction
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def margin(self) -> tuple[float, str]:
        """(the smaller spare fraction of GPU memory and host RAM, which one)."""
        return memory_margin(self.prediction)

    @property
    def rank_score(self) -> float:
        """tokens/s, less up to 10% for a pick within 8% of running out of GPU or host memory: a safe
        configuration of similar speed ranks above it (the memory model is within ~5-8% of measured); less 2%
        for ZeRO++'s quantized communication; less 5% for a pick that pages host memory into swap."""
        spare, _ = self.margin
        score = self.prediction.tokens_per_s * (1 - TIGHT_PENALTY * min(max((TIGHT_MARGIN - spare) / TIGHT_MARGIN, 0.0), 1.0))
        if self.case.zero_quantized_weights or self.case.zero_quantized_gradients:
            score *= 1 - LOSSY_COMM_PENALTY
        if self.prediction.host_swap_gib:
            score *= 1 - SWAP_PENALTY
        return score


TIGHT_MARGIN = 0.08
TIGHT_PENALTY = 0.10
# ZeRO++'s int8 weights and int4 gradients change the numbers training sees (the paper reports the same
# loss curves, but on its models): a quantized pick must be more than 2% faster than an exact one to rank above it
LOSSY_COMM_PENALTY = 0.02
# A pick that fits only by paging host memory into swap runs slower than its prediction by what the paging costs,
# which is not modelled (no measured swap device): it must be more than 5% faster than one that stays in RAM
SWAP_PENALTY = 0.05


def memory_margin(p: TrainPrediction) -> tuple[float, str]:
    """Spare fraction of the GPU's memory and of the node's usable host RAM, whichever is smaller."""
    gpu = 1 - (getattr(p, "required_gib", None) or p.peak_mem_gib) / p.capacity_gib if p.capacity_gib else 1.0
    host = 1 - (p.host_mem_gib or 0) / p.host_capacity_gib if p.host_capacity_gib else 1.0
    return (gpu, "GPU") if gpu <= host else (host, "host")


def _grad_accum(spec: SearchSpec, mbs: int, gpus: int) -> int | None:
    if spec.global_batch is None:
        return 1
    per_step = mbs * gpus
    if spec.global_batch % per_step:
        return None  # this micro-batch cannot reach the global batch exactly
    return spec.global_batch // per_step


def configurations(spec: SearchSpec, gpus: int) -> Iterator[dict[str, Any]]:
    """Every valid combination of the searched knobs, as case fields (the exhaustive space, ``advisor.space``), with
    the accumulation dtypes where they change the run (``accum_dtype_variants``)."""
    for knobs in training_knobs(spec.task, spec.method_choices(), spec.engines, spec.nodes, gpus // spec.nodes):
        for mbs in spec.micro_batches:
            accum = _grad_accum(spec, mbs, gpus)
            if accum is None:
                continue
            for variant in accum_dtype_variants(knobs, accum):
                yield dict(knobs, micro_batch_size=mbs, grad_accum=accum, **variant)


def make_case(spec: SearchSpec, knobs: dict[str, Any], gpus: int, idx: int = 0) -> TrainCase:
    network = {}
    if spec.nodes > 1:
        network = {k: v for k, v in (("nodes", spec.nodes), ("network", spec.network), ("inter_node_gbps", spec.inter_node_gbps)) if v is not None}
    targets = {}
    if spec.lora_targets is not None and knobs.get("method") in ("lora", "qlora"):
        targets["lora_targets"] = spec.lora_targets if isinstance(spec.lora_targets, str) else list(spec.lora_targets)
    return TrainCase(
        id=f"pick-{idx}", hardware=spec.hardware, model=spec.model, task=spec.task, gpus=gpus,
        seq_len=spec.seq_len, lora_rank=spec.lora_rank, **network, **targets, **knobs,
    )


class Evaluator:
    """Memory check, then prediction; cached per configuration so repeated trials cost nothing."""

    def __init__(self, spec: SearchSpec, eff: Efficiencies, profile: Profile | None = None, traces=None) -> None:
        from advisor.traces import TraceBook

        self.spec = spec
        self.traces = traces or TraceBook()
        self.platform: PlatformSpec = resolve_platform(spec.hardware, spec.gpus, nodes=spec.nodes)
        self.arch: ModelArch = resolve_model(spec.model)
        self.gpus = spec.gpus or self.platform.count * spec.nodes
        if self.gpus % spec.nodes:
            raise AdvisorError(f"--gpus {self.gpus} cannot be spread evenly over {spec.nodes} nodes: use a multiple of {spec.nodes}")
        from advisor.predictor import calibration_for, rel_error_for
        from knowledge.fabrics import network_for
        from models.calibration import with_network

        self.cal = calibration_for(self.platform, profile, eff)
        self.network = network_for(self.platform, spec.nodes, spec.network, spec.inter_node_gbps, profile)
        if self.network is not None:
            self.cal = with_network(self.cal, self.network)
        self.eff = self.cal.eff
        # widens each prediction's interval, as `predict` does: the held-out error of the platform's class
        self.rel_error = rel_error_for(spec.task, self.platform, spec.nodes)
        self.profile = profile
        self.cache: dict[tuple, Candidate | None] = {}
        self.cannot_run: dict[str, TrainCase] = {}  # why a configuration could not be traced: the first case of each
        self.limit_gib = usable_gib(self.platform.gpu.memory_gib, self.eff) * (1 - spec.headroom)
        if spec.lora_targets is not None and {"lora", "qlora"} & set(spec.method_choices()):
            # names the model lacks (or that PEFT refuses) are the user's error, said once with PEFT's reason and the
            # names that exist, not every adapter configuration found unrunnable by the search
            self.traces.trace(self.arch, make_case(spec, {"method": "lora", "engine": spec.engines[0]}, self.gpus))

    def case(self, knobs: dict[str, Any]) -> TrainCase:
        """The case of one configuration, with the model's own LoRA targets where it lacks the usual ones."""
        return self.traces.with_default_lora_targets(self.arch, make_case(self.spec, knobs, self.gpus))

    def setup(self, case: TrainCase):
        """The case's derived setup (ranks, parameter counts, its trace): what memory and host counts read."""
        return derive(case, self.arch, self.platform, self.traces.trace(self.arch, case))

    def memory_gib(self, case: TrainCase) -> float:
        return training_memory(self.setup(case), self.eff).peak / GiB

    def footprint_gib(self, case: TrainCase) -> tuple[float, float]:
        """GPU memory and host memory of ``case`` (GiB), from one derived setup."""
        from models.memory import host_bytes

        s = self.setup(case)
        return training_memory(s, self.eff).peak / GiB, host_bytes(s) / GiB

    def best(self) -> Candidate | None:
        """The fastest fitting configuration of the whole space, by plain enumeration."""
        best = None
        for knobs in configurations(self.spec, self.gpus):
            c = self.evaluate(knobs)
            if c and (best is None or c.rank_score > best.rank_score):
                best = c
        return best

    def evaluate(self, knobs: dict[str, Any]) -> Candidate | None:
        """The prediction for one configuration, or None when it cannot fit (or repeats another: fused attention asked of
        a model that has none)."""
        key = tuple(sorted(knobs.items()))
        if key not in self.cache:
            case = self.case(knobs)
            try:
                trace = self.traces.trace(self.arch, case)
            except AdvisorError as e:  # the model's own code cannot run this configuration: it is not a pick
                self.cannot_run.setdefault(str(e), case)
                self.cache[key] = None
                return None
            if case.flash_attention and trace is not None and trace.attention_used != "sdpa":
                # the model's code has no fused attention (GPT-Neo, DeepSeek-V4: eager only): asking for it runs eager,
                # so the row would repeat the eager one under a name that is not what runs
                self.cache[key] = None
            elif self.memory_gib(case) > self.limit_gib:
                self.cache[key] = None
            else:
                c = self.predict(case)
                self.cache[key] = c if c.prediction.fits else None
        return self.cache[key]

    def predict(self, case: TrainCase) -> Candidate:
        """``case`` predicted; an offload whose pinned buffers (rounded up to powers of two) overfill the host is taken
        pageable, DeepSpeed's default: slower, but smaller (models.memory.offload_buffer_bytes)."""
        pred = self._predict(case)
        if not pred.fits and pred.failure == "host_oom" and case.offload != "none" and case.offload_pin_memory:
            case = case.model_copy(update={"offload_pin_memory": False})
            pred = self._predict(case)
        return Candidate(case, pred)

    def _predict(self, case: TrainCase) -> TrainPrediction:
        pred = predict_training(case, self.arch, self.platform, self.cal, self.rel_error, self.traces.trace(self.arch, case))
        return pred.model_copy(update={"network": self.network.label}) if self.network is not None else pred


def _suggest(trial, spec: SearchSpec, gpus: int = 1) -> dict[str, Any]:
    """The conditional space of ``advisor.space``, as Optuna trial suggestions (the same as ``configurations``)."""
    method = trial.suggest_categorical("method", list(spec.method_choices()))
    engine = trial.suggest_categorical("engine", list(spec.engines))
    stages = zero_stages_for(engine)
    zero = trial.suggest_categorical("zero_stage", list(stages)) if len(stages) > 1 else stages[0]
    offload_choices = offloads_for(engine, zero)
    offload = trial.suggest_categorical(f"offload_z{zero}", list(offload_choices)) if len(offload_choices) > 1 else offload_choices[0]
    quants = quantizations_for(method)
    quant = trial.suggest_categorical("lora_quantization", list(quants)) if len(quants) > 1 else quants[0]
    variants = comm_variants(engine, zero, offload, spec.nodes, gpus // spec.nodes)
    variant = variants[trial.suggest_categorical("zero3_network", list(variants))] if len(variants) > 1 else {}
    return dict(
        method=method, engine=engine, zero_stage=zero, offload=offload, quantization=quant,
        recompute=trial.suggest_categorical("recompute", [False, True]),
        flash_attention=trial.suggest_categorical("flash_attention", [True, False]),
        micro_batch_size=trial.suggest_categorical("micro_batch_size", list(spec.micro_batches)),
        **variant,
    )


def _neighbours(knobs: dict[str, Any], space: list[dict[str, Any]], radius: int = 2) -> list[dict[str, Any]]:
    """Configurations of the space that differ from ``knobs`` in 1..``radius`` knobs (a ZeRO++ / MiCS knob a
    configuration does not set counts as its default)."""
    def get(k: dict[str, Any], x: str) -> Any:
        return k.get(x, TrainCase.model_fields[x].default)

    return [k for k in space if 0 < sum(get(k, x) != get(knobs, x) for x in {**knobs, **k}) <= radius]


def job_key(spec: SearchSpec, exhaustive: bool) -> str:
    """What a shared study is about, as canonical JSON: trials of two different jobs never mix."""
    import json

    # fields added later are left out at their defaults, so a study made before them stays this job's
    job = {k: getattr(spec, k) for k in spec.__dataclass_fields__
           if not (k in ("nodes", "network", "inter_node_gbps") and getattr(spec, k) == SearchSpec.__dataclass_fields__[k].default)}
    job["search"] = "exhaustive" if exhaustive else "tpe"
    return json.dumps(job, sort_keys=True, default=list)


def run_search(
    spec: SearchSpec,
    eff: Efficiencies,
    profile: Profile | None = None,
    *,
    storage: str | None = None,
    study_name: str | None = None,
    sampler: Literal["auto", "tpe", "brute"] = "auto",
    n_trials: int | None = None,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[Candidate], Evaluator, dict[str, Any]]:
    """Search and return the fitting candidates, best first, with the evaluator and search facts.

    ``brute`` (and ``auto`` on spaces up to BRUTE_FORCE_MAX) evaluates every configuration (a fraction of
    a millisecond each) and records in the study those it does not hold yet, so several workers on
    one study all finish with the same, exact answer and the study holds each configuration once.
    ``tpe`` samples the conditional space with a seeded multivariate TPE sampler, then climbs through
    the two-knob neighbourhood of the best trial. A configuration that cannot fit is pruned before its
    time is predicted; under TPE it is reported as minus its excess GiB, so the sampler learns where
    the memory wall is. With ``storage`` the study records its job and refuses another job.
    """
    import optuna

    optuna.logging.set_verbosity(logging.WARNING)
    ev = Evaluator(spec, eff, profile)
    space = list(configurations(spec, ev.gpus))
    if not space:
        raise AdvisorError(f"no micro-batch size reaches global batch {spec.global_batch} on {ev.gpus} GPUs exactly")
    ev.traces.prefetch(ev.arch, [ev.case(knobs) for knobs in space])  # a new architecture: its variants at once
    use_brute = sampler == "brute" or (sampler == "auto" and len(space) <= BRUTE_FORCE_MAX)
    with warnings.catch_warnings():  # `group` is experimental: said once here, not on every run's stderr
        warnings.simplefilter("ignore")
        smp = optuna.samplers.RandomSampler(seed=seed) if use_brute else optuna.samplers.TPESampler(seed=seed, multivariate=True, group=True)
    rdb = resolve_storage(storage)
    study = open_study(rdb, storage, study_name, smp, job_key(spec, use_brute))
    # never more trials than configurations: TPE would only resample what it has seen
    total = min(n_trials, len(space)) if n_trials else (len(space) if use_brute else min(len(space), 200))
    sampled = total  # what the sampler draws; the polish then adds the neighbours of the best
    done = 0

    def tick(*_: Any) -> None:
        nonlocal done
        done += 1
        if progress:
            progress(done, total)

    def value(knobs: dict[str, Any]) -> float | None:
        """tokens/s, minus the excess GiB (TPE) or None (pruned) when it does not fit."""
        cand = ev.evaluate(knobs)
        if cand is None:
            return None if use_brute else -(ev.memory_gib(ev.case(knobs)) - ev.limit_gib)
        return cand.prediction.tokens_per_s

    def record(knob_list: list[dict[str, Any]]) -> None:
        """Add finished trials for the configurations the study does not hold yet (one lock, one pass)."""
        with storage_lock(storage):
            held = {_key(t.user_attrs["knobs"]) for t in study.get_trials(deepcopy=False) if "knobs" in t.user_attrs}
            new = []
            for knobs in knob_list:
                if _key(knobs) in held:
                    continue
                held.add(_key(knobs))
                v = value(knobs)
                state = optuna.trial.TrialState.PRUNED if v is None else optuna.trial.TrialState.COMPLETE
                new.append(optuna.trial.create_trial(state=state, value=v, user_attrs={"knobs": knobs}))
            study.add_trials(new)

    if use_brute:
        chosen = space[:total]
        for knobs in chosen:
            ev.evaluate(knobs)
            tick()
        record(chosen)
        ranked_knobs = chosen
    else:
        for _ in range(total):  # ask and tell: the objective is ours, no queue shared with other workers
            with storage_lock(storage):
                trial = study.ask()
                knobs = _suggest(trial, spec, ev.gpus)
            accum = _grad_accum(spec, knobs["micro_batch_size"], ev.gpus)
            knobs = {**knobs, "grad_accum": accum}
            v = value(knobs) if accum is not None else None
            with storage_lock(storage):
                trial.set_user_attr("knobs", knobs)
                if v is None:
                    study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                else:
                    study.tell(trial, v)
            tick()
        # polish: from the best of each of the best few families of configurations (ZeRO stage, offload, method), every
        # change of one or two knobs, until none helps. From the overall best alone the climb stopped on a local
        # maximum: 70B pre-training on 4 x h100x8 over 100 Gb/s Ethernet, offloaded at 11,252 tokens/s, four knobs from
        # ZeRO++ at 12,824 that TPE had not sampled (its plain ZeRO-3 neighbour, 7,207, was)
        # (again while a climb has made a new family's best: the family of ZeRO++ above first showed in a climb)
        tried: set[tuple] = set()

        def climb(best: dict[str, Any] | None) -> None:
            """From ``best``, to the best of it and its neighbours, until that is one already climbed from."""
            nonlocal total
            while best is not None and _key(best) not in tried:
                tried.add(_key(best))
                extra = _neighbours(best, space)
                total += len(extra)
                for _ in extra:
                    tick()
                record(extra)
                best = _best_among(study, [best, *extra])

        while starts := [k for k in _family_bests(study, POLISH_FAMILIES) if _key(k) not in tried]:
            for start in starts:
                climb(start)
        ranked_knobs = [t.user_attrs["knobs"] for t in study.get_trials(deepcopy=False) if "knobs" in t.user_attrs]
    seen: dict[tuple, Candidate] = {}
    for knobs in ranked_knobs:
        cand = ev.evaluate(knobs)
        if cand is not None:
            seen[_key(knobs)] = cand
    ranked = safe_order(sorted(seen.values(), key=lambda c: (-c.rank_score, c.prediction.peak_mem_gib, describe_key(c))))
    facts = {"space_size": len(space), "trials": len(study.get_trials(deepcopy=False)), "sampled": sampled,
             "sampler": "exhaustive" if use_brute else "tpe", "gpus": ev.gpus}
    return ranked, ev, facts


RISKY_P_OOM = 0.02  # a pick this likely to run out of memory ...
SAFE_WITHIN = 0.05  # ... never ranks ahead of a safer one within 5% of its speed


def safe_order(ranked: list[Candidate]) -> list[Candidate]:
    """``ranked`` with the rule: a pick with p_oom above 2% never ranks ahead of a safer one (lower p_oom) whose
    tokens/s is within 5% of its own. Predictions without ``p_oom`` keep their order (their tight margin is
    already charged by ``rank_score``). Stable: insertion of each safer pick just ahead of the risky ones."""
    out: list[Candidate] = []
    for c in ranked:
        risk = getattr(c.prediction, "p_oom", None)
        i = len(out)
        while i > 0:
            ahead = out[i - 1]
            a_risk = getattr(ahead.prediction, "p_oom", None)
            if (a_risk is None or risk is None or a_risk <= RISKY_P_OOM or risk >= a_risk
                    or c.prediction.tokens_per_s < (1 - SAFE_WITHIN) * ahead.prediction.tokens_per_s):
                break
            i -= 1
        out.insert(i, c)
    return out


def _key(knobs: dict[str, Any]) -> tuple:
    return tuple(sorted(knobs.items()))


def describe_key(c: Candidate) -> str:
    """A total order for ties: the configuration's fields as text."""
    return repr(_key(c.case.model_dump(exclude={"id"})))


POLISH_FAMILIES = 3  # the climb starts from the best configuration of this many of the best families
FAMILY = ("zero_stage", "offload", "method", "quantization")


def _fitting(study) -> list:
    return [t for t in study.get_trials(deepcopy=False) if t.value is not None and t.value > 0 and "knobs" in t.user_attrs]


def _family_bests(study, n: int) -> list[dict[str, Any]]:
    """The best fitting configuration of each of the ``n`` best families (``FAMILY``) the study holds."""
    best: dict[tuple, Any] = {}
    for t in sorted(_fitting(study), key=lambda t: (-t.value, repr(_key(t.user_attrs["knobs"])))):
        best.setdefault(tuple(t.user_attrs["knobs"].get(k) for k in FAMILY), t)
    return [t.user_attrs["knobs"] for t in list(best.values())[:n]]


def _best_among(study, knob_list: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Of ``knob_list``, the fitting configuration the study holds at the highest value (a climb's next step)."""
    keys = {_key(k) for k in knob_list}
    done = [t for t in _fitting(study) if _key(t.user_attrs["knobs"]) in keys]
    return max(done, key=lambda t: (t.value, repr(_key(t.user_attrs["knobs"])))).user_attrs["knobs"] if done else None


def exhaustive_best(spec: SearchSpec, eff: Efficiencies, profile: Profile | None = None) -> Candidate | None:
    """The best fitting configuration by plain enumeration (the benchmark's reference)."""
    return Evaluator(spec, eff, profile).best()
