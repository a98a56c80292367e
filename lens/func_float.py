"""gfx906's float arithmetic as the functional mode models it (lens/functional.py), on 32-bit patterns.

Exact (bit for bit what the Vega ISA manual defines): add, sub, mul, min/max, conversions, v_ldexp_f32
and v_fma_f32 / v_fmac_f32 (one rounding of the exact a*b+c: the sum of the exact double product and c
rounded to odd in double, then to float, which is the correctly rounded result because a double carries
more than 24 + 1 bits), f64 add and mul (Python's double arithmetic is IEEE's), v_mad_f32 /
v_mac_f32 / v_madmk_f32 / v_madak_f32 (two roundings, denormals flushed: the manual's "no denormal
support" for the unfused multiply-add). IEEE denormals elsewhere: every product kernel's descriptor
sets FLOAT_DENORM_MODE_32 = 3.

Approximate: v_exp_f32 (2^x), v_log_f32 (log2 x), v_rcp_f32, v_rcp_iflag_f32, v_rsq_f32, v_sqrt_f32.
The manual promises 1 ulp for these and gives no bit-exact algorithm; the lens returns the correctly
rounded value, so a result can differ from an MI50's by one ulp.
"""
import math
import struct

from lens.semantics import b2f, f2b

SIGN = 0x80000000


def ftz(bits):
    """A denormal flushed to a zero of its sign."""
    return bits & SIGN if bits & 0x7f800000 == 0 else bits


def d2b(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def b2d(b):
    return struct.unpack("<d", struct.pack("<Q", b))[0]


def fma_exact(a, b, c):
    """The float32 bits of a*b+c rounded once (a, b, c floats holding float32 values)."""
    p = a * b                       # exact: 24 + 24 bits fit a double's 53
    s = p + c
    if not math.isfinite(s):
        return f2b(s)
    bb = s - p
    err = (p - (s - bb)) + (c - bb)  # p + c == s + err exactly (Knuth's two-sum)
    if err and not d2b(s) & 1:     # round to odd: s is never a float32 tie then
        s = math.nextafter(s, math.inf if err > 0 else -math.inf)
    return f2b(s)


def fma_bits(a, b, c):
    return fma_exact(b2f(a), b2f(b), b2f(c))


def mad_bits(a, b, c):
    """v_mad_f32: round(round(a*b) + c), denormal inputs and results flushed."""
    t = ftz(f2b(b2f(ftz(a)) * b2f(ftz(b))))
    return ftz(f2b(b2f(t) + b2f(ftz(c))))


def approx(fn):
    """A transcendental op: the correctly rounded value of fn (inf/NaN as the manual's special cases)."""
    def op(a):
        x = b2f(a)
        try:
            return f2b(fn(x))
        except OverflowError:
            return 0x7f800000
        except (ValueError, ZeroDivisionError):
            return 0x7fc00000
    return op


def exp2(x):
    if x != x:
        return x
    return 0.0 if x == -math.inf else 2.0 ** x


def log2(x):
    if x != x or x < 0:
        return math.nan
    return -math.inf if x == 0 else math.log2(x)


def rcp(x):
    return math.copysign(math.inf, x) if x == 0 else 1.0 / x


def rsq(x):
    if x != x or x < 0:
        return math.nan
    return math.copysign(math.inf, x) if x == 0 else 1.0 / math.sqrt(x)


def sqrt(x):
    if x != x or x < 0:
        return math.nan
    return x if x == 0 or x == math.inf else math.sqrt(x)


def ldexp(a, e):
    x = b2f(a)
    e = e - (1 << 32) if e >> 31 else e
    try:
        return f2b(math.ldexp(x, max(-400, min(400, e))))
    except OverflowError:
        return 0x7f800000 if x > 0 else 0xff800000


def f64(fn):
    """An f64 op on 64-bit patterns."""
    def op(*a):
        try:
            return d2b(fn(*[b2d(x) for x in a]))
        except OverflowError:
            return 0x7ff0000000000000
    return op


def cvt_f32_f64(a):
    x = b2d(a)
    try:
        return f2b(x)
    except OverflowError:
        return 0x7f800000 if x > 0 else 0xff800000


# name -> (number of sources, fn on 32-bit patterns)
F32 = {
    "v_fma_f32": (3, fma_bits),
    "v_mad_f32": (3, mad_bits),
    "v_exp_f32": (1, approx(exp2)),
    "v_log_f32": (1, approx(log2)),
    "v_rcp_f32": (1, approx(rcp)),
    "v_rcp_iflag_f32": (1, approx(rcp)),
    "v_rsq_f32": (1, approx(rsq)),
    "v_sqrt_f32": (1, approx(sqrt)),
    "v_ldexp_f32": (2, ldexp),
}
# 64-bit sources and results (lane values as 64-bit patterns)
F64 = {
    "v_add_f64": (2, f64(lambda a, b: a + b)),
    "v_mul_f64": (2, f64(lambda a, b: a * b)),
}
F64_TO_32 = {"v_cvt_f32_f64": cvt_f32_f64}
F32_TO_64 = {"v_cvt_f64_f32": lambda a: d2b(b2f(a))}


def neg64(v, o):
    """Source modifiers on a 64-bit float pattern."""
    if o.abs:
        v &= (1 << 63) - 1
    if o.neg:
        v ^= 1 << 63
    return v & ((1 << 64) - 1)
