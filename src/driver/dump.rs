//! Reading the array dumps that generated and reference programs write to
//! `$TPACE_DUMP`, and comparing them bit for bit.

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
    /// The elements, as written in memory.
    pub data: Vec<u8>,
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
        let count: usize = dims.iter().map(|d| d.1).product();
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
        });
        at = end;
    }
    Ok(out)
}

/// The first difference between two dumps, in words, or `None` if identical.
pub fn first_difference(reference: &[DumpedArray], got: &[DumpedArray]) -> Option<String> {
    for r in reference {
        let Some(g) = got.iter().find(|g| g.name == r.name) else {
            return Some(format!(
                "array `{}` missing from the translated program's dump",
                r.name
            ));
        };
        if g.elem != r.elem || g.dims != r.dims {
            return Some(format!("array `{}` dumped with another shape", r.name));
        }
        let cell = r
            .data
            .chunks(r.elem)
            .zip(g.data.chunks(g.elem))
            .position(|(a, b)| a != b);
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
                "{}{subs}: sequential {} vs translated {}",
                r.name,
                value(&r.data[at..at + r.elem]),
                value(&g.data[at..at + g.elem])
            ));
        }
    }
    None
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
    fn negative_zero_differs_from_zero() {
        let r = parse(&dump("a", &[0.0, 0.0])).unwrap();
        let g = parse(&dump("a", &[0.0, -0.0])).unwrap();
        assert!(first_difference(&r, &g).is_some());
    }

    #[test]
    fn rejects_truncated_dump() {
        let mut b = dump("a", &[1.0, 2.0]);
        b.pop();
        assert!(parse(&b).is_err());
    }
}
