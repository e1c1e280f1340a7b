//! The exact two-sided sign test, in integer arithmetic.
//!
//! Under the null hypothesis each non-tied pair is positive with probability 1/2, so the
//! number of positive pairs among `n` is Binomial(n, 1/2). With `k = min(positives,
//! negatives)` the two-sided p-value is
//!
//! ```text
//! p = min(1, 2 · Σ_{i=0..k} C(n, i) / 2^n)
//! ```
//!
//! (W. J. Conover, *Practical Nonparametric Statistics*, 3rd ed., 1999, §3.4, the sign test;
//! ties are dropped before counting `n`). Every quantity is a `u128`, the binomial
//! coefficients come from Pascal's triangle (additions only), and the result is an exact
//! rational in lowest terms; `spec/counterfactual.md` §2.4.

use std::cmp::Ordering;

/// Largest number of non-tied pairs the test accepts: `2 · 2^n` must fit in a `u128`.
pub const MAX_SIGN_TEST_PAIRS: usize = 126;

/// A non-negative rational `num / den` with `den > 0`, kept in lowest terms. Compared exactly.
#[derive(Clone, Copy, Debug, Eq)]
pub struct Ratio {
    // INVARIANT: den > 0 and gcd(num, den) = 1.
    pub(crate) num: u128,
    pub(crate) den: u128,
}

impl Ratio {
    /// `num / den` in lowest terms, or `None` when `den = 0`.
    pub fn new(num: u128, den: u128) -> Option<Self> {
        if den == 0 {
            return None;
        }
        let g = gcd(num, den);
        Some(Ratio {
            num: num / g,
            den: den / g,
        })
    }

    /// Parses a non-negative decimal such as `0.05` or `1` exactly (at most 30 fractional
    /// digits). `None` for anything else.
    pub fn from_decimal(s: &str) -> Option<Self> {
        let (int, frac) = s.split_once('.').unwrap_or((s, ""));
        if int.is_empty() && frac.is_empty()
            || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
            || frac.len() > 30
            || int.len() > 30
        {
            return None;
        }
        let den = 10u128.checked_pow(frac.len() as u32)?;
        let digits = format!("{int}{frac}");
        let num: u128 = if digits.is_empty() {
            0
        } else {
            digits.parse().ok()?
        };
        Ratio::new(num, den)
    }

    /// The numerator (lowest terms).
    pub fn num(self) -> u128 {
        self.num
    }

    /// The denominator (lowest terms, > 0).
    pub fn den(self) -> u128 {
        self.den
    }

    /// The nearest `f64`, for display only.
    pub fn to_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }
}

impl std::fmt::Display for Ratio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.num, self.den)
    }
}

impl PartialEq for Ratio {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl PartialOrd for Ratio {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ratio {
    /// Exact comparison without overflow, by comparing continued-fraction terms.
    fn cmp(&self, other: &Self) -> Ordering {
        let (mut a, mut b, mut c, mut d) = (self.num, self.den, other.num, other.den);
        let mut flipped = false;
        loop {
            // Compare a/b with c/d (both denominators > 0).
            let (q1, q2) = (a / b, c / d);
            if q1 != q2 {
                let o = q1.cmp(&q2);
                return if flipped { o.reverse() } else { o };
            }
            let (r1, r2) = (a % b, c % d);
            let o = match (r1 == 0, r2 == 0) {
                (true, true) => return Ordering::Equal,
                (true, false) => Ordering::Less,
                (false, true) => Ordering::Greater,
                (false, false) => {
                    // a/b = q + r1/b and c/d = q + r2/d: compare r1/b with r2/d, which is
                    // the reverse of comparing b/r1 with d/r2.
                    (a, b, c, d) = (b, r1, d, r2);
                    flipped = !flipped;
                    continue;
                }
            };
            return if flipped { o.reverse() } else { o };
        }
    }
}

/// A sign test's counts and exact p-value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignTest {
    /// Pairs with a positive difference.
    pub positive: u32,
    /// Pairs with a negative difference.
    pub negative: u32,
    /// Tied pairs (dropped from the test).
    pub ties: u32,
    /// Exact two-sided p-value; 1 when every pair is tied.
    pub p: Ratio,
}

impl Default for SignTest {
    fn default() -> Self {
        SignTest {
            positive: 0,
            negative: 0,
            ties: 0,
            p: Ratio { num: 1, den: 1 },
        }
    }
}

/// Why [`sign_test`] refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignTestError {
    /// More than [`MAX_SIGN_TEST_PAIRS`] non-tied pairs (caller mistake, not input data).
    #[error("{got} non-tied pairs, at most {max} supported")]
    TooManyPairs {
        /// Non-tied pairs given.
        got: usize,
        /// [`MAX_SIGN_TEST_PAIRS`].
        max: usize,
    },
}

