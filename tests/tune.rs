//! `tpace tune` end to end on the host (gcc's OpenACC host fallback, no GPU):
//! one build, a small sweep, results.csv, heatmap.svg and the comparison with
//! the model's pick; refused configurations are recorded, not fatal.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

fn tpace(args: &[&str]) -> Output {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    Command::new(env!("CARGO_BIN_EXE_tpace"))
        .current_dir(root)
        .args(args)
        .output()
        .expect("tpace runs")
}

fn say(out: &Output) -> String {
    format!(
        "status {}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The CSV's rows as maps from column name to field (no field here has a comma
/// except the status message, which is last and may be quoted).
fn csv_rows(csv: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    assert_eq!(
        header,
        [
            "schedule",
            "k",
            "b",
            "streams",
            "chunks",
            "seconds",
            "glups",
            "device_bytes",
            "predicted_seconds",
            "error",
            "status"
        ]
    );
    lines
        .map(|l| {
            let fields: Vec<&str> = l.splitn(header.len(), ',').collect();
            assert_eq!(fields.len(), header.len(), "bad row `{l}`");
            header
                .iter()
                .zip(fields)
                .map(|(h, f)| (h.to_string(), f.trim_matches('"').to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn small_sweep_writes_csv_heatmap_and_compares_with_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("tune");
    let out = tpace(&[
        "tune",
        "examples/jacobi2d.c",
        "--target",
        "openacc",
        "--schedules",
        "mmtb,mm",
        "--k",
        "1,4",
        "--chunk",
        "100,333",
        "--streams",
        "2",
        "--out",
        out_dir.to_str().unwrap(),
        "--",
        "7",
    ]);
    assert!(out.status.success(), "{}", say(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);

    // One progress line per configuration.
    for i in 1..=8 {
        assert!(stderr.contains(&format!("[{i}/8] ")), "{}", say(&out));
    }
    assert!(
        stderr.contains("[1/8] mmtb k=1 b=100 S=2: "),
        "{}",
        say(&out)
    );

    // The CSV: a header and one row per configuration, each run with positive seconds.
    let csv = std::fs::read_to_string(out_dir.join("results.csv")).unwrap();
    let rows = csv_rows(&csv);
    assert_eq!(rows.len(), 2 * 2 * 2, "{csv}");
    let mut asked = BTreeSet::new();
    for r in &rows {
        assert_eq!(r["status"], "ok", "{csv}");
        let secs: f64 = r["seconds"].parse().unwrap();
        assert!(secs > 0.0, "{csv}");
        assert!(r["glups"].parse::<f64>().unwrap() > 0.0, "{csv}");
        assert!(r["device_bytes"].parse::<u64>().unwrap() > 0, "{csv}");
        let predicted: f64 = r["predicted_seconds"].parse().unwrap();
        assert!(predicted > 0.0, "{csv}");
        // The error column is the model's relative error on this run.
        let error: f64 = r["error"].parse().unwrap();
        assert!(
            (error - (predicted - secs) / secs).abs() < 1e-3 + 1e-3 * error.abs(),
            "{csv}"
        );
        assert_eq!(r["streams"], "2", "{csv}");
        asked.insert((r["schedule"].clone(), r["k"].clone(), r["b"].clone()));
    }
    assert_eq!(asked.len(), 8, "every configuration once: {csv}");

    // The best schedule: the one of the fastest row.
    let best = rows
        .iter()
        .min_by(|a, b| {
            let t = |r: &std::collections::BTreeMap<String, String>| {
                r["seconds"].parse::<f64>().unwrap()
            };
            t(a).total_cmp(&t(b))
        })
        .unwrap();
    let cells: BTreeSet<(&str, &str)> = rows
        .iter()
        .filter(|r| r["schedule"] == best["schedule"])
        .map(|r| (r["k"].as_str(), r["b"].as_str()))
        .collect();
    assert_eq!(cells.len(), 4);

    // The heat map: an SVG with one rect per measured (k, b) cell of that schedule.
    let svg = std::fs::read_to_string(out_dir.join("heatmap.svg")).unwrap();
    assert!(svg.trim_start().starts_with("<svg"), "{svg}");
    assert!(svg.trim_end().ends_with("</svg>"), "{svg}");
    assert_eq!(svg.matches("<rect").count(), cells.len(), "{svg}");
    assert_eq!(
        svg.matches("<text").count(),
        svg.matches("</text>").count(),
        "{svg}"
    );
    for (k, b) in &cells {
        assert!(svg.contains(&format!("k={k} b={b}: ")), "{svg}");
    }
    for label in [
        "jacobi2d.c",
        "openacc",
        "profile h100",
        "chunk width b",
        "time steps per transfer k",
    ] {
        assert!(svg.contains(label), "`{label}` missing in {svg}");
    }

    // Standard output names the best configuration, the model's pick and the ratio.
    let best_line = stdout
        .lines()
        .find(|l| l.starts_with("best measured: "))
        .unwrap_or_else(|| panic!("{}", say(&out)));
    assert!(
        best_line.contains(&format!(
            "{} k={} b={} streams=2",
            best["schedule"], best["k"], best["b"]
        )),
        "{best_line}\n{csv}"
    );
    assert!(stdout.contains("model's pick (h100"), "{}", say(&out));
    let ratio: f64 = stdout
        .lines()
        .find_map(|l| l.strip_prefix("ratio model pick / best measured: "))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no ratio in {}", say(&out)));
    assert!(ratio > 0.0, "{ratio}");
    assert!(stdout.contains("not from a GPU"), "{}", say(&out));
}

#[test]
fn refused_configurations_are_recorded_and_none_running_fails() {
    let dir = tempfile::tempdir().unwrap();
    // 1000 x 600 floats, two arrays: 4800 bytes a plane. mmtb with k=1 and two
    // streams needs 2 (b + 3) planes: b=100 fits in 2 MB, b=333 does not.
    let some = dir.path().join("some");
    let out = tpace(&[
        "tune",
        "examples/jacobi2d.c",
        "--schedules",
        "mmtb",
        "--k",
        "1",
        "--chunk",
        "100,333",
        "--streams",
        "2",
        "--mem-cap",
        "2M",
        "--out",
        some.to_str().unwrap(),
        "--",
        "3",
    ]);
    assert!(out.status.success(), "{}", say(&out));
    let csv = std::fs::read_to_string(some.join("results.csv")).unwrap();
    let rows = csv_rows(&csv);
    assert_eq!(rows.len(), 2, "{csv}");
    assert_eq!(rows[0]["status"], "ok", "{csv}");
    assert!(rows[1]["status"].starts_with("refused: "), "{csv}");
    assert!(rows[1]["status"].contains("TPACE_CHUNK"), "{csv}");
    assert!(rows[1]["seconds"].is_empty(), "{csv}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("[2/2] mmtb k=1 b=333 S=2: refused ("),
        "{}",
        say(&out)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("1 ran, 1 refused"), "{}", say(&out));
    let svg = std::fs::read_to_string(some.join("heatmap.svg")).unwrap();
    assert_eq!(svg.matches("<rect").count(), 1, "{svg}");

    // 10 kB holds no plan at all: every configuration refused, exit 1, a clear message.
    let none = dir.path().join("none");
    let out = tpace(&[
        "tune",
        "examples/jacobi2d.c",
        "--schedules",
        "mmtb,mm",
        "--k",
        "1,4",
        "--chunk",
        "100,333",
        "--streams",
        "2",
        "--mem-cap",
        "10K",
        "--out",
        none.to_str().unwrap(),
        "--",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", say(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("none of the 8 configuration(s) ran (8 refused, 0 failed"),
        "{}",
        say(&out)
    );
    assert!(stderr.contains("--mem-cap"), "{}", say(&out));
    let csv = std::fs::read_to_string(none.join("results.csv")).unwrap();
    let rows = csv_rows(&csv);
    assert_eq!(rows.len(), 8, "{csv}");
    assert!(
        rows.iter().all(|r| r["status"].starts_with("refused: ")),
        "{csv}"
    );
}

/// `--cflags` reaches the compiler: an unknown flag fails the one build, and
/// the message names it.
#[test]
fn extra_compiler_flags_reach_the_build() {
    let dir = tempfile::tempdir().unwrap();
    let out = tpace(&[
        "tune",
        "examples/jacobi2d.c",
        "--k",
        "2",
        "--chunk",
        "300",
        "--streams",
        "1",
        "--schedules",
        "mmtb",
        "--cflags",
        "-fno-such-tpace-flag",
        "--out",
        dir.path().to_str().unwrap(),
        "--",
        "3",
    ]);
    assert!(!out.status.success(), "{}", say(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("-fno-such-tpace-flag"), "{}", say(&out));
}

/// Static arrays beyond 2 GiB link only with a larger code model; tune adds
/// `-mcmodel=medium` by itself (built here, not run: 4.6 GB of arrays).
#[test]
fn large_static_arrays_get_the_medium_code_model() {
    use tpace::back::Target;
    use tpace::driver::run::{Flavour, Toolchain, build};
    use tpace::driver::tune::large_static_flags;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/jacobi2d.c");
    let compiled = tpace::driver::compile_file(&path).unwrap();
    assert!(large_static_flags(&compiled, &[1000, 600], Flavour::Openacc).is_empty());
    assert_eq!(
        large_static_flags(&compiled, &[24_000, 24_000], Flavour::CudaDevice),
        ["-Xcompiler", "-mcmodel=medium"]
    );
    let text = tpace::driver::translate(&compiled, Target::Openacc).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut tc = Toolchain::detect();
    tc.defines = vec!["X=24000".into(), "Y=24000".into()];
    let without = build(&tc, &text, dir.path(), "small", Flavour::Openacc);
    let Err(err) = without else {
        panic!("the small code model linked 4.6 GB of statics")
    };
    assert!(err.0.contains("relocation truncated"), "{}", err.0);
    tc.extra_flags = large_static_flags(&compiled, &[24_000, 24_000], Flavour::Openacc);
    assert_eq!(tc.extra_flags, ["-mcmodel=medium"]);
    build(&tc, &text, dir.path(), "medium", Flavour::Openacc).expect("links");
}
