//! `tpace compare`: the verdict of `tpace run` on two dumps made outside it.

use std::path::Path;
use std::process::{Command, Output};
use tpace::driver::dump::{self, DumpedArray};

fn tpace(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tpace"))
        .args(args)
        .output()
        .expect("tpace runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Write arrays in the `TPACE_DUMP` format.
fn write_dump(path: &Path, arrays: &[DumpedArray]) {
    let mut bytes = Vec::new();
    for a in arrays {
        let mut header = format!("{} {} {}", a.name, a.elem, a.dims.len());
        for (lo, n) in &a.dims {
            header.push_str(&format!(" {lo} {n}"));
        }
        if a.unread {
            header.push_str(" unread");
        }
        header.push('\n');
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(&a.data);
    }
    std::fs::write(path, bytes).expect("dump written");
}

/// Dumps of the reductions fixture (arrays and reduction results) from `tpace run`.
fn fixture_dumps(dir: &Path) -> Vec<DumpedArray> {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/reductions/reduce2d.c"
    );
    let keep = dir.to_str().expect("utf-8 path");
    let out = tpace(&[
        "run",
        fixture,
        "--schedule",
        "mm",
        "--k",
        "3",
        "--chunk",
        "7",
        "--keep",
        keep,
        "--",
        "13",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    dump::read(&dir.join("reference.dump")).expect("reference dump")
}

#[test]
fn compare_agrees_with_run_and_catches_each_kind_of_difference() {
    let scratch = tempfile::tempdir().expect("scratch folder");
    let dir = scratch.path();
    let seq = fixture_dumps(dir);
    let (r, t) = (dir.join("reference.dump"), dir.join("translated.dump"));
    let (r, t) = (r.to_str().unwrap(), t.to_str().unwrap());

    let same = tpace(&["compare", r, t]);
    assert!(same.status.success(), "{}", text(&same));
    assert!(text(&same).contains("dumps: identical"), "{}", text(&same));
    assert!(
        text(&same).contains("reduction result(s) within tolerance"),
        "{}",
        text(&same)
    );
    // The fixture never reads `work` after its loop: the translation leaves it on the
    // device, dumps it as not brought back, and the comparison says it skipped it.
    let got = dump::read(Path::new(t)).expect("translated dump");
    let unread: Vec<&str> = got
        .iter()
        .filter(|a| a.unread)
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(unread, ["work"]);
    assert!(
        text(&same).contains("(1 array, ")
            && text(&same).contains(
                "`work` not compared: the translation does not bring it back, the program never reads it after the pipeline"
            ),
        "{}",
        text(&same)
    );
    // ... but the array it does bring back is still compared bit for bit.
    let mut live = got.clone();
    let a = live.iter_mut().find(|a| a.name == "a").expect("`a` dumped");
    a.data[4] ^= 1;
    let broken_a = dir.join("a.dump");
    write_dump(&broken_a, &live);
    let out = tpace(&["compare", r, broken_a.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("DIFFERENT: first at a[0][1]"),
        "{}",
        text(&out)
    );

    // One array cell off by one bit.
    let mut cell = seq.clone();
    let grid = cell
        .iter_mut()
        .find(|a| !a.dims.is_empty())
        .expect("an array");
    let name = grid.name.clone();
    let mid = grid.data.len() / 2;
    grid.data[mid] ^= 1;
    let broken = dir.join("cell.dump");
    write_dump(&broken, &cell);
    let out = tpace(&["compare", r, broken.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("DIFFERENT: first at {name}[")),
        "{}",
        text(&out)
    );

    // A reduction result 1 % off: beyond the default tolerance, within --rtol 0.05.
    let mut red = seq.clone();
    let value = red
        .iter_mut()
        .find(|a| a.dims.is_empty() && a.elem == 8)
        .expect("a double reduction");
    let name = value.name.clone();
    let v = f64::from_le_bytes(value.data[..8].try_into().unwrap());
    assert!(
        v != 0.0,
        "the fixture's reduction `{name}` is zero: the test needs a non-zero one"
    );
    value.data = (v * 1.01).to_le_bytes().to_vec();
    let off = dir.join("reduction.dump");
    write_dump(&off, &red);
    let out = tpace(&["compare", r, off.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("reduction `{name}`")),
        "{}",
        text(&out)
    );
    let out = tpace(&["compare", r, off.to_str().unwrap(), "--rtol", "0.05"]);
    assert!(out.status.success(), "{}", text(&out));

    // Printed output: numbers within the tolerance pass, other text does not.
    let print = |name: &str, body: &str| {
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        p.to_str().unwrap().to_string()
    };
    let a = print("a.out", "gosa 1.000000e-03 after 5 steps\n");
    let b = print("b.out", "gosa 1.000001e-03 after 5 steps\n");
    let c = print("c.out", "gosa 1.000000e-03 after 6 steps\n");
    let out = tpace(&["compare", r, t, "--stdout", &a, &b]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains("numbers within tolerance"),
        "{}",
        text(&out)
    );
    let out = tpace(&["compare", r, t, "--stdout", &a, &c]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("printed output: DIFFERENT"),
        "{}",
        text(&out)
    );
}

#[test]
fn compare_refuses_an_empty_or_missing_reference() {
    let scratch = tempfile::tempdir().expect("scratch folder");
    let empty = scratch.path().join("empty.dump");
    std::fs::write(&empty, b"").unwrap();
    let e = empty.to_str().unwrap();
    let out = tpace(&["compare", e, e]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).contains("holds no arrays"), "{}", text(&out));
    let missing = scratch.path().join("missing.dump");
    let out = tpace(&["compare", missing.to_str().unwrap(), e]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out).contains("missing.dump"), "{}", text(&out));
}
