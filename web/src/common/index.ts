// Everything the Node-side tests use, in one module.
export * from "./v1";
export * from "./lz4";
export * from "./zstd";
export * from "./checksum";
export * from "./picture";
export * from "./colormap";
export * from "./bases";
