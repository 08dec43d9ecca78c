// Bundles the pages into dist/ (embedded into the framewire binary by crates/http/build.rs).
// A file is written only when its bytes change, so an unchanged tree leaves dist/ untouched
// and cargo does not rebuild the server crate for nothing.
import { build } from "esbuild";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";

function writeIfChanged(path, bytes) {
  let old = null;
  try {
    old = readFileSync(path);
  } catch {
    // absent: write it
  }
  if (old === null || Buffer.compare(old, Buffer.from(bytes)) !== 0) writeFileSync(path, bytes);
}

async function bundle(options) {
  const r = await build({ ...options, write: false });
  for (const f of r.outputFiles) writeIfChanged(f.path, f.contents);
}

mkdirSync("dist", { recursive: true });
mkdirSync("dist-test", { recursive: true });
const common = { bundle: true, minify: true, sourcemap: false, target: ["es2022"], format: "iife", logLevel: "warning" };
await bundle({ ...common, entryPoints: ["src/viewer/main.ts"], outfile: "dist/viewer.js" });
await bundle({ ...common, entryPoints: ["src/dashboard/main.ts"], outfile: "dist/dashboard.js" });
writeIfChanged("dist/viewer.html", readFileSync("src/viewer/viewer.html"));
writeIfChanged("dist/dashboard.html", readFileSync("src/dashboard/dashboard.html"));
// The library for Node-side tests (unit tests of the codecs against spec/vectors).
await bundle({ ...common, format: "esm", platform: "node", entryPoints: ["src/common/index.ts"], outfile: "dist-test/common.mjs" });
