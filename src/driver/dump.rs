//! Reading the array dumps that generated and reference programs write to
//! `$TPACE_DUMP`, and comparing them: arrays bit for bit, reduction results
//! (dumped with rank 0) within a relative tolerance, since a parallel
//! reduction sums in another order than the sequential loop. An array the
//! translation does not bring back after its pipeline, because the program
//! never reads it there, is dumped as a header ending in `unread` with no
//! elements: the comparison skips it and says so ([`unread`]).

use std::path::Path;

/// One array as dumped: its name, element size, index ranges and raw bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpedArray {
    /// Array name.
    pub name: String,
    /// Bytes per element (4 = float, 8 = double).
    pub elem: usize,
    /// Per dimension (outermost first): first index and extent.
    pub dims: Vec<(i64, usize)>,
    /// The elements, as written in memory (none when `unread`).
    pub data: Vec<u8>,
    /// The translated program did not bring it back after the pipeline: the
    /// program never reads it there (its values are not the final ones).
    pub unread: bool,
}

/// Parse a dump file.
pub fn read(path: &Path) -> Result<Vec<DumpedArray>, String> {
    let bytes =
        std::fs::read(path).map_err(|e| format!("cannot read dump {}: {e}", path.display()))?;
    parse(&bytes)
}

/// Parse dump bytes: per array a header line `name elem rank lo n ...` and the data.
pub fn parse(bytes: &[u8]) -> Result<Vec<DumpedArray>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let nl = bytes[at..]
            .iter()
            .position(|b| *b == b'\n')
            .ok_or("dump header without newline")?;
        let header =
            std::str::from_utf8(&bytes[at..at + nl]).map_err(|_| "dump header is not text")?;
        let words: Vec<&str> = header.split_whitespace().collect();
        let bad = || format!("malformed dump header `{header}`");
        let num = |i: usize| {
            words
                .get(i)
                .and_then(|w| w.parse::<i64>().ok())
                .ok_or_else(bad)
        };
        let name = words.first().ok_or_else(bad)?.to_string();
        let elem = num(1)? as usize;
        let rank = num(2)? as usize;
        let mut dims = Vec::new();
        for d in 0..rank {
            dims.push((num(3 + 2 * d)?, num(4 + 2 * d)? as usize));
        }
        let unread = match words.get(3 + 2 * rank) {
            None => false,
            Some(&"unread") if words.len() == 4 + 2 * rank => true,
            Some(_) => return Err(bad()),
        };
        let count: usize = if unread {
            0
        } else {
            dims.iter().map(|d| d.1).product()
        };
        let start = at + nl + 1;
        let end = start + count * elem;
        if end > bytes.len() {
            return Err(format!("dump of `{name}` is truncated"));
        }
        out.push(DumpedArray {
            name,
            elem,
            dims,
            data: bytes[start..end].to_vec(),
            unread,
        });
        at = end;
    }
    Ok(out)
}

/// Default relative tolerance for a `float` reduction's result: a parallel sum
/// adds the same float terms in another order, and the sequential loop's own
/// rounding grows with the number of terms (about 1e-4 for a million).
pub const FLOAT_RTOL: f64 = 1e-3;

/// Default relative tolerance for a `double` reduction's result.
pub const DOUBLE_RTOL: f64 = 1e-9;

/// Whether `a` and `b` agree within relative tolerance `rtol` (|a - b| <= rtol *
/// max(|a|, |b|)); equal infinities and two NaNs agree.
pub fn close(a: f64, b: f64, rtol: f64) -> bool {
    within(a, b, rtol * a.abs().max(b.abs()))
}

/// Whether `a` and `b` differ by at most `bound`; equal infinities and two NaNs agree.
fn within(a: f64, b: f64, bound: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= bound
}

/// `float` or `double` of a dumped element of `elem` bytes.
fn by_type(elem: usize, float: f64, double: f64) -> f64 {
    if elem == 4 { float } else { double }
}

