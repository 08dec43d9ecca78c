//! Embeds the browser pages built from `web/` (`web/dist`, made by `make web`) into the binary,
//! so no Node is needed at run time. Without a build the table is empty and the HTTP port
//! answers with how to build the pages.

use std::fmt::Write;
use std::path::Path;

fn content_type(name: &str) -> &'static str {
    match name.rsplit('.').next().unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "png" => "image/png",
        "svg" => "image/svg+xml",
        "wasm" => "application/wasm",
        "map" => "application/json",
        _ => "application/octet-stream",
    }
}

fn main() {
    // Read when the script runs, not when it was compiled: a build script binary may be
    // reused for another checkout of the same crate (a worktree sharing the target directory).
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dist = Path::new(&manifest).join("../../web/dist");
    println!("cargo:rerun-if-changed={}", dist.display());
    let mut files: Vec<_> = std::fs::read_dir(&dist)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let mut out = String::from("/// (name, content type, bytes) of every file in web/dist.\npub static FILES: &[(&str, &str, &[u8])] = &[\n");
    for p in files {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let abs = p.canonicalize().unwrap();
        writeln!(
            out,
            "    ({name:?}, {:?}, include_bytes!({:?})),",
            content_type(&name),
            abs.display().to_string()
        )
        .unwrap();
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("web_assets.rs");
    std::fs::write(dest, out).unwrap();
}
