import pkg from "../../package.json" with { type: "json" };

/** probegate's own version, from package.json (bundled into dist/ at build time): `probegate --version`. */
export const PROBEGATE_VERSION: string = pkg.version;
