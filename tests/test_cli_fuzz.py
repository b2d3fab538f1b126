"""A hostile user at the command line: a few hundred bad or edge inputs over every command.

Each input states what the contract promises for it, and every run is checked for the same things:
no traceback, no hang (a time limit per run), the right exit code (2: malformed file or usage error,
1: a case or a value the advisor cannot handle, 0: fine), one ``error:`` line on stderr when it
fails, and for ``predict`` every input line answered, in order, with its id (no line lost).

The inputs are built from fixed lists by a seeded ``random.Random``, so a failure reproduces; the
test prints how many inputs of each kind it ran.
"""

from __future__ import annotations

import json
import os
import random
import signal
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor import cli

TIME_LIMIT_S = 20  # per run; a hang is a failure, not a stuck suite
RNG_SEED = 20261123

TRAIN = {"id": "t", "hardware": "h100x8", "model": "llama2-7b", "task": "finetune"}
SERVE = {"id": "s", "hardware": "h100x8", "model": "llama2-7b", "task": "serve"}
TINY = {"hidden_size": 256, "intermediate_size": 688, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 1000}
VALID = [
    TRAIN,
    {**TRAIN, "task": "pretrain", "zero_stage": 3, "offload": "optimizer+params", "recompute": True},
    {**TRAIN, "method": "qlora", "model": "llama2-70b", "hardware": "rtx4090x8", "seq_len": 4096},
    {**TRAIN, "engine": "pytorch", "gpus": 2, "micro_batch_size": 4, "grad_accum": 8, "lora_targets": ["q_proj"]},
    {**TRAIN, "model": dict(TINY), "hardware": "l40sx4"},
    {**TRAIN, "hardware": "rtx3090x8-pcie", "model": "tinyllama-1.1b", "flash_attention": False},
    SERVE,
    {**SERVE, "tensor_parallel": 8, "batch_size": 64, "output_len": 128, "weight_bits": 4, "kv_bits": 8},
    {**SERVE, "model": "qwen2.5-7b", "hardware": "h200x2", "prompt_len": 8192, "kv_len": 16384},
]

TRAIN_INT = ("gpus", "micro_batch_size", "grad_accum", "seq_len", "lora_rank", "zero_stage")
SERVE_INT = ("batch_size", "prompt_len", "kv_len", "output_len", "tensor_parallel", "weight_bits", "kv_bits")
BOOLS = ("recompute", "flash_attention")
STRINGS_TRAIN = ("id", "hardware", "task", "engine", "offload")
NOT_INT = ["4", "1", True, False, 4.5, 1.0, 2.0000001, float("nan"), float("inf"), float("-inf"), [], {}, [1], "0x10", None]
NOT_BOOL = [1, 0, "true", "false", "yes", None, [], 1.0]
NOT_STR = [5, True, 1.5, [], {}, ["h100x8"]]