/// The first difference between two dumps, in words, or `None` if they agree:
/// arrays bit for bit, reductions within their type's default tolerance.
pub fn first_difference(reference: &[DumpedArray], got: &[DumpedArray]) -> Option<String> {
    first_difference_within(reference, got, None)
}

/// [`first_difference`] with reductions compared within `rtol` (`None`: the
/// defaults [`FLOAT_RTOL`] and [`DOUBLE_RTOL`]).
pub fn first_difference_within(
    reference: &[DumpedArray],
    got: &[DumpedArray],
    rtol: Option<f64>,
) -> Option<String> {
    first_difference_with(reference, got, rtol, ArrayCheck::Exact)
}

/// How arrays are compared.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArrayCheck {
    /// Bit for bit (the default: tpace's translations round as the program does).
    Exact,
    /// Within a relative tolerance of the reference array's largest magnitude, for
    /// builds that contract multiply-adds; `None`: [`FAST_FLOAT_RTOL`] or
    /// [`FAST_DOUBLE_RTOL`] by element type.
    Within(Option<f64>),
}

/// Default tolerance for arrays of a program built with contracted multiply-adds
/// (`tpace run --fast-math`), relative to each array's largest magnitude: float.
pub const FAST_FLOAT_RTOL: f64 = 1e-4;

/// The same for double arrays.
pub const FAST_DOUBLE_RTOL: f64 = 1e-10;

/// [`first_difference_within`], with arrays compared as `arrays` says.
pub fn first_difference_with(
    reference: &[DumpedArray],
    got: &[DumpedArray],
    rtol: Option<f64>,
    arrays: ArrayCheck,
) -> Option<String> {
    for (i, r) in reference.iter().enumerate() {
        // An array listed by several pipelines (or one run several times) is dumped
        // once per run: the n-th dump of a name is compared with the n-th.
        let nth = reference[..i].iter().filter(|o| o.name == r.name).count();
        let Some(g) = got.iter().filter(|g| g.name == r.name).nth(nth) else {
            return Some(format!(
                "array `{}` missing from the translated program's dump{}",
                r.name,
                ordinal(nth, reference, &r.name)
            ));
        };
        let which = ordinal(nth, reference, &r.name);
        if g.elem != r.elem || g.dims != r.dims {
            return Some(format!(
                "array `{}`{which} dumped with another shape",
                r.name
            ));
        }
        if r.unread || g.unread {
            // Not brought back: the program never reads it after the pipeline.
            continue;
        }
        if r.dims.is_empty() {
            // A reduction's result: one value.
            let (a, b) = (value_of(&r.data), value_of(&g.data));
            let tol = rtol.unwrap_or(by_type(r.elem, FLOAT_RTOL, DOUBLE_RTOL));
            match (a, b) {
                (Some(a), Some(b)) if close(a, b, tol) => continue,
                _ => {
                    return Some(format!(
                        "reduction `{}`{which}: sequential {} vs translated {} (relative tolerance {tol:e})",
                        r.name,
                        a.map_or("?".into(), |v| format!("{v:e}")),
                        b.map_or("?".into(), |v| format!("{v:e}")),
                    ));
                }
            }
        }
        let cell = match arrays {
            ArrayCheck::Exact => r
                .data
                .chunks(r.elem)
                .zip(g.data.chunks(g.elem))
                .position(|(a, b)| a != b),
            ArrayCheck::Within(t) => {
                let tol = t.unwrap_or(by_type(r.elem, FAST_FLOAT_RTOL, FAST_DOUBLE_RTOL));
                let scale = r
                    .data
                    .chunks(r.elem)
                    .filter_map(value_of)
                    .filter(|v| v.is_finite())
                    .fold(0.0f64, |m, v| m.max(v.abs()));
                r.data
                    .chunks(r.elem)
                    .zip(g.data.chunks(g.elem))
                    .position(|(a, b)| match (value_of(a), value_of(b)) {
                        (Some(x), Some(y)) => !within(x, y, tol * scale),
                        _ => a != b,
                    })
            }
        };
        if let Some(i) = cell {
            let mut rest = i;
            let mut idx = vec![0i64; r.dims.len()];
            for (d, (lo, n)) in r.dims.iter().enumerate().rev() {
                idx[d] = lo + (rest % n) as i64;
                rest /= n;
            }
            let subs: String = idx.iter().map(|v| format!("[{v}]")).collect();
            let value = |b: &[u8]| match b.len() {
                4 => format!("{:e}", f32::from_le_bytes(b.try_into().expect("4 bytes"))),
                8 => format!("{:e}", f64::from_le_bytes(b.try_into().expect("8 bytes"))),
                _ => format!("{b:?}"),
            };
            let at = i * r.elem;
            return Some(format!(
                "{}{subs}{which}: sequential {} vs translated {}",
                r.name,
                value(&r.data[at..at + r.elem]),
                value(&g.data[at..at + g.elem])
            ));
        }
    }
    None
}

