//! The writers only print: every target's writer (src/back/) works from the
//! lowered program, the IR and the plan, never from the model (whose
//! constants, CUDA's and OpenCL's alike, come through lowering), the front
//! end (which lowering and the IR stand for) or the driver above it.

use std::path::Path;

/// Every `.rs` file under `dir`, with its text.
fn sources(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).expect("a source file");
            out.push((path.display().to_string(), text));
        }
    }
    out
}

#[test]
fn writers_use_neither_the_model_nor_the_front_end_nor_the_driver() {
    let back = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/back");
    let files = sources(&back);
    assert!(files.len() > 5, "{} files under src/back", files.len());
    let mut found = Vec::new();
    for (path, text) in &files {
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for above in ["crate::model", "crate::front", "crate::driver"] {
                if code.contains(above) {
                    found.push(format!("{path}:{}: {}", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "a writer reaches above lowering:\n{}",
        found.join("\n")
    );
}