# typed but absurd: each must become an error line (exit 1), never a number
ABSURD_TRAIN = {
    "gpus": [0, -1, 9, 10**30, 2**31, 2**63],
    "micro_batch_size": [0, -5, 10**30, 2**40],
    "grad_accum": [0, -1, 10**30],
    "seq_len": [0, -2048, 4097, 10**6, 10**30],
    "lora_rank": [0, -8, 10**9, 4097],  # llama2-7b's hidden size is 4096
    "zero_stage": [4, -1, 10],
    "lora_targets": [[], ["q_proj", "q_proj"], ["QKV"], [""], ["q_proj", "lm_head"]],
    "hardware": ["h100x\uff18", "\uff48100x8", "h100x\u0668", "h100x0", "h100x", "h100", "", " ", "h100x1e3",
                 "h100x999999", "h100x1025", "rtx4090x8-nvlink", "../../etc/passwd", "h100x8\n", "x" * 5000,
                 "nonexistentx8", "h100x8-infiniband", "h100x-8", "h100x+8", "\x00"],  # "h100x8 " is h100x8 (issue 24: spaces around an id are stripped)
    "model": ["", "llama2-7", "gpt2", "bert-base-uncased", "/dev/zero", "/nonexistent/config.json", ".",
              {**TINY, "num_hidden_layers": True}, {**TINY, "num_hidden_layers": 0}, {**TINY, "num_hidden_layers": -3},
              {**TINY, "hidden_size": 0}, {**TINY, "hidden_size": -256}, {**TINY, "num_hidden_layers": 2.5},
              {**TINY, "num_hidden_layers": "2"}, {**TINY, "vocab_size": 10**30}, {**TINY, "num_key_value_heads": 3},
              {**TINY, "hf_model_type": "bert"}, {**TINY, "hf_model_type": "t5"}, {**TINY, "model_type": "llama"},
              {**TINY, "hidden_size": float("nan")}, {**TINY, "num_local_experts": 2, "num_experts_per_tok": 4},
              {"hidden_size": 256}, {}, {**TINY, "max_position_embeddings": 64}, {**TINY, "max_position_embeddings": 0},
              {**TINY, "max_position_embeddings": -4096}, {**TINY, "param_count": -1}],
    "method": ["QLoRA", "", "adapter"],
    "engine": ["jax", "DeepSpeed"],
    "offload": ["cpu", "nvme"],
    "quantization": ["int4", "fp8"],
    "task": ["train", "inference", "", "SERVE"],
}
ABSURD_SERVE = {
    "tensor_parallel": [16, 3, 0, -1, 10**30],
    "batch_size": [0, -1, 10**30, 2**21],
    "prompt_len": [0, 4097, 10**30],
    "kv_len": [0, 5000, 10**7],
    "output_len": [0, 4000, 10**7],
    "weight_bits": [2, 32, 0],
    "kv_bits": [4, 32],
}
CONTRADICTIONS = [
    {**TRAIN, "offload": "optimizer", "zero_stage": 0},
    {**TRAIN, "offload": "optimizer+params", "zero_stage": 2},
    {**TRAIN, "method": "qlora", "quantization": "none"},
    {**TRAIN, "method": "lora", "quantization": "nf4"},
    {**TRAIN, "engine": "pytorch", "zero_stage": 3},
    {**TRAIN, "seq_length": 2048},  # a misspelt field
    {**TRAIN, "batch_size": 4},  # a serving field on a training case
    {**SERVE, "micro_batch_size": 4},
    {k: v for k, v in TRAIN.items() if k != "task"},
    {k: v for k, v in TRAIN.items() if k != "hardware"},
    {k: v for k, v in TRAIN.items() if k != "id"},
    {**SERVE, "hardware": "h100x1", "model": "llama2-70b", "tensor_parallel": 2},
]
ODD_IDS = ["", "\ud800", "a\udfffb", "[bold]x[/bold]", "[/]", "a\nb", "a\rb\tc", "\u2028", "\x00", "\x1b[31mred",
           "💥", "x" * 10_000, " ", "\ufeff", "null", "𝟙𝟚𝟛"]


@contextmanager
def time_limit(seconds: int):
    def on_alarm(*_):
        raise TimeoutError(f"run took more than {seconds} s (a hang)")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def app():
    names = {c.name or c.callback.__name__ for c in cli.app.registered_commands}
    if "predict" not in names:
        cli._register()
    return cli.app


def invoke(args: list[str], stdin: str | bytes | None = None):
    with time_limit(TIME_LIMIT_S):
        r = CliRunner().invoke(app(), args, input=stdin)
    assert r.exception is None or isinstance(r.exception, SystemExit), (args, repr(r.exception))
    assert "Traceback" not in r.output, (args, r.output[-2000:])
    return r


def check_failure_line(r, args) -> None:
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), (args, r.stderr[-1000:])


# ------------------------------------------------------------------------------------- predict


def _dump(obj) -> str:
    return json.dumps(obj)  # NaN and Infinity written as JSON's common extension, as a hostile file would


