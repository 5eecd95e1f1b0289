//! Floating-point numbers as text, without core's float formatting and parsing in the browser.
//!
//! Why: `f64`'s `Display`, `{:.1}` and `FromStr` bring core's Grisu/Dragon and Eisel-Lemire code
//! and their power-of-ten tables into the wasm, 22 KB raw (9 KB gzip) of an embed bundle that must
//! stay under 150 KB (docs/embedding.md, "The embed bundle"). In the browser the engine already formats and
//! parses numbers exactly (ECMAScript's shortest round-trip digits, correctly rounded parsing), so
//! [`display`] and [`parse`] ask it there, and use Rust's own elsewhere. Both write and read the
//! same numbers either way: [`rust_notation`] turns JavaScript's notation into Rust's.

/// `value` exactly as Rust's `Display` writes it (`2.5`, `1000000000000000000000`, `inf`).
pub fn display(value: f64) -> String {
    if value == 0.0 {
        // Rust keeps the sign of a negative zero; JavaScript's text drops it.
        return if value.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    #[cfg(target_arch = "wasm32")]
    {
        let js: String = js_sys::Number::from(value)
            .to_string_with_radix(10)
            .map(String::from)
            .unwrap_or_default();
        rust_notation(&js)
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        value.to_string()
    }
}

/// A JSON number's text as an `f64`, correctly rounded (the caller has checked the grammar).
pub fn parse(text: &str) -> Option<f64> {
    #[cfg(target_arch = "wasm32")]
    {
        Some(js_sys::Number::parse_float(text)).filter(|n| !n.is_nan())
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        text.parse().ok()
    }
}

/// `value` rounded to one decimal (half away from zero): `1.2`, `-0.5`, `640.0`. For durations and
/// chart coordinates, where `{:.1}` would bring core's float formatting along.
pub fn one_decimal(value: f64) -> String {
    let tenths = (value * 10.0).round() as i64;
    let sign = if tenths < 0 { "-" } else { "" };
    let tenths = tenths.unsigned_abs();
    format!("{sign}{}.{}", tenths / 10, tenths % 10)
}

/// JavaScript's `Number.prototype.toString()` text in Rust's notation: the same shortest
/// digits, but never an exponent (`1e+21` → `1000000000000000000000`, `1e-7` → `0.0000001`),
/// and `inf` for `Infinity`.
pub fn rust_notation(js: &str) -> String {
    match js {
        "Infinity" => return "inf".to_owned(),
        "-Infinity" => return "-inf".to_owned(),
        _ => {}
    }
    let Some((mantissa, exponent)) = js.split_once('e') else {
        return js.to_owned();
    };
    let Ok(exponent) = exponent.parse::<i32>() else {
        return js.to_owned();
    };
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{whole}{fraction}");
    // Where the decimal point goes, counted in digits from the left.
    let point = whole.len() as i32 + exponent;
    if point <= 0 {
        format!("{sign}0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point as usize >= digits.len() {
        format!("{sign}{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        let (left, right) = digits.split_at(point as usize);
        format!("{sign}{left}.{right}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// ECMAScript's Number::toString(10) (ECMA-262, 6.1.6.1.20), from the shortest digits Rust
    /// finds (`{:e}` writes exactly those): the reference the browser's text is checked against.
    fn ecmascript(value: f64) -> String {
        if value.is_infinite() {
            return if value > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
        }
        if value == 0.0 {
            return "0".to_owned();
        }
        let sign = if value < 0.0 { "-" } else { "" };
        let scientific = format!("{:e}", value.abs());
        let (mantissa, exponent) = scientific.split_once('e').expect("an exponent");
        let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
        let k = digits.len() as i32;
        let n = exponent.parse::<i32>().expect("an integer") + 1;
        let body = if k <= n && n <= 21 {
            format!("{digits}{}", "0".repeat((n - k) as usize))
        } else if 0 < n && n <= 21 {
            format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
        } else if -6 < n && n <= 0 {
            format!("0.{}{digits}", "0".repeat((-n) as usize))
        } else {
            let e = if n > 0 {
                format!("+{}", n - 1)
            } else {
                (n - 1).to_string()
            };
            if k == 1 {
                format!("{digits}e{e}")
            } else {
                format!("{}.{}e{e}", &digits[..1], &digits[1..])
            }
        };
        format!("{sign}{body}")
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 5_000, ..ProptestConfig::default() })]

        /// Whatever the value, the browser's text in Rust's notation is Rust's own.
        #[test]
        fn browser_text_reads_as_rusts(bits in any::<u64>()) {
            let value = f64::from_bits(bits);
            prop_assume!(!value.is_nan() && value != 0.0);
            prop_assert_eq!(rust_notation(&ecmascript(value)), value.to_string());
        }
    }

    #[test]
    fn exponents_become_positions() {
        assert_eq!(rust_notation("1e+21"), "1000000000000000000000");
        assert_eq!(rust_notation("-1.5e+22"), "-15000000000000000000000");
        assert_eq!(rust_notation("1e-7"), "0.0000001");
        assert_eq!(rust_notation("1.25e-7"), "0.000000125");
        assert_eq!(rust_notation("2.5"), "2.5");
        assert_eq!(rust_notation("Infinity"), "inf");
        assert_eq!(rust_notation("NaN"), "NaN");
        for value in [0.1 + 0.2, 1e21, 1e-7, 123456.789, 5e-324, f64::MAX] {
            assert_eq!(rust_notation(&ecmascript(value)), value.to_string(), "{value:e}");
        }
    }

    #[test]
    fn one_decimal_rounds_half_away_from_zero() {
        assert_eq!(one_decimal(1.25), "1.3");
        assert_eq!(one_decimal(1.24), "1.2");
        assert_eq!(one_decimal(-0.45), "-0.5");
        assert_eq!(one_decimal(640.0), "640.0");
        assert_eq!(one_decimal(0.0), "0.0");
        assert_eq!(one_decimal(-0.01), "0.0");
    }

    #[test]
    fn zeros_keep_their_sign() {
        assert_eq!(display(-0.0), "-0");
        assert_eq!(display(0.0), "0");
        assert_eq!(display(2.5), "2.5");
    }

    #[test]
    fn parse_is_rusts_off_the_browser() {
        assert_eq!(parse("2.5"), Some(2.5));
        assert_eq!(parse("-1e-3"), Some(-0.001));
    }
}
