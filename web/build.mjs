// Bundles the pages into dist/ (embedded into the framewire binary by crates/server/build.rs).
import { build } from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";

mkdirSync("dist", { recursive: true });
const common = { bundle: true, minify: true, sourcemap: false, target: ["es2022"], format: "iife", logLevel: "warning" };
await build({ ...common, entryPoints: ["src/viewer/main.ts"], outfile: "dist/viewer.js" });
await build({ ...common, entryPoints: ["src/dashboard/main.ts"], outfile: "dist/dashboard.js" });
copyFileSync("src/viewer/viewer.html", "dist/viewer.html");
copyFileSync("src/dashboard/dashboard.html", "dist/dashboard.html");
// The library for Node-side tests (unit tests of the codecs against spec/vectors).
await build({ ...common, format: "esm", platform: "node", entryPoints: ["src/common/index.ts"], outfile: "dist-test/common.mjs" });