def predict_files(rng: random.Random):
    """(name, text, expected exit, ids expected on stdout or None when the file is malformed)."""
    out = []
    malformed, absurd, valid = [], [], [dict(v) for v in VALID]
    for f in TRAIN_INT:
        malformed += [{**TRAIN, f: v} for v in NOT_INT if not (v is None and f == "gpus")]
    for f in SERVE_INT:
        malformed += [{**SERVE, f: v} for v in NOT_INT if not (v is None and f in ("kv_len", "output_len"))]
    for f in BOOLS:
        malformed += [{**TRAIN, f: v} for v in NOT_BOOL]
    for f in STRINGS_TRAIN:
        malformed += [{**TRAIN, f: v} for v in NOT_STR]
    malformed += [{**TRAIN, "model": v} for v in (5, True, None, [], 1.5)]
    malformed += [{**TRAIN, "lora_targets": v} for v in ("q_proj", [1], [None], {"q_proj": 1})]
    malformed += [{**TRAIN, "method": v} for v in (5, True, [])]
    for f, values in ABSURD_TRAIN.items():
        absurd += [{**TRAIN, f: v} for v in values]
    for f, values in ABSURD_SERVE.items():
        absurd += [{**SERVE, f: v} for v in values]
    absurd += CONTRADICTIONS
    valid += [{**rng.choice(VALID), "id": i} for i in ODD_IDS]

    for c in malformed:
        out.append(("malformed", _dump(c) + "\n", 2, None))
    for c in absurd:
        out.append(("absurd", _dump(c) + "\n", 1, [c.get("id")]))
    for c in valid:
        out.append(("valid", _dump(c) + "\n", 0, [c["id"]]))
    # mixed files: a hostile line among good ones never takes the others down, never loses a line
    for _ in range(60):
        lines = [dict(rng.choice(valid)) for _ in range(rng.randint(1, 3))] + [dict(rng.choice(absurd))]
        rng.shuffle(lines)
        for i, ln in enumerate(lines):
            if "id" in ln:
                ln["id"] = rng.choice([f"m{i}", rng.choice(ODD_IDS) + str(i)])
        sep = rng.choice(["\n", "\r\n", "\n\n", "\n  \n"])
        out.append(("mixed", sep.join(_dump(x) for x in lines) + rng.choice(["", "\n"]), 1, [x.get("id") for x in lines]))
    for _ in range(15):  # one malformed line anywhere rejects the file, naming its line
        lines = [_dump(rng.choice(valid)) for _ in range(rng.randint(1, 3))]
        lines.insert(rng.randint(0, len(lines)), rng.choice([_dump(rng.choice(malformed)), "{", "[]", "42", "null",
                                                            '"a string"', "{'single': 'quotes'}", "[" * 50_000]))
        out.append(("malformed-mixed", "\n".join(lines) + "\n", 2, None))
    # the whole file
    out += [
        ("empty", "", 0, []),
        ("blank", "\n \n\t\n", 0, []),
        ("bom", "\ufeff" + _dump(TRAIN) + "\n", 0, ["t"]),
        ("u2028-in-string", '{"id": "a\u2028b\x85c", "hardware": "h100x8", "model": "7b", "task": "finetune"}\n', 0, ["a\u2028b\x85c"]),
        ("raw-surrogate", '{"id": "\\ud800", "hardware": "h100x8", "model": "7b", "task": "finetune"}\n'
                          '{"id": "after", "hardware": "h100x8", "model": "7b", "task": "finetune"}\n', 0, ["\ud800", "after"]),
        ("deep", "[" * 200_000 + "]" * 200_000, 2, None),
        ("deep-object", '{"id": "x", "model": ' + '{"a": ' * 5000 + "1" + "}" * 5000 + "}", 2, None),
        ("huge-int", '{"id": "x", "hardware": "h100x8", "model": "7b", "task": "finetune", "seq_len": ' + "9" * 5000 + "}", 2, None),
        ("huge-float", '{"id": "x", "hardware": "h100x8", "model": "7b", "task": "finetune", "seq_len": 1e999}', 2, None),
        ("huge-line", '{"id": "x", "pad": [' + "1," * 200_000 + "1]}\n", 2, None),
        ("cr-only", _dump(TRAIN) + "\r" + _dump(SERVE) + "\r", 0, ["t", "s"]),
        ("dup-key", '{"id": "x", "id": "y", "hardware": "h100x8", "model": "7b", "task": "finetune"}', 0, ["y"]),
        ("nul", '{"id": "x"}\x00\n', 2, None),
        ("trailing-comma", '{"id": "x", "hardware": "h100x8",}', 2, None),
    ]
    return out


