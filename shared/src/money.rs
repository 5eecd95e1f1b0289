//! Money formatting. The tutorials print whole dollars with thousands commas (`$1,200`), and the
//! transcripts must match them byte for byte, so this is the one place that formats money.

/// Formats whole dollars the way the tutorials do: `$0`, `$800`, `$1,200`, `$108,488`, `-$5`.
pub fn usd(dollars: i64) -> String {
    let sign = if dollars < 0 { "-" } else { "" };
    format!("{sign}${}", grouped(dollars.unsigned_abs()))
}

/// A count with thousands commas: `1,000`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    grouped
}

#[cfg(test)]
mod tests {
    use super::usd;

    #[test]
    fn groups_thousands_like_the_tutorials() {
        assert_eq!(usd(0), "$0");
        assert_eq!(usd(800), "$800");
        assert_eq!(usd(1_200), "$1,200");
        assert_eq!(usd(108_488), "$108,488");
        assert_eq!(usd(1_000_000), "$1,000,000");
        assert_eq!(usd(-1_899), "-$1,899");
        assert_eq!(super::grouped(1_000), "1,000");
    }
}
