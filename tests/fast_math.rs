//! `tpace run --fast-math`: the translation is built with contracted multiply-adds
//! and compared within a tolerance; the sequential build never contracts.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

/// Run `tpace run examples/heat1d.c` with a C compiler that logs its arguments;
/// returns tpace's output and the logged compiler lines.
fn run_logged(fast: bool) -> (String, Vec<String>) {
    let dir = tempfile::tempdir().expect("scratch folder");
    let log = dir.path().join("cc.log");
    let cc = dir.path().join("cc-log.sh");
    std::fs::write(
        &cc,
        format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\nexec gcc \"$@\"\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&cc, std::fs::Permissions::from_mode(0o755)).unwrap();
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/heat1d.c");
    let mut args = vec!["run", example];
    if fast {
        args.push("--fast-math");
    }
    args.extend(["--", "5"]);
    let out = Command::new(env!("CARGO_BIN_EXE_tpace"))
        .args(&args)
        .env("CC", &cc)
        .output()
        .expect("tpace runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    let lines = std::fs::read_to_string(&log)
        .expect("the compiler ran")
        .lines()
        .map(String::from)
        .collect();
    (text, lines)
}

fn build_of<'a>(lines: &'a [String], source: &str) -> &'a str {
    lines
        .iter()
        .find(|l| l.contains(source))
        .unwrap_or_else(|| panic!("no build of {source} in {lines:?}"))
}

#[test]
fn fast_math_contracts_only_the_translation_and_compares_within_tolerance() {
    let (text, lines) = run_logged(true);
    assert!(
        text.contains("fast math: multiply-adds contracted"),
        "{text}"
    );
    assert!(text.contains("within the fast-math tolerance"), "{text}");
    let reference = build_of(&lines, "reference.c");
    assert!(reference.contains("-ffp-contract=off"), "{reference}");
    assert!(!reference.contains("-ffp-contract=fast"), "{reference}");
    // The later flag wins: contraction is on for the translation.
    let translated = build_of(&lines, "translated.c");
    let (off, fast) = (
        translated
            .find("-ffp-contract=off")
            .expect("the default flag"),
        translated
            .find("-ffp-contract=fast")
            .expect("the fast-math flag"),
    );
    assert!(off < fast, "{translated}");
}

#[test]
fn by_default_nothing_contracts_and_arrays_match_bit_for_bit() {
    let (text, lines) = run_logged(false);
    assert!(text.contains("identical"), "{text}");
    assert!(!text.contains("fast math"), "{text}");
    for source in ["reference.c", "translated.c"] {
        let line = build_of(&lines, source);
        assert!(line.contains("-ffp-contract=off"), "{line}");
        assert!(!line.contains("-ffp-contract=fast"), "{line}");
    }
}