def test_predict_hostile_files(tmp_path, capsys):
    rng = random.Random(RNG_SEED)
    kinds = Counter()
    for i, (kind, text, code, ids) in enumerate(predict_files(rng)):
        path = tmp_path / f"c{i}.jsonl"
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        args = ["predict", "--cases", str(path), "--json"]
        r = invoke(args)
        kinds[kind] += 1
        assert r.exit_code == code, (kind, text[:300], r.exit_code, r.stdout[-500:], r.stderr[-500:])
        if i % 7 == 0:  # the table for people: same exit code, no traceback, whatever the ids and messages hold
            assert invoke(args[:-1]).exit_code == code, (kind, text[:300])
        if ids is None:
            assert r.stdout == "", (kind, text[:300])
            check_failure_line(r, (kind, text[:200]))
            assert "line " in r.stderr
            continue
        rows = [json.loads(x) for x in r.stdout.split("\n") if x]
        assert [row.get("id") for row in rows] == ids, (kind, text[:300], r.stdout[-600:])  # none lost, in order
        assert sum("error" in row for row in rows) == (len(rows) if kind == "absurd" else sum("error" in row for row in rows))
        if kind == "absurd":
            assert all(set(row) == {"id", "error"} and "\n" not in row["error"] for row in rows), (text[:300], rows)
        if kind == "valid":
            assert "error" not in rows[0], (text[:300], rows)
    with capsys.disabled():
        print(f"\npredict: {sum(kinds.values())} hostile files: {dict(kinds)}")
    assert sum(kinds.values()) >= 300


def test_predict_hostile_paths(tmp_path):
    """FIFOs, devices, directories, huge and binary files: an error at once (exit 2), no hang."""
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    sparse = tmp_path / "huge.jsonl"
    with open(sparse, "wb") as f:
        f.truncate(200 << 20)
    binary = tmp_path / "bin.jsonl"
    binary.write_bytes(bytes(range(256)) * 10)
    latin = tmp_path / "latin1.jsonl"
    latin.write_bytes('{"id": "caf\xe9"}\n'.encode("latin-1"))
    paths = [str(fifo), "/dev/zero", "/dev/null", "/dev/urandom", str(tmp_path), str(tmp_path / "missing.jsonl"),
             str(sparse), str(binary), str(latin), "", "\x00x", "x" * 5000, "/proc/self/mem"]
    for p in paths:
        r = invoke(["predict", "--cases", p, "--json"])
        if p == "/dev/null":  # a character device, not a file of cases
            pass
        assert r.exit_code == 2, (p[:80], r.exit_code, r.stderr)
        check_failure_line(r, p[:80])


def test_predict_stdin_and_model_paths(tmp_path):
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    folder = tmp_path / "dir.json"
    folder.mkdir()
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate(100 << 20)
    bert = tmp_path / "bert.json"
    bert.write_text(json.dumps({"model_type": "bert", "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
                                "num_attention_heads": 12, "vocab_size": 30522}))
    boolean = tmp_path / "bool.json"
    boolean.write_text(json.dumps({"model_type": "llama", **TINY, "num_hidden_layers": True}))
    cases = [{**TRAIN, "id": str(i), "model": str(p)} for i, p in enumerate([fifo, folder, big, bert, boolean])]
    text = "\n".join(json.dumps(c) for c in cases + [TRAIN])
    r = invoke(["predict", "--cases", "-", "--json"], stdin=text)
    assert r.exit_code == 1
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert [row["id"] for row in rows] == ["0", "1", "2", "3", "4", "t"]
    assert all("error" in row for row in rows[:5]) and "error" not in rows[5], rows


