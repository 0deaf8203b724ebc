"""The comparison rules of docs/ops/mla_prolog.md and docs/ops/fused_infer_attention_score.md
(the C++ tests' testkit/compare.h), in numpy."""
import numpy as np

from reference import f64

ULP_BF16 = 2.0 ** -7


def assert_close(actual, ref, ulps=2.0, atol_rms=0.004, max_mean_rel=0.004, min_cos=0.9999,
                 max_bad_frac=0.0, cap_rms=0.0, what="", rtol=None):
    """|a - r| <= rtol*|r| + atol_rms*rms(r) (rtol defaults to ulps*2^-7) elementwise (at most max_bad_frac beyond,
    each within cap_rms*rms(r)); mean(|a - r| / (|r| + 1e-3 rms)) <= max_mean_rel; cosine >=
    min_cos."""
    a, r = f64(actual).reshape(-1), f64(ref).reshape(-1)
    assert a.shape == r.shape, f"{what}: shape {a.shape} vs {r.shape}"
    assert np.all(np.isfinite(a)), f"{what}: non-finite output"
    rms = float(np.sqrt(np.mean(r * r))) if r.size else 0.0
    diff = np.abs(a - r)
    rtol = ulps * ULP_BF16 if rtol is None else rtol
    bound = rtol * np.abs(r) + atol_rms * rms
    bad = diff > bound
    worst = int(np.argmax(diff - bound)) if r.size else 0
    msg = (f"{what}: {int(bad.sum())}/{r.size} beyond the bound; worst index {worst}: "
           f"{a[worst]} vs {r[worst]} (rms {rms})")
    if max_bad_frac == 0:
        assert not bad.any(), msg
    else:
        assert bad.sum() <= max_bad_frac * r.size, msg
        assert np.all(diff <= cap_rms * rms + bound), msg
    mean_rel = float(np.mean(diff / (np.abs(r) + rms * 1e-3))) if r.size else 0.0
    assert mean_rel <= max_mean_rel, f"{what}: mean relative error {mean_rel}"
    if r.size and rms > 0:
        cos = float(a @ r / (np.linalg.norm(a) * np.linalg.norm(r)))
        assert cos >= min_cos, f"{what}: cosine {cos}"


def assert_cascade(actual, ref, ulps=2.0, what=""):
    """The query rule: the bf16 bound with the rounding-cascade allowance (0.1 % of elements
    beyond it, each within 5 % of rms, mean relative error up to one bf16 ulp)."""
    assert_close(actual, ref, ulps=ulps, max_mean_rel=ULP_BF16, max_bad_frac=0.001, cap_rms=0.05, what=what)


def assert_int8(actual, ref, max_off_frac=0.02, what=""):
    """int8: |Δ| <= 1, at most max_off_frac of the elements differ."""
    a, r = f64(actual).reshape(-1), f64(ref).reshape(-1)
    d = np.abs(a - r)
    assert d.max(initial=0) <= 1, f"{what}: int8 off by {d.max()}"
    assert (d > 0).sum() <= max_off_frac * r.size, f"{what}: {(d > 0).sum()}/{r.size} differ"


def assert_fia_out(actual, ref, fp16=False, what="attention_out"):
    """FusedInferAttentionScore's output rule (docs/ops/fused_infer_attention_score.md; P is
    rounded to BF16 / FP16 before P x V as on the NPU): BF16 |Δ| <= 7.8e-3 |r| + 1e-2 rms, mean
    relative error <= 1.5e-2, cosine >= 0.9995; FP16 5e-3 |r| + 5e-3 rms, 2e-3, 0.9999."""
    if fp16:
        assert_close(actual, ref, rtol=5e-3, atol_rms=5e-3, max_mean_rel=2e-3, min_cos=0.9999, what=what)
    else:
        assert_close(actual, ref, rtol=7.8e-3, atol_rms=1e-2, max_mean_rel=1.5e-2, min_cos=0.9995, what=what)
