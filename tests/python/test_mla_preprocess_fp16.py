"""npu_mla_preprocess with fp16 input against the float64 numpy reference
(reference_preprocess.py, dtype "fp16"): descale0 / descale1 as int64 holding the fp32 bits,
quant scales, gammas, cos / sin and the float caches in fp16; every cache mode, int8 weights
(per tensor, per token) and weights in the input dtype."""
import pytest
import torch

from test_mla_preprocess import check_against_reference, make

import mlaops


def to_fp16(args, kw):
    """make()'s bf16 call as an fp16 one (the values are exact in fp16); fp32 descales -> int64 bits."""
    def conv(i, a):
        if a is None or not torch.is_tensor(a):
            return a
        if a.dtype == torch.bfloat16:
            return a.to(torch.float16)
        if i in (4, 8) and a.dtype == torch.float32:  # descale0 / descale1
            return a.view(torch.int32).to(torch.int64)
        return a
    return tuple(conv(i, a) for i, a in enumerate(args)), {k: conv(-1, v) for k, v in kw.items()}


@pytest.mark.parametrize("cm", [0, 1, 2, 3])
@pytest.mark.parametrize("quant", ["per_tensor", "per_token", None])
def test_fp16_cache_modes_against_reference(cm, quant):
    args, kw, ref_in, slots = make(40 + cm, cm, quant)
    args, kw = to_fp16(args, kw)
    assert args[0].dtype == torch.float16 and (quant is None or args[4].dtype == torch.int64)
    check_against_reference(cm, quant, args, kw, ref_in, slots, dtype="fp16")


def test_fp16_refuses_fp32_descale():
    """fp16 input takes the descales as int64 (fp32 bits); fp32 ones are refused, nothing written."""
    args, kw, _, _ = make(47, 1)
    f16, kw16 = to_fp16(args, kw)
    bad = list(f16)
    bad[4] = args[4]
    kv0 = f16[13].clone()
    with pytest.raises(mlaops.Error) as e:
        mlaops.npu_mla_preprocess(*bad, **kw16)
    assert e.value.status == 161002 and "descale0" in e.value.message.lower(), e.value.message
    assert torch.equal(f16[13], kv0)
