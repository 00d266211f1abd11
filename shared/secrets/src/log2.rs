//! Base-2 logarithm for the entropy measure, in plain Rust. `f64::log2` is the only symbol the
//! hooks took from the system's libm: linking it costs every hook process one more shared library
//! to open, map and search at start. This module must stay exact where the filter's thresholds can
//! be met exactly (powers of two) and otherwise within a few units in the last place.

/// √2: mantissas are folded into [√½, √2] so the series below converges fast.
const SQRT_2: f64 = std::f64::consts::SQRT_2;

/// 1/1, 1/3, …, 1/27: the atanh series' coefficients (constants, so no division per call).
const INV_ODD: [f64; 14] = [
    1.0,
    1.0 / 3.0,
    1.0 / 5.0,
    1.0 / 7.0,
    1.0 / 9.0,
    1.0 / 11.0,
    1.0 / 13.0,
    1.0 / 15.0,
    1.0 / 17.0,
    1.0 / 19.0,
    1.0 / 21.0,
    1.0 / 23.0,
    1.0 / 25.0,
    1.0 / 27.0,
];

/// log₂ of a positive, finite `x` (the filter passes character frequencies in (0, 1]).
/// Exact for every power of two; otherwise within a few ulp of a correctly rounded result.
/// Zero, negative, subnormal or non-finite inputs give NaN (never met by the filter).
pub(crate) fn log2(x: f64) -> f64 {
    if !x.is_normal() || x < 0.0 {
        return f64::NAN;
    }
    let bits = x.to_bits();
    // The biased exponent: 11 bits, so the cast is exact.
    let mut exponent = ((bits >> 52) & 0x7ff) as i32 - 1023;
    // The mantissa with a zero exponent: a value in [1, 2).
    let mut m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
    if m > SQRT_2 {
        m *= 0.5;
        exponent += 1;
    }
    // ln m = 2·atanh(s), s = (m − 1)/(m + 1), |s| ≤ 0.172: s² ≤ 0.0295, so 13 terms leave an
    // error far below one ulp. `m − 1` is exact (Sterbenz), and s = 0 exactly when m = 1.
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut series = 0.0;
    for c in INV_ODD.iter().rev() {
        series = series * s2 + c;
    }
    let ln_m = 2.0 * s * series;
    f64::from(exponent) + ln_m * std::f64::consts::LOG2_E
}

#[cfg(test)]
mod tests {
    use super::log2;

    #[test]
    fn powers_of_two_are_exact() {
        for e in -1000..1000 {
            assert_eq!(log2(2f64.powi(e)), f64::from(e), "2^{e}");
        }
    }

    #[test]
    fn frequencies_agree_with_the_system_log2() {
        // Every frequency a value of up to 600 bytes can have: within 4 ulp of libm's.
        for n in 1..=600u32 {
            for c in 1..=n {
                let p = f64::from(c) / f64::from(n);
                let (ours, libm) = (log2(p), p.log2());
                let ulp = (libm.abs().max(f64::MIN_POSITIVE)).to_bits();
                let ulp = f64::from_bits(ulp + 1) - f64::from_bits(ulp);
                assert!((ours - libm).abs() <= 4.0 * ulp, "{c}/{n}: {ours} vs {libm}");
            }
        }
    }

    #[test]
    fn outside_the_domain_is_nan() {
        for x in [0.0, -1.0, f64::INFINITY, f64::NAN, f64::MIN_POSITIVE / 2.0] {
            assert!(log2(x).is_nan(), "{x}");
        }
    }
}
