"""What bitsandbytes' 4-bit projections cost the host beyond the bf16 product the trace stands in for them.

Measured, not fitted (``data/bnb_host.json``, written by ``python -m probes.bnb_host --table`` from its runs): a
``Linear4bit`` (NF4, double quantization) runs its dequantize and product through bitsandbytes' Python and custom
operators, several times a bf16 ``nn.Linear``'s CPU time each way; PEFT's LoRA on one (``peft.tuners.lora.bnb``) adds its
own beyond LoRA on a bf16 projection. Each is given in calls of a frozen bf16 projection on the same host, the unit of
the step-time model's per-kernel CPU cost (one traced kernel forward, one backward), so it follows a host's speed.
Anatomy 38 (host-bound QLoRA 1.37-1.47x LoRA of the same model, 354-362 us more a 4-bit projection and step) is why.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

BNB_HOST = Path(__file__).parent / "data" / "bnb_host.json"


class BnbHostCost(BaseModel):
    """Extra CPU time of one call, in bf16 projection calls of the same phase."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    nf4_fwd_calls: float
    nf4_bwd_calls: float
    qlora_wrapper_fwd_calls: float
    qlora_wrapper_bwd_calls: float
    source: str


BNB_HOST_COST = BnbHostCost.model_validate_json(BNB_HOST.read_text())  # the bundled measured table