def test_predict_profiles(tmp_path):
    """A profile of another GPU, a CPU profile, impossible ceilings: error lines, never a silent prediction."""
    shipped = json.loads((Path(__file__).resolve().parents[1] / "knowledge/measurements/profiles/h100x1.json").read_text())
    cases = tmp_path / "c.jsonl"
    cases.write_text(json.dumps({**TRAIN, "hardware": "h100x1"}) + "\n" + json.dumps({**TRAIN, "id": "a800", "hardware": "a800x8"}) + "\n")
    variants = {"cpu": {**shipped, "gpu_name": "cpu", "gpu_id": None}}
    for field in ("matmul_tflops", "memory_bandwidth_gbs", "launch_overhead_s"):
        for bad in (0, -1.0, float("nan"), float("inf"), 1e30):
            variants[f"{field}={bad}"] = {**shipped, field: bad}
    for name, prof in variants.items():
        path = tmp_path / f"{len(name)}-{abs(hash(name))}.json"
        path.write_text(json.dumps(prof))
        r = invoke(["predict", "--cases", str(cases), "--json", "--profile", str(path)])
        assert r.exit_code == 1, (name, r.stderr)
        rows = [json.loads(x) for x in r.stdout.splitlines()]
        assert [row["id"] for row in rows] == ["t", "a800"] and all("error" in row for row in rows), (name, rows)
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps(shipped))
    r = invoke(["predict", "--cases", str(cases), "--json", "--profile", str(ok)])
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert r.exit_code == 1 and "error" not in rows[0] and "does not match" in rows[1]["error"], rows
    for bad, code in (("/dev/zero", 2), (str(tmp_path), 2), (str(tmp_path / "none.json"), 2),
                      ("nosuchprofile", 1)):  # a file that cannot be read exits 2; a name no profile has exits 1, like an unknown model
        r = invoke(["predict", "--cases", str(cases), "--json", "--profile", bad])
        assert r.exit_code == code and r.stdout == "", (bad, r.exit_code)
        check_failure_line(r, bad)


# ------------------------------------------------------------------------------------- other commands

BAD_NUMBERS = ["0", "-1", "10" * 20, "nan", "inf", "-inf", "abc", "", "1.5", "\uff11", "1e3", "0x10", "--", "9" * 400]