/// The exact two-sided sign test for `positive` and `negative` non-tied pairs.
///
/// # Errors
/// [`SignTestError::TooManyPairs`] when `positive + negative > 126`. Does not panic.
pub fn sign_test(positive: u32, negative: u32) -> Result<Ratio, SignTestError> {
    let n = positive as usize + negative as usize;
    if n > MAX_SIGN_TEST_PAIRS {
        return Err(SignTestError::TooManyPairs {
            got: n,
            max: MAX_SIGN_TEST_PAIRS,
        });
    }
    let k = positive.min(negative) as usize;
    let row = pascal_row(n);
    // INVARIANT: Σ row = 2^n ≤ 2^126, so the tail, 2·tail and 2^n all fit in u128.
    let tail: u128 = row[..=k].iter().sum();
    let total = 1u128 << n;
    // Ratio::new only fails for den = 0, and total ≥ 1.
    Ratio::new((2 * tail).min(total), total).ok_or(SignTestError::TooManyPairs {
        got: n,
        max: MAX_SIGN_TEST_PAIRS,
    })
}

/// Counts signs (ties dropped) and runs [`sign_test`].
pub(crate) fn from_signs(signs: impl Iterator<Item = Ordering>) -> Result<SignTest, SignTestError> {
    let mut t = SignTest::default();
    for s in signs {
        match s {
            Ordering::Greater => t.positive += 1,
            Ordering::Less => t.negative += 1,
            Ordering::Equal => t.ties += 1,
        }
    }
    t.p = sign_test(t.positive, t.negative)?;
    Ok(t)
}

/// Row `n` of Pascal's triangle: `C(n, 0..=n)`. Requires `n ≤ 126`.
fn pascal_row(n: usize) -> Vec<u128> {
    let mut row = vec![1u128];
    for _ in 0..n {
        let mut next = Vec::with_capacity(row.len() + 1);
        next.push(1);
        next.extend(row.windows(2).map(|w| w[0] + w[1]));
        next.push(1);
        row = next;
    }
    row
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_orders_exactly() {
        let r = |n, d| Ratio::new(n, d).unwrap();
        assert_eq!(r(2, 4), r(1, 2));
        assert!(r(1, 3) < r(1, 2));
        assert!(r(5, 100) < r(1, 19));
        assert!(r(u128::MAX - 1, u128::MAX) < r(1, 1));
        assert!(r(1, 1 << 120) > r(0, 1));
        assert!(r(7, 3) > r(2, 1));
        assert!(r(13, 8) > r(21, 13));
        assert_eq!(Ratio::new(1, 0), None);
        // Exhaustively against cross-multiplication on small values.
        for (a, b, c, d) in (0..24u128).flat_map(|a| {
            (1..24u128).flat_map(move |b| {
                (0..24u128).flat_map(move |c| (1..24).map(move |d| (a, b, c, d)))
            })
        }) {
            assert_eq!(
                r(a, b).cmp(&r(c, d)),
                (a * d).cmp(&(c * b)),
                "{a}/{b} vs {c}/{d}"
            );
        }
    }

    #[test]
    fn decimal_parses_exactly() {
        assert_eq!(Ratio::from_decimal("0.05"), Ratio::new(1, 20));
        assert_eq!(Ratio::from_decimal("1"), Ratio::new(1, 1));
        assert_eq!(Ratio::from_decimal(".5"), Ratio::new(1, 2));
        for bad in ["", ".", "-1", "1e-3", "0.0.1", "abc"] {
            assert_eq!(Ratio::from_decimal(bad), None, "{bad}");
        }
    }

    #[test]
    fn pascal_row_sums_to_power_of_two() {
        let row = pascal_row(126);
        assert_eq!(row.iter().sum::<u128>(), 1u128 << 126);
        assert_eq!(pascal_row(4), vec![1, 4, 6, 4, 1]);
    }

    #[test]
    fn too_many_pairs_is_refused() {
        assert_eq!(
            sign_test(100, 27),
            Err(SignTestError::TooManyPairs { got: 127, max: 126 })
        );
        assert!(sign_test(63, 63).is_ok());
        assert_eq!(
            SignTestError::TooManyPairs { got: 127, max: 126 }.to_string(),
            "127 non-tied pairs, at most 126 supported"
        );
    }
}
