// Result signing lives in src/core (one definition for the engine, the Action, the app and the CLI).
export { keyId, signResult, verifyResult } from "../core/result-signature.js";