def other_command_args(tmp_path: Path):
    """(args, expected exit code or 'nonzero')."""
    out = []
    rec = ["recommend", "-H", "h100x1", "-t", "finetune", "-m", "tinyllama-1.1b", "--json", "--out-dir", str(tmp_path / "o")]
    for opt in ("--top", "--seq-len", "--global-batch", "--gpus", "--trials", "--lora-rank", "--prompt-len",
                "--output-len", "--requests", "--seed"):
        out += [([*rec, opt, v], 2) for v in BAD_NUMBERS if not (opt == "--seed" and v == "0")]
    for opt in ("--headroom", "--max-tpot-ms", "--max-ttft-ms"):
        out += [([*rec, "-t", "serve", opt, v], 2) for v in ("nan", "inf", "-1", "abc", "1e30")]
    out += [
        ([*rec, "--gpus", "2"], 1),
        ([*rec, "--seq-len", "4096"], 1),  # tinyllama's context is 2048
        ([*rec, "--lora-rank", "4096"], 1),  # above its hidden size of 2048
        ([*rec, "-H", "h100x\uff11"], 1),
        ([*rec, "-H", "h100"], 1),
        ([*rec, "-m", "nonexistent"], 1),
        ([*rec, "-m", json.dumps({**TINY, "num_hidden_layers": True})], 1),
        ([*rec, "-m", "{" * 3000], 2),
        ([*rec, "-m", "{not json"], 2),
        ([*rec, "-t", "train"], 2),
        ([*rec, "--engine", "jax"], 2),  # a bad option value is a usage error, as for serving
        ([*rec, "--objective", "speed"], 2),
        ([*rec, "--sampler", "grid"], 2),
        ([*rec, "--profile", "/dev/zero"], 1),
        ([*rec, "--profile", str(tmp_path)], 1),
        ([*rec, "--profile", "h200x1"], 1),  # an H200 profile for an H100
        ([*rec, "--storage", "foo"], 1),
        ([*rec, "--storage", "redis://localhost"], 1),
        ([*rec, "--storage", f"sqlite:///{tmp_path}/missing/dir/x.db"], 1),
        ([*rec, "--storage", f"sqlite:///{tmp_path}"], 1),
        ([*rec, "--storage", "sqlite:////etc/passwd"], 1),
        ([*rec, "--storage", "postgresql://nobody@127.0.0.1:1/none"], 1),
        ([*rec, "--out-dir", "/etc/passwd"], 2),
        ([*rec, "--out-dir", "/etc/passwd/sub"], 2),
        ([*rec, "--no-such-option"], 2),
        (["recommend"], 2),
        (["recommend", "-H", "h100x8", "-t", "serve", "-m", "7b", "--prompt-len", "4000", "--output-len", "1000"], 1),
        (["recommend", "-H", "h100x8", "-t", "serve", "-m", "7b", "--gpus", "9"], 1),
    ]
    for opt in ("--host-ram-gib", "--cpu-cores"):  # the host of the server (adopt's options), bounded like the rest
        out += [([*rec, opt, v], 2) for v in ("0", "-1", "nan", "inf", "1e30", "abc", "", "\uff11", "9" * 400)]
    loop = tmp_path / "loop.json"
    loop.write_text(json.dumps({"platform": str(loop), "host_ram_gib": 64}))
    out += [
        ([*rec, "-H", "/dev/zero"], 1),  # a platform file is read bounded and non-blocking
        ([*rec, "-H", str(tmp_path)], 1),
        ([*rec, "-H", str(tmp_path / "none.json")], 1),
        ([*rec, "-H", str(loop)], 1),  # a platform file naming itself
        ([*rec, "-H", json.dumps({"gpu": "h100", "count": 10**9})], 1),
        ([*rec, "-H", json.dumps({"platform": "h100x1", "id": "h100\uff11"})], 1),
        ([*rec, "-H", "{" * 5000], 2),  # an inline platform that is not JSON is malformed, as a platform file
    ]
    ds = ["deepspeed-config", "--out", str(tmp_path / "ds.json")]
    for opt in ("--zero-stage", "--micro-batch-size", "--grad-accum", "--gpus"):
        out += [([*ds, opt, v], 2) for v in BAD_NUMBERS if not (opt == "--zero-stage" and v == "0")]
    out += [
        ([*ds, "--zero-stage", "4"], 2),
        ([*ds, "--hardware", "h100x\uff18"], 1),
        ([*ds, "--model", "nonexistent"], 1),
        ([*ds, "--method", "QLoRA"], 2),  # not a choice: a usage error, as in recommend
        ([*ds, "--offload", "nvme"], 2),
        ([*ds, "--offload", "optimizer+params", "--zero-stage", "2"], 1),
        ([*ds, "--task", "serve"], 2),
        ([*ds, "--gpus", "9", "--hardware", "h100x8"], 1),
        ([*ds, "--case", "/dev/zero"], 2),
        ([*ds, "--case", str(tmp_path)], 2),
        ([*ds, "--case", "{" * 5000], 2),
        ([*ds, "--case", json.dumps({**TRAIN, "micro_batch_size": "4"})], 2),
        ([*ds, "--case", json.dumps({**TRAIN, "seq_len": 10**6})], 1),
        ([*ds, "--case", json.dumps(SERVE)], 2),
        (["deepspeed-config", "--out", str(tmp_path)], 2),
        (["deepspeed-config", "--out", "/etc/passwd/x.json"], 2),
        (["deepspeed-config", "--out", "/dev/null"], 2),  # a rename would replace the device with a file
        (["confirm", "-H", "h100x8", "--dry-run", "--steps", "1" + "0" * 30], 2),
        (["confirm", "-H", "h100x8", "--dry-run", "--timeout-s", "inf"], 2),
        (["confirm", "-H", "h100x8", "--dry-run", "--seq-len", "99999"], 1),
        (["confirm", "-H", "h100x8", "--dry-run", "--out", "/dev/zero"], 2),
        (["confirm", "-H", "h100x8", "--dry-run", "--case", json.dumps({**TRAIN, "seq_len": 9999})], 1),
        (["validate", "--holdout", "zz"], 2),
    ]
    cmp = ["compare", "--hardware", "a100x1", "--vs", "h20x1", "--model", "7b", "--json"]
    for opt in ("--batch", "--seq"):
        out += [([*cmp, opt, v], 2) for v in BAD_NUMBERS + ["1,,x", ",", ",".join(map(str, range(1, 60))), "1,\uff12", "-1,2"]]
    out += [
        ([*cmp, "--phase", "train"], 2),
        ([*cmp, "--seq", "100000"], 1),
        ([*cmp, "--vs", "h100x\uff11"], 1),
        ([*cmp, "--vs", ""], 1),
        ([*cmp, "--model", "{"], 2),
        ([*cmp, "--model", json.dumps({**TINY, "hidden_size": -1})], 1),
        ([*cmp, "--png", str(tmp_path)], 2),
        ([*cmp, "--png", "/etc/passwd/x.png"], 2),
        (["compare"], 2),
        (["no-such-command"], 2),
        (["predict", "--cases"], 2),
        (["predict", "--cases", "x", "--bogus"], 2),
    ]
    return out


