"""npu_incre_flash_attention / npu_prompt_flash_attention with torch_npu's signatures
(op_plugin_functions.yaml), run through the aclnn C entry points torch_npu calls,
aclnnIncreFlashAttentionV4 and aclnnPromptFlashAttentionV3 (python/src/aclnn_entry.cpp), so the
entry points' own rules apply (docs/ops/incre_flash_attention.md,
docs/ops/prompt_flash_attention.md; docs/python.md)."""
from . import _mlaops
from ._args import checked
from ._errors import check
from ._tensors import spec, kind_of, dtype_name, empty, host_ints

# torch_npu maps sparse_mode 10..14 onto sparse_mode - 10 with inner_precise 0 (high precision);
# any other sparse_mode runs with inner_precise 1
_PFA_HIGH_PRECISION_SPARSE = range(10, 15)


def _out_dtype(query, quant_scale2):
    """torch_npu's output dtype: INT8 with quant_scale2, FLOAT16 for an INT8 query, else the
    query's."""
    if quant_scale2 is not None:
        return "int8"
    return "fp16" if dtype_name(query) == "int8" else dtype_name(query)


def _empty_like_shape(query, shape, quant_scale2):
    return empty(kind_of(query), shape, _out_dtype(query, quant_scale2))


@checked("FIA-01", nz="reject")
def npu_incre_flash_attention(query, key, value, *, padding_mask=None, atten_mask=None, pse_shift=None,
                              actual_seq_lengths=None, antiquant_scale=None, antiquant_offset=None, block_table=None,
                              dequant_scale1=None, quant_scale1=None, dequant_scale2=None, quant_scale2=None,
                              quant_offset2=None, kv_padding_size=None, num_heads=1, scale_value=1.0,
                              input_layout="BSH", num_key_value_heads=0, block_size=0, inner_precise=1):
    """torch_npu.npu_incre_flash_attention: returns attention_out, of the query's shape (INT8 with
    quant_scale2, FLOAT16 for an INT8 query, else the query's dtype).

    Runs aclnnIncreFlashAttentionV4 as torch_npu does: key / value as one-tensor lists (a list of
    tensors, one per batch, is taken too), actual_seq_lengths the KV lengths, padding_mask
    reserved (not read). The entry point's rules apply: IFA-01 (one query token per batch),
    IFA-02 (layouts BSH / BSND / BNSD), then FusedInferAttentionScoreV4's with its vendor ranges.
    NZ tensors are refused (NZ-02), as torch_npu refuses internal formats for this operator.
    """
    out = _empty_like_shape(query, tuple(query.shape), quant_scale2)
    tensors = dict(query=spec(query), key=[spec(k) for k in _as_list(key)], value=[spec(v) for v in _as_list(value)],
                   pse_shift=spec(pse_shift), atten_mask=spec(atten_mask), dequant_scale1=spec(dequant_scale1),
                   quant_scale1=spec(quant_scale1), dequant_scale2=spec(dequant_scale2),
                   quant_scale2=spec(quant_scale2), quant_offset2=spec(quant_offset2),
                   antiquant_scale=spec(antiquant_scale), antiquant_offset=spec(antiquant_offset),
                   block_table=spec(block_table), kv_padding_size=spec(kv_padding_size), attention_out=spec(out))
    attrs = dict(num_heads=int(num_heads), scale_value=float(scale_value), input_layout=str(input_layout),
                 num_key_value_heads=int(num_key_value_heads), block_size=int(block_size),
                 inner_precise=int(inner_precise))
    check(_mlaops.incre_flash_attention(tensors, host_ints(actual_seq_lengths), attrs))
    return out


def _pfa_out_shape(query, value, layout):
    """torch_npu's attention_out shape: the query's, BNSD_BSND -> (B, S, N, D), TND -> (T, N, value's D)."""
    q = tuple(int(s) for s in query.shape)
    if layout == "BNSD_BSND" and len(q) == 4:
        return (q[0], q[2], q[1], q[3])
    if layout == "TND" and len(q) == 3 and len(value.shape) >= 3:
        return (q[0], q[1], int(value.shape[2]))
    return q


@checked("FIA-01", nz="reject", tensor_lists=())
def npu_prompt_flash_attention(query, key, value, *, padding_mask=None, atten_mask=None, pse_shift=None,
                               actual_seq_lengths=None, deq_scale1=None, quant_scale1=None, deq_scale2=None,
                               quant_scale2=None, quant_offset2=None, num_heads=1, scale_value=1.0,
                               pre_tokens=2147473647, next_tokens=0, input_layout="BSH", num_key_value_heads=0,
                               actual_seq_lengths_kv=None, sparse_mode=0):
    """torch_npu.npu_prompt_flash_attention: returns attention_out (the query's shape; BNSD_BSND:
    (B, S, N, D); TND: (T, N, value's D); dtype as npu_incre_flash_attention's).

    Runs aclnnPromptFlashAttentionV3 as torch_npu does: sparse_mode 10..14 runs as sparse_mode - 10
    with inner_precise 0, any other with inner_precise 1; padding_mask reserved (not read). The
    defaults are torch_npu's (pre_tokens 2147473647, next_tokens 0). The entry point's rules
    apply: a null input_layout is impossible here, PFA-01 (layouts BSH / BSND / BNSD / BNSD_BSND /
    TND / NTD), PFA-02 (an empty attention_out: nothing done), then FusedInferAttentionScoreV4's
    with its vendor ranges. NZ tensors are refused (NZ-02), as in torch_npu.
    """
    layout = str(input_layout)
    out = _empty_like_shape(query, _pfa_out_shape(query, value, layout), quant_scale2)
    sparse, inner = int(sparse_mode), 1
    if sparse in _PFA_HIGH_PRECISION_SPARSE:
        sparse, inner = sparse - 10, 0
    tensors = dict(query=spec(query), key=spec(key), value=spec(value), pse_shift=spec(pse_shift),
                   atten_mask=spec(atten_mask), deq_scale1=spec(deq_scale1), quant_scale1=spec(quant_scale1),
                   deq_scale2=spec(deq_scale2), quant_scale2=spec(quant_scale2), quant_offset2=spec(quant_offset2),
                   attention_out=spec(out))
    attrs = dict(num_heads=int(num_heads), scale_value=float(scale_value), pre_tokens=int(pre_tokens),
                 next_tokens=int(next_tokens), input_layout=layout, num_key_value_heads=int(num_key_value_heads),
                 sparse_mode=sparse, inner_precise=inner)
    check(_mlaops.prompt_flash_attention(tensors, host_ints(actual_seq_lengths), host_ints(actual_seq_lengths_kv),
                                         attrs))
    return out


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]