/// The arrays a comparison of these dumps skips, in order, each once: those either
/// side dumped as `unread` (not brought back after the pipeline, since the
/// program never reads them there), with ` (its 2nd dump)` where a name is dumped
/// more than once.
pub fn unread(reference: &[DumpedArray], got: &[DumpedArray]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, r) in reference.iter().enumerate() {
        let nth = reference[..i].iter().filter(|o| o.name == r.name).count();
        let g = got.iter().filter(|g| g.name == r.name).nth(nth);
        if r.unread || g.is_some_and(|g| g.unread) {
            out.push(format!("{}{}", r.name, ordinal(nth, reference, &r.name)));
        }
    }
    out
}

/// ` (its 2nd dump)` for the dump numbered `nth` (0-based) of a name the
/// reference dumps more than once; nothing for a name dumped once.
fn ordinal(nth: usize, reference: &[DumpedArray], name: &str) -> String {
    if reference.iter().filter(|r| r.name == name).count() < 2 {
        return String::new();
    }
    let n = nth + 1;
    let suffix = match (n % 10, n % 100) {
        (1, 11) | (2, 12) | (3, 13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!(" (its {n}{suffix} dump)")
}

/// A dumped float or double as f64.
fn value_of(bytes: &[u8]) -> Option<f64> {
    match bytes.len() {
        4 => Some(f32::from_le_bytes(bytes.try_into().ok()?) as f64),
        8 => Some(f64::from_le_bytes(bytes.try_into().ok()?)),
        _ => None,
    }
}

/// The first line where two programs' printed output differs, in words, or `None`
/// if they agree: lines equal except for numbers with a decimal point or exponent,
/// which must agree within `rtol` (integers and all other text exactly).
pub fn printed_difference(reference: &str, got: &str, rtol: f64) -> Option<String> {
    let (r, g): (Vec<&str>, Vec<&str>) = (reference.lines().collect(), got.lines().collect());
    for (i, (a, b)) in r.iter().zip(&g).enumerate() {
        if a == b {
            continue;
        }
        let (sa, na) = numbers(a);
        let (sb, nb) = numbers(b);
        let agree = sa == sb
            && na.len() == nb.len()
            && na.iter().zip(&nb).all(|(x, y)| {
                x == y
                    || (is_real(x)
                        && is_real(y)
                        && matches!((x.parse::<f64>(), y.parse::<f64>()), (Ok(p), Ok(q)) if close(p, q, rtol)))
            });
        if !agree {
            return Some(format!("line {}: `{a}` vs `{b}`", i + 1));
        }
    }
    (r.len() != g.len()).then(|| {
        format!(
            "the sequential program printed {} lines, the translation {}",
            r.len(),
            g.len()
        )
    })
}

/// Whether a number token is written as a real (with `.` or an exponent).
fn is_real(token: &str) -> bool {
    token.contains(['.', 'e', 'E'])
}

/// A line with every number replaced by `#`, and the numbers.
fn numbers(line: &str) -> (String, Vec<&str>) {
    let b = line.as_bytes();
    let mut skeleton = String::new();
    let mut found = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let end = number_end(b, i);
        if end > i {
            skeleton.push('#');
            found.push(&line[i..end]);
            i = end;
        } else {
            let c = line[i..].chars().next().expect("in bounds");
            skeleton.push(c);
            i += c.len_utf8();
        }
    }
    (skeleton, found)
}

/// End of a decimal number `[-+]digits[.digits][e[-+]digits]` starting at `i` (`i` if none).
fn number_end(b: &[u8], i: usize) -> usize {
    let digits = |mut j: usize| {
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        j
    };
    // A number does not start inside a word (`x86`, `a1`).
    if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b'.') {
        return i;
    }
    let mut j = i;
    if j < b.len() && (b[j] == b'-' || b[j] == b'+') {
        j += 1;
    }
    let int_end = digits(j);
    let mut end = int_end;
    if end < b.len() && b[end] == b'.' {
        let frac = digits(end + 1);
        if frac > end + 1 || int_end > j {
            end = frac;
        }
    }
    if end == j || (end == j + 1 && b[j] == b'.') {
        return i;
    }
    if end < b.len() && (b[end] == b'e' || b[end] == b'E') {
        let mut k = end + 1;
        if k < b.len() && (b[k] == b'-' || b[k] == b'+') {
            k += 1;
        }
        let exp = digits(k);
        if exp > k {
            end = exp;
        }
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dump(name: &str, vals: &[f32]) -> Vec<u8> {
        let mut b = format!("{name} 4 2 0 2 1 {}\n", vals.len() / 2).into_bytes();
        for v in vals {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b
    }

    #[test]
    fn finds_first_differing_cell_with_its_indices() {
        let r = parse(&dump("a", &[1.0, 2.0, 3.0, 4.0])).unwrap();
        let g = parse(&dump("a", &[1.0, 2.0, 3.0, 5.0])).unwrap();
        assert_eq!(first_difference(&r, &r), None);
        let d = first_difference(&r, &g).unwrap();
        assert!(d.starts_with("a[1][2]:"), "{d}");
    }

    #[test]
    fn an_array_dumped_twice_is_compared_dump_by_dump() {
        // Two pipelines list `a`: each dump is compared with the same-numbered one.
        let two = |first: &[f32], second: &[f32]| {
            let mut b = dump("a", first);
            b.extend(dump("a", second));
            parse(&b).unwrap()
        };
        let r = two(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]);
        assert_eq!(first_difference(&r, &r), None);
        let g = two(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.5, 8.0]);
        let d = first_difference(&r, &g).unwrap();
        assert!(d.starts_with("a[1][1] (its 2nd dump):"), "{d}");
        let short = parse(&dump("a", &[1.0, 2.0, 3.0, 4.0])).unwrap();
        let d = first_difference(&r, &short).unwrap();
        assert!(d.contains("missing") && d.contains("2nd"), "{d}");
    }

    #[test]
    fn arrays_within_a_tolerance_of_their_largest_magnitude() {
        let r = parse(&dump("a", &[100.0, 2.0, 3.0, 4.0])).unwrap();
        // 0.009 off where the values are small: within 1e-4 of 100, not of 3.
        let near = parse(&dump("a", &[100.0, 2.0, 3.009, 4.0])).unwrap();
        let far = parse(&dump("a", &[100.0, 2.0, 3.02, 4.0])).unwrap();
        assert!(first_difference_with(&r, &near, None, ArrayCheck::Exact).is_some());
        assert_eq!(
            first_difference_with(&r, &near, None, ArrayCheck::Within(None)),
            None
        );
        let d = first_difference_with(&r, &far, None, ArrayCheck::Within(Some(1e-4))).unwrap();
        assert!(d.starts_with("a[1][1]:"), "{d}");
    }

    #[test]
    fn negative_zero_differs_from_zero() {
        let r = parse(&dump("a", &[0.0, 0.0])).unwrap();
        let g = parse(&dump("a", &[0.0, -0.0])).unwrap();
        assert!(first_difference(&r, &g).is_some());
    }

    fn value(name: &str, v: f32) -> Vec<u8> {
        let mut b = format!("{name} 4 0\n").into_bytes();
        b.extend_from_slice(&v.to_le_bytes());
        b
    }

    #[test]
    fn reductions_agree_within_the_tolerance_only() {
        let r = parse(&value("gosa", 1.0)).unwrap();
        assert_eq!(
            first_difference(&r, &parse(&value("gosa", 1.0005)).unwrap()),
            None
        );
        let d = first_difference(&r, &parse(&value("gosa", 1.002)).unwrap()).unwrap();
        assert!(d.starts_with("reduction `gosa`"), "{d}");
        let strict = parse(&value("gosa", 1.0005)).unwrap();
        assert!(first_difference_within(&r, &strict, Some(1e-6)).is_some());
    }

    #[test]
    fn printed_numbers_agree_within_the_tolerance_and_the_rest_exactly() {
        let seq = "step 3: gosa 1.234567e-04, n=7\nok\n";
        assert_eq!(printed_difference(seq, seq, 1e-3), None);
        assert_eq!(
            printed_difference(seq, "step 3: gosa 1.234570e-04, n=7\nok\n", 1e-3),
            None
        );
        for other in [
            "step 3: gosa 1.299999e-04, n=7\nok\n",
            "step 4: gosa 1.234567e-04, n=7\nok\n",
            "step 3: gosa 1.234567e-04, n=8\nok\n",
            "step 3: gosa 1.234567e-04; n=7\nok\n",
            "step 3: gosa 1.234567e-04, n=7\n",
        ] {
            assert!(printed_difference(seq, other, 1e-3).is_some(), "{other}");
        }
    }

    #[test]
    fn an_array_not_brought_back_is_skipped_and_named() {
        // The translation dumps `w` as a header ending in `unread`, without elements.
        let mut got = b"w 4 2 0 2 1 2 unread\n".to_vec();
        got.extend(dump("a", &[1.0, 2.0, 3.0, 4.0]));
        let got = parse(&got).unwrap();
        assert!(got[0].unread && got[0].data.is_empty() && !got[1].unread);
        assert_eq!(got[0].dims, vec![(0, 2), (1, 2)]);
        let mut seq = dump("w", &[9.0, 9.0, 9.0, 9.0]);
        seq.extend(dump("a", &[1.0, 2.0, 3.0, 4.0]));
        let seq = parse(&seq).unwrap();
        assert_eq!(first_difference(&seq, &got), None);
        assert_eq!(unread(&seq, &got), vec!["w".to_string()]);
        // The arrays that come back are still compared, and shapes still checked.
        let mut bad = b"w 4 2 0 2 1 2 unread\n".to_vec();
        bad.extend(dump("a", &[1.0, 2.0, 3.0, 4.5]));
        let d = first_difference(&seq, &parse(&bad).unwrap()).unwrap();
        assert!(d.starts_with("a[1][2]:"), "{d}");
        let mut shape = b"w 4 2 0 3 1 2 unread\n".to_vec();
        shape.extend(dump("a", &[1.0, 2.0, 3.0, 4.0]));
        let d = first_difference(&seq, &parse(&shape).unwrap()).unwrap();
        assert!(d.contains("another shape"), "{d}");
        // Any other trailing word is not a dump header.
        assert!(parse(b"w 4 2 0 2 1 2 stale\n").is_err());
        assert!(parse(b"w 4 2 0 2 1 2 unread x\n").is_err());
    }

    #[test]
    fn rejects_truncated_dump() {
        let mut b = dump("a", &[1.0, 2.0]);
        b.pop();
        assert!(parse(&b).is_err());
    }
}