def test_other_commands_hostile_options(tmp_path, capsys):
    cases = other_command_args(tmp_path)
    for args, code in cases:
        r = invoke(args)
        assert r.exit_code == code, (" ".join(args), r.exit_code, r.stderr[-600:], r.stdout[-300:])
        check_failure_line(r, args)
    with capsys.disabled():
        print(f"\nother commands: {len(cases)} hostile option sets")
    assert len(cases) >= 250


@pytest.mark.parametrize("args", [
    ["recommend", "-H", "h100x8", "-t", "serve", "-m", "7b", "--gpus", "1", "--json"],
    ["recommend", "-H", "h100x8", "-t", "serve", "-m", "7b", "--gpus", "2", "--json"],
])
def test_serve_recommend_respects_gpus(args):
    r = invoke(args)
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["recommendations"]
    assert all(x["configuration"]["tensor_parallel"] <= int(args[args.index("--gpus") + 1]) for x in d["recommendations"])


def test_valid_runs_of_every_command_still_work(tmp_path):
    r = invoke(["recommend", "-H", "h100x1", "-t", "finetune", "-m", "tinyllama-1.1b", "--json", "--out-dir", str(tmp_path / "o")])
    assert r.exit_code == 0, r.stderr
    assert (tmp_path / "o" / "ds_config.json").exists()
    r = invoke(["deepspeed-config", "--out", str(tmp_path / "new" / "ds.json")])
    assert r.exit_code == 0, r.stderr
    r = invoke(["compare", "--hardware", "a100x1", "--vs", "h20x1", "--model", "7b", "--json", "--png", str(tmp_path / "c.png")])
    assert r.exit_code == 0, r.stderr
    assert max(json.loads(r.stdout)["seq_lens"]) <= 4096  # the default grid stops at the model's context
